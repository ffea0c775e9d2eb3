"""Keeping secrets out of what we print: API keys and the ``user:password@`` of URLs.

Only text we show is redacted (error messages, URLs in messages and reports), never data (an
answer, a verdict, a cached reply): a key ``x`` must not turn every ``x`` of an answer into
``***``. Two rules:

- :func:`scrub_secret` replaces each *whole* occurrence of a secret: one not glued to a letter,
  digit, ``_`` or ``-`` on either side (those would make it another token);
- :func:`redact_urls` removes the user information of anything shaped like a URL, whatever its
  scheme (``htps://user:pw@host``, ``http://user:pw@`` with no host), and :func:`redact_url`
  does the same for a value known to be a URL, even without a scheme (``user:pw@host``).

Redact first, then cut: a secret cut in half by a length limit would no longer match.
"""

from __future__ import annotations

import re

MASK = "***"
_TOKEN = r"A-Za-z0-9_\-"
# scheme (any spelling) ':' and slashes, or just '//', then userinfo up to the last '@' of the
# token (a password may hold '@' or '/'); a token ends at white space or a quote.
_USERINFO = re.compile(r"((?:[A-Za-z][A-Za-z0-9+.\-]*:/*|//))[^\s'\"<>@]*(?:@[^\s'\"<>@]*)*@")
_SCHEME = re.compile(r"^\s*[A-Za-z][A-Za-z0-9+.\-]*:/+")


def scrub_secret(text: str, secret: str | None) -> str:
    """``text`` with every whole occurrence of ``secret`` replaced by ``***``."""
    if not secret:
        return text
    pattern = rf"(?<![{_TOKEN}]){re.escape(secret)}(?![{_TOKEN}])"
    return re.sub(pattern, MASK, text)


def redact_urls(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL-shaped token replaced by ``***@``."""
    return _USERINFO.sub(lambda match: f"{match.group(1)}{MASK}@", text)


def redact_url(url: str) -> str:
    """A URL (well-formed or not) safe to show: its user information and its query string
    (which may hold a key) masked."""
    match = _SCHEME.match(url)
    head, rest = (match.group(0), url[match.end() :]) if match else ("", url)
    authority_end = len(rest)
    for mark in "?#":
        if mark in rest:
            authority_end = min(authority_end, rest.index(mark))
    before, query = rest[:authority_end], rest[authority_end:]
    if "@" in before:
        before = MASK + before[before.rindex("@") :]
    if query.startswith("?") and len(query) > 1:
        query = "?" + MASK
    return head + before + query


def scrub(text: str, *secrets: str | None) -> str:
    """A message safe to show: each secret's whole occurrences and URLs' user information
    masked. Apply it before cutting the message to a length."""
    for secret in secrets:
        text = scrub_secret(text, secret)
    return redact_urls(text)

"""One escaping function per display sink: the terminal (and CI logs), Markdown, HTML, JUnit XML.

Query ids, evaluation and dataset names, metric names and messages come from files and test
code, so they may hold anything: an ESC sequence that conceals or erases a line of a CI log,
a carriage return or backspace that overwrites what came before, a right-to-left override
that reorders it, a ``|`` that splits a Markdown table cell, a raw ``<img>`` tag. Every
renderer passes such text through the function of the sink it writes to; JSON documents are
data, not display, and keep every string exactly.

A neutralised character is shown, not dropped: ``\\x1b`` for a C0 control or DEL, ``\\u009b``
for a C1 control, ``\\u202e`` for a bidirectional control, ``\\ud800`` for a lone surrogate
(which UTF-8 cannot hold). Written with ``\\u`` from U+0080 on, the escape is also a valid JSON
and JavaScript string escape of the same character, so applying :func:`for_terminal` to a
whole JSON document on its way to stdout leaves its meaning unchanged.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

# C0 controls (tab and newline optionally kept), DEL, C1 controls, the bidirectional controls
# (embeddings, overrides, isolates, marks), the line and paragraph separators (which many
# tools read as line breaks) and lone surrogates.
_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
_HIDDEN = f"\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}\u2028\u2029\ud800-\udfff"
_CONTROLS = re.compile(f"[{_HIDDEN}\t\n]")
_CONTROLS_BUT_LINES = re.compile(f"[{_HIDDEN}]")


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def for_terminal(text: Any, *, newlines: bool = False) -> str:
    """``text`` safe to print: every control character shown as an escape.

    ``newlines=True`` keeps tab and newline (a multi-line message); otherwise they are escaped
    too, so the text stays on one line (a table cell, a line of a summary).
    """
    pattern = _CONTROLS_BUT_LINES if newlines else _CONTROLS
    return pattern.sub(_visible, str(text))


# Characters that would turn text into markup; an underscore only at a word's edge (GitHub
# never reads one inside a word as emphasis, so ndcg_at_10 stays readable); "](" (a link).
_MARKUP = re.compile(r"[\\`*<>|&~]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\](?=\()")
_LINE_BREAK = re.compile(r"\r\n|[\n\t]")
# What starts a block at the beginning of a line (a heading, a list item, a setext underline),
# as the text of a list item or a paragraph would; "-0.5" or "#3" starts none.
_BLOCK_START = re.compile(
    r"^(\s*)(?:(#{1,6}(?=\s|$)|[+-](?=\s|$)|[=-]+\s*$)|(\d{1,9})([.)])(?=\s|$))"
)


def _unblock(match: re.Match[str]) -> str:
    lead, mark, number, dot = match.groups()
    return f"{lead}\\{mark}" if mark else f"{lead}{number}\\{dot}"


def for_markdown(text: Any, *, starts_line: bool = False) -> str:
    """``text`` as literal Markdown on one line: a table cell, a list item, a heading.

    Markup characters are backslash-escaped (a ``|`` cannot end a table cell, ``<img>`` is
    shown, not rendered); line breaks and tabs become spaces; other controls are shown as
    escapes. ``starts_line=True`` for text at the start of a line (a list item's, a
    paragraph's): a leading ``#``, ``-`` or ``1.`` starts no heading or list either.
    """
    flat = _LINE_BREAK.sub(" ", str(text))
    marked = _MARKUP.sub(lambda m: "\\" + m.group(0), flat)
    if starts_line:
        marked = _BLOCK_START.sub(_unblock, marked)
    return _CONTROLS.sub(_visible, marked)


# Lone surrogates cannot be written as UTF-8; controls other than tab and newline have no
# business in a page. Bidirectional controls stay: the page isolates text from the data in
# <bdi>, so they cannot reorder what is around them.
_UNWRITABLE = re.compile("[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def unwritable(text: str) -> re.Match[str] | None:
    """The first character a page cannot hold in ``text`` (None: it has none)."""
    return _UNWRITABLE.search(text)


def html_writable(text: str) -> str:
    """``text`` with what a page cannot hold (lone surrogates, controls) replaced by U+FFFD:
    the first half of :func:`for_html`, which the HTML report's template engine also applies
    to the markup its templates build."""
    return _UNWRITABLE.sub("\ufffd", text)


def for_html(text: Any) -> str:
    """``text`` safe for HTML content and quoted attribute values."""
    return _html.escape(html_writable(str(text)), quote=True)


# Not allowed anywhere in an XML 1.0 document (not even as a character reference).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def for_junit(text: Any) -> str:
    """``text`` for a JUnit XML attribute or text (a property name or value): characters XML
    1.0 cannot hold shown as escapes, and terminal controls too (CI pages print them)."""
    return for_terminal(_NOT_XML.sub(_visible, str(text)), newlines=True)

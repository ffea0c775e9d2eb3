"""One escaping function per display sink: the terminal (and CI logs), Markdown, HTML, JUnit XML.

Query ids, evaluation and dataset names, metric names and messages come from files and test
code, so they may hold anything: an ESC sequence that conceals or erases a line of a CI log,
a carriage return or backspace that overwrites what came before, a right-to-left override
that reorders it, a ``|`` that splits a Markdown table cell, a raw ``<img>`` tag. Every
renderer passes such text through the function of the sink it writes to; JSON documents are
data, not display, and keep every string exactly.

How a neutralised character is shown: :mod:`pytest_ragmetrics.controls`, whose rule
:func:`for_terminal` is.
"""

from __future__ import annotations

import html as _html
import re
from typing import Any

from pytest_ragmetrics.controls import CONTROLS as _CONTROLS
from pytest_ragmetrics.controls import show_controls
from pytest_ragmetrics.controls import visible as _visible

# The terminal's escaping function: every control character shown as an escape (tab and
# newline kept with ``newlines=True``), the rule the warnings of errors.py follow too.
for_terminal = show_controls


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

"""Control characters shown, not obeyed: the character-level rule behind the terminal sink.

:func:`pytest_ragmetrics.report.escaping.for_terminal` is the terminal's escaping function and
is this one; it lives at the bottom of the module list so that the warnings of
:mod:`pytest_ragmetrics.errors` can show their own text safely wherever Python prints them
(pytest's warnings summary, ``python -W``, a log), whoever issued them.

A neutralised character is shown, not dropped: ``\\x1b`` for a C0 control or DEL, ``\\u009b``
for a C1 control, ``\\u202e`` for a bidirectional control, ``\\ud800`` for a lone surrogate
(which UTF-8 cannot hold). Written with ``\\u`` from U+0080 on, the escape is also a valid JSON
and JavaScript string escape of the same character.
"""

from __future__ import annotations

import re
from typing import Any

# C0 controls (tab and newline optionally kept), DEL, C1 controls, the bidirectional controls
# (embeddings, overrides, isolates, marks), the line and paragraph separators (which many
# tools read as line breaks) and lone surrogates.
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
HIDDEN = f"\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI}\u2028\u2029\ud800-\udfff"
CONTROLS = re.compile(f"[{HIDDEN}\t\n]")
CONTROLS_BUT_LINES = re.compile(f"[{HIDDEN}]")


def visible(match: re.Match[str]) -> str:
    """The escape that shows one matched character."""
    code = ord(match.group(0))
    return f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}"


def show_controls(text: Any, *, newlines: bool = False) -> str:
    """``text`` safe to print: every control character shown as an escape.

    ``newlines=True`` keeps tab and newline (a multi-line message); otherwise they are escaped
    too, so the text stays on one line (a table cell, a line of a summary, a warning).
    """
    pattern = CONTROLS_BUT_LINES if newlines else CONTROLS
    return pattern.sub(visible, str(text))

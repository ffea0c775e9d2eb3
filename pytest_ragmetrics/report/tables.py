"""Tables as typed objects, built once and rendered per sink: the terminal (tabulate's
``simple`` layout), Markdown (pipes; the best value of a column in bold) and HTML.

A builder (the per-dataset summary, the tables of ``ragmetrics compare``) makes a
:class:`Table` of :class:`Cell` s holding raw text; each renderer escapes the text for its
sink (``report.escaping``), so a query id or a label cannot break a table, and every sink
shows the same cells.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pytest_ragmetrics.report.escaping import for_markdown, for_terminal

Align = Literal["left", "right"]
MISSING = "-"  # a cell with no value: not evaluated there, or nothing to show
BOLD_LEGEND = "best value per column in bold"


@dataclass(frozen=True)
class Cell:
    """One cell: ``text`` (a value as shown, a label), then ``suffix`` outside the bold
    (a Δ and its marks); ``best`` marks the best value of its column."""

    text: str
    suffix: str = ""
    best: bool = False

    def plain(self) -> str:
        return f"{self.text} {self.suffix}" if self.suffix else self.text

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text}
        if self.suffix:
            out["suffix"] = self.suffix
        if self.best:
            out["best"] = True
        return out


@dataclass(frozen=True)
class Table:
    """Headers, rows of cells and each column's alignment; ``legend`` holds the sentences
    that explain its marks (shown under it)."""

    headers: tuple[str, ...]
    rows: tuple[tuple[Cell, ...], ...]
    align: tuple[Align, ...]
    legend: tuple[str, ...] = field(default=())

    @property
    def has_best(self) -> bool:
        return any(cell.best for row in self.rows for cell in row)

    def to_dict(self) -> dict[str, Any]:
        """The table as data (what an HTML template iterates over)."""
        return {
            "headers": list(self.headers),
            "align": list(self.align),
            "rows": [[cell.to_dict() for cell in row] for row in self.rows],
            "legend": list(self.legend),
        }


def alignment(left: int, right: int) -> tuple[Align, ...]:
    """``left`` left-aligned columns (labels), then ``right`` right-aligned ones (numbers)."""
    return cast("tuple[Align, ...]", ("left",) * left + ("right",) * right)


def cells(values: Iterable[Any]) -> tuple[Cell, ...]:
    """Plain cells of ``values`` (as ``str``)."""
    return tuple(Cell(str(value)) for value in values)


def mark_best(rows: Sequence[Sequence[Cell]], columns: Iterable[int]) -> list[list[Cell]]:
    """``rows`` with the highest value of each of ``columns`` marked best (every cell that
    shows it: values equal as shown are equally best), when two or more rows have a value."""
    out = [list(row) for row in rows]
    for column in columns:
        shown = {i: _number(row[column].text) for i, row in enumerate(out)}
        values = {i: v for i, v in shown.items() if v is not None}
        if len(values) < 2:
            continue
        top = max(values.values())
        for i, value in values.items():
            if value == top:
                cell = out[i][column]
                out[i][column] = Cell(cell.text, cell.suffix, best=True)
    return out


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return None if value != value else value


def text_table(table: Table) -> str:
    """The table for the terminal, every cell one line with its controls shown as escapes,
    then its legend."""
    from tabulate import tabulate

    rows = [[for_terminal(cell.plain()) for cell in row] for row in table.rows]
    text = tabulate(
        rows,
        headers=[for_terminal(h) for h in table.headers],
        tablefmt="simple",
        disable_numparse=True,
        colalign=table.align,
    )
    legend = legend_of(table, bold=False)
    return text + ("\n\n" + "\n".join(map(for_terminal, legend)) if legend else "")


def markdown_table(table: Table) -> str:
    """The table in GitHub Markdown: cells escaped (a ``|`` cannot split one), the best of
    each column in bold, then its legend as a paragraph."""
    rule = {"left": "---", "right": "---:"}
    lines = [
        "| " + " | ".join(for_markdown(h) for h in table.headers) + " |",
        "|" + "|".join(rule[a] for a in table.align) + "|",
    ]
    lines += ["| " + " | ".join(_markdown_cell(c) for c in row) + " |" for row in table.rows]
    legend = legend_of(table, bold=True)
    if legend:
        sentence = "; ".join(legend)
        lines += ["", for_markdown(sentence[0].upper() + sentence[1:] + ".", starts_line=True)]
    return "\n".join(lines) + "\n"


def _markdown_cell(cell: Cell) -> str:
    text = for_markdown(cell.text)
    if cell.best:
        text = f"**{text}**"
    return f"{text} {for_markdown(cell.suffix)}" if cell.suffix else text


def legend_of(table: Table, *, bold: bool) -> list[str]:
    """The sentences shown under ``table``: what bold means (where the sink draws it), then
    its own legend."""
    return ([BOLD_LEGEND] if bold and table.has_best else []) + list(table.legend)

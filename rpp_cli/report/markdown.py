"""Markdown (GitHub pipe) tables for papers and READMEs: a bold title line, then the table as
cut by :mod:`.tables`, padded so the source reads aligned too; empty cells have no value."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .escape import markdown as _escape
from .tables import Table, write_tables


def render(table: Table) -> str:
    """``**title**``, header, alignment row (names left, numbers right), body."""
    header = [_escape(table.corner), *map(_escape, table.columns)]
    body = [[_escape(name), *("" if c is None else c for c in row)]
            for name, row in zip(table.row_names, table.cells)]
    widths = [max(3, *(len(r[j]) for r in [header, *body])) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        padded = [cells[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(cells[1:], widths[1:]))]
        return "| " + " | ".join(padded) + " |\n"

    rule = "|:" + "-" * (widths[0] + 1) + "|" + "|".join("-" * (w + 1) + ":" for w in widths[1:])
    return (f"**{_escape(table.title)}**\n\n" + line(header) + rule + "|\n"
            + "".join(line(r) for r in body))


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Every table, blank-line separated."""
    write_tables(render, results, out, precision, summary)

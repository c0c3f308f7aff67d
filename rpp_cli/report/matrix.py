"""Aligned terminal tables: each pair measure as a matrix with run names on both axes, then
the per-run values (rows = runs), as cut by :mod:`.tables`. ``-`` marks a cell with no value
(the diagonal); tables are separated by a blank line."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .common import columns, pad
from .tables import Table, write_tables

EMPTY = "-"


def render(table: Table) -> str:
    """The title, a header row and one row per run; names left-aligned, values right-aligned,
    columns two spaces apart (in terminal columns: wide characters count two)."""
    header = [table.corner, *table.columns]
    body = [[name, *(EMPTY if c is None else c for c in row)]
            for name, row in zip(table.row_names, table.cells)]
    widths = [max(columns(r[j]) for r in [header, *body]) for j in range(len(header))]

    def line(cells: list[str]) -> str:
        first = pad(cells[0], widths[0])
        rest = (pad(c, w, right=True) for c, w in zip(cells[1:], widths[1:]))
        return "  ".join([first, *rest]) + "\n"

    return table.title + "\n" + "".join(line(r) for r in [header, *body])


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Every table, blank-line separated."""
    write_tables(render, results, out, precision, summary)

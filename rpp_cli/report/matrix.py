"""Aligned terminal tables: each pair measure as a matrix with run names on both axes, then
the per-run values (rows = runs), as cut by :mod:`.tables`. ``-`` marks a cell with no value
(the diagonal); tables are separated by a blank line."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .common import columns, pad
from .tables import Table, write_tables

EMPTY = "-"


MAX_WIDTH = 100  # terminal columns a line may take; a wider table is cut into column blocks


def render(table: Table) -> str:
    """The title, a header row and one row per run; names left-aligned, values right-aligned,
    columns two spaces apart (in terminal columns: wide characters count two). A table wider
    than MAX_WIDTH is printed as blocks of whole columns, each with the row names and its
    title marked ``[columns i-j of n]``; a run x run one then numbers its runs (column i is
    the run of row ``i NAME``) so that more columns fit a block."""
    header = [table.corner, *table.columns]
    body = [[name, *(EMPTY if c is None else c for c in row)]
            for name, row in zip(table.row_names, table.cells)]
    widths = [max(columns(r[j]) for r in [header, *body]) for j in range(len(header))]
    if len(_blocks(widths)) > 1 and table.columns == table.row_names:  # runs on both axes:
        header = [table.corner, *map(str, range(1, len(table.columns) + 1))]  # numbered
        body = [[f"{i} {row[0]}", *row[1:]] for i, row in enumerate(body, start=1)]
        widths = [max(columns(r[j]) for r in [header, *body]) for j in range(len(header))]

    def line(cells: list[str], picked: list[int]) -> str:
        first = pad(cells[0], widths[0])
        rest = (pad(cells[j], widths[j], right=True) for j in picked)
        return "  ".join([first, *rest]) + "\n"

    blocks = _blocks(widths)
    out = []
    for picked in blocks:
        title = table.title if len(blocks) == 1 else \
            f"{table.title} [columns {picked[0]}-{picked[-1]} of {len(widths) - 1}]"
        out.append(title + "\n" + "".join(line(r, picked) for r in [header, *body]))
    return "\n".join(out)


def _blocks(widths: list[int]) -> list[list[int]]:
    """The value columns (1-based) of each block: as many whole columns as fit MAX_WIDTH
    beside the row names, at least one."""
    blocks: list[list[int]] = [[]]
    used = widths[0]
    for j, width in enumerate(widths[1:], start=1):
        if blocks[-1] and used + 2 + width > MAX_WIDTH:
            blocks.append([])
            used = widths[0]
        blocks[-1].append(j)
        used += 2 + width
    return blocks


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Every table, blank-line separated."""
    write_tables(render, results, out, precision, summary)

"""LaTeX ``tabular`` environments (booktabs rules) for papers, as cut by :mod:`.tables`: a
``%`` comment with the title before each, names escaped, minus signs typeset as ``$-$``,
empty cells where there is no value. Needs ``\\usepackage{booktabs}``."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .escape import latex as escape
from .tables import Table, write_tables


def _value(cell: str | None) -> str:
    """A printed value with a typeset minus sign; empty when there is none."""
    if cell is None:
        return ""
    return "$-$" + cell[1:] if cell.startswith("-") else cell


def render(table: Table) -> str:
    """``% title``, then ``\\begin{tabular}{l r...}`` with a header row between rules."""
    rows = [[escape(table.corner), *map(escape, table.columns)]]
    rows += [[escape(name), *map(_value, row)] for name, row in zip(table.row_names, table.cells)]
    widths = [max(len(r[j]) for r in rows) for j in range(len(rows[0]))]
    text = [" & ".join([r[0].ljust(widths[0]), *(c.rjust(w) for c, w in zip(r[1:], widths[1:]))])
            + r" \\" for r in rows]
    return "\n".join([f"% {table.title}", r"\begin{tabular}{l" + "r" * len(table.columns) + "}",
                      r"\toprule", text[0], r"\midrule", *text[1:], r"\bottomrule",
                      r"\end{tabular}"]) + "\n"


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Every table, blank-line separated."""
    write_tables(render, results, out, precision, summary)

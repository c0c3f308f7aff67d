"""The Results table cut into two-dimensional tables, for the matrix, markdown and latex formats.

For each query id (per-query ids first, then ``all``): one square table per measure that has
pair rows (row = ``run``, column = ``other``: for preference measures RPP(row, column), > 0 when
the row run is preferred), then one table of every per-run value (rows = runs, columns =
measures). Runs keep argument order, so tables line up with each other and with the trec
output. A cell with no row (the diagonal) is ``None``. Every row of the Results appears in
exactly one cell, so the tables hold the same numbers as every other format.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TextIO

from ..results import Results
from .common import coded_rows, is_count, number

PER_RUN = "per-run measures"


@dataclass
class Table:
    """A titled grid of printed values: ``cells[i][j]`` for ``row_names[i]`` and
    ``columns[j]`` (``None`` where there is no value)."""

    title: str
    corner: str
    columns: list[str]
    row_names: list[str]
    cells: list[list[str | None]]


def pair_title(measure: str, qid: str, subject: str = "run") -> str:
    """Title of the square table of ``measure`` (parsed back by the tests); ``subject``: what
    the rows and columns are (:attr:`Results.subject`)."""
    return f"{measure} ({qid}): row {subject} vs column {subject}"


def per_run_title(qid: str, subject: str = "run") -> str:
    """Title of the per-run (per-measure, for ``meta``) table of query ``qid``."""
    return f"{PER_RUN} ({qid})" if subject == "run" else f"per-{subject} values ({qid})"


def tables(results: Results, precision: int = 4, summary: bool = True) -> list[Table]:
    """Every table of ``results`` in output order (see the module docstring)."""
    measures, qids, runs, rows = coded_rows(results, summary)
    pairs: dict[int, dict[int, dict[tuple[int, int], str]]] = {}  # q -> m -> (r, o) -> text
    singles: dict[int, dict[int, dict[int, str]]] = {}  # q -> m -> r -> text
    for m, q, r, o, v in rows:
        text = number(v, precision, is_count(measures[m]))
        if o < 0:
            singles.setdefault(q, {}).setdefault(m, {})[r] = text
        else:
            pairs.setdefault(q, {}).setdefault(m, {})[(r, o)] = text
    out: list[Table] = []
    for q in sorted(set(pairs) | set(singles)):
        for m, grid in sorted(pairs.get(q, {}).items()):
            cells = [[grid.get((r, o)) for o in range(len(runs))] for r in range(len(runs))]
            out.append(Table(pair_title(measures[m], qids[q], results.subject), measures[m],
                             list(runs), list(runs), cells))
        columns = sorted(singles.get(q, {}).items())
        if columns:
            cells = [[col.get(r) for _, col in columns] for r in range(len(runs))]
            out.append(Table(per_run_title(qids[q], results.subject), results.subject,
                             [measures[m] for m, _ in columns], list(runs), cells))
    return out


def write_tables(render: Callable[[Table], str], results: Results, out: TextIO,
                 precision: int = 4, summary: bool = True) -> None:
    """Every table of ``results`` rendered by ``render``, blank-line separated."""
    out.write("\n".join(render(t) for t in tables(results, precision, summary)))

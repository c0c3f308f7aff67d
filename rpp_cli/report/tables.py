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
from typing import Callable, Iterator, TextIO

from ..results import Results
from .common import coded_rows, number, styles

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


def tables(results: Results, precision: int = 4, summary: bool = True) -> Iterator[Table]:
    """Every table of ``results`` in output order (see the module docstring), a query's at a
    time: rows come grouped by query, so only one query's cells are held."""
    measures, qids, runs, rows = coded_rows(results, summary)
    style = styles(measures)
    query, pairs, singles = -1, {}, {}  # the query's m -> (r, o) -> text, m -> r -> text
    for m, q, r, o, v in rows:
        if q != query:
            yield from _query_tables(results, qids[query], pairs, singles)
            query, pairs, singles = q, {}, {}
        text = number(v, precision, style[m])
        if o < 0:
            singles.setdefault(m, {})[r] = text
        else:
            pairs.setdefault(m, {})[(r, o)] = text
    if query >= 0:
        yield from _query_tables(results, qids[query], pairs, singles)


def _query_tables(results: Results, qid: str, pairs: dict[int, dict[tuple[int, int], str]],
                  singles: dict[int, dict[int, str]]) -> Iterator[Table]:
    """The tables of one query: a square one per pair measure, then the per-run one."""
    measures, runs, n = results.measures, results.runs, len(results.runs)
    for m, grid in sorted(pairs.items()):
        cells = [[grid.get((r, o)) for o in range(n)] for r in range(n)]
        yield Table(pair_title(measures[m], qid, results.subject), measures[m], list(runs),
                    list(runs), cells)
    columns = sorted(singles.items())
    if columns:
        cells = [[col.get(r) for _, col in columns] for r in range(n)]
        yield Table(per_run_title(qid, results.subject), results.subject,
                    [measures[m] for m, _ in columns], list(runs), cells)


def write_tables(render: Callable[[Table], str], results: Results, out: TextIO,
                 precision: int = 4, summary: bool = True) -> None:
    """Every table of ``results`` rendered by ``render``, blank-line separated, written as it
    is made."""
    for i, table in enumerate(tables(results, precision, summary)):
        out.write(render(table) if i == 0 else "\n" + render(table))

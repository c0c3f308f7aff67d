"""trec_eval's reading rules for ``rpp trec-eval``: every judgment line kept (duplicates are
an error only for evaluated queries, as in trec_eval), run lines of 6 or more fields, and the
run id taken from the last line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import Column, Dictionary, Table, split
from ...errors import TREC_EVAL_CANNOT_CALCULATE
from ...io.qrels import QRELS_FORMAT, read_grades, to_text

RUN_FORMAT = "run: qid Q0 docno rank score runid"


@dataclass(frozen=True)
class Lines:
    """The lines of a file as columns in file order: a qid code per line, the distinct qids."""

    table: Table
    qids: list[str]  # qid code -> text, in order of first appearance
    qid: np.ndarray  # (lines,) qid code
    docno: Column

    def line(self, row: int) -> int:
        return self.table.line(row)


@dataclass(frozen=True)
class Judgments(Lines):
    """Qrels lines; grades as trec_eval's integers (atol)."""

    grade: np.ndarray  # int64


@dataclass(frozen=True)
class Retrieved(Lines):
    """Run lines; scores as trec_eval stores them (9.0.8: C float; 10.0: double)."""

    score: np.ndarray  # float32 or float64
    runid: str  # the 6th field of the last line


def _lines(table: Table) -> tuple[list[str], np.ndarray]:
    qids = Dictionary()
    code = qids.add(table.column(0))
    return [to_text(q) for q in qids.strings()], code


def read_judgments(path: str, notes: list[str] | None = None) -> Judgments:
    """A qrels file (plain, gzip or ``-``); grades truncate towards zero (1.7 -> 1). A grade
    out of range stops it with trec_eval's status for a grade it cannot calculate with; one
    trec_eval's atol reads otherwise (``1e3``) gets a note in ``notes``."""
    table = split(path, (0, 2, 3), (4,), QRELS_FORMAT)
    grade = np.trunc(read_grades(table, TREC_EVAL_CANNOT_CALCULATE, notes)).astype(np.int64)
    return Judgments(table, *_lines(table), table.column(2), grade)


def read_retrieved(path: str, as_float: bool = False) -> Retrieved:
    """A run file (plain, gzip or ``-``); fields after the 6th are ignored, as in trec_eval.
    ``as_float``: scores cast to C float, as trec_eval 9.0.8 keeps them (10.0: doubles)."""
    table = split(path, (0, 2, 4, 5), (6,), RUN_FORMAT, more_ok=True)
    score = table.floats(4, "score")
    with np.errstate(over="ignore"):  # beyond float range -> inf, as C's (float) cast
        score = score.astype(np.float32) if as_float else score
    runid = table.column(5).text(len(table) - 1)
    return Retrieved(table, *_lines(table), table.column(2), score, runid)

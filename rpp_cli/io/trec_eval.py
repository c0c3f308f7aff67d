"""trec_eval's reading rules for ``rpp trec-eval``: every judgment line kept (duplicates are
an error only for evaluated queries, as in trec_eval), run lines of 6 or more fields, and the
run id taken from the last line.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .qrels import QRELS_FORMAT
from .text import read_table

RUN_FORMAT = "run: qid Q0 docno rank score runid"


@dataclass(frozen=True)
class Judgments:
    """Qrels lines as columns in file order; grades as trec_eval's integers (atol)."""

    qid: np.ndarray  # S
    docno: np.ndarray  # S
    grade: np.ndarray  # int64
    line: np.ndarray  # 1-based line numbers


@dataclass(frozen=True)
class Retrieved:
    """Run lines as columns in file order; scores as trec_eval stores them (C float)."""

    qid: np.ndarray  # S
    docno: np.ndarray  # S
    score: np.ndarray  # float32
    line: np.ndarray
    runid: str  # the 6th field of the last line


def read_judgments(path: str) -> Judgments:
    """A qrels file (plain, gzip or ``-``); grades truncate towards zero (1.7 -> 1)."""
    table = read_table(path, (4,), QRELS_FORMAT)
    grade = np.trunc(table.numbers(3, "grade")).astype(np.int64)
    return Judgments(table.strings(0).bytes(), table.strings(2).bytes(), grade, table.line)


def read_retrieved(path: str) -> Retrieved:
    """A run file (plain, gzip or ``-``); fields after the 6th are ignored, as in trec_eval."""
    table = read_table(path, (6,), RUN_FORMAT, more_fields_ok=True)
    with np.errstate(over="ignore"):  # beyond float range -> inf, as C's (float) cast
        score = table.numbers(4, "score").astype(np.float32)
    runid = table.strings(5, np.array([len(table) - 1])).texts()[0]
    return Retrieved(table.strings(0).bytes(), table.strings(2).bytes(), score, table.line,
                     runid)

"""Relevance judgments (SPEC §1): ``qid iter docno grade``; a docno judged twice keeps its larger grade."""
from __future__ import annotations

from dataclasses import dataclass

from .text import read_table

QRELS_FORMAT = "qrels: qid iter docno grade"


@dataclass(frozen=True)
class Qrels:
    """Judgments of one file: ``judgments[qid][docno] = grade`` (largest grade kept)."""

    path: str
    judgments: dict[str, dict[str, float]]

    def relevant_qids(self, level: float | None) -> list[str]:
        """Queries with at least one relevant item, in trec_eval order (byte order of qid)."""
        return sort_qids(q for q, docs in self.judgments.items()
                         if any(is_relevant(g, level) for g in docs.values()))


def is_relevant(grade: float, level: float | None) -> bool:
    """SPEC §1: ``grade > 0``, or ``grade >= level`` when a relevance level is given."""
    return grade >= level if level is not None else grade > 0


def sort_qids(qids) -> list[str]:
    """trec_eval's query order: strcmp on the qid bytes."""
    return sorted(qids, key=lambda q: q.encode("utf-8", "surrogateescape"))


def read_qrels(path: str) -> Qrels:
    """Read a trec_eval qrels file (plain, gzip or ``-``); bad lines raise InputError."""
    table = read_table(path, (4,), QRELS_FORMAT)
    grades = table.numbers(3, "grade")
    judgments: dict[str, dict[str, float]] = {}
    for qid, docno, grade in zip(table.texts(0), table.texts(2), grades.tolist()):
        docs = judgments.setdefault(qid, {})
        if grade > docs.get(docno, -float("inf")):
            docs[docno] = grade
    return Qrels(path, judgments)

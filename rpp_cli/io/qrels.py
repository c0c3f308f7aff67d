"""Relevance judgments (SPEC §1): ``qid iter docno grade``; a docno judged twice keeps its larger grade.

Subtopic qrels (``qid subtopic docno grade``, TREC Web track) are read here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    for qid, docno, grade in zip(table.field(0).text(), table.field(2).text(), grades.tolist()):
        docs = judgments.setdefault(qid, {})
        if grade > docs.get(docno, -float("inf")):
            docs[docno] = grade
    return Qrels(path, judgments)


SUBTOPIC_FORMAT = "subtopic qrels: qid subtopic docno grade"
NO_SUBTOPIC = ("0", "Q0")  # SPEC §1: a line with this subtopic id carries no subtopic


@dataclass(frozen=True)
class SubtopicQrels:
    """Subtopic judgments of one file (SPEC §1), with the overall grade of every judged item."""

    path: str
    subtopics: dict[str, dict[str, dict[str, float]]]  # [qid][subtopic][docno] = largest grade
    overall: Qrels  # an item's largest grade over all its lines: the qrels when QRELS is omitted
    first_line: dict[str, int]  # line of each query's first judgment (for errors about a query)
    no_subtopic_relevant: int  # lines with subtopic 0/Q0 and a positive grade
    negative: int  # lines with a negative grade (non-relevant; ndeval rejects them)

    def relevant(self, qid: str) -> dict[str, list[str]]:
        """Subtopic -> docnos relevant to it (grade > 0), for subtopics with any; sorted."""
        out = {}
        for sub, docs in self.subtopics.get(qid, {}).items():
            rel = sorted(d for d, g in docs.items() if g > 0)
            if rel:
                out[sub] = rel
        return out


def read_subtopic_qrels(path: str) -> SubtopicQrels:
    """Read TREC Web track subtopic qrels (plain, gzip or ``-``); bad lines raise InputError."""
    table = read_table(path, (4,), SUBTOPIC_FORMAT)
    grades = table.numbers(3, "grade")
    subtopics: dict[str, dict[str, dict[str, float]]] = {}
    overall: dict[str, dict[str, float]] = {}
    first_line: dict[str, int] = {}
    rows = zip(table.field(0).text(), table.field(1).text(), table.field(2).text(),
               grades.tolist(), table.line.tolist())
    for qid, sub, docno, grade, line in rows:
        first_line.setdefault(qid, line)
        docs = overall.setdefault(qid, {})
        if grade > docs.get(docno, -float("inf")):
            docs[docno] = grade
        if sub in NO_SUBTOPIC:
            continue
        judged = subtopics.setdefault(qid, {}).setdefault(sub, {})
        if grade > judged.get(docno, -float("inf")):
            judged[docno] = grade
    sub_ids = table.field(1).strings
    unassigned = np.isin(sub_ids, np.array([s.encode() for s in NO_SUBTOPIC])) & (grades > 0)
    return SubtopicQrels(path, subtopics, Qrels(path, overall), first_line,
                         int(unassigned.sum()), int((grades < 0).sum()))

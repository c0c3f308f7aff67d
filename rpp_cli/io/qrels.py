"""Relevance judgments (SPEC §1): ``qid iter docno grade``; a docno judged twice keeps its larger grade.

Subtopic qrels (``qid subtopic docno grade``, TREC Web track) are read here too.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .text import decode, read_table

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


SUBTOPIC_FORMAT = "subtopic qrels: qid subtopic docno grade"
NO_SUBTOPIC = (b"0", b"Q0")  # SPEC §1: a line with this subtopic id carries no subtopic


@dataclass(frozen=True)
class SubtopicQrels:
    """Subtopic judgments of one file (SPEC §1), with the overall grade of every judged item."""

    path: str
    relevant_docs: dict[str, dict[str, list[str]]]  # [qid][subtopic] = sorted relevant docnos
    overall: Qrels  # an item's largest grade over all its lines: the qrels when QRELS is omitted
    first_line: dict[str, int]  # line of each query's first judgment (for errors about a query)
    no_subtopic_relevant: int  # lines with subtopic 0/Q0 and a positive grade
    negative: int  # lines with a negative grade (non-relevant; ndeval rejects them)

    def relevant(self, qid: str) -> dict[str, list[str]]:
        """Subtopic -> docnos relevant to it (grade > 0), for the subtopics that have any."""
        return self.relevant_docs.get(qid, {})


def read_subtopic_qrels(path: str) -> SubtopicQrels:
    """Read TREC Web track subtopic qrels (plain, gzip or ``-``); bad lines raise InputError.

    Lines are grouped with numpy sorts; Python only builds the per-query dictionaries.
    """
    table = read_table(path, (4,), SUBTOPIC_FORMAT)
    grades = table.numbers(3, "grade")
    qid, sub, doc = (table.strings(k).bytes() for k in range(3))
    no_sub = np.isin(sub, np.array(NO_SUBTOPIC))
    order = np.lexsort((grades, doc, qid))  # the last row of each (qid, docno) has its max
    last = np.append((qid[order][1:] != qid[order][:-1]) | (doc[order][1:] != doc[order][:-1]),
                     True)
    q, d, g = qid[order][last], doc[order][last], grades[order][last]
    docs, values = decode(d), g.tolist()
    overall = {name: dict(zip(docs[a:b], values[a:b])) for name, a, b in zip(*_runs(q))}
    rel = np.flatnonzero((grades > 0) & ~no_sub)
    rel = rel[np.lexsort((doc[rel], sub[rel], qid[rel]))]
    q, t, d = qid[rel], sub[rel], doc[rel]
    new = np.append(True, (q[1:] != q[:-1]) | (t[1:] != t[:-1]) | (d[1:] != d[:-1]))[:len(q)]
    q, t, docs = q[new], t[new], decode(d[new])
    relevant = {}
    for name, a, b in zip(*_runs(q)):
        relevant[name] = {sub_id: docs[a + lo:a + hi] for sub_id, lo, hi in zip(*_runs(t[a:b]))}
    _, first = np.unique(qid, return_index=True)
    first_line = dict(zip(decode(qid[first]), table.line[first].tolist()))
    return SubtopicQrels(path, relevant, Qrels(path, overall), first_line,
                         int((no_sub & (grades > 0)).sum()), int((grades < 0).sum()))


def _runs(keys: np.ndarray) -> tuple[list[str], list[int], list[int]]:
    """Names and [start, end) bounds of the runs of equal keys in sorted rows."""
    if len(keys) == 0:
        return [], [], []
    starts = np.flatnonzero(np.append(True, keys[1:] != keys[:-1]))
    return decode(keys[starts]), starts.tolist(), np.append(starts[1:], len(keys)).tolist()

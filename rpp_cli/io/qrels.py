"""Relevance judgments (contract §1): ``qid iter docno grade``; a docno judged twice keeps its
larger grade. Subtopic qrels (``qid subtopic docno grade``, TREC Web track) are read here too.

Judgments are arrays: one row per distinct (qid, docno), identified exactly by its bytes. A
qrels file is read a window at a time (as runs are), each line kept as its docno's bytes and
its grade, its qid once per stretch of lines (:mod:`rpp_cli.io.judged`), never as an object.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from ..core import Column, Dictionary, Table, first_seen, split
from ..core.table import floats, packed_column, split_stream
from ..errors import InputError
from .grades import (GRADE_MAX, GRADE_MIN, atol_first, atol_note, atol_rows,
                     integer_parts_kept, out_of_range, read_grades)
from .judged import JudgedIndex, JudgedLines

__all__ = ["GRADE_MAX", "GRADE_MIN", "Qrels", "SubtopicQrels", "read_grades", "read_qrels",
           "read_subtopic_qrels", "relevant", "sort_qids", "to_text"]

QRELS_FORMAT = "qrels: qid iter docno grade"


@dataclass(frozen=True)
class Qrels:
    """The judgments of one file: distinct (qid, docno) pairs with their largest grade, a
    query's together (qid codes ascending), each query's in order of their first line."""

    path: str
    qids: list[str]  # distinct qids, in order of first appearance (qid code -> text)
    qid_bounds: np.ndarray  # (Q + 1,) int64: qid code q's judgments are qid_bounds[q:q + 2]
    docno_bytes: bytearray | bytes  # their docnos, back to back
    docno_lens: np.ndarray  # (J,) uint16 the length of each
    grade: np.ndarray  # (J,) float64, the largest grade given to it
    repeated: int = 0  # lines that judge a (qid, docno) pair judged on an earlier line

    @property
    def qid(self) -> np.ndarray:
        """(J,) int32 qid code of each judgment (made on each call)."""
        return np.repeat(np.arange(len(self.qids), dtype=np.int32), np.diff(self.qid_bounds))

    @property
    def docno(self) -> Column:
        """(J,) the judgments' docnos as a Column (its offsets made on each call)."""
        return packed_column(self.docno_bytes, self.docno_lens)

    def dictionary(self) -> JudgedIndex:
        """The judgments' (query, docno) dictionary, keyed by the query's place in trec_eval
        order (:func:`sort_qids` of ``qids``): judgment j has code j. A new one each call; its
        exact dictionaries are built a chunk of queries at a time, as lookups need them."""
        return JudgedIndex(self.qid_bounds, self.docno_bytes, self.docno_lens,
                           sorted_positions(self.qids))

    def relevant_qids(self, level: float | None) -> list[str]:
        """Queries with at least one relevant item, in trec_eval order (byte order of qid):
        one mask over the judgments, reduced a query at a time (every query has a judgment)."""
        rel = np.logical_or.reduceat(relevant(self.grade, level), self.qid_bounds[:-1]) \
            if len(self.grade) else np.zeros(0, dtype=bool)
        return sort_qids(self.qids[q] for q in np.flatnonzero(rel).tolist())


def relevant(grade: np.ndarray, level: float | None) -> np.ndarray:
    """contract §1: ``grade > 0``, or ``grade >= level`` when a relevance level is given."""
    return grade >= level if level is not None else grade > 0


def to_text(raw: bytes) -> str:
    """An id as text: UTF-8, undecodable bytes kept as escapes (so text equality is byte
    equality)."""
    return raw.decode("utf-8", "surrogateescape")


def sort_qids(qids) -> list[str]:
    """trec_eval's query order: strcmp on the qid bytes."""
    return sorted(qids, key=lambda q: q.encode("utf-8", "surrogateescape"))


def sorted_positions(qids: list[str]) -> np.ndarray:
    """(len(qids),) the place of each of ``qids`` (distinct) in :func:`sort_qids` order."""
    place = {q: i for i, q in enumerate(sort_qids(qids))}
    return np.array([place[q] for q in qids], dtype=np.int64)


def judgments(table: Table, grades: np.ndarray) -> tuple[Qrels, np.ndarray]:
    """Distinct (field 0, field 2) pairs of ``table`` with the largest of their ``grades``,
    and the judgment of each row."""
    lines, qids = JudgedLines(), Dictionary()
    lines.add(qids.add(table.column(0)), table.column(2), grades)
    return _qrels(table.path, lines, qids, codes=True)


def _qrels(path: str, lines: JudgedLines, qids: Dictionary, threads: int = 1,
           codes: bool = False) -> tuple[Qrels, np.ndarray | None]:
    """The Qrels of ``lines`` (their qid codes from ``qids``); with ``codes``, each line's
    judgment too."""
    bounds, data, lens, grade, repeated, code = lines.pairs(len(qids), threads, codes)
    return Qrels(path, [to_text(q) for q in qids.strings()], bounds, data, lens, grade,
                 repeated), code


def read_qrels(path: str, notes: list[str] | None = None, threads: int = 1) -> Qrels:
    """Read a trec_eval qrels file (plain, gzip or ``-``) a window at a time; bad lines raise
    InputError, as the whole file read at once would: the tokenizer's first (from
    :func:`split_stream`), then the first grade that is not a number, then the first out of
    range. ``notes``: the note on grades trec_eval's atol reads otherwise. ``threads``: windows
    split, and chunks of judgments coded, side by side."""
    lines, qids = JudgedLines(), Dictionary()
    not_number: InputError | None = None
    outside: InputError | None = None
    atol_shown, atol_count = None, 0
    for table in split_stream(path, (0, 2, 3), (4,), QRELS_FORMAT, threads,
                              floats=(3, "grade")):
        if not_number is not None or not len(table):
            continue
        try:
            grades = table.floats(3, "grade")
        except InputError as err:
            not_number = err
            continue
        outside = outside or out_of_range(table, grades)
        if outside is not None:
            lines = JudgedLines()  # held no more: the error stands unless an earlier kind comes
            continue
        grades = integer_parts_kept(table, grades)
        rows = atol_rows(table, grades)
        if len(rows) and atol_shown is None:
            atol_shown = atol_first(table, grades, rows)
        atol_count += len(rows)
        lines.add(qids.add(table.column(0)), table.column(2), grades)
    if not_number is not None or outside is not None:
        raise not_number or outside
    if notes is not None and atol_shown is not None:
        notes.append(atol_note(*atol_shown, atol_count - 1))
    return _qrels(path, lines, qids, threads)[0]


# ndeval's naturalNumber: ASCII digits, refused once the value read so far exceeds 100000
# before another digit, so the largest accepted is 1000009.
NDEVAL_LARGEST = 1000009


def natural_numbers(col: Column, what: str, path: str,
                    line: Callable[[int], int]) -> np.ndarray:
    """``col`` as ndeval reads it (naturalNumber): int64 values; the first token that is not
    one is an InputError at ``line(its row)``, as ndeval's "syntax error"."""
    digits = col.digits_only()
    rows = np.flatnonzero(digits)
    values = np.zeros(len(col))
    values[digits] = floats(col.take(rows), what, path, lambda k: line(int(rows[k])))
    ok = _natural(digits, values)
    if not ok.all():
        _not_natural(col, what, path, line, int(np.argmin(ok)))
    return values.astype(np.int64)


def _natural(digits: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Mask of the tokens naturalNumber takes: ASCII digits whose value is within its bound."""
    return digits & (np.floor(values / 10) <= NDEVAL_LARGEST // 10)


def _not_natural(col: Column, what: str, path: str, line: Callable[[int], int],
                 row: int) -> NoReturn:
    raise InputError(f"{what} '{col.text(row)}' is not a natural number up to "
                     f"{NDEVAL_LARGEST} (ndeval's syntax)", path, line(row))


def ndeval_grades(col: Column, grades: np.ndarray, path: str,
                  line: Callable[[int], int]) -> None:
    """Grades as ndeval reads them (naturalNumber: ``+1``, ``1.0``, ``1e0``, ``-0`` and
    values above its bound are syntax errors), and ``-`` then such digits, which ndeval
    refuses and rpp reads as non-relevant (the documented difference). ``grades``: the
    values strtod gave; the first grade of neither form is an InputError at its line."""
    negative = grades < 0  # -0 is not: to ndeval it is not a number
    ok = np.zeros(len(col), dtype=bool)
    rows = np.flatnonzero(~negative)
    ok[rows] = _natural(col.take(rows).digits_only(), grades[rows])
    rows = np.flatnonzero(negative)
    minus = col.take(rows)
    signed = minus.lens > 0
    signed[signed] = np.frombuffer(minus.data, dtype=np.uint8)[minus.starts[signed]] == 45
    magnitude = Column(minus.data, minus.starts + 1, np.maximum(minus.lens - 1, 0))
    ok[rows] = signed & _natural(magnitude.digits_only(), -grades[rows])
    if not ok.all():
        _not_natural(col, "grade", path, line, int(np.argmin(ok)))


SUBTOPIC_FORMAT = "subtopic qrels: qid subtopic docno grade"
NO_SUBTOPIC = (b"0", b"Q0")  # contract §1: a line with this subtopic id carries no subtopic


@dataclass(frozen=True)
class SubtopicQrels:
    """Subtopic judgments of one file (contract §1), with the overall grade of every judged item."""

    path: str
    relevant_docs: dict[str, dict[str, list[str]]]  # [qid][subtopic] = sorted relevant docnos
    overall: Qrels  # an item's largest grade over all its lines: the qrels when QRELS is omitted
    subtopic_relevant: np.ndarray  # (J,) bool: judgment j of overall is relevant to a subtopic
    first_line: dict[str, int]  # line of each query's first judgment (for errors about a query)
    no_subtopic_relevant: int  # lines with subtopic 0/Q0 and a positive grade
    negative: int  # lines with a negative grade (non-relevant; ndeval rejects them)

    def numeric_twins(self) -> list[tuple[str, str, str]]:
        """(qid, subtopic, subtopic) for subtopic ids of one query that differ as text but are
        one number (``01`` and ``1``): two subtopics here, one to ndeval."""
        out = []
        for qid, subs in self.relevant_docs.items():
            seen: dict[int, str] = {}
            for sub in subs:
                if sub.isascii() and sub.isdigit():
                    if int(sub) in seen:
                        out.append((qid, seen[int(sub)], sub))
                    seen.setdefault(int(sub), sub)
        return out

    def relevant(self, qid: str) -> dict[str, list[str]]:
        """Subtopic -> docnos relevant to it (grade > 0), for the subtopics that have any."""
        return self.relevant_docs.get(qid, {})


def read_subtopic_qrels(path: str, ndeval: bool = False) -> SubtopicQrels:
    """Read TREC Web track subtopic qrels (plain, gzip or ``-``); bad lines raise InputError.

    With ``ndeval``, subtopics and grades are read as ndeval reads them, natural numbers
    (``01`` and ``1`` are one subtopic, named ``1``; a negative grade is taken, see
    :func:`ndeval_grades`). Only the relevant lines
    (a few per judged item) become Python objects."""
    table = split(path, (0, 1, 2, 3), (4,), SUBTOPIC_FORMAT)
    grades = read_grades(table)
    if ndeval:
        ndeval_grades(table.column(3), grades, path, table.line)
        number = natural_numbers(table.column(1), "subtopic", path, table.line)
    overall, code = judgments(table, grades)
    sub = table.column(1)
    if ndeval:
        no_sub = number == 0  # 0, 00, ...: one value to ndeval
    else:
        no_sub = np.zeros(len(table), dtype=bool)
        for token in NO_SUBTOPIC:
            no_sub |= _equals(sub, token)
    if no_sub.all():
        raise InputError("no subtopics: every line's subtopic is 0 or Q0 (ad hoc qrels given "
                         "as subtopic qrels?)", path=path)
    rel = np.flatnonzero((grades > 0) & ~no_sub)
    subtopic_relevant = np.zeros(len(overall.grade), dtype=bool)
    subtopic_relevant[code[rel]] = True
    qcol = table.column(0)
    if ndeval:  # ndeval's subtopic: its number, named as a number
        values, subtopic = np.unique(number[rel], return_inverse=True)
        names = [str(v) for v in values.tolist()]
    else:
        coder = Dictionary()
        subtopic = coder.add(sub.take(rel))
        names = [to_text(b) for b in coder.strings()]
    relevant_docs = _relevant_docs(qcol.take(rel), subtopic, names, table.column(2).take(rel))
    first = np.flatnonzero(first_seen(Dictionary().add(qcol)))
    first_line = dict(zip((qcol.text(r) for r in first.tolist()), table.lines(first).tolist()))
    return SubtopicQrels(path, relevant_docs, overall, subtopic_relevant, first_line,
                         int((no_sub & (grades > 0)).sum()), int((grades < 0).sum()))


def _relevant_docs(qids: Column, subtopic: np.ndarray, names: list[str], docnos: Column
                   ) -> dict[str, dict[str, list[str]]]:
    """{qid: {subtopic name: its distinct docnos in byte order}} of the relevant lines (qids
    and each query's subtopics in the order of their first line), grouped by one lexsort of
    codes: Python objects for the names and the result only, none a line (80,000 topics:
    3 s of a loop over the lines)."""
    if not len(qids):
        return {}
    q_coder, d_coder = Dictionary(), Dictionary()
    query, doc = q_coder.add(qids), d_coder.add(docnos)  # codes in first-seen order
    doc_bytes = d_coder.strings()
    byte_rank = np.empty(len(doc_bytes), dtype=np.int64)
    byte_rank[sorted(range(len(doc_bytes)), key=doc_bytes.__getitem__)] = np.arange(
        len(doc_bytes))
    pair = query * len(names) + subtopic
    pairs, first = np.unique(pair, return_index=True)
    pair_first = first[np.searchsorted(pairs, pair)]  # each (query, subtopic)'s first line
    order = np.lexsort((byte_rank[doc], pair_first, query))
    pair, doc = pair[order], doc[order]
    keep = np.ones(len(order), dtype=bool)
    keep[1:] = (pair[1:] != pair[:-1]) | (doc[1:] != doc[:-1])  # a docno once a subtopic
    pair, doc, query, subtopic = pair[keep], doc[keep], query[order][keep], subtopic[order][keep]
    starts = np.flatnonzero(np.concatenate(([True], pair[1:] != pair[:-1])))
    ends = np.append(starts[1:], len(pair)).tolist()
    doc_names = [to_text(b) for b in doc_bytes]
    listed = [doc_names[d] for d in doc.tolist()]
    qid_names = [to_text(b) for b in q_coder.strings()]
    out: dict[str, dict[str, list[str]]] = {}
    for a, b, q, s in zip(starts.tolist(), ends, query[starts].tolist(),
                          subtopic[starts].tolist()):
        out.setdefault(qid_names[q], {})[names[s]] = listed[a:b]
    return out


def _equals(col: Column, token: bytes) -> np.ndarray:
    """Mask of the rows of ``col`` equal to ``token``."""
    same = Dictionary()
    same.add(Column(token, np.zeros(1, dtype=np.int64), np.array([len(token)], dtype=np.int32)))
    same.freeze()
    return same.find(col) == 0

"""Relevance judgments (contract §1): ``qid iter docno grade``; a docno judged twice keeps its
larger grade. Subtopic qrels (``qid subtopic docno grade``, TREC Web track) are read here too.

Judgments are arrays: one row per distinct (qid, docno), identified exactly by its bytes.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable
from fractions import Fraction
from typing import NoReturn
from dataclasses import dataclass, field

import numpy as np

from ..core import Column, Dictionary, Table, first_seen, split
from ..core.table import floats
from ..errors import InputError

QRELS_FORMAT = "qrels: qid iter docno grade"
# contract §1: a grade is a number within a 32-bit signed integer's range (trec_eval's measures
# read its integer part; larger ones made pytrec_eval allocate a buffer per level up to it).
GRADE_MIN, GRADE_MAX = -(1 << 31), (1 << 31) - 1


@dataclass(frozen=True)
class Qrels:
    """The judgments of one file: distinct (qid, docno) pairs with their largest grade."""

    path: str
    qids: list[str]  # distinct qids, in order of first appearance (qid code -> text)
    qid: np.ndarray  # (J,) qid code of each judgment
    docno: Column  # (J,) its docno
    grade: np.ndarray  # (J,) float64, the largest grade given to it
    repeated: int = 0  # lines that judge a (qid, docno) pair judged on an earlier line
    # the reader's dictionary of the judgments (see :meth:`dictionary`), given away once
    _reader_docs: list = field(default_factory=list, compare=False, repr=False)

    def dictionary(self) -> Dictionary:
        """The judgments' (query, docno) dictionary, keyed by the query's place in trec_eval
        order (:func:`sort_qids` of ``qids``): judgment j has code j. The reader's own
        dictionary is handed over the first time (the qrels' docnos are not coded twice; the
        caller may add to it); later calls, and qrels made without one, build the same anew."""
        try:
            return self._reader_docs.pop()  # atomic: one caller gets it
        except IndexError:
            pass
        docs = Dictionary(len(self.qids))
        docs.add(self.docno, sorted_positions(self.qids)[self.qid])
        return docs

    def relevant_qids(self, level: float | None) -> list[str]:
        """Queries with at least one relevant item, in trec_eval order (byte order of qid)."""
        rel = np.unique(self.qid[relevant(self.grade, level)])
        return sort_qids(self.qids[q] for q in rel.tolist())


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


def read_grades(table: Table, exit_code: int = 2, notes: list[str] | None = None
                ) -> np.ndarray:
    """Field 3 of ``table`` as float64 grades; the first grade that is not a finite number or
    lies outside [GRADE_MIN, GRADE_MAX] is an InputError naming its line. ``notes``: where to
    say that a grade reads otherwise to trec_eval (:func:`_read_otherwise_by_atol`)."""
    grades = table.floats(3, "grade")
    bad = np.flatnonzero((grades < GRADE_MIN) | (grades > GRADE_MAX))
    if len(bad):
        row = int(bad[0])
        raise InputError(f"grade '{table.column(3).text(row)}' is out of range (grades are "
                         f"numbers from {GRADE_MIN} to {GRADE_MAX})", table.path,
                         table.line(row), exit_code=exit_code)
    grades = _integer_parts_kept(table.column(3), grades)
    if notes is not None:
        notes.extend(_read_otherwise_by_atol(table, grades))
    return grades


def _c_atols(grid: np.ndarray) -> np.ndarray:
    """(rows,) float64 C's atol of each row of a :meth:`Column.grid`, at once: the leading
    ASCII integer after an optional sign (past 1e19, where no grade lies, held at 1e19)."""
    signed = (grid[:, 0] == ord("+")) | (grid[:, 0] == ord("-"))
    digit = (grid >= ord("0")) & (grid <= ord("9"))
    after = np.arange(grid.shape[1])[None, :] >= signed[:, None]
    run = np.logical_and.accumulate(digit | ~after, axis=1) & after  # the leading digits
    value = np.zeros(len(grid))
    for k in range(grid.shape[1]):  # a column at a time, while some row's digits go on
        step = run[:, k]
        if k > 0 and not step.any():
            break
        value = np.where(step, np.minimum(value * 10 + (grid[:, k] - ord("0")), 1e19), value)
    return np.where(grid[:, 0] == ord("-"), -value, value)


def _read_otherwise_by_atol(table: Table, grades: np.ndarray) -> list[str]:
    """A note when a grade is written with an exponent or in hexadecimal and trec_eval's atol,
    which stops at the first byte that is not a digit, reads another integer than the one
    rpp's trec_eval measures use (``1e3``: 1000 here, 1 to trec_eval; ``0x2``: 2 and 0)."""
    long = np.flatnonzero(table.column(3).lens >= 3)  # 1e3, 0x2: no shorter text has either
    if not len(long):
        return []
    grid = table.column(3).take(long).grid()
    marked = np.isin(grid, np.frombuffer(b"eExX", dtype=np.uint8)).any(axis=1)
    rows = long[marked]
    atol = _c_atols(grid[marked])
    other = atol != np.trunc(grades[rows])
    differ = rows[other]
    col = table.column(3)
    if not len(differ):
        return []
    first = int(differ[0])
    digits = re.match(rb"[+-]?[0-9]*", col.bytes(first)).group()  # the one shown, exactly,
    first_atol = max(-2 ** 63, min(2 ** 63 - 1, int(digits) if digits.strip(b"+-") else 0))
    # and saturated to a long, as C's atol
    others = len(differ) - 1
    more = "" if not others else "; so does 1 more grade" if others == 1 else \
        f"; so do {others} more grades"
    return [f"{table.path}:{table.line(first)}: grade '{col.text(first)}' is the number it "
            f"writes, {math.trunc(grades[first])} to trec_eval's measures here, where trec_eval "
            f"itself reads {first_atol} (its atol stops at the first byte that is "
            f"not a digit){more}"]


def _exact(text: str) -> Fraction:
    """The number a grade's text (one strtod took whole) writes, exactly: decimal or C's
    hexadecimal (``0x1.8p3``)."""
    m = _HEX.fullmatch(text)
    if m is None:
        return Fraction(text)
    value = Fraction(int(m["whole"] + m["part"] or "0", 16), 16 ** len(m["part"])) \
        * Fraction(2) ** int(m["exponent"] or 0)
    return -value if text.startswith("-") else value


# Fewer significant digits than this cannot round onto a whole number from a value that is
# not one (a double carries 15.9 of them; 16 bytes of text hold at most 16).
_ROUNDING_TEXT = 16
# Nor can a shorter text underflow to 0 (1e-324, the shortest that does, has 6 bytes).
_UNDERFLOW_TEXT = 6


def _integer_parts_kept(col: Column, grades: np.ndarray) -> np.ndarray:
    """``grades`` with each one that rounding made whole moved one double toward the number
    written, so that its integer part (trec_eval's, contract §1), its comparisons with whole
    levels and its relevance (grade > 0) are those of the number written: ``0.99999999999999999``
    (the double 1.0) is just below 1, ``1e-400`` (0.0) the smallest positive double. Only whole
    grades of 16 bytes or more, and zeros of 6 or more, are checked, exactly, once per
    distinct text."""
    whole = grades == np.trunc(grades)
    rows = np.flatnonzero(whole & ((col.lens >= _ROUNDING_TEXT)
                                   | ((col.lens >= _UNDERFLOW_TEXT) & (grades == 0))))
    if not len(rows):
        return grades
    # one text, one double: rows are grouped by their double, and those whose text is their
    # group's first row's are decided with it (a look per distinct double, not per row)
    grid = col.take(rows).grid()
    _, group = np.unique(grades[rows], return_inverse=True)
    first = np.zeros(group.max() + 1, dtype=np.int64)
    first[group[::-1]] = np.arange(len(rows))[::-1]
    lead = first[group]
    same = (grid == grid[lead]).all(axis=1)
    ask = np.union1d(first, np.flatnonzero(~same))  # groups' first rows, and any other text
    toward = np.full(len(rows), np.nan)  # where each moves: 0.0, ±inf, or nowhere (nan)
    toward[ask] = [_toward(col.bytes(int(rows[k])).decode("ascii"), grades[rows[k]])
                   for k in ask.tolist()]
    toward = np.where(same, toward[lead], toward)
    moved = ~np.isnan(toward)
    grades = grades.copy()
    grades[rows[moved]] = np.nextafter(grades[rows[moved]], toward[moved])
    return grades


def _toward(text: str, grade: float) -> float:
    """Where a whole ``grade`` read from ``text`` moves to be on the side of the number
    written: 0.0 when rounding took it up onto a whole number, ±inf when it underflowed to
    0, else nan. A zero is told from an underflow by its digits, never by writing the number
    out (``0e100000000`` and ``1e-100000000`` would be 10^100000000)."""
    m = _HEX.fullmatch(text) or _DECIMAL.fullmatch(text)
    if m is None:  # not a number strtod took whole: no grade is made of it
        return math.nan
    if grade == 0:
        if not (m["whole"] + m["part"]).strip("0"):
            return math.nan  # a zero, written long
        return -math.inf if text.startswith("-") else math.inf
    # a whole grade in range, not 0: its text's exponent is within its digits' count (a
    # field has at most MAX_TOKEN_BYTES), or the number would be 0 or out of range
    if abs(int(m["exponent"] or 0)) > 1 << 16:
        return math.nan
    return 0.0 if abs(_exact(text)) < abs(grade) else math.nan


# A number as strtod takes it whole: C's hexadecimal (0x1.8p3) or decimal; its digits before
# and after the point, and its exponent.
_HEX = re.compile(r"[+-]?0[xX](?P<whole>[0-9a-fA-F]*)\.?(?P<part>[0-9a-fA-F]*)"
                  r"(?:[pP](?P<exponent>[+-]?[0-9]+))?")
_DECIMAL = re.compile(r"[+-]?(?P<whole>[0-9]*)\.?(?P<part>[0-9]*)"
                      r"(?:[eE](?P<exponent>[+-]?[0-9]+))?")


def judgments(table: Table, grades: np.ndarray, keep_dictionary: bool = False
              ) -> tuple[Qrels, np.ndarray]:
    """Distinct (field 0, field 2) pairs of ``table`` with the largest of their ``grades``,
    and the judgment of each row. ``keep_dictionary``: the Qrels hands over the dictionary
    that found them (:meth:`Qrels.dictionary`), keyed by the qid's trec_eval place."""
    qid_dict = Dictionary()
    qid = qid_dict.add(table.column(0))
    qids = [to_text(q) for q in qid_dict.strings()]
    doc_dict = Dictionary(len(qid_dict))
    code = doc_dict.add(table.column(2), sorted_positions(qids)[qid])
    best = np.full(len(doc_dict), -np.inf)
    np.maximum.at(best, code, grades)
    first = np.flatnonzero(first_seen(code))  # in code order
    return Qrels(table.path, qids, qid[first], table.column(2).take(first).compact(), best,
                 len(code) - len(first), [doc_dict] if keep_dictionary else []), code


def read_qrels(path: str, notes: list[str] | None = None) -> Qrels:
    """Read a trec_eval qrels file (plain, gzip or ``-``); bad lines raise InputError."""
    table = split(path, (0, 2, 3), (4,), QRELS_FORMAT)
    return judgments(table, read_grades(table, notes=notes), keep_dictionary=True)[0]


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

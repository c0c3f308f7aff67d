"""Grades of qrels lines (contract §1): a finite number within a 32-bit signed integer's range,
its integer part as trec_eval's measures read it kept exact, and a note where trec_eval's own
atol reads another integer. Each function works on the rows of one table, the whole file's or
a window's (:func:`rpp_cli.io.qrels.read_qrels` reads a window at a time)."""
from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np

from ..core import Column, Table
from ..errors import InputError

# contract §1: a grade is a number within a 32-bit signed integer's range (trec_eval's measures
# read its integer part; larger ones made pytrec_eval allocate a buffer per level up to it).
GRADE_MIN, GRADE_MAX = -(1 << 31), (1 << 31) - 1


def read_grades(table: Table, exit_code: int = 2, notes: list[str] | None = None
                ) -> np.ndarray:
    """Field 3 of ``table`` as float64 grades; the first grade that is not a finite number or
    lies outside [GRADE_MIN, GRADE_MAX] is an InputError naming its line. ``notes``: where to
    say that a grade reads otherwise to trec_eval (:func:`atol_rows`)."""
    grades = table.floats(3, "grade")
    bad = out_of_range(table, grades, exit_code)
    if bad is not None:
        raise bad
    grades = integer_parts_kept(table, grades)
    if notes is not None:
        rows = atol_rows(table, grades)
        if len(rows):
            notes.append(atol_note(*atol_first(table, grades, rows), len(rows) - 1))
    return grades


def out_of_range(table: Table, grades: np.ndarray, exit_code: int = 2) -> InputError | None:
    """The error for the first of ``grades`` (field 3 of ``table``) outside [GRADE_MIN,
    GRADE_MAX], naming its line; None when every one is within."""
    bad = np.flatnonzero((grades < GRADE_MIN) | (grades > GRADE_MAX))
    if not len(bad):
        return None
    row = int(bad[0])
    return InputError(f"grade '{table.column(3).text(row)}' is out of range (grades are "
                      f"numbers from {GRADE_MIN} to {GRADE_MAX})", table.path,
                      table.line(row), exit_code=exit_code)


def integer_parts_kept(table: Table, grades: np.ndarray) -> np.ndarray:
    """``grades`` (field 3 of ``table``) with their integer parts those of the numbers
    written (:func:`_integer_parts_kept`)."""
    return _integer_parts_kept(table.column(3), grades)


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


def atol_rows(table: Table, grades: np.ndarray) -> np.ndarray:
    """The rows whose grade is written with an exponent or in hexadecimal and which trec_eval's
    atol, stopping at the first byte that is not a digit, reads as another integer than the
    one rpp's trec_eval measures use (``1e3``: 1000 here, 1 to trec_eval; ``0x2``: 2 and 0)."""
    long = np.flatnonzero(table.column(3).lens >= 3)  # 1e3, 0x2: no shorter text has either
    if not len(long):
        return long
    grid = table.column(3).take(long).grid()
    marked = np.isin(grid, np.frombuffer(b"eExX", dtype=np.uint8)).any(axis=1)
    rows = long[marked]
    atol = _c_atols(grid[marked])
    return rows[atol != np.trunc(grades[rows])]


def atol_first(table: Table, grades: np.ndarray, rows: np.ndarray
               ) -> tuple[str, int, str, int, int]:
    """What :func:`atol_note` says of the first of ``rows`` (:func:`atol_rows`): the file, its
    line, its grade's text, the integer rpp's measures use, and trec_eval's atol of it."""
    col, first = table.column(3), int(rows[0])
    digits = re.match(rb"[+-]?[0-9]*", col.bytes(first)).group()  # the one shown, exactly,
    first_atol = max(-2 ** 63, min(2 ** 63 - 1, int(digits) if digits.strip(b"+-") else 0))
    # and saturated to a long, as C's atol
    return (table.path, table.line(first), col.text(first), math.trunc(grades[first]),
            first_atol)


def atol_note(path: str, line: int, text: str, integer: int, atol: int, others: int) -> str:
    """The note on a grade trec_eval's atol reads otherwise (:func:`atol_first`), and on
    ``others`` more such grades."""
    more = "" if not others else "; so does 1 more grade" if others == 1 else \
        f"; so do {others} more grades"
    return (f"{path}:{line}: grade '{text}' is the number it writes, {integer} to trec_eval's "
            f"measures here, where trec_eval itself reads {atol} (its atol stops at the first "
            f"byte that is not a digit){more}")


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


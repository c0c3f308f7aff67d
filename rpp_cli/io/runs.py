"""Run files (contract §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score."""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core import Column, Dictionary
from ..core.table import Growing, GrowingColumn, packed_column, packed_starts, split_stream
from ..errors import InputError, shown

RUN_FORMAT = "run: qid Q0 docno rank score [tag]"


@dataclass
class Run:
    """One system's retrieved lists, as columns in file order: only what is kept of the
    file (its bytes are read a window at a time and let go). A row costs its docno's bytes,
    2 bytes of docno length and 8 of score; its query is kept per stretch of rows with one
    qid (a run lists a query's rows together)."""

    path: str
    tag: str | None  # the tag of the first line, if it has one
    qid_stretches: np.ndarray  # (S,) int32 index into qid_values of each stretch of rows
    stretch_starts: np.ndarray  # (S,) int64 first row of each stretch, ascending from 0
    qid_values: list[bytes]  # distinct qids of the file, in order of first appearance
    docno_bytes: bytearray  # the docnos back to back, in file order
    docno_lens: np.ndarray  # (rows,) uint16 their lengths
    score: np.ndarray
    lines: "LineNumbers"  # each row's line in the file (for messages)
    rank: Column | None = None  # the rank column as text (only `rpp ndeval` orders by it)
    untagged: int | None = None  # the first row without a 6th field (ndeval needs every tag)

    def __len__(self) -> int:
        return len(self.score)

    def line(self, row: int) -> int:
        return self.lines.line(row)

    @cached_property
    def docno(self) -> Column:
        """The docnos as a Column (offsets summed once, on first use)."""
        return packed_column(self.docno_bytes, self.docno_lens)

    def per_row(self, values: np.ndarray) -> np.ndarray:
        """``values[q]`` for every row, q its qid's index in qid_values (one value a qid)."""
        counts = np.diff(self.stretch_starts, append=len(self))
        return np.repeat(values[self.qid_stretches], counts)

    @property
    def qid_codes(self) -> np.ndarray:
        """(rows,) int32 index into qid_values of each row."""
        return self.per_row(np.arange(len(self.qid_values), dtype=np.int32))

    def docno_line(self) -> Callable[[int], int]:
        """The line of the row whose docno is at an offset in :attr:`docno_bytes`, for
        messages once the rows are reordered (keeps the lengths and lines, not the run)."""
        lens, lines = self.docno_lens, self.lines
        return lambda offset: lines.line(int(np.searchsorted(packed_starts(lens), offset)))


@dataclass
class LineNumbers:
    """The 1-based line of every row of a file, as the rows where ``line - row`` changes
    (blank and comment lines): one entry for a file without them."""

    rows: np.ndarray  # int64, first row of each stretch, ascending
    skipped: np.ndarray  # int64, lines before that row that are not rows

    def line(self, row: int) -> int:
        k = int(np.searchsorted(self.rows, row, side="right")) - 1
        return row + 1 + int(self.skipped[k])


def read_run(path: str, keep_rank: bool = False, threads: int = 1) -> Run:
    """Read one run file (plain, gzip or ``-``); malformed lines raise InputError.

    The file is split a window at a time (:func:`split_stream`, ``threads`` windows side by
    side) and each piece coded into the arrays kept, so memory is what is kept plus a few
    windows, gzip or not. A bad score is raised after the whole file is split, as when the
    file was read whole: the tokenizer's errors come first. ``keep_rank`` also keeps the rank
    column (as text), which only ndeval's ordering needs.
    """
    fields = (0, 2, 3, 4, 5) if keep_rank else (0, 2, 4, 5)
    qids = Dictionary()
    stretch_qid, stretch_at = Growing(np.int32), Growing(np.int64)  # stretches of one qid
    score = Growing(np.float64)
    at, skipped = Growing(np.int64), Growing(np.int64)  # LineNumbers' stretches
    docno, rank = GrowingColumn(), GrowingColumn()
    tag, untagged, rows, bad, last, last_qid = None, None, 0, None, -1, -1
    for table in split_stream(path, fields, (5, 6), RUN_FORMAT, threads):
        if bad is not None or len(table) == 0:
            continue
        try:
            score.append(table.floats(4, "score"))
        except InputError as err:
            bad = err
            continue
        if rows == 0 and table.nfields[0] == 6:
            tag = table.column(5).text(0)  # only the first line's tag names the run
        short = np.flatnonzero(table.nfields < 6)
        if untagged is None and len(short):
            untagged = rows + int(short[0])
        code = qids.add(table.column(0))
        new = np.flatnonzero(np.diff(code, prepend=last_qid))
        stretch_qid.append(code[new])
        stretch_at.append(new + rows)
        last_qid = int(code[-1])
        docno.append(table.column(2))
        if keep_rank:
            rank.append(table.column(3))
        if table.lines_in != len(table) or table.line0 - rows != last:  # else: as before
            gap = table.lines(np.arange(len(table))) - np.arange(len(table)) - 1 - rows
            change = np.flatnonzero(np.diff(gap, prepend=last))
            at.append(change + rows)
            skipped.append(gap[change])
            last = int(gap[-1])
        rows += len(table)
    if bad is not None:
        raise bad
    return Run(path, tag, stretch_qid.array(), stretch_at.array(), qids.strings(),
               docno.data.buffer, docno.lens.array(), score.array(),
               LineNumbers(at.array(), skipped.array()), rank.column() if keep_rank else None,
               untagged)


NAME_SOURCES = ("file", "tag")  # --names-from: what names a run when --name does not


def name_runs(runs: list, given: Sequence[str | None] = (), source: str = "file") -> list[str]:
    """Display names (contract §1): a run's name never depends on the other runs of the
    command. ``given[i]`` (--name) names run i; a run without one is named by ``source``: its
    file name less ``.gz`` (``-`` for stdin), or its tag (the 6th field of its first line).

    A name is one printable token (no whitespace, no control character): it must not be able
    to add a field or a line to the output, nor reach a terminal raw. Two runs with one name
    are an error naming both files.
    """
    if given and len(given) != len(runs):
        raise InputError(f"--name given {len(given)} times for {len(runs)} runs: name every "
                         "run, in order")
    given = given or [None] * len(runs)
    names = [g if g is not None else _name_by(run, source) for run, g in zip(runs, given)]
    for run, name, g in zip(runs, names, given):
        if not _TOKEN.fullmatch(name) or not name.isprintable():
            why = "--name" if g is not None else f"its {_SOURCE_WORDS[source]}"
            raise InputError(f"run name '{shown(name)}' (from {why}) is not one printable token "
                             "without spaces; set names with --name", path=run.path)
    first: dict[str, int] = {}
    for r, name in enumerate(names):
        if name in first:
            raise InputError(_collision(runs[first[name]], runs[r], name, source))
        first[name] = r
    return names


_SOURCE_WORDS = {"file": "file name", "tag": "tag"}


def _name_by(run, source: str) -> str:
    """The name ``source`` gives ``run`` (anything with a path and a tag); a tag it does not
    have is an InputError."""
    if source == "file":
        return file_name(run.path)
    if run.tag is None:
        raise InputError("no tag (6th field of the first line) to name the run by: name it "
                         "with --name, or by file names (--names-from file)", path=run.path)
    return run.tag


def _collision(a, b, name: str, source: str) -> str:
    """The error for two runs with one name: both files, and the way out."""
    if a.path == b.path:
        return f"{a.path} is given twice: give each run once, or name each copy with --name"
    other = "file" if source == "tag" else "tag"
    return (f"runs {a.path} and {b.path} are both named '{name}': name every run with --name "
            f"(once per run, in order), or by {_SOURCE_WORDS[other]}s with --names-from {other}")


_TOKEN = re.compile(r"[^\s\x00-\x1f\x7f]+")


def file_name(path: str) -> str:
    """A run's file name, less ``.gz`` (``-`` for stdin): its name by default."""
    base = os.path.basename(path)
    return base[:-3] if base.endswith(".gz") and len(base) > 3 else base

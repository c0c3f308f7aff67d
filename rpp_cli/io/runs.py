"""Run files (contract §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score."""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from ..core import Column, Dictionary
from ..core.table import Growing, Table, packed_column, packed_starts, split_stream
from ..errors import InputError, shown
from .held import LongQuery, Pending
from .qrels import to_text

RUN_FORMAT = "run: qid Q0 docno rank score [tag]"


@dataclass
class Run:
    """One system's retrieved lists, or a batch of whole queries of them (:class:`RunStream`),
    as columns in file order: only what is kept of the file (its bytes are read a window at a
    time and let go). A row costs its docno's bytes, 2 bytes of docno length and 8 of score;
    its query is kept per stretch of rows with one qid (a run lists a query's rows together)."""

    path: str
    tag: str | None  # the tag of the first line, if it has one
    qid_stretches: np.ndarray  # (S,) int32 index into qid_values of each stretch of rows
    stretch_starts: np.ndarray  # (S,) int64 first row of each stretch, ascending from 0
    qid_values: list[bytes]  # distinct qids of the file, in order of first appearance
    docno_bytes: bytearray  # the docnos back to back, in file order
    docno_lens: np.ndarray  # (rows,) uint16 their lengths
    score: np.ndarray
    lines: "LineNumbers"  # each file row's line (for messages)
    rank: Column | None = None  # the rank column as text (only `rpp ndeval` orders by it)
    untagged: int | None = None  # the first row without a 6th field (ndeval needs every tag)
    first_rows: np.ndarray | None = None  # (S,) int64 file row of each stretch's first row
    # (None: the rows are the whole file's, first_rows is stretch_starts)
    docno_starts: np.ndarray | None = None  # (rows,) int64 ascending offsets of the docnos in
    # docno_bytes, for a part that shares its batch's buffer (None: back to back)

    def __len__(self) -> int:
        return len(self.score)

    def line(self, row: int) -> int:
        return self.lines.line(self.file_row(row))

    def file_row(self, row: int) -> int:
        """The row of the file that is row ``row`` here."""
        return _file_row(self.stretch_starts, self.first_rows, row)

    @cached_property
    def docno(self) -> Column:
        """The docnos as a Column (offsets summed once, on first use)."""
        if self.docno_starts is not None:
            return Column(self.docno_bytes, self.docno_starts, self.docno_lens.astype(np.int32))
        return packed_column(self.docno_bytes, self.docno_lens)

    def per_row(self, values: np.ndarray) -> np.ndarray:
        """``values[q]`` for every row, q its qid's index in qid_values (one value a qid)."""
        return self.stretched(values[self.qid_stretches])

    def stretched(self, per_stretch: np.ndarray) -> np.ndarray:
        """One value a stretch, repeated for each of its rows."""
        return np.repeat(per_stretch, np.diff(self.stretch_starts, append=len(self)))

    def by_queries(self, rows: int) -> Iterator["Run"]:
        """The run as runs of whole queries of about ``rows`` rows each (itself when it is
        not much larger), in order of the queries' first rows. Each part reads its docnos in
        this run's buffer (no byte is copied; its offsets ascend, as a part's stretches keep
        their file order), so a run held whole (standard input) is joined a part at a time,
        with the join's own arrays those of a part, not of the file."""
        if len(self) <= 2 * rows or self.docno_starts is not None:
            yield self
            return
        length = np.diff(self.stretch_starts, append=len(self))  # rows of each stretch
        stretch_bytes = np.add.reduceat(self.docno_lens, self.stretch_starts, dtype=np.int64)
        byte_at = np.cumsum(stretch_bytes) - stretch_bytes
        qid = self.qid_stretches
        per_qid = np.bincount(qid, weights=length).astype(np.int64)  # rows of each qid
        group = ((np.cumsum(per_qid) - per_qid) // rows)[qid]  # of each stretch
        order = np.argsort(group, kind="stable")  # the stretches of group 0, 1, ... in order
        cuts = np.searchsorted(group[order], np.arange(int(group.max()) + 2))
        first = self.stretch_starts if self.first_rows is None else self.first_rows
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            sel = order[lo:hi]
            if len(sel) == 0:
                continue
            n = length[sel]
            into = np.cumsum(n) - n  # where each stretch starts in the part
            row = np.repeat(self.stretch_starts[sel] - into, n) + np.arange(int(n.sum()))
            lens = self.docno_lens[row]
            within = np.cumsum(lens, dtype=np.int64) - lens
            within -= np.repeat(within[into], n)
            starts = np.repeat(byte_at[sel], n) + within
            yield Run(self.path, self.tag, qid[sel], into, self.qid_values, self.docno_bytes,
                      lens, self.score[row], self.lines, first_rows=first[sel],
                      docno_starts=starts)

    @property
    def qid_codes(self) -> np.ndarray:
        """(rows,) int32 index into qid_values of each row."""
        return self.per_row(np.arange(len(self.qid_values), dtype=np.int32))

    def docno_line(self) -> Callable[[int], int]:
        """The line of the row whose docno is at an offset in :attr:`docno_bytes`, for
        messages once the rows are reordered (keeps the lengths and lines, not the run)."""
        starts = packed_starts(self.docno_lens) if self.docno_starts is None \
            else self.docno_starts
        at, first, lines = self.stretch_starts, self.first_rows, self.lines
        return lambda offset: lines.line(_file_row(at, first, int(np.searchsorted(
            starts, offset, side="right")) - 1))


def _file_row(stretch_starts: np.ndarray, first_rows: np.ndarray | None, row: int) -> int:
    """The file row of a run's row ``row`` (see :attr:`Run.first_rows`)."""
    if first_rows is None:
        return row
    k = int(np.searchsorted(stretch_starts, row, side="right")) - 1
    return int(first_rows[k]) + row - int(stretch_starts[k])


class LineNumbers:
    """The 1-based line of every row of a file, as the rows where ``line - row`` changes
    (blank and comment lines): one entry for a file without them. Rows are added as the
    file is read; a row's line is known once it is. A join thread may ask for a line (a
    repeated docno's message) while the reader adds rows: a lock keeps the two apart (a view
    of the buffers stops them growing: the reader's append raised BufferError)."""

    def __init__(self) -> None:
        self._rows, self._skipped = Growing(np.int64), Growing(np.int64)
        self._last = -1  # skipped lines before the last row added
        self._lock = threading.Lock()

    def add(self, table: Table, row0: int) -> None:
        """Note the lines of ``table``'s rows, the file's rows row0, row0 + 1, ..."""
        if table.lines_in == len(table):  # no blank or comment line: one gap, no line counted
            if table.line0 - row0 != self._last:
                with self._lock:
                    self._rows.append(np.array([row0]))
                    self._skipped.append(np.array([table.line0 - row0]))
                self._last = table.line0 - row0
            return
        gap = table.lines(np.arange(len(table))) - np.arange(len(table)) - 1 - row0
        change = np.flatnonzero(np.diff(gap, prepend=self._last))
        with self._lock:
            self._rows.append(change + row0)
            self._skipped.append(gap[change])
        self._last = int(gap[-1])

    def line(self, row: int) -> int:
        with self._lock:  # the views are let go before the lock is
            k = int(np.searchsorted(self._rows.array(), row, side="right")) - 1
            return row + 1 + int(self._skipped.array()[k])


# Rows of whole queries a RunStream gathers before it hands them on: each batch is joined
# at once, so this sets what a reader holds (some 10 MB of rows, and the batch's join)
# against a cost per batch (bench/LOG.md and, on tall-deep, bench/measured/
# tall-deep-dictionary-breakdown-2026-12-02.json have the trade measured).
BATCH_ROWS = 1 << 18
# Rows of one query past which a joined RunStream holds it in compact form (held.LongQuery):
# its repeats are then found as they are read, and a query that never ends costs its
# distinct docnos, not its rows as they came (about 43 MB of rows held before the switch).
LONG_ROWS = 1 << 20


class RunStream:
    """A run file (plain, gzip or ``-``) split a window at a time and handed on as batches of
    whole queries, so that the caller can join each batch and let its docnos go.

    Iterating yields :class:`Run` batches; ``qid_values``, ``tag``, ``untagged``, ``lines``
    and :meth:`broken_qids` describe the whole file once the iteration ends. With ``eager``,
    a batch is handed on as soon as its queries are closed: every stretch of them comes
    before every stretch of a query still open (so a batch's lines all come before the next
    batch's). A query already handed on that has rows again is *broken*: its later rows are
    dropped, and the caller reads them all again (a file that does not list each query's
    rows together). Without ``eager``, the whole file is one batch. ``query(qids) -> ints``
    (new qids' bytes; >= 0 kept, -1 dropped) drops the rows nobody evaluates as they are read.

    The first malformed line (the tokenizer's, or a bad score) raises InputError as soon as
    it is read. With ``joined`` (the caller joins what it gets and finds a batch's repeated
    docnos), the rows held are handed on first, so that a repeat in them comes first, and a
    query of LONG_ROWS rows is held in compact form (:class:`LongQuery`, handed on once the
    file moves on, or at the end), a docno it repeats an InputError at once unless ``dedup``.
    :meth:`stop` ends the reading early (the caller found an error): what is held is handed
    on."""

    def __init__(self, path: str, keep_rank: bool = False, threads: int = 1,
                 query: Callable[[list[bytes]], Sequence[int]] | None = None,
                 eager: bool = False, joined: bool = False, dedup: bool = False) -> None:
        self.path, self.keep_rank, self.threads, self.eager = path, keep_rank, threads, eager
        self.joined, self.dedup = joined, dedup
        self._query = query
        self._qids = Dictionary()
        self._known = 0  # qid codes noted below (the arrays have room for more)
        self._query_of = np.zeros(0, dtype=np.int64)  # query(qid) of each qid code (0: none)
        self._state = np.zeros(0, dtype=np.uint8)  # each qid code: WAITING, HANDED, ...
        self._held = np.zeros(0, dtype=np.int64)  # each qid code: its rows held as rows
        self._long: dict[int, LongQuery] = {}  # the LONG qid codes' compact rows
        self._last_qid = -1  # the qid code of the last row read
        self._stopped = False
        self.tag: str | None = None
        self.untagged: int | None = None
        self.lines = LineNumbers()
        self.rows = 0  # rows of the file read so far

    @property
    def qid_values(self) -> list[bytes]:
        """The distinct qids of the file so far, in order of first appearance."""
        return self._qids.strings()

    def query_of(self, codes: np.ndarray) -> np.ndarray:
        """int64 ``query(qid)`` of these qid codes (0 without ``query``)."""
        return self._query_of[codes]

    def dropped(self) -> int:
        """The qids so far whose rows ``query`` dropped (-1)."""
        return int((self._query_of[:self._known] < 0).sum())

    def broken_qids(self) -> frozenset[bytes]:
        """The qids handed on in a batch and then met again (their later rows dropped)."""
        return frozenset(self._qids.strings(np.flatnonzero(self._state[:self._known] == BROKEN)))

    def stop(self) -> None:
        """Read no further than the window being read: hand on the rows held, then end."""
        self._stopped = True

    def __iter__(self) -> Iterator[Run | LongQuery]:
        fields = (0, 2, 3, 4, 5) if self.keep_rank else (0, 2, 4, 5)
        pending = Pending(self.keep_rank)
        check_at, failed = BATCH_ROWS, None
        try:
            for table in split_stream(self.path, fields, (5, 6), RUN_FORMAT, self.threads,
                                      floats=(4, "score"), partial=True):
                if self._stopped:
                    break
                failed = table.failed
                try:
                    score = table.floats(4, "score") if len(table) else None
                except InputError as err:  # the rows before it are held (and checked) first
                    failed, table = err, table.head(_rows_before(table, err.line))
                    score = table.floats(4, "score")
                if len(table) and self._hold(table, score, pending):  # (may raise a repeat)
                    check_at = len(pending) + BATCH_ROWS  # a long query's rows left
                if failed is not None or self._stopped:
                    break
                if self.eager:
                    yield from self._moved_on()
                if self.eager and len(pending) >= check_at:
                    batch = pending.closed()
                    if batch is None:
                        check_at = 2 * len(pending)  # cuts seldom met: checks stay linear
                        continue
                    self._state[batch.qid_stretches] = HANDED
                    check_at = len(pending) + BATCH_ROWS
                    yield self._batch(batch)
        except InputError as err:  # the source's own, or a long query's repeat
            failed = err
        if failed is not None or self._stopped:
            if self.joined and len(pending):
                yield self._batch(pending.all())
            if failed is not None:
                raise failed
            return
        if len(pending):
            yield self._batch(pending.all())
        for qid in list(self._long):
            yield self._long.pop(qid)

    def _hold(self, table: Table, score: np.ndarray, pending: Pending) -> bool:
        """Note ``table``'s rows and hold those kept: a long query's in its compact form,
        others in ``pending``; a query with LONG_ROWS rows held becomes long (``joined``:
        True when one did). A repeat a long query meets raises, the earliest if several do
        (after ``pending`` took its rows: the caller hands them on to be checked too)."""
        rows = self.rows
        self.rows += len(table)
        self.lines.add(table, rows)
        if rows == 0 and table.nfields[0] == 6:
            self.tag = table.column(5).text(0)  # only the first line's tag names the run
        short = np.flatnonzero(table.nfields < 6)
        if self.untagged is None and len(short):
            self.untagged = rows + int(short[0])
        code = self._qids.add(table.column(0))
        self._new_qids()
        new = np.flatnonzero(np.diff(code, prepend=self._last_qid))  # rows starting a stretch
        self._last_qid = pending.open = int(code[-1])
        again = code[new]
        self._state[again[self._state[again] == HANDED]] = BROKEN
        keep = (self._query_of[code] >= 0) & (self._state[code] != BROKEN)
        longs = [q for q in self._long if (code == q).any()]
        for qid in longs:
            keep[code == qid] = False
        kept = np.flatnonzero(keep)  # a stretch is kept or dropped whole
        grown = []
        if len(kept):
            starts = np.zeros(len(table), dtype=bool)
            starts[new] = True
            new = np.flatnonzero(starts[kept])
            pending.add(table, kept, score, code, new, rows)
            if self.joined:  # the rows of each qid held (the first may go on a stretch)
                seg = new if len(new) and new[0] == 0 else np.concatenate(([0], new))
                qid = code[kept[seg]]
                np.add.at(self._held, qid, np.diff(seg, append=len(kept)))
                grown = sorted(set(qid[self._held[qid] >= LONG_ROWS].tolist()))
        repeats = []
        for qid in longs:
            mine = np.flatnonzero(code == qid)
            first = np.flatnonzero(np.diff(mine, prepend=-2) != 1)  # each stretch's first
            repeats.append(self._add_long(self._long[qid], table.column(2).take(mine),
                                          score[mine], rows + mine[first],
                                          np.diff(first, append=len(mine))))
        for qid in grown:
            long = self._long[qid] = LongQuery(qid, int(self._query_of[qid]), self.dedup)
            self._state[qid] = LONG
            repeats.append(self._add_long(long, *pending.extract(qid)))
        found = [err for err in repeats if err is not None]
        if found:
            raise min(found, key=lambda err: err.line)
        return bool(grown)

    def _add_long(self, long: LongQuery, docno: Column, score: np.ndarray,
                  first_rows: np.ndarray, lengths: np.ndarray) -> InputError | None:
        """Add rows to a long query (:meth:`LongQuery.add`): the error of a repeated docno."""
        repeat = long.add(docno, score, first_rows, lengths)
        if repeat is None:
            return None
        row, first, text = repeat
        qid = to_text(self._qids.strings(np.array([long.qid]))[0])
        return repeat_error(self.path, text, qid, self.lines.line(first), self.lines.line(row))

    def _moved_on(self) -> Iterator[LongQuery]:
        """The long queries that the file has left (eager): handed on, for good."""
        for qid in [q for q in self._long if q != self._last_qid]:
            self._state[qid] = HANDED
            yield self._long.pop(qid)

    def _new_qids(self) -> None:
        """Note the query of the qids added since the last call (the per-qid arrays grow by
        doubling: a file of a million one-line queries costs linear time)."""
        known, n = self._known, len(self._qids)
        if known == n:
            return
        added = self._qids.strings(np.arange(known, n))
        self._query_of = _room(self._query_of, n)
        self._query_of[known:n] = self._query(added) if self._query else 0
        self._state = _room(self._state, n)
        self._held = _room(self._held, n)
        self._known = n

    def _batch(self, run: Run) -> Run:
        run.path = self.path
        run.qid_values = self.qid_values if self._query is None else []
        run.tag, run.untagged, run.lines = self.tag, self.untagged, self.lines
        return run


WAITING, HANDED, BROKEN, LONG = 0, 1, 2, 3  # a qid's state in a RunStream


def _room(array: np.ndarray, n: int) -> np.ndarray:
    """``array``, or a copy of it with room for at least ``n`` values (new ones 0)."""
    if len(array) >= n:
        return array
    grown = np.zeros(max(n, 2 * len(array)), dtype=array.dtype)
    grown[:len(array)] = array
    return grown


def _rows_before(table: Table, line: int) -> int:
    """The rows of ``table`` on lines before ``line``."""
    return int(np.searchsorted(table.lines(np.arange(len(table))), line))


def repeat_error(path: str, docno: str, qid: str, first_line: int, line: int) -> InputError:
    """The error for a docno that a query of a run lists twice (without --dedup)."""
    return InputError(f"docno '{docno}' repeated in query {qid} (first at line {first_line}); "
                      "use --dedup to keep the best-scored copy", path, line)


def read_run(path: str, keep_rank: bool = False, threads: int = 1) -> Run:
    """Read one run file (plain, gzip or ``-``) whole; malformed lines raise InputError.

    The file is split a window at a time (:class:`RunStream`, ``threads`` windows side by
    side) and each piece coded into the arrays kept, so memory is what is kept plus a few
    windows, gzip or not. ``keep_rank`` also keeps the rank column (as text), which only
    ndeval's ordering needs.
    """
    stream = RunStream(path, keep_rank, threads)
    run = next(iter(stream))  # the whole file is one batch; an empty file is an error
    run.path, run.first_rows = path, None
    return run


NAME_SOURCES = ("file", "stem", "tag")  # --names-from: what names a run when --name does not


def name_runs(runs: list, given: Sequence[str | None] = (), source: str = "file") -> list[str]:
    """Display names (contract §1). ``given[i]`` (--name) names run i; a run without one is
    named by ``source``: ``file``, its file name less ``.gz`` (``-`` for stdin), and where runs
    share a file name, the shortest trailing part of each path that tells them apart
    (``ql/results-cata.txt``, ``rm/results-cata.txt``); ``stem``, the same less the extension
    that every such name shares (``.run``, ``.txt``), if they share one; ``tag``, the 6th field
    of its first line. So a run's name depends on the other runs only where they share its
    file name.

    A name is printable text (spaces allowed; no tab, newline or other control character): it
    must not be able to add a field or a line to the output, nor reach a terminal raw. Two
    runs that still share a name are an error naming both files and the way out.
    """
    if given and len(given) != len(runs):
        times = "once" if len(given) == 1 else f"{len(given)} times"
        raise InputError(f"--name given {times} for {len(runs)} runs: name every run, in "
                         "order")
    given = list(given) or [None] * len(runs)
    unnamed = [r for r, g in enumerate(given) if g is None]
    if source == "tag":
        found = [_tag(runs[r]) for r in unnamed]
    else:
        found = _distinct_file_names([runs[r].path for r in unnamed])
        if source == "stem":
            found = _without_shared_extension(found)
    names = list(given)
    for r, name in zip(unnamed, found):
        names[r] = name
    for run, name, g in zip(runs, names, given):
        if not name or not name.isprintable():
            why = "--name" if g is not None else f"its {_SOURCE_WORDS[source]}"
            raise InputError(f"run name '{shown(name)}' (from {why}) is not printable text (a "
                             "tab, a newline or another control character); set names with "
                             "--name", path=run.path)
    first: dict[str, int] = {}
    for r, name in enumerate(names):
        if name in first:
            raise InputError(_collision(runs[first[name]], runs[r], name, source))
        first[name] = r
    return names


_SOURCE_WORDS = {"file": "file name", "stem": "file name", "tag": "tag"}


def _tag(run) -> str:
    """The run's tag; a tag it does not have is an InputError."""
    if run.tag is None:
        raise InputError("no tag (6th field of the first line) to name the run by: name it "
                         "with --name, or by file names (--names-from file)", path=run.path)
    return run.tag


def _distinct_file_names(paths: list[str]) -> list[str]:
    """:func:`file_name` of each path; where several paths share one, the shortest trailing
    part of each path (whole folders, the file name less ``.gz``) that no other of them ends
    with. The same path twice keeps one name (an error for the caller)."""
    names = [file_name(path) for path in paths]
    groups: dict[str, list[int]] = {}
    for i, name in enumerate(names):
        groups.setdefault(name, []).append(i)
    for group in groups.values():
        parts = {i: _path_parts(paths[i]) for i in group}
        if len(group) < 2 or len({tuple(p) for p in parts.values()}) < 2:
            continue
        for i in group:
            k = next((k for k in range(2, len(parts[i]) + 1)
                      if all(parts[j][-k:] != parts[i][-k:] for j in group if j != i)),
                     len(parts[i]))  # a path that ends another: all of it
            names[i] = "/".join(parts[i][-k:])
    return names


def _path_parts(path: str) -> list[str]:
    """The folders and file name (less ``.gz``) of ``path``, normalised (``./a//b``: a, b)."""
    parts = [p for p in os.path.normpath(path).split(os.sep) if p]
    return [*parts[:-1], file_name(path)]


def _without_shared_extension(names: list[str]) -> list[str]:
    """``names`` less the extension (``.run``) that all of them end with, if they share one
    and it leaves every name something."""
    exts = {os.path.splitext(name)[1] for name in names}
    if len(exts) != 1 or not (ext := exts.pop()) or any(len(n) == len(ext) for n in names):
        return names
    return [name[:-len(ext)] for name in names]


def _collision(a, b, name: str, source: str) -> str:
    """The error for two runs with one name: both files, and the way out."""
    if a.path == b.path:
        return f"{a.path} is given twice: give each run once, or name each copy with --name"
    other = "file" if source == "tag" else "tag"
    return (f"runs {a.path} and {b.path} are both named '{name}': name every run with --name "
            f"(once per run, in order), or by {_SOURCE_WORDS[other]}s with --names-from {other}")


def file_name(path: str) -> str:
    """A run's file name, less ``.gz`` (``-`` for stdin): its name by default."""
    base = os.path.basename(path)
    return base[:-3] if base.endswith(".gz") and len(base) > 3 else base

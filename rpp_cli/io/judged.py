"""Judgments as integer codes and bytes, without an object per line (contract §1).

:class:`JudgedLines` holds the lines of a qrels file as it is read a window at a time (a qid
code, the docno's bytes and length, the grade) and turns them into the distinct (qid, docno)
pairs, each with its largest grade. The pairs are grouped by query (qid codes ascending, a
query's pairs in order of their first line), so that the pairs of a run of whole queries lie
together: a *chunk*, what one exact dictionary codes at once. :class:`JudgedIndex` is the
pairs' (query, docno) -> code dictionary, built a chunk at a time when a lookup first needs
it: a run that ranks a few queries costs the dictionaries of those queries, not of the file.
"""
from __future__ import annotations

import threading
from concurrent.futures import Executor

import numpy as np

from ..core import Column, Dictionary, first_seen
from ..core import _kernel
from ..core.table import Growing, GrowingColumn, packed_starts
from ..engine.threads import map_ordered

# Pairs coded by one dictionary (a chunk of whole queries; a longer query is a chunk alone).
CHUNK_ROWS = 1 << 16
# Rows moved at once when lines are dropped in place (the largest copy besides the arrays).
BLOCK_ROWS = 1 << 16


def chunk_cuts(bounds: np.ndarray, rows: int | None = None) -> np.ndarray:
    """The first query of each chunk, then the number of queries: runs of whole queries of
    about ``rows`` (CHUNK_ROWS) rows each, ``bounds`` (Q + 1,) being the offsets of each
    query's rows."""
    rows = CHUNK_ROWS if rows is None else rows
    at = np.searchsorted(bounds, np.arange(0, int(bounds[-1]), rows), side="right") - 1
    return np.unique(np.concatenate(([0], at, [len(bounds) - 1])))


def chunk_bytes(lens: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """(K + 1,) offsets of the chunks' bytes, their first rows ``starts`` (K + 1,) into rows
    of byte lengths ``lens`` stored back to back (summed a chunk at a time: no array as
    long as ``lens`` is made)."""
    sums = [int(lens[lo:hi].sum(dtype=np.int64)) for lo, hi in zip(starts[:-1], starts[1:])]
    return np.cumsum([0, *sums], dtype=np.int64)


def code_chunk(data: bytearray | bytes, lens: np.ndarray, bounds: np.ndarray, first: int,
               last: int, byte0: int) -> tuple[Dictionary, np.ndarray]:
    """A dictionary of the rows of queries first..last-1 (rows bounds[first]:bounds[last],
    their docnos from ``byte0`` on in ``data``), keyed by the query's place in the chunk, and
    each row's code (0, 1, ... in order of first appearance)."""
    lo, hi = int(bounds[first]), int(bounds[last])
    part = lens[lo:hi]
    docs = Dictionary(last - first)
    code = docs.add(Column(data, packed_starts(part) + byte0, part.astype(np.int32)),
                    np.repeat(np.arange(last - first), np.diff(bounds[first:last + 1])))
    return docs, code


class JudgedLines:
    """The lines of a qrels file, added a window at a time: the qid code of each stretch of
    lines with one qid, and each line's docno and grade, in one growing buffer each (2 bytes,
    the docno's bytes and 8 a line: what a run's row costs)."""

    def __init__(self) -> None:
        self.stretch_qid, self.stretch_start = Growing(np.int32), Growing(np.int64)
        self.docno = GrowingColumn()
        self.grade = Growing(np.float64)
        self.lines = 0
        self._last = -1  # the qid code of the last line

    def add(self, qid: np.ndarray, docno: Column, grade: np.ndarray) -> None:
        """Hold a window's lines: qid codes (kept per stretch), docnos (copied), grades."""
        new = np.flatnonzero(np.diff(qid, prepend=self._last))
        self.stretch_qid.append(qid[new])
        self.stretch_start.append(new + self.lines)
        self.docno.append(docno)
        self.grade.append(grade)
        self.lines += len(qid)
        if len(qid):
            self._last = int(qid[-1])

    def pairs(self, n_qids: int, threads: int = 1, codes: bool = False
              ) -> tuple[np.ndarray, bytearray, np.ndarray, np.ndarray, int, np.ndarray | None]:
        """The distinct (qid, docno) pairs, taken out of the lines (held no more): the
        offsets of each qid code's pairs (Q + 1,), their docnos (bytes back to back,
        lengths), their largest grades; the lines that repeat a pair; with ``codes``, each
        line's pair (in file order). Lines are grouped by qid first where a qid's lines are
        not together (the one step that copies the docnos); a chunk at a time then finds
        the repeats (``threads`` chunks at once), and the lines that repeat a pair are
        dropped in place."""
        order, bounds = self._group(n_qids)
        cuts = chunk_cuts(bounds)
        lens = self.docno.lens.array()
        byte0 = chunk_bytes(lens, bounds[cuts])
        data = self.docno.data.buffer

        def repeats(k: int) -> tuple[np.ndarray, np.ndarray]:
            """The lines of chunk k that repeat a pair, and the first line of that pair."""
            _, code = code_chunk(data, lens, bounds, int(cuts[k]), int(cuts[k + 1]),
                                 int(byte0[k]))
            first = first_seen(code)
            again = np.flatnonzero(~first)
            lo = int(bounds[cuts[k]])
            return lo + again, lo + np.flatnonzero(first)[code[again]]

        found = map_ordered(repeats, len(cuts) - 1, threads)
        again = np.concatenate([a for a, _ in found] + [np.zeros(0, dtype=np.int64)])
        first = np.concatenate([f for _, f in found] + [np.zeros(0, dtype=np.int64)])
        del lens, found
        code = None
        if codes:
            keep = np.ones(self.lines, dtype=bool)
            keep[again] = False
            code = np.cumsum(keep) - 1
            code[again] = code[first]
            if order is not None:
                code[order] = code.copy()
        if len(again):
            grade = self.grade.array()
            np.maximum.at(grade, first, grade[again])
            del grade
            self._drop(again)
            qid = np.searchsorted(bounds, again, side="right") - 1
            bounds = bounds - np.concatenate(([0], np.cumsum(np.bincount(qid, minlength=n_qids))))
        return (bounds, self.docno.data.buffer, self.docno.lens.array(), self.grade.array(),
                len(again), code)

    def _group(self, n_qids: int) -> tuple[np.ndarray | None, np.ndarray]:
        """Put each qid's lines together, in file order (a stable sort by qid code), where
        they are not: the order taken (line k is file line order[k]) or None, and the
        offsets (Q + 1,) of each qid's lines. A qid per stretch of lines is one stretch per
        qid exactly when every qid's lines are together (codes number qids as they come)."""
        starts = self.stretch_start.array()
        if len(starts) == n_qids:
            return None, np.append(starts, self.lines)
        qid = np.repeat(self.stretch_qid.array(), np.diff(starts, append=self.lines))
        del starts
        order = np.argsort(qid, kind="stable")
        bounds = np.concatenate(([0], np.cumsum(np.bincount(qid, minlength=n_qids))))
        del qid
        lens = self.docno.lens.array()
        data = bytearray(len(self.docno.data.buffer))
        _kernel.gather(self.docno.data.buffer, packed_starts(lens)[order],
                       lens[order].astype(np.int32), data)
        self.docno.data.buffer = data
        for grown in (self.grade, self.docno.lens):
            values = grown.array()[order]
            grown.buffer = bytearray()
            grown.append(values)
        return order, bounds

    def _drop(self, rows: np.ndarray) -> None:
        """Drop lines ``rows`` from the docnos and grades, in place, a block at a time."""
        keep = np.ones(self.lines, dtype=bool)
        keep[rows] = False
        lens, part = self.docno.lens.array(), None
        data, read, write = self.docno.data.buffer, 0, 0
        for lo in range(0, len(lens), BLOCK_ROWS):
            part, kept = lens[lo:lo + BLOCK_ROWS], keep[lo:lo + BLOCK_ROWS]
            moved = bytearray(int(part[kept].sum(dtype=np.int64)))
            _kernel.gather(data, (packed_starts(part) + read)[kept],
                           part[kept].astype(np.int32), moved)
            data[write:write + len(moved)] = moved  # behind what is read: nothing unread lost
            read += int(part.sum(dtype=np.int64))
            write += len(moved)
        del lens, part
        del data[write:]
        for grown in (self.grade, self.docno.lens):
            _drop_rows(grown, keep)
        self.lines -= len(rows)


def _drop_rows(grown: Growing, keep: np.ndarray) -> None:
    """Keep the values of ``grown`` that ``keep`` marks, in place, a block at a time."""
    values, write = grown.array(), 0
    for lo in range(0, len(values), BLOCK_ROWS):
        kept = values[lo:lo + BLOCK_ROWS][keep[lo:lo + BLOCK_ROWS]]
        values[write:write + len(kept)] = kept
        write += len(kept)
    del values
    del grown.buffer[write * grown.dtype.itemsize:]


def by_chunk(chunk: np.ndarray) -> list[tuple[int, np.ndarray]]:
    """(k, the indices of ``chunk`` equal to k, ascending) for every k it holds."""
    order = np.argsort(chunk, kind="stable")
    starts = np.flatnonzero(np.diff(chunk[order], prepend=-1))
    return list(zip(chunk[order[starts]].tolist(), np.split(order, starts[1:])))


class JudgedIndex:
    """The judgments' (query place, docno) -> code dictionary (the interface of
    :class:`~rpp_cli.core.Dictionary`): codes 0..J-1 are the judgments, in their order;
    codes added later (docnos of runs, items judged in subtopic qrels only) come after. It is
    one exact dictionary per chunk of queries (see :func:`chunk_cuts`), each built from the
    judgments' bytes the first time a call needs one of its queries (or, with
    :meth:`build_ahead`, the chunk before it), so the dictionaries cost what the calls touch.
    Safe from several threads (a chunk is coded by one at a time)."""

    def __init__(self, bounds: np.ndarray, data: bytearray | bytes, lens: np.ndarray,
                 place: np.ndarray) -> None:
        """``bounds`` (Q + 1,) the offsets of each qid code's judgments, their docnos
        ``data`` and ``lens`` (back to back), ``place`` (Q,) the key of each qid code."""
        self._bounds, self._data, self._lens = bounds, data, lens
        self._judged = int(bounds[-1])
        self._place = np.asarray(place, dtype=np.int64)
        self._qid_of = np.argsort(self._place)  # key -> qid code
        self._cuts = chunk_cuts(bounds)
        self._first = bounds[self._cuts]  # (K + 1,) first judgment of each chunk
        self._byte0 = chunk_bytes(lens, self._first)
        chunks = len(self._cuts) - 1
        self._maps: list[Dictionary | None] = [None] * chunks
        self._later: list[Growing] = [Growing(np.int64) for _ in range(chunks)]  # the code
        # of each entry of a chunk's dictionary after its judgments
        self._chunk_locks = [threading.Lock() for _ in range(chunks)]
        self._lock = threading.Lock()  # codes added after the judgments; frozen
        self._added_key, self._added_at = Growing(np.int64), Growing(np.int64)  # per added
        # code: its key, and its chunk * 2^32 + its entry in the chunk's dictionary
        self._added = 0
        self._frozen = False
        self._keys: np.ndarray | None = None  # what keys() gave last
        self._ahead: Executor | None = None  # where the next chunk's dictionary is built
        self._asked = np.zeros(chunks + 1, dtype=bool)  # chunks a call has needed (or their
        # dictionary was asked for ahead of it)

    def __len__(self) -> int:
        return self._judged + self._added

    def add(self, col: Column, keys: np.ndarray | None = None) -> np.ndarray:
        """The code of every (key, string) of ``col``, adding the new ones."""
        return self._code(col, keys, "add")[0]

    def add_batch(self, col: Column, keys: np.ndarray, batch: int, threads: int = 1
                  ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`Dictionary.add_batch`: the codes, and a mask of the rows whose code an
        earlier row of a call with this ``batch`` had (chunks coded ``threads`` at once)."""
        return self._code(col, keys, "add", batch, threads)

    def find(self, col: Column, keys: np.ndarray | None = None) -> np.ndarray:
        """The code of every (key, string) of ``col``, -1 where absent."""
        return self._code(col, keys, "find")[0]

    def build_ahead(self, pool: Executor | None) -> None:
        """From now on (until None), when a call first needs chunk k, chunk k + 1's dictionary
        is built on ``pool``: readers that go through the queries in order (a run's lines, most
        often) find it made instead of waiting while one of them makes it. At most one chunk
        beyond those the calls need is built."""
        self._ahead = pool

    def freeze(self) -> None:
        """No more adds (as :meth:`Dictionary.freeze`); lookups allowed."""
        with self._lock:
            self._frozen = True
        for k, lock in enumerate(self._chunk_locks):
            with lock:
                if self._maps[k] is not None:
                    self._maps[k].freeze()

    def keys(self) -> np.ndarray:
        """(len,) int64 key of every code, in code order, read-only: filled a chunk of queries
        at a time, so the only array as long as the judgments is the one returned, and made
        once while no code is added (every caller that asks meanwhile shares it)."""
        with self._lock:
            if self._keys is not None and len(self._keys) == len(self):
                return self._keys
            added = self._added_key.array()
            out = np.empty(self._judged + len(added), dtype=np.int64)
            for q0, q1 in zip(self._cuts[:-1].tolist(), self._cuts[1:].tolist()):
                out[self._bounds[q0]:self._bounds[q1]] = np.repeat(
                    self._place[q0:q1], np.diff(self._bounds[q0:q1 + 1]))
            out[self._judged:] = added
            out.flags.writeable = False
            self._keys = out
            return out

    def strings(self, codes: np.ndarray | None = None) -> list[bytes]:
        """The strings of ``codes`` (default: all, in code order), made a block at a time:
        :meth:`column` of a block, its strings an LF apart (no docno holds one: the
        tokenizer ends a line there), cut by ``bytes.split``, which makes them in C."""
        codes = np.arange(len(self)) if codes is None else np.asarray(codes, dtype=np.int64)
        out: list[bytes] = []
        for lo in range(0, len(codes), BLOCK_ROWS):
            col = self.column(codes[lo:lo + BLOCK_ROWS])
            packed = col.data  # in row order, unless codes added later are among them
            if (codes[lo:lo + BLOCK_ROWS] >= self._judged).any():
                packed = bytearray(len(col.data))
                _kernel.gather(col.data, col.starts, col.lens, packed)
            apart = np.full(len(packed) + len(col), 10, dtype=np.uint8)
            apart[np.arange(len(packed)) + np.repeat(np.arange(len(col)), col.lens)] = \
                np.frombuffer(packed, dtype=np.uint8)
            out += apart.tobytes().split(b"\n")[:-1]
        return out

    def column(self, codes: np.ndarray) -> Column:
        """The strings of ``codes`` as one Column in a buffer of their own: no object per
        string (what :meth:`strings` gives a block at a time). The judged codes' strings lie
        back to back in row order, those of codes added later after them. Made a block of
        codes at a time: nothing but the Column is as long as ``codes`` (ascending codes,
        such as a mask's, are the cheapest: a block then touches one or two chunks)."""
        codes = np.asarray(codes, dtype=np.int64)
        if len(codes) and (int(codes.min()) < 0 or int(codes.max()) >= len(self)):
            raise IndexError("JudgedIndex: code out of range")
        lens = np.zeros(len(codes), dtype=np.int32)
        for lo in range(0, len(codes), BLOCK_ROWS):
            part = codes[lo:lo + BLOCK_ROWS]
            own = part < self._judged
            lens[lo:lo + BLOCK_ROWS][own] = self._lens[part[own]]
        later = np.flatnonzero(codes >= self._judged)
        added = self._added_strings(codes[later]) if len(later) else []
        at = np.empty(len(codes), dtype=np.int64)
        data = bytearray(int(lens.sum(dtype=np.int64)))  # the judged codes' strings
        out, write = memoryview(data), 0
        for lo in range(0, len(codes), BLOCK_ROWS):
            part = codes[lo:lo + BLOCK_ROWS]
            own = np.flatnonzero(part < self._judged)
            part_lens = lens[lo:lo + BLOCK_ROWS][own]
            size = int(part_lens.sum(dtype=np.int64))
            _kernel.gather(self._data, self._starts(part[own]), part_lens,
                           out[write:write + size])
            at[lo + own] = write + packed_starts(part_lens)
            write += size
        out.release()
        if len(later):
            lens[later] = [len(s) for s in added]
            at[later] = len(data) + packed_starts(lens[later])
            data += b"".join(added)
        return Column(data, at, lens)

    def _starts(self, codes: np.ndarray) -> np.ndarray:
        """The offsets in the judgments' bytes of judged ``codes``, a chunk at a time."""
        out = np.empty(len(codes), dtype=np.int64)
        for k, rows in by_chunk(np.searchsorted(self._first, codes, side="right") - 1):
            lo = int(self._first[k])
            within = packed_starts(self._lens[lo:int(self._first[k + 1])])
            out[rows] = within[codes[rows] - lo] + self._byte0[k]
        return out

    def _added_strings(self, codes: np.ndarray) -> list[bytes]:
        """The strings of codes added after the judgments, from their chunks' dictionaries."""
        with self._lock:
            at = self._added_at.array()[codes - self._judged]
        out: list[bytes] = [b""] * len(codes)
        for k, rows in by_chunk(at >> 32):
            with self._chunk_locks[k]:  # (a reader may be adding to that dictionary)
                strings = self._maps[k].strings(at[rows] & 0xFFFFFFFF)
            for i, string in zip(rows.tolist(), strings):
                out[i] = string
        return out

    def _code(self, col: Column, keys: np.ndarray | None, how: str, batch: int | None = None,
              threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Codes (and the repeat mask of ``batch``) of the rows of ``col``, a chunk at a
        time: ``how`` is ``add`` or ``find`` (a key out of range: an error, or absent)."""
        keys = np.zeros(len(col), dtype=np.int64) if keys is None \
            else np.asarray(keys, dtype=np.int64)
        out = np.full(len(col), -1, dtype=np.int64)
        repeat = np.zeros(len(col), dtype=bool)
        valid = (keys >= 0) & (keys < len(self._place))
        if how == "add" and not valid.all():
            raise ValueError("JudgedIndex.add: key out of range")
        rows = np.flatnonzero(valid)
        qid = self._qid_of[keys[rows]]
        parts = by_chunk(np.searchsorted(self._cuts, qid, side="right") - 1)

        def part(p: int) -> None:
            k, at = parts[p]
            codes, again = self._code_chunk(k, col.take(rows[at]), qid[at] - self._cuts[k],
                                            keys[rows[at]], how, batch)
            out[rows[at]] = codes
            if again is not None:
                repeat[rows[at]] = again
        map_ordered(part, len(parts), threads)
        return out, repeat

    def _code_chunk(self, k: int, col: Column, local: np.ndarray, keys: np.ndarray, how: str,
                    batch: int | None) -> tuple[np.ndarray, np.ndarray | None]:
        """The codes of the rows ``col`` (``local`` their qid's place in chunk k, ``keys``
        their keys) in chunk k's dictionary, built first if it is not; with ``batch``, the
        repeat mask too."""
        judged = int(self._first[k + 1] - self._first[k])
        again = None
        ahead = self._ahead
        if ahead is not None and not self._asked[k + 1]:
            with self._lock:
                ask, self._asked[k:k + 2] = not self._asked[k + 1], True
            if ask and k + 1 < len(self._maps):
                ahead.submit(self._built, k + 1)
        with self._chunk_locks[k]:
            docs = self._map(k)
            if how == "find":
                entry = docs.find(col, local)
            elif batch is None:
                entry = docs.add(col, local)
            else:
                entry, again = docs.add_batch(col, local, batch)
            known = judged + len(self._later[k].array())
            if len(docs) > known:
                self._note_added(k, entry, keys, known)
            later = self._later[k].array()
            codes = np.where(entry < 0, -1, entry + self._first[k])
            beyond = np.flatnonzero(entry >= judged)
            codes[beyond] = later[entry[beyond] - judged]
            del later
        return codes, again

    def _note_added(self, k: int, entry: np.ndarray, keys: np.ndarray, known: int) -> None:
        """Give the entries chunk k's dictionary just made (``known`` on, found in ``entry``)
        the next codes, in entry order; the caller holds the chunk's lock."""
        new, first = np.unique(entry[entry >= known], return_index=True)
        with self._lock:
            base = self._judged + self._added
            self._added += len(new)
            self._added_key.append(keys[entry >= known][first])
            self._added_at.append((np.int64(k) << 32) + new)
        self._later[k].append(base + np.arange(len(new)))

    def _built(self, k: int) -> None:
        """Chunk k's dictionary built (:meth:`build_ahead`); an error is left to the call that
        needs the chunk, which then builds it itself."""
        with self._chunk_locks[k]:
            self._map(k)

    def _map(self, k: int) -> Dictionary:
        """Chunk k's dictionary, built from its judgments if it is not yet (the caller holds
        the chunk's lock)."""
        docs = self._maps[k]
        if docs is None:
            docs, _ = code_chunk(self._data, self._lens, self._bounds, int(self._cuts[k]),
                                 int(self._cuts[k + 1]), int(self._byte0[k]))
            with self._lock:
                if self._frozen:
                    docs.freeze()
            self._maps[k] = docs
        return docs

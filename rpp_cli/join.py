"""Joining a run to the qrels (contract §1-2): each batch of whole queries a RunStream hands
on is ranked (score desc, docno desc), its repeated docnos resolved, and each (query, docno)
coded, so the docnos' bytes are let go a batch at a time; the batches' rows are then laid
out by query.

Judged docnos get their code in the collection's dictionary (codes 0..J-1). Other docnos need
an identity across runs only when several runs are read for measures that compare them by
docno (the default corpus size counts the union of their rankings; offline interleaving
merges them: measures.ACROSS_RUNS): then they are coded in that dictionary too, bytes
compared; otherwise each run's distinct unjudged (query, docno) gets a fresh code of its own,
and the dictionary keeps judged docnos only.
"""
from __future__ import annotations

import itertools
import os
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np

from .core import Column, Dictionary, column_of, group_positions, rank_rows
from .memory import release_free_memory
from .core.table import Growing, remembered
from .engine.threads import pipelined
from .errors import InputError
from .io import runs as run_files
from .io.held import LongQuery
from .io.runs import Run, RunStream, repeat_error


class RunRows:
    """The rows of one run that the evaluation uses (queries of the qrels, duplicates resolved),
    in ranking order: by query, then score desc, docno desc. No docno text is kept: ``doc``
    codes identify them exactly. Nor is a query a row: where each query's rows begin is kept,
    and :attr:`qidx` is made from it when asked (a run's measures read the offsets, mostly)."""

    doc: np.ndarray  # code of the (query, docno) in the collection's dictionary (int32
    # while the codes fit, 4 bytes a kept row: see _narrow)
    trec_doc: np.ndarray | None  # the codes in trec_eval's order (C-float scores; its top K
    # with -M K), when that differs from ``doc``; a query has as many rows in both
    tied: np.ndarray | None  # (rows,) bool: same score as the row above in its query
    # (None: no two rows tie); ir_measures' providers order such rows by docno ascending

    def __init__(self, qidx: np.ndarray, doc: np.ndarray, trec_doc: np.ndarray | None,
                 tied: np.ndarray | None = None) -> None:
        """``qidx``: the query index of each row (non-decreasing)."""
        self._set(np.bincount(qidx), doc, trec_doc, tied)

    @classmethod
    def by_query(cls, counts: np.ndarray, doc: np.ndarray, trec_doc: np.ndarray | None,
                 tied: np.ndarray | None = None) -> RunRows:
        """The rows of ``counts[q]`` rows a query q, one query after another."""
        rows = cls.__new__(cls)
        rows._set(counts, doc, trec_doc, tied)
        return rows

    def _set(self, counts: np.ndarray, doc: np.ndarray, trec_doc: np.ndarray | None,
             tied: np.ndarray | None) -> None:
        """Hold the columns, and where the rows of each query begin (``counts`` a query)."""
        self.doc, self.trec_doc, self.tied = doc, trec_doc, tied
        self._first = np.concatenate(([0], np.cumsum(counts, dtype=np.int64)))  # each
        # query's first row (up to the last of ``counts``), then the number of rows
        self._bounds: np.ndarray | None = None

    @property
    def qidx(self) -> np.ndarray:
        """(rows,) int32 query index of each row, made on each call."""
        return np.repeat(np.arange(len(self._first) - 1, dtype=np.int32), np.diff(self._first))

    @property
    def rank(self) -> np.ndarray:
        """1-based rank of each row within its query."""
        return np.arange(int(self._first[-1])) - np.repeat(self._first[:-1],
                                                             np.diff(self._first)) + 1

    def bounds(self, n_queries: int) -> np.ndarray:
        """(n_queries + 1,) int64 offsets, read-only: query q's rows are
        ``bounds[q]:bounds[q + 1]``. Made once (the reading thread asks first, the trec_eval
        step again)."""
        if self._bounds is None or len(self._bounds) != n_queries + 1:
            first = self._first[:n_queries + 1]
            found = np.append(first, np.full(n_queries + 1 - len(first), self._first[-1]))
            found.flags.writeable = False
            self._bounds = found
        return self._bounds


class Coder:
    """Codes the (query, docno) rows of a collection's runs (module docstring): judged ones by
    their code in ``docs``, others in ``docs`` too when ``shared``, else by fresh codes
    J, J + 1, ... Safe from several threads."""

    def __init__(self, docs: Dictionary, shared: bool) -> None:
        self.docs, self.shared = docs, shared
        self.n_judged = len(docs)
        self._fresh = Growing(np.int32)  # the query of each fresh code, J on
        self._fresh_count = 0
        self._lock = threading.Lock()
        if not shared:
            docs.freeze()

    def code(self, docno: Column, query: np.ndarray, batch: int, threads: int
             ) -> tuple[np.ndarray, np.ndarray]:
        """The code of each row (``query`` ascending) and a mask of the rows whose code an
        earlier row of this call had; ``batch``: a number no other run's calls use."""
        if self.shared:
            return self.docs.add_batch(docno, query, batch, threads)
        among = np.zeros(len(query), dtype=np.int64)  # each row's query among the batch's
        np.cumsum(query[1:] != query[:-1], out=among[1:])
        local, repeat = Dictionary(int(among[-1]) + 1 if len(among) else 1).add_batch(
            docno, among, 0, threads)
        code = self.docs.find(docno, query)
        new = (code < 0) & ~repeat  # the first row of each unjudged docno
        fresh = np.zeros(int(local.max(initial=-1)) + 1, dtype=np.int64)
        fresh[local[new]] = self._reserve(query[new])
        unjudged = code < 0
        code[unjudged] = fresh[local[unjudged]]
        return code, repeat

    def code_distinct(self, docno: Column, query: np.ndarray, batch: int) -> np.ndarray:
        """:meth:`code` of rows known to be distinct (query, docno) pairs (a long query's
        docnos): no repeat to look for, so no dictionary of the call's own."""
        if self.shared:
            return self.docs.add_batch(docno, query, batch)[0]
        code = self.docs.find(docno, query)
        unjudged = code < 0
        code[unjudged] = self._reserve(query[unjudged])
        return code

    def _reserve(self, query: np.ndarray) -> np.ndarray:
        """Fresh codes for new unjudged docnos of these queries, one each, in order."""
        with self._lock:
            base = self.n_judged + self._fresh_count
            self._fresh.append(query)
            self._fresh_count += len(query)
        return base + np.arange(len(query))

    def code_query(self) -> list[np.ndarray]:
        """The query of every code so far, in code order: the dictionary's codes', then the
        fresh codes' (two arrays, not joined: the second may be as long as a run)."""
        return [self.docs.keys(), self._fresh.array()]


@dataclass
class LoadedRun:
    """What reading and joining one run file leaves: its name sources and its rows."""

    path: str
    tag: str | None
    rows: RunRows
    repeats: int  # repeated docnos dropped (--dedup)
    unjudged: int  # queries of the run the qrels do not judge
    missing: list[int]  # queries of the qrels the run has no line for


def load_run(r: int, n_runs: int, path: str, queries: QueryPlaces, coder: Coder,
             dedup: bool, qrels_path: str, max_docs: int | None, threads: int = 1
             ) -> LoadedRun:
    """Read run ``r`` and join it: rows of the qrels' queries, duplicates resolved, ranked,
    cut to ``max_docs`` per query, coded by ``coder``. A regular file is joined a batch at a
    time; the queries of it that turn out to have rows in more than one place after being
    joined are joined again from a second reading of their rows alone. Standard input and
    pipes, which cannot be read again, are held whole and then joined a batch at a time. The
    same rows either way.
    ``threads``: the cores the other readers leave idle, which split the file's windows and
    code its rows side by side."""
    eager = _rereadable(path)
    before = _identity(path) if eager else None
    stream = RunStream(path, threads=threads, query=queries, eager=eager, joined=True,
                       dedup=dedup)
    qids = queries.qids
    parts: list[_Part] = []
    failed = _join_batches(stream, qids, coder, r, dedup, max_docs, threads, parts, None)
    broken = stream.broken_qids()
    if broken:  # their rows again, alone, in one batch (a batch number not yet stamped)
        drop = np.zeros(len(qids), dtype=bool)
        drop[queries(list(broken))] = True
        parts = [part for part in (p.without(drop) for p in parts)
                 if len(part.queries) or len(part.repeat_queries)]
        again = RunStream(path, threads=threads,
                          query=lambda qs: np.where([q in broken for q in qs], queries(qs), -1),
                          joined=True, dedup=dedup)
        failed = _join_batches(again, qids, coder, n_runs + r, dedup, max_docs, threads,
                               parts, failed)
        if _identity(path) != before:
            raise InputError("changed while it was read (read twice: some queries' rows are "
                             "in more than one place)", path=path)
    if failed is not None:
        raise failed
    if not parts:
        raise InputError(f"shares no query with the qrels ({qrels_path})", path=path)
    repeats, batches = sum(int(p.repeat_counts.sum()) for p in parts), len(parts)
    rows = _lay_out(parts, len(qids))  # (takes the parts)
    if batches > 1:  # a large run's batch arrays: what is kept will not reuse all of them
        release_free_memory()  # (not after each small run: the heap would be faulted again)
    return LoadedRun(path, stream.tag, rows, repeats, stream.dropped(),
                     np.flatnonzero(np.diff(rows.bounds(len(qids))) == 0).tolist())


class QueryPlaces:
    """The qrels' queries as the readers need them: their qids (trec_eval order), and, called
    with a list of qids' bytes, the place of each among them (-1: none), found in one exact
    dictionary (bytes compared), not by a Python call per qid. Made once for all the runs."""

    def __init__(self, qids: list[str]) -> None:
        self.qids = qids
        self._known = Dictionary()  # a qid's code is its place: the qids are distinct
        self._known.add(column_of([q.encode("utf-8", "surrogateescape") for q in qids]))
        self._known.freeze()

    def __call__(self, qids: list[bytes]) -> np.ndarray:
        return self._known.find(column_of(qids))


def _join_batches(stream: RunStream, qids: list[str], coder: Coder, batch: int, dedup: bool,
                  max_docs: int | None, threads: int, parts: list[_Part],
                  failed: InputError | None) -> InputError | None:
    """Join every batch of ``stream`` into ``parts``; the error of the earliest line so far
    (``failed``, the stream's, or a repeat one of these batches meets), raised by the caller.
    The first error stops the reading (the stream hands on what it holds, whose repeats come
    before it). With ``threads`` > 1, each batch is cut into ``threads`` pieces of whole
    queries, joined side by side on a pool while this thread reads the next batch: a large
    run's reading and joining overlap, and at most about two batches are held. A long query
    (:class:`LongQuery`) is one piece. The parts, and the error, are the same whatever
    ``threads``."""
    def pieces() -> Iterator[tuple[Run | LongQuery, np.ndarray | None, int]]:
        """Each piece, its query indexes and the threads that code it (all of them for a
        batch too small to cut); the stream's own error is kept, not raised."""
        nonlocal failed
        try:
            for held in stream:
                if isinstance(held, LongQuery):
                    yield held, None, threads
                    continue
                cut = held.by_queries(max(1, run_files.BATCH_ROWS // max(1, threads)))
                first, second = next(cut, None), next(cut, None)  # (copies: made one by one)
                if first is None:
                    continue
                for run in (first,) if second is None else itertools.chain((first, second),
                                                                           cut):
                    yield run, run.stretched(stream.query_of(run.qid_stretches)), \
                        threads if second is None else 1
        except InputError as err:
            failed = _earlier(failed, err)

    def join(piece: tuple[Run | LongQuery, np.ndarray | None, int]) -> _Part | InputError:
        held, query, cores = piece
        try:
            if isinstance(held, LongQuery):
                return _join_long(held, coder, batch, max_docs)
            return _join_batch(held, query, qids, coder, batch, dedup, max_docs, cores)
        except InputError as err:
            return err

    joined = map(join, pieces()) if threads < 2 else pipelined(pieces(), join, threads)
    for part in joined:
        if isinstance(part, InputError):
            failed = _earlier(failed, part)
            stream.stop()
        else:
            parts.append(part)
    return failed


def _earlier(a: InputError | None, b: InputError) -> InputError:
    """Of two errors, the one of the earlier line (one without a line, the source's, comes
    after every line read before it)."""
    if a is None or (b.line is not None and (a.line is None or b.line < a.line)):
        return b
    return a


def _identity(path: str) -> tuple[int, ...] | None:
    """What tells whether a file changed between two readings (None: it is gone)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _rereadable(path: str) -> bool:
    """Whether ``path`` can be read a second time, the same bytes again: a regular file,
    unless its first reading takes bytes held in memory (the API's runs, a file looked at
    before its turn)."""
    try:
        return path != "-" and not remembered(path) and os.path.isfile(path)
    except OSError:
        return False


@dataclass
class _Part:
    """The joined rows of a batch: its queries' rows, query by query (``queries``
    ascending, ``counts`` rows each), in ranking order."""

    queries: np.ndarray
    counts: np.ndarray
    code: np.ndarray
    trec_doc: np.ndarray | None
    tied: np.ndarray
    repeat_queries: np.ndarray  # the queries with repeated docnos dropped (--dedup)
    repeat_counts: np.ndarray  # how many of each

    def without(self, drop: np.ndarray) -> "_Part":
        """The part less the rows, and repeats, of the queries ``drop`` marks (a bool per
        query)."""
        gone, stay = drop[self.queries], ~drop[self.repeat_queries]
        if not gone.any() and stay.all():
            return self
        rows = np.repeat(~gone, self.counts)
        return _Part(self.queries[~gone], self.counts[~gone], self.code[rows],
                     None if self.trec_doc is None else self.trec_doc[rows], self.tied[rows],
                     self.repeat_queries[stay], self.repeat_counts[stay])


def _join_batch(run: Run, query: np.ndarray, qids: list[str], coder: Coder, batch: int,
                dedup: bool, max_docs: int | None, threads: int) -> _Part:
    """Rank, code and resolve the repeats of one batch of whole queries (``query``: the
    query index of each row)."""
    n_queries = len(qids)
    docno, score, line_of, path = run.docno, run.score, run.docno_line(), run.path
    del run  # what is held from here on is named: each array is replaced as it is reordered
    order = rank_rows(docno, query, score, n_queries)
    tied, trec = _ties_and_trec_order(docno, query, score, order, n_queries)
    counts = np.bincount(query, minlength=n_queries)
    del score, query  # the ranking is all that is needed of them: never copied in its order
    docno = Column(docno.data, docno.starts[order], docno.lens[order])
    del order
    queries = np.flatnonzero(counts)
    counts = counts[queries]
    query = np.repeat(queries, counts)  # ranked: by query
    code, repeat = coder.code(docno, query, batch, threads)
    repeated = np.unique(query[repeat], return_counts=True)  # (query ascends)
    if len(repeated[0]):
        if not dedup:
            _repeat_error(path, docno, line_of, qids, query, code, repeat)
        trec, tied = _without(~repeat, trec, tied)
        query, code = query[~repeat], code[~repeat]
    del docno
    code = _narrow(code)
    trec_doc = None if trec is None else code[trec]
    if max_docs is not None:  # -M K: each query's top K in either order, as trec_eval's -M
        keep = group_positions(query) < max_docs  # the same rows of a query in both orders
        query, code, tied = query[keep], code[keep], tied[keep]
        if trec_doc is not None:
            trec_doc = trec_doc[keep]
            trec_doc = None if (trec_doc == code).all() else trec_doc
    counts = np.bincount(query, minlength=n_queries)[queries]
    return _Part(queries[counts > 0], counts[counts > 0], code, trec_doc, tied, *repeated)


def _lay_out(parts: list[_Part], n_queries: int) -> RunRows:
    """The rows of ``parts`` (each query in one part) by query, each part let go once its
    rows are placed."""
    counts = np.zeros(n_queries, dtype=np.int64)
    for p in parts:
        counts[p.queries] = p.counts
    if len(parts) == 1:  # its queries ascend: laid out already
        p = parts.pop()
        tied = p.tied if p.tied.any() else None
        return RunRows.by_query(counts, p.code, p.trec_doc, tied)
    offsets = np.cumsum(counts) - counts
    n = int(counts.sum())
    wide = any(p.code.dtype == np.int64 for p in parts)
    code = np.empty(n, dtype=np.int64 if wide else np.int32)
    trec_doc = code.copy() if any(p.trec_doc is not None for p in parts) else None
    tied = np.empty(n, dtype=bool)
    while parts:
        p = parts.pop(0)
        within = np.cumsum(p.counts) - p.counts  # where each query starts in the part
        where = np.arange(len(p.code)) + np.repeat(offsets[p.queries] - within, p.counts)
        code[where] = p.code
        tied[where] = p.tied
        if trec_doc is not None:
            trec_doc[where] = p.code if p.trec_doc is None else p.trec_doc
        del p, where
    return RunRows.by_query(counts, code, trec_doc, tied if tied.any() else None)


TIE_CHUNK = 1 << 20  # ranked rows compared at once by _ties_and_trec_order


def _ties_and_trec_order(docno: Column, query: np.ndarray, score: np.ndarray,
                         order: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray | None]:
    """For rows in file order and their ranking ``order`` (rank_rows): which ranked row has
    the same score as the row above in its query, and trec_eval's order of the ranked rows
    (scores cast to C float, where that ties scores that differ the docno decides), or None
    when it is the ranking itself. The ranking is walked a chunk at a time, so no ranked copy
    of the scores is made."""
    n = len(order)
    tied = np.zeros(n, dtype=bool)
    differs = False
    for lo in range(1, n, TIE_CHUNK):
        rows = order[lo - 1:lo + TIE_CHUNK]
        q = query[rows]
        differs = _neighbours(q[1:] == q[:-1], score[rows], tied[lo:lo + len(rows) - 1]) \
            or differs
    if not differs:
        return tied, None
    with np.errstate(over="ignore"):
        single = score.astype(np.float32).astype(np.float64)
    ranked_at = np.empty(n, dtype=np.int64)  # file row -> its place in the ranking
    ranked_at[order] = np.arange(n)
    return tied, ranked_at[rank_rows(docno, query, single, n_queries)]


def _neighbours(same: np.ndarray, score: np.ndarray, tied: np.ndarray) -> bool:
    """For consecutive ranked rows' scores and whether each row after the first has the
    query of the row above (``same``): ``tied`` marks those with its score too, and the
    result says whether some other such pair has one score as C floats (trec_eval's order
    then differs from the ranking)."""
    equal = same & (score[1:] == score[:-1])
    tied[:] = equal
    with np.errstate(over="ignore"):
        single = score.astype(np.float32)
    return bool((same & (single[1:] == single[:-1]) & ~equal).any())


CODE_CHUNK = 1 << 16  # a long query's ranked docnos coded at once by _join_long


def _join_long(long: LongQuery, coder: Coder, batch: int, max_docs: int | None) -> _Part:
    """Rank and code a query held in compact form (io/held.py LongQuery): the rows
    :func:`_join_batch` makes of the same lines, walked a chunk of the ranking at a time, so
    that what it adds to the docnos held is a few arrays of 4 bytes a docno. Its repeats
    were resolved as they were read (``dedup``) or raised."""
    docs, q = long.docs, long.query
    ranked = docs.ranked()
    n = len(ranked)
    tied = np.zeros(n, dtype=bool)
    differs = False
    for lo in range(1, n, TIE_CHUNK):
        score = docs.scores(ranked[lo - 1:lo + TIE_CHUNK])
        differs = _neighbours(np.ones(len(score) - 1, dtype=bool), score,
                              tied[lo:lo + len(score) - 1]) or differs
    trec = docs.places(ranked, docs.ranked(single=True)) if differs else None
    code = np.empty(n, dtype=np.int32)
    for lo in range(0, n, CODE_CHUNK):
        part = coder.code_distinct(docs.column(ranked[lo:lo + CODE_CHUNK]),
                                   np.full(min(CODE_CHUNK, n - lo), q, dtype=np.int64), batch)
        if part.max(initial=0) >= 1 << 31 and code.dtype != np.int64:
            code = code.astype(np.int64)  # (the codes no longer fit: see _narrow)
        code[lo:lo + len(part)] = part
    del ranked
    trec_doc = None if trec is None else code[trec]
    if max_docs is not None:  # -M K: the top K in either order, as _join_batch keeps them
        code, tied = code[:max_docs], tied[:max_docs]
        if trec_doc is not None:
            trec_doc = trec_doc[:max_docs]
            trec_doc = None if (trec_doc == code).all() else trec_doc
    queries = np.array([q] if len(code) else [], dtype=np.int64)
    repeated = [q] if docs.repeats else []
    return _Part(queries, np.array([len(code)] * len(queries), dtype=np.int64), code, trec_doc,
                 tied, np.array(repeated, dtype=np.int64),
                 np.array([docs.repeats] * len(repeated), dtype=np.int64))


def _narrow(codes: np.ndarray) -> np.ndarray:
    """Dictionary codes (>= 0) as int32 when they all fit, else as they are: a run keeps one
    per row, so this halves them (index arrays of either type select the same elements)."""
    return codes.astype(np.int32) if codes.max(initial=0) < 1 << 31 else codes


def _without(kept: np.ndarray, trec: np.ndarray | None, tied: np.ndarray
             ) -> tuple[np.ndarray | None, np.ndarray]:
    """``trec`` (an order of the ranked rows, or None) and ``tied`` of the rows ``kept`` alone,
    as :func:`_ties_and_trec_order` would give them, without their scores: an order
    restricted to a subset is the subset's order (a strict order: rows break ties), and tied
    rows are stretches of one score within a query, so two kept rows tie when one stretch
    holds both."""
    stretch = np.cumsum(~tied)[kept]
    tied = np.concatenate(([False], stretch[1:] == stretch[:-1]))
    if trec is None:
        return None, tied
    renumber = np.cumsum(kept) - 1
    trec = renumber[trec[kept[trec]]]
    return (None if (trec == np.arange(len(trec))).all() else trec), tied


def _repeat_error(path: str, docno: Column, line_of: Callable[[int], int], qids: list[str],
                  query: np.ndarray, code: np.ndarray, repeat: np.ndarray) -> None:
    """Raise the error for ranked rows whose (query, docno) ``code`` repeats (``repeat``:
    not its first row in ranking order) at the first repeat in file order (the batch's
    lines all come before a later batch's); with --dedup the caller keeps the best-scored
    copy instead: the first in ranking order, the earliest line among equal scores. Lines
    are found from the docnos' offsets (``line_of``)."""
    repeated = np.flatnonzero(np.isin(code, code[repeat]))
    seen: set[int] = set()
    for i in repeated[np.argsort(docno.starts[repeated])].tolist():  # in file order
        if int(code[i]) in seen:
            break  # the first line that repeats an earlier one
        seen.add(int(code[i]))
    early = int(docno.starts[code == code[i]].min())
    raise repeat_error(path, docno.text(i), qids[query[i]], line_of(early),
                       line_of(int(docno.starts[i])))

"""rpp's data core: bytes -> exact integer codes -> ranked rows, with a small compiled kernel.

    read_bytes   a file, gzip or stdin, refused past max_input_bytes()     (source.py)
    split        one tokenizer for every format, columns of offsets        (table.py)
    split_stream the same, a window of whole lines at a time (runs)         (table.py)
    Dictionary   exact (key, bytes) -> dense code, compared byte for byte  (here, _kernel.c)
    QueryDocs    one long query's distinct docnos and best scores, compact (here, _kernel.c)
    rank_rows    rows -> query asc, score desc, docno desc (bytes)         (here, _kernel.c)
    interleave   pairs of rankings -> offline-interleaving sums per query   (here, _kernel.c)
    permuted_sums a randomized Tukey HSD's sums per trial                   (here, _kernel.c)
    format_rows  coded rows -> the report's lines (fixed decimals, "C" locale) (_kernel.c)

Identity of ids is decided by comparing bytes; hashes only find candidates. The kernel
releases the GIL, so runs can be read and joined by a pool of threads.
"""
from __future__ import annotations


import functools

import numpy as np

from ..engine.threads import run_all
from . import _kernel
from ._kernel import format_rows, nested_dicts
from .table import Column, Table, column_of, line_at, read_bytes, split

__all__ = ["INTERLEAVINGS", "Column", "Dictionary", "QueryDocs", "Table", "column_of",
           "first_seen", "format_rows", "group_positions", "interleave", "line_at",
           "nested_dicts", "permuted_sums", "rank_rows", "read_bytes", "split"]


class Dictionary:
    """Exact dictionary of (key, byte string) -> code 0, 1, ... in order of first appearance;
    keys are 0 .. n_keys-1 (a query index, say), each with its own table. ``add`` may be
    called from several threads; ``find`` needs ``freeze`` first."""

    def __init__(self, n_keys: int = 1) -> None:
        self._map = _kernel.StrMap(max(1, n_keys))

    def __len__(self) -> int:
        return len(self._map)

    def add(self, col: Column, keys: np.ndarray | None = None) -> np.ndarray:
        """The code of every (key, string) of ``col``, adding the new ones."""
        out = np.empty(len(col), dtype=np.int64)
        self._map.intern(col.data, col.starts, col.lens, _keys(keys), out)
        return out

    def add_batch(self, col: Column, keys: np.ndarray, batch: int, threads: int = 1
                  ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`add`, plus a mask of the rows whose code an earlier row of this call had
        (``batch``: a number no other call on this dictionary uses). With ``threads`` > 1 and
        ``keys`` ascending, the rows are cut where the key changes into parts coded side by
        side (the kernel locks each key's table), so a repeat still meets its first row."""
        out = np.empty(len(col), dtype=np.int64)
        repeat = np.empty(len(col), dtype=np.uint8)
        keys = _keys(keys)
        cuts = _key_cuts(keys, threads if len(col) >= PARALLEL_ROWS else 1)

        def part(lo: int, hi: int) -> None:
            self._map.intern(col.data, col.starts[lo:hi], col.lens[lo:hi], keys[lo:hi],
                             out[lo:hi], repeat[lo:hi], batch)
        if len(cuts) == 2:
            part(0, len(col))
        else:  # a part's error (out of memory, a bad key) is raised
            run_all([functools.partial(part, lo, hi) for lo, hi in zip(cuts, cuts[1:])],
                    "rpp-code")
        return out, repeat.view(bool)

    def find(self, col: Column, keys: np.ndarray | None = None) -> np.ndarray:
        """The code of every (key, string) of ``col``, -1 where absent."""
        out = np.empty(len(col), dtype=np.int64)
        self._map.lookup(col.data, col.starts, col.lens, _keys(keys), out)
        return out

    def freeze(self) -> None:
        self._map.freeze()

    def nbytes(self) -> int:
        """The bytes it holds: each key's table (its index, entries and strings, with the
        unused tails of their growth) and each code's key."""
        return self._map.nbytes()

    def keys(self) -> np.ndarray:
        """(len,) int64 key of every entry, in code order."""
        return np.frombuffer(self._map.keys(), dtype=np.int64)

    def strings(self, codes: np.ndarray | None = None) -> list[bytes]:
        """The strings of ``codes`` (default: all, in code order)."""
        if codes is None:
            return self._map.strings()
        return self._map.strings(np.ascontiguousarray(codes, dtype=np.int64))


class QueryDocs:
    """One query's distinct docnos, each with its best score, in the kernel's compact form:
    the docno's bytes, 9 bytes beside them (score and length; 11 past 254 bytes) and a hash
    index of 5 bytes a slot kept 60-90 % full, for a query too long to hold as rows. Docnos
    are added in file order (a repeat is found as it is added); :meth:`ranked` then frees the
    index and gives the ranking."""

    def __init__(self) -> None:
        self._set = _kernel.DocScores()
        self.repeats = 0  # docnos added again with ``dedup`` (each kept its best score)

    def __len__(self) -> int:
        return len(self._set)

    def nbytes(self) -> int:
        """The bytes held (the docnos and their scores, and the index)."""
        return self._set.nbytes()

    def add(self, col: Column, score: np.ndarray, dedup: bool) -> tuple[int, int]:
        """Add rows in order. Without ``dedup`` a docno added before stops it: (its row in
        ``col``, the place of its first copy among the distinct docnos), else (-1, -1); with
        ``dedup`` each docno keeps its highest score (the earliest row's among equal ones),
        as rank order then the file keep the best-scored copy."""
        first, ordinal, repeats = self._set.add(col.data, col.starts, col.lens,
                                                np.ascontiguousarray(score, np.float64), dedup)
        self.repeats += repeats
        return first, ordinal

    def ranked(self, single: bool = False) -> np.ndarray:
        """(n,) uint32 references of the docnos in ranking order: score descending (cast to C
        float with ``single``, trec_eval's order), docno descending by bytes (rank_rows'
        order). The index is freed: nothing is added after."""
        out = np.empty(len(self), dtype=np.uint32)
        self._set.rank(out, single)
        return out

    def scores(self, refs: np.ndarray) -> np.ndarray:
        """The scores of these docnos."""
        out = np.empty(len(refs), dtype=np.float64)
        self._set.fill(np.ascontiguousarray(refs, np.uint32), 0, out)
        return out

    def column(self, refs: np.ndarray) -> Column:
        """These docnos as a Column over the set's own bytes."""
        starts = np.empty(len(refs), dtype=np.int64)
        lens = np.empty(len(refs), dtype=np.int32)
        self._set.fill(np.ascontiguousarray(refs, np.uint32), 1, starts, lens)
        return Column(memoryview(self._set), starts, lens)

    def places(self, ranking: np.ndarray, refs: np.ndarray) -> np.ndarray:
        """``refs`` replaced, in place, by each docno's place in ``ranking`` (the scores are
        then gone: the last use of the set)."""
        self._set.renumber(ranking)
        self._set.fill(refs, 2)
        return refs


def _keys(keys: np.ndarray | None) -> np.ndarray | None:
    return None if keys is None else np.ascontiguousarray(keys, dtype=np.int64)


# Rows below which one call is not cut into parts for threads (a thread costs ~0.1 ms).
PARALLEL_ROWS = 1 << 17


def _key_cuts(keys: np.ndarray, parts: int) -> list[int]:
    """Row bounds of up to ``parts`` parts of about equal size, cut only where an ascending
    ``keys`` changes (one part when the keys do not ascend)."""
    n = len(keys)
    if parts < 2 or n == 0 or (np.diff(keys) < 0).any():
        return [0, n]
    aim = np.arange(1, parts) * n // parts
    cuts = np.searchsorted(keys, keys[aim], side="left")  # the first row of that key
    return sorted({0, n, *cuts.tolist()})


def first_seen(codes: np.ndarray) -> np.ndarray:
    """Mask of the rows where a code appears first (codes numbered by first appearance)."""
    if len(codes) == 0:
        return np.zeros(0, dtype=bool)
    before = np.maximum.accumulate(np.concatenate(([-1], codes[:-1])))
    return codes > before


def group_positions(keys: np.ndarray) -> np.ndarray:
    """0-based position of each row within its run of equal ``keys`` (rows grouped by key)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64)
    starts = np.flatnonzero(np.concatenate(([True], keys[1:] != keys[:-1])))
    return np.arange(len(keys)) - np.repeat(starts, np.diff(np.append(starts, len(keys))))


def rank_rows(col: Column, query: np.ndarray, score: np.ndarray, n_queries: int) -> np.ndarray:
    """Order of the rows by query (ascending), score descending, docno descending by bytes
    (trec_eval's rule, contract §2)."""
    order = np.empty(len(col), dtype=np.int64)
    _kernel.rank(col.data, col.starts, col.lens, np.ascontiguousarray(query, dtype=np.int64),
                  np.ascontiguousarray(score, dtype=np.float64), n_queries, order)
    return order


# The interleaving methods of ``interleave``, as the kernel numbers them.
INTERLEAVINGS = {"balanced": 0, "team-draft": 1}


def interleave(docs: np.ndarray, bounds: np.ndarray, pairs: np.ndarray, relevant: np.ndarray,
               cumulative: np.ndarray, method: str = "balanced"
               ) -> tuple[np.ndarray, np.ndarray]:
    """Offline interleaving of every pair of runs on every query, in one kernel call.

    ``docs`` holds every run's codes in ranking order, ``bounds`` (R, Q + 1) the offsets of
    run r's query q (``docs[bounds[r, q]:bounds[r, q + 1]]``), ``pairs`` (P, 2) the runs (a, b),
    ``relevant`` a bool per code and ``cumulative`` (K, M): M columns of cumulative weights
    W[k] = w(1) + ... + w(k) (W[0] = 0, K at least the longest two rankings together, plus
    one), so that several user models share one walk, and ``method`` one of INTERLEAVINGS.
    Returns (P, Q, 2, M) Σ_k w(k) · pref(k), pref(k) the sign of the preference of the users
    who stop at position k (measures/interleaving.py), of the interleaving with a first (0)
    and b first (1), and (P, Q) N, the items in the interleaving (measures/interleaving.py
    normalises). Bad arguments raise (the kernel checks every index before its loop).
    """
    docs, bounds, pairs = (_integers(x, f"interleave: {name}") for x, name in
                           ((docs, "docs"), (bounds, "bounds"), (pairs, "pairs")))
    relevant, cumulative = np.asarray(relevant), np.asarray(cumulative)
    if bounds.ndim != 2 or pairs.ndim != 2 or pairs.shape[1] != 2 or cumulative.ndim != 2:
        raise ValueError("interleave: bounds must be (runs, queries + 1), pairs (pairs, 2), "
                         "cumulative (positions + 1, models)")
    if relevant.dtype != np.bool_ or cumulative.dtype.kind != "f":
        raise TypeError("interleave: relevant must be bool, cumulative float")
    sums = np.empty((len(pairs), bounds.shape[1] - 1, 2, cumulative.shape[1]))
    n = np.empty(sums.shape[:2], dtype=np.int64)
    _kernel.interleave(docs, bounds, bounds.shape[1] - 1, pairs,
                       np.ascontiguousarray(relevant).view(np.uint8),
                       np.ascontiguousarray(cumulative, dtype=np.float64), cumulative.shape[1],
                       INTERLEAVINGS[method], sums, n)
    return sums, n


def permuted_sums(values: np.ndarray, perm: np.ndarray, pairs: np.ndarray | None = None
                  ) -> np.ndarray:
    """(B, P) per-trial sums of a randomized Tukey HSD, in one kernel call.

    ``values`` is (Q, R, R) (a preference measure per query; ``pairs`` (P, 2) the run pairs
    (a, b)) or (Q, R) (a metric; no pairs, P = R); ``perm`` (Q, B, R) relabels the runs of
    each query in each trial. sums[t, k] = Σ_q values[q, perm[q, t, a_k], perm[q, t, b_k]]
    (a metric: Σ_q values[q, perm[q, t, k]]), the queries added in order from 0.0: the same
    bits as a numpy loop over the queries. Bad arguments raise (every index is checked)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    perm = _integers(perm, "permuted_sums: perm")
    if perm.ndim != 3 or values.ndim not in (2, 3) or values.shape[0] != perm.shape[0] \
            or values.shape[1:] != (perm.shape[2],) * (values.ndim - 1) \
            or (pairs is None) != (values.ndim == 2):
        raise ValueError("permuted_sums: values must be (Q, R, R) with pairs or (Q, R) without, "
                         "perm (Q, B, R)")
    pairs = np.zeros((0, 2), dtype=np.int64) if pairs is None \
        else _integers(pairs, "permuted_sums: pairs")
    n_runs, trials = perm.shape[2], perm.shape[1]
    sums = np.empty((trials, len(pairs) if values.ndim == 3 else n_runs))
    if sums.size:  # (a tensor with no pair has nothing to sum: the kernel reads P = 0 as R)
        _kernel.permuted_sums(values, perm, n_runs, trials, pairs, sums)
    return sums


def _integers(x: np.ndarray, name: str) -> np.ndarray:
    """``x`` as a contiguous int64 array; anything but integers is a TypeError (never cast)."""
    x = np.asarray(x)
    if x.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got {x.dtype}")
    return np.ascontiguousarray(x, dtype=np.int64)

"""Recall-paired preference (contract §4): rpp, dcgrpp, invrpp, vectorised over all run pairs.

    RPP(a, b) = Σ_P p(P) Σ_i p(i | P) · sgn(f_i^b(P) − f_i^a(P))

Every population of every query is a segment of one "level" axis; the sign of every pair at
every level is one numpy expression, and the per-query sums are one ``reduceat``.
"""
from __future__ import annotations

from typing import Callable, Iterator

import numpy as np

from ..aggregate import UNIT_ROUNDOFF
from ..engine import Lazy, current, query_shards
from ..populations import (Populations, graded_populations, positions_and_ties,
                           subtopic_populations)
from .registry import PREFERENCE, Measure, family, register

# p(i | P) before normalisation, as a function of the recall level i (1-based array).
DISCOUNTS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "uniform": lambda i: np.ones(len(i)),
    "dcg": lambda i: 1.0 / np.log2(i + 1.0),
    "inverse": lambda i: 1.0 / i,
}

_WEIGHTING = {"uniform": "all recall levels weighted equally",
              "dcg": "recall level i weighted by 1/log2(i+1)",
              "inverse": "recall level i weighted by 1/i"}
_SCHEMES = {  # population scheme: (name prefix, what, how to get it)
    "graded": ("", "graded populations",
               "-l L: populations grade >= each judged grade >= L (default: > 0)"),
    "subtopic": ("st-", "subtopic populations; needs --subtopics",
                 "--subtopics FILE: one population per subtopic plus all relevant items"),
}
for _scheme, (_prefix, _pops, _how) in _SCHEMES.items():
    for _base, _discount in (("rpp", "uniform"), ("dcgrpp", "dcg"), ("invrpp", "inverse")):
        _name = _prefix + _base
        register(Measure(_name, PREFERENCE, "preference",
                         f"recall-paired preference, {_WEIGHTING[_discount]} ({_pops})",
                         options={"discount": _discount, "populations": _scheme},
                         parameters=f"{_how}; prints {_name} per pair, {_name}_win per run"))

# Bytes of float64 temporaries per chunk of pairs x levels; bounds memory at any scale. A
# worker holds about 2.25 times this at once (signs, their weights, what is decided), and up
# to 16 workers run side by side; a larger chunk is no faster (bench/LOG.md).
_CHUNK_BYTES = 16 << 20


def level_weights(pops: Populations, discount: str) -> np.ndarray:
    """(L,) weight p(P) · p(i | P) of every level of every population."""
    levels = pops.level
    g = DISCOUNTS[discount](levels.astype(np.float64))
    seg = pops.member_seg
    norm = np.bincount(seg, weights=g, minlength=len(pops.seg_query))
    size = pops.seg_size.astype(np.float64)
    query_total = np.bincount(pops.seg_query, weights=size)
    p_pop = size / query_total[pops.seg_query]
    return p_pop[seg] * g / norm[seg]


def pair_blocks(positions: np.ndarray, pops: Populations, n_queries: int
                ) -> Iterator[tuple[int, int, int, np.ndarray, np.ndarray, np.ndarray,
                                    np.ndarray]]:
    """The signs of the position differences f^b - f^a of run pairs a < b, a block of queries
    and pairs at a time (bounded memory at any scale): yields (q0, q1, lo, ia, ib, sign,
    bounds), where ``sign`` is int8 (pairs ia, ib; levels of queries q0..q1-1), ``lo`` the
    first of those levels and ``bounds`` the first level of each of those queries within the
    block. sign > 0: run a places that member higher. A block holds every pair, unless one
    query has more levels than the bound allows: its pairs then come a group at a time (a
    pair's levels are never cut, so its sums are the same). The pairs of one run a are
    compared with its row at once (no copies of the runs' rows per pair)."""
    n_runs = positions.shape[0]
    ia, ib = np.triu_indices(n_runs, 1)
    if len(ia) == 0:
        return
    first_pair = np.concatenate(([0], np.cumsum(np.arange(n_runs - 1, 0, -1))))  # of run a
    level_query = pops.seg_query[pops.member_seg]
    q_start = np.searchsorted(level_query, np.arange(n_queries + 1))
    step = max(1, _CHUNK_BYTES // (8 * len(ia)))
    q0 = 0
    while q0 < n_queries:
        q1 = max(q0 + 1, int(np.searchsorted(q_start, q_start[q0] + step, side="right")) - 1)
        q1 = min(q1, n_queries)
        lo, hi = q_start[q0], q_start[q1]
        block = positions[:, lo:hi]
        per_block = max(1, _CHUNK_BYTES // (8 * max(int(hi - lo), 1)))  # pairs that fit
        for p0 in range(0, len(ia), per_block):
            p1 = min(p0 + per_block, len(ia))
            sign = np.empty((p1 - p0, hi - lo), dtype=np.int8)
            for a in range(int(ia[p0]), int(ia[p1 - 1]) + 1):  # pairs (a, b) within p0..p1
                s0, s1 = max(p0, first_pair[a]), min(p1, first_pair[a + 1])
                later = block[a + 1 + s0 - first_pair[a]:a + 1 + s1 - first_pair[a]]
                out = sign[s0 - p0:s1 - p0]
                np.greater(later, block[a], out=out.view(np.bool_))
                out -= np.less(later, block[a]).view(np.int8)
            yield q0, q1, int(lo), ia[p0:p1], ib[p0:p1], sign, q_start[q0:q1] - lo
        q0 = q1


# A weighted sum whose magnitude is within tie_bound(L) * Σ|w| of zero is a tie (contract §4):
# see :func:`pairwise`.


def tie_bound(n_levels: np.ndarray) -> np.ndarray:
    """Relative bound, per query of ``n_levels`` levels, on the float error of a weighted RPP:
    recursive summation of k <= L signed weights errs by at most (L - 1)·u·Σ|w| (Higham,
    Accuracy and Stability, §4.2), and each weight p(P)·g(i)/Σ_j g(j) carries at most
    (L + 6)·u of relative error from its own arithmetic (a sum of <= L terms, a log2, three
    products and quotients), so the computed sum is within (2L + 5)·u·Σ|w| of the exact one.
    Twice that is the bound: no float leftover passes it, and an exact non-zero RPP below it
    (under 2.3e-13 for 500 levels) is beyond what float64 weights can resolve."""
    return 2.0 * (2.0 * n_levels + 5.0) * UNIT_ROUNDOFF


def pairwise(positions: np.ndarray, pops: Populations, weights: np.ndarray,
             n_queries: int, uniform: np.ndarray | None = None) -> np.ndarray:
    """RPP of every ordered run pair on every query: (M, Q, R, R) for M weight columns.

    ``positions`` is (R, L) from :func:`worst_case_positions`, ``weights`` (L, M); ``uniform``
    (M,) marks the columns of uniform RPP, computed exactly from integer counts: every level
    of a query weighs 1 / (its number of levels), so RPP = (Σ signs) / levels and a tie is
    exactly 0. Other columns are float sums whose magnitude under :func:`tie_bound` · Σ|w| is
    set to exactly 0 (float leftovers of cancelling signs), and exactly ±1 where one run is
    above at every level (the weights' own sum may round to 1 ± 2.2e-16). Only pairs a < b are
    computed; RPP(b, a) = -RPP(a, b) fills the rest exactly.
    """
    n_runs = positions.shape[0]
    out = np.zeros((weights.shape[1], n_queries, n_runs, n_runs))
    uniform = np.zeros(weights.shape[1], dtype=bool) if uniform is None else uniform
    for q0, q1, lo, ia, ib, sign, bounds in pair_blocks(positions, pops, n_queries):
        if sign.shape[1] == 0:
            continue
        levels = np.diff(np.append(bounds, sign.shape[1]))  # (Qc,) levels of each query
        has = np.flatnonzero(levels)  # queries with levels (a shard may hold others: 0)
        starts, levels = bounds[has], levels[has]
        counts = np.add.reduceat(sign, starts, axis=1, dtype=np.int64)  # (pairs, Qh)
        if not uniform.all():
            decided = sign != 0
            tolerance = tie_bound(levels.astype(np.float64))
            unanimous = np.abs(counts) == levels  # every level preferred, the same way
        rows, qs = (ia[:, None], ib[:, None]), (q0 + has)[None, :]
        for m in range(weights.shape[1]):
            if uniform[m]:
                vals = counts / levels  # (pairs, Qh): a ratio of integers
            else:
                w = weights[lo:lo + sign.shape[1], m]
                vals = np.add.reduceat(sign * w, starts, axis=1)  # (pairs, Qh)
                mass = np.add.reduceat(decided * w, starts, axis=1)
                vals[np.abs(vals) <= tolerance * mass] = 0.0
                # one run above at every level is exactly 1, not the rounded sum of the
                # weights (1.0000000000000002 for invrpp of 7 items)
                vals = np.where(unanimous, np.sign(counts), vals)
            out[m][qs, rows[0], rows[1]] = vals
            out[m][qs, rows[1], rows[0]] = -vals
    return out


def sharded_pairwise(coll, pops: Populations, weights: np.ndarray, uniform: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`pairwise` on the worst-case positions of ``coll``'s runs, computed shard by
    shard of queries on the command's engine (the same sums, query by query, in any shard):
    (M, E, R, R) over the evaluated queries (the others have no level), and the queries
    where the corpus size ties a retrieved member with a missed one
    (:func:`~rpp_cli.populations.positions_and_ties`)."""
    n_queries = len(coll.qids)
    level_query = pops.seg_query[pops.member_seg]
    levels = np.bincount(level_query, minlength=n_queries).astype(np.float64)
    n_runs = coll.ranks.shape[0]
    pairs = max(1, n_runs * (n_runs - 1) // 2)  # a query's work: its levels times the pairs
    # (weighed by levels alone, L's 56,000 levels made 2 shards for 16 workers); pair_blocks
    # bounds a shard's memory itself, so no shard is cut for its size
    bounds = query_shards((levels + 1.0) * pairs, current().workers, max_work=None,
                          shrink=True)
    seg_bounds = np.searchsorted(pops.seg_query, bounds)
    member_bounds = np.searchsorted(pops.member_seg, seg_bounds)
    item_bounds = coll.item_bounds

    def build(i: int) -> tuple:
        (q0, q1), (s0, s1), (m0, m1), (i0, i1) = (
            b[i:i + 2].tolist() for b in (bounds, seg_bounds, member_bounds, item_bounds[bounds]))
        local = Populations(pops.member_item[m0:m1] - i0, pops.member_seg[m0:m1] - s0,
                            pops.seg_query[s0:s1] - q0)
        return (coll.ranks[:, i0:i1], local, coll.corpus_size[q0:q1], weights[m0:m1], uniform,
                q1 - q0)
    parts = current().imap(_pairwise_shard, Lazy(len(bounds) - 1, build), "preferences")
    out = np.empty((weights.shape[1], len(coll.evaluated), n_runs, n_runs))
    tied = []
    for i, (part, tied_here) in enumerate(parts):  # each shard's queries into place, one copy
        lo, hi = np.searchsorted(coll.evaluated, bounds[i:i + 2])
        out[:, lo:hi] = part[:, coll.evaluated[lo:hi] - bounds[i]]
        tied.append(tied_here + bounds[i])
    return out, np.concatenate(tied)


def _pairwise_shard(shard: tuple) -> tuple[np.ndarray, np.ndarray]:
    """(M, Q of the shard, R, R) preferences of one shard, and the shard's queries where the
    corpus size ties a retrieved member with a missed one; from its ranks, populations,
    corpus sizes, level weights, which columns are uniform and the number of queries, all
    renumbered from the shard's first."""
    ranks, pops, corpus_size, weights, uniform, n_queries = shard
    positions, tied = positions_and_ties(ranks, pops, corpus_size)
    return pairwise(positions, pops, weights, n_queries, uniform), tied


@family("preference", across_runs=True)
def compute(ctx, measures: list[Measure]) -> None:
    """Add the per-query and aggregate matrices and win rates of ``measures`` to ctx.results."""
    by_scheme: dict[str, list[Measure]] = {}
    for m in measures:
        by_scheme.setdefault(m.options["populations"], []).append(m)
    for scheme, group in by_scheme.items():
        pops = POPULATIONS[scheme](ctx.collection)
        weights = np.stack([level_weights(pops, m.options["discount"]) for m in group], axis=1)
        uniform = np.array([m.options["discount"] == "uniform" for m in group])
        tensor, tied = sharded_pairwise(ctx.collection, pops, weights, uniform)
        for m, per_query in zip(group, tensor):
            ctx.add_preference(m.name, per_query)
        if len(tied):
            ctx.notes.append(corpus_note([m.name for m in group], tied, ctx.collection.qids))


def corpus_note(names: list[str], tied: np.ndarray, qids: list[str]) -> str:
    """The note for queries where the corpus size n ties a run that retrieved a relevant item
    with one that missed it (contract §2): their values follow from n, and differ from a larger
    corpus's, and from pref_eval's."""
    shown = ", ".join(qids[q] for q in tied[:5]) + (" ..." if len(tied) > 5 else "")
    return (f"{'/'.join(names)}: in {len(tied)} {'query' if len(tied) == 1 else 'queries'} "
            f"({shown}) a run ranks a relevant item at n - m + i, the place the full-corpus "
            "ranking gives a run that missed it (n: the items the runs ranked and the relevant "
            "ones), so the two tie at that recall level; with a larger --corpus-size, or in "
            "pref_eval (a missed item below every ranked one), the first would be preferred")


POPULATIONS: dict[str, Callable] = {"graded": graded_populations,
                                    "subtopic": subtopic_populations}

"""Lexicographic preferences (Diaz 2023, EVIA; Diaz, Ekstrand & Mitra, TORS 2025).

On the worst-case position vectors f_1 < f_2 < ... < f_m of a query's relevant items (grade
> 0, or >= the level ``-l L``; one population, the same vectors RPP and asl use), compare two
runs at the first recall level where they differ:

- ``lexiprecision`` (sgnLP): levels i = 1, 2, ..., m; +1 when run a places its i-th relevant
  item higher, -1 when lower, 0 when every level ties;
- ``rrlexiprecision`` (rrLP): the same first differing level i, valued 1/f_i(a) - 1/f_i(b);
- ``lexirecall`` (sgnLR): levels i = m, m-1, ..., 1: the worst-off user first. An item a run
  missed sits at n - m + i, below everything retrieved, so this first asks which run found
  more relevant items.

All three are transitive within a query: one query's ordering of the runs is a sort.
"""
from __future__ import annotations

import numpy as np

from .registry import PREFERENCE, Measure, family, register
from .preference import corpus_note, pair_blocks
from .search_length import relevant_population
from ..populations import Populations, positions_and_ties

register(Measure("lexiprecision", PREFERENCE, "lexicographic",
                 "lexiprecision (sgnLP): sign at the first recall level where the two runs' "
                 "positions differ", options={"direction": "first", "value": "sign"},
                 parameters="-l L: relevant = grade >= L; prints lexiprecision per pair, "
                            "lexiprecision_win per run"))
register(Measure("rrlexiprecision", PREFERENCE, "lexicographic",
                 "reciprocal-rank lexiprecision (rrLP): 1/f_i(a) - 1/f_i(b) at the first "
                 "recall level i where they differ", options={"direction": "first",
                                                                "value": "reciprocal"},
                 parameters="-l L, --corpus-size N (missed items sit at n - m + i); prints "
                            "rrlexiprecision per pair, rrlexiprecision_win per run"))
register(Measure("lexirecall", PREFERENCE, "lexicographic",
                 "lexirecall (sgnLR): sign at the last recall level where the two runs' "
                 "positions differ (the worst-off user first)",
                 options={"direction": "last", "value": "sign"},
                 parameters="-l L: relevant = grade >= L; prints lexirecall per pair, "
                            "lexirecall_win per run"))


def decisive_levels(diff: np.ndarray, bounds: np.ndarray, direction: str
                    ) -> tuple[np.ndarray, np.ndarray]:
    """For each pair (row of ``diff``, position differences or their signs) and query
    (segment starting at ``bounds``): the level index where the lexicographic comparison is
    decided, and whether any level differs.

    ``direction`` "first" scans i = 1..m, "last" scans i = m..1."""
    n_levels = diff.shape[1]
    index = np.arange(n_levels)
    if direction == "first":
        found = np.minimum.reduceat(np.where(diff != 0, index, n_levels), bounds, axis=1)
        decided = found < n_levels
    else:
        found = np.maximum.reduceat(np.where(diff != 0, index, -1), bounds, axis=1)
        decided = found >= 0
    return np.where(decided, found, 0), decided


def lexicographic(positions: np.ndarray, pops: Populations, n_queries: int, direction: str,
                  value: str) -> np.ndarray:
    """(Q, R, R) lexicographic preference of every ordered run pair on every query."""
    n_runs = positions.shape[0]
    out = np.zeros((n_queries, n_runs, n_runs))
    for q0, q1, lo, ia, ib, sign, bounds in pair_blocks(positions, pops, n_queries):
        if sign.shape[1] == 0:
            continue
        at, decided = decisive_levels(sign, bounds, direction)
        rows = np.arange(len(ia))[:, None]
        if value == "sign":
            vals = sign[rows, at].astype(np.float64)
        else:
            f = positions[:, lo:lo + sign.shape[1]].astype(np.float64)
            vals = 1.0 / f[ia[:, None], at] - 1.0 / f[ib[:, None], at]
        vals = np.where(decided, vals, 0.0)
        out[q0:q1, ia, ib] = vals.T
        out[q0:q1, ib, ia] = -vals.T
    return out


@family("lexicographic", across_runs=True)
def compute(ctx, measures: list[Measure]) -> None:
    """Add the per-query and aggregate matrices and win rates of ``measures`` to ctx.results."""
    coll = ctx.collection
    pops = relevant_population(coll.item_query, coll.relevant)
    positions, tied = positions_and_ties(coll.ranks, pops, coll.corpus_size)
    if len(tied):
        ctx.notes.append(corpus_note([m.name for m in measures], tied, coll.qids))
    evaluated = coll.by_evaluated(pops)
    for m in measures:
        per_query = lexicographic(positions, evaluated, len(coll.evaluated),
                                  m.options["direction"],
                                  m.options["value"])
        ctx.add_preference(m.name, per_query)

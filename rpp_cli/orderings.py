"""System orderings (contract §5): runs ordered by mean win rate, Borda count or MC4 for a
preference measure, by mean for a metric; their scores, ranks and ties, on all queries or on
query subsets (``rpp eval --orderings`` and ``rpp meta``)."""
from __future__ import annotations

import math

import numpy as np

from .aggregate import win_rates
from .results import Results

ORDERINGS = ("win", "borda", "mc4")
# Scores closer than this (relative to the largest |score|) are ties: float noise (BLAS
# blocking, a linear solve) must not split runs that are equal in exact arithmetic.
TIE_TOLERANCE = 1e-12
# MC4's teleport probability (PageRank's 0.15): makes the chain ergodic, so its stationary
# distribution exists, is unique and gives every run, not only the winners, a score.
MC4_TELEPORT = 0.15


def tie_key(scores: np.ndarray) -> np.ndarray:
    """``scores`` (..., R) with every group of near-equal scores set to its group's maximum."""
    s = np.asarray(scores, dtype=np.float64)
    n = s.shape[-1]
    if n == 0:
        return s.copy()
    tol = TIE_TOLERANCE * np.maximum(1.0, np.abs(s).max(axis=-1, keepdims=True))
    idx = np.argsort(-s, axis=-1, kind="stable")
    ss = np.take_along_axis(s, idx, axis=-1)
    starts = np.ones(s.shape, dtype=bool)
    starts[..., 1:] = (ss[..., :-1] - ss[..., 1:]) > tol
    first = np.maximum.accumulate(np.where(starts, np.arange(n), 0), axis=-1)
    out = np.empty_like(s)
    np.put_along_axis(out, idx, np.take_along_axis(ss, first, axis=-1), axis=-1)
    return out


def rank_positions(scores: np.ndarray) -> np.ndarray:
    """(R,) 1-based rank of each run, higher score first; tied runs (see :func:`tie_key`) share
    the mean of the positions they span (1.5 for two runs tied at the top), so no name or
    argument order decides between them."""
    key = tie_key(scores)
    higher = (key[None, :] > key[:, None]).sum(axis=1)
    tied = (key[None, :] == key[:, None]).sum(axis=1)
    return higher + (tied + 1) / 2


def top_runs(scores: np.ndarray, n_top: int) -> np.ndarray:
    """Indices of the ``n_top`` best runs by ``scores``, plus every run tied with the last."""
    key = tie_key(scores)
    return np.flatnonzero(key >= np.sort(key)[::-1][min(n_top, len(key)) - 1])


def above(per_query_scores: np.ndarray) -> np.ndarray:
    """(Q, R, R) True where run a is strictly above run b in query q's ordering."""
    key = tie_key(per_query_scores)
    return key[:, :, None] > key[:, None, :]


def borda_points(per_query_scores: np.ndarray) -> np.ndarray:
    """(Q, R) Borda points: runs strictly below plus half of the other runs tied with it."""
    key = tie_key(per_query_scores)
    below = (key[:, :, None] > key[:, None, :]).sum(axis=2)
    tied = (key[:, :, None] == key[:, None, :]).sum(axis=2) - 1
    return below + 0.5 * tied


def name_order(names: list[str]) -> np.ndarray:
    """(R,) the runs' indices sorted by name: a canonical order for computations whose float
    results would otherwise depend on the order the runs were given in."""
    return np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)


def mc4_scores(above_counts: np.ndarray, order: np.ndarray | None = None) -> np.ndarray:
    """Stationary distribution (..., R) of Dwork et al.'s MC4 chain.

    ``above_counts[..., a, b]`` is how many queries rank a above b. From run i the walk picks
    a run j uniformly and moves there when a majority ranks j above i (strictly more queries
    put j above i than i above j); with probability MC4_TELEPORT it jumps to a uniform run.
    ``order`` (:func:`name_order`): the runs are solved for in that order, so the scores' last
    bits do not depend on the order they were given in (the solver's pivots do).
    """
    if order is not None:
        scores = np.empty(np.shape(above_counts)[:-1])
        scores[..., order] = mc4_scores(np.asarray(above_counts)[..., order, :][..., order])
        return scores
    counts = np.asarray(above_counts, dtype=np.float64)
    n = counts.shape[-1]
    beats = counts > np.swapaxes(counts, -1, -2)  # beats[..., a, b]: a beats b
    step = np.swapaxes(beats, -1, -2) / n  # step[..., i, j] = 1/n when j beats i
    idx = np.arange(n)
    step[..., idx, idx] = 1.0 - step.sum(axis=-1)
    # pi = (1 - t) pi P + t/n  <=>  (I - (1 - t) P^T) pi = t/n
    system = np.eye(n) - (1.0 - MC4_TELEPORT) * np.swapaxes(step, -1, -2)
    rhs = np.full(counts.shape[:-1] + (1,), MC4_TELEPORT / n)
    return np.linalg.solve(system, rhs)[..., 0]


def query_table(values: np.ndarray, method: str) -> tuple[np.ndarray, str]:
    """(Q, K) per-query table whose sums over a query subset give that subset's ordering,
    and how to finish it (``mean``, ``sum`` or ``mc4``).

    ``values`` is a metric's (Q, R) values oriented so higher is better (ordered by mean
    whatever ``method``), or a preference measure's (Q, R, R) tensor, ordered by ``method``:
    mean win rate, Borda count of the per-query orderings or MC4 over them.
    """
    if values.ndim == 2:
        return values, "mean"
    rates = win_rates(values)
    if method == "win":
        return rates, "mean"
    if method == "borda":
        return borda_points(rates), "sum"
    if method == "mc4":
        return above(rates).reshape(len(rates), -1).astype(np.float64), "mc4"
    raise ValueError(f"unknown ordering method {method!r}")


def subset_scores(table: np.ndarray, finish: str, weights: np.ndarray | None = None,
                  order: np.ndarray | None = None) -> np.ndarray:
    """(S, R) ordering scores (higher = better) on S query subsets given as 0/1 ``weights``
    (S, Q); without ``weights``, one row over all queries. ``order``: see :func:`mc4_scores`."""
    sums = table.sum(axis=0, keepdims=True) if weights is None else weights @ table
    if finish == "sum":
        return sums
    if finish == "mc4":
        n_runs = math.isqrt(table.shape[1])
        return mc4_scores(sums.reshape(len(sums), n_runs, n_runs), order)
    counts = np.full(1, len(table)) if weights is None else weights.sum(axis=1)
    return sums / counts[:, None]


def ordering_scores(values: np.ndarray, method: str, order: np.ndarray | None = None
                    ) -> np.ndarray:
    """(R,) scores of one ordering over all queries (higher = better); ``order``: see
    :func:`mc4_scores`."""
    return subset_scores(*query_table(values, method), order=order)[0]


def add_orderings(results: Results, tensors: dict[str, np.ndarray],
                  metrics: dict[str, np.ndarray], lower_is_better: set[str]) -> None:
    """``all`` rows of every system ordering (contract §5).

    Preference measure M: ``M_win_rank`` (M_win is already there), ``M_borda`` (Borda count)
    and ``M_borda_rank``, ``M_mc4`` (stationary probability) and ``M_mc4_rank``; metric M:
    ``M_rank``. A rank is the 1-based position; tied runs share their mean position.
    """
    runs = np.arange(len(results.runs))
    order = name_order(results.runs)
    for name, tensor in tensors.items():
        for method in ORDERINGS:
            scores = ordering_scores(tensor, method, order)
            if method != "win":
                results.add(f"{name}_{method}", -1, runs, scores)
            results.add(f"{name}_{method}_rank", -1, runs, rank_positions(scores))
    for name, values in metrics.items():
        oriented = -values if name in lower_is_better else values
        results.add(f"{name}_rank", -1, runs,
                    rank_positions(ordering_scores(oriented, "mean")))

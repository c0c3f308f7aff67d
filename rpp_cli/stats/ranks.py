"""Tests that read only the signs and the ranks of the paired values: Wilcoxon's signed-rank
test, as ``scipy.stats.wilcoxon`` computes it with its defaults, and the sign test, as
``scipy.stats.binomtest`` of the positive values among the non-zero ones.

Both are two-sided and drop the zeros (Wilcoxon's own rule, ``zero_method="wilcox"``; the
sign test's classical one). Wilcoxon's ranks are those of |x| among the non-zero values,
tied values sharing the mean of their ranks; |x| within rpp's tie tolerance of each other
(1e-12 of the largest, :func:`rpp_cli.orderings.tie_key`) count as tied, so that P@10
differences of 0.3 - 0.2 and 0.2 - 0.1 (0.09999999999999998 and 0.1) tie as they do in
exact arithmetic. On values without such near-ties the p-values are scipy's.
"""
from __future__ import annotations

import numpy as np

# scipy.stats.wilcoxon's method="auto": the exact null distribution of R+ when there are at
# most EXACT_MAX values and no zero or tie; with zeros or ties, every sign flip enumerated
# (scipy's PermutationMethod with 9,999 resamples, exact up to 2^13) when there are at most
# PERMUTATION_MAX values; otherwise the normal approximation with the tie correction.
EXACT_MAX = 50
PERMUTATION_MAX = 13
_FLIP_ELEMENTS = 1 << 22  # elements of one block of enumerated sign flips (pairs x flips)


def sign_test(x: np.ndarray) -> np.ndarray:
    """(P,) two-sided sign-test p-values of the columns of ``x`` (Q, P): with k positive and
    m negative values, 2 P(X <= min(k, m)) for X ~ Binomial(k + m, 1/2), at most 1; zeros
    are left out, and a column of zeros gets p = 1."""
    from scipy.special import bdtr  # lazily, as everywhere in stats

    pos = np.count_nonzero(x > 0, axis=0)
    neg = np.count_nonzero(x < 0, axis=0)
    n = pos + neg
    with np.errstate(invalid="ignore"):
        p = np.minimum(1.0, 2.0 * bdtr(np.minimum(pos, neg), n, 0.5))
    return np.where(n == 0, 1.0, p)


def signed_ranks(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Q, P) ranks of |x| among each column's non-zero values (mean ranks for ties; 0 for
    a zero), and (P,) each column's tie term, the sum of t^3 - t over its groups of t tied
    non-zero values."""
    from ..orderings import tie_key

    n_q = len(x)
    nonzero = x != 0
    key = np.where(nonzero.T, tie_key(np.abs(x.T)), np.inf)  # (P, Q); zeros sort last
    order = np.argsort(key, axis=1, kind="stable")
    ordered = np.take_along_axis(key, order, axis=1)
    first = np.ones(ordered.shape, dtype=bool)
    first[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
    last = np.ones(ordered.shape, dtype=bool)
    last[:, :-1] = first[:, 1:]
    slots = np.arange(n_q)
    start = np.maximum.accumulate(np.where(first, slots, 0), axis=1)
    end = np.minimum.accumulate(np.where(last, slots, n_q)[:, ::-1], axis=1)[:, ::-1]
    size = (end - start + 1).astype(np.float64)
    kept = np.isfinite(ordered)
    ties = np.where(kept, size * size - 1.0, 0.0).sum(axis=1)  # t members of t^2 - 1 each
    ranks = np.empty(key.shape)
    np.put_along_axis(ranks, order, np.where(kept, (start + end) / 2.0 + 1.0, 0.0), axis=1)
    return ranks.T, ties


def wilcoxon(x: np.ndarray) -> np.ndarray:
    """(P,) two-sided p-values of Wilcoxon's signed-rank test of the columns of ``x`` (Q, P)
    against 0, as ``scipy.stats.wilcoxon(column)`` with its defaults (zeros dropped, no
    continuity correction, ``method="auto"``; see EXACT_MAX); a column of zeros gets p = 1
    (scipy: NaN, or 1 on at most 13 values)."""
    from scipy.special import ndtr

    n_q, n_pairs = x.shape
    ranks, ties = signed_ranks(x)
    count = np.count_nonzero(x, axis=0).astype(np.float64)
    r_plus = (ranks * (x > 0)).sum(axis=0)  # sums of half-integers: exact in any order
    mean = count * (count + 1.0) * 0.25
    var = count * (count + 1.0) * (2.0 * count + 1.0)
    se = np.sqrt((var - ties / 2) / 24)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = 2.0 * ndtr(-np.abs((r_plus - mean) / se))  # the normal approximation
    if n_q <= EXACT_MAX:
        clean = (ties == 0) & (count == n_q)  # no tie, no zero: the exact distribution
        p = np.where(clean, _exact(r_plus, n_q), p)
        if n_q <= PERMUTATION_MAX and not clean.all():
            flips = ~clean
            p[flips] = _enumerated(x[:, flips], ranks[:, flips], r_plus[flips])
    return np.where(count == 0, 1.0, p)


def _exact(r_plus: np.ndarray, n: int) -> np.ndarray:
    """Two-sided p of integral R+ values under the exact null distribution on n ranks:
    2 min(P(R+ >= r), P(R+ <= r)), at most 1 (the counts of subsets of 1..n by their sum,
    exact in floats up to n = 50)."""
    counts = np.ones(1)
    for k in range(1, n + 1):  # the polynomial product (1 + t^k), one rank at a time
        grown = np.zeros(len(counts) + k)
        grown[:len(counts)] += counts
        grown[k:] += counts
        counts = grown
    cdf = np.cumsum(counts) / 2.0 ** n  # P(R+ <= r); every partial sum is exact
    r = np.clip(np.rint(r_plus).astype(np.int64), 0, len(counts) - 1)
    below = cdf[r]
    above = 1.0 - np.where(r > 0, cdf[np.maximum(r - 1, 0)], 0.0)
    return np.minimum(1.0, 2.0 * np.minimum(below, above))


def _enumerated(x: np.ndarray, ranks: np.ndarray, r_plus: np.ndarray) -> np.ndarray:
    """Two-sided p of R+ over all 2^Q sign flips of the columns of ``x`` (Q at most
    PERMUTATION_MAX), as scipy.stats.permutation_test: 2 min(share <= R+, share >= R+),
    at most 1, within its relative tolerance of 100 eps. Flipping value i moves R+ by
    -rank_i when it is positive and +rank_i when negative."""
    n_q, n_pairs = x.shape
    bits = ((np.arange(2 ** n_q)[:, None] >> np.arange(n_q)) & 1).astype(np.float64)
    moves = -np.sign(x) * ranks
    gamma = np.abs(100 * np.finfo(np.float64).eps * r_plus)
    less = np.empty(n_pairs, dtype=np.int64)
    more = np.empty(n_pairs, dtype=np.int64)
    step = max(1, _FLIP_ELEMENTS // 2 ** n_q)
    for lo in range(0, n_pairs, step):  # blocks of pairs: 2^13 flips of each at once
        cut = slice(lo, lo + step)
        null = r_plus[cut] + bits @ moves[:, cut]  # (2^Q, pairs), exact: half-integers
        less[cut] = np.count_nonzero(null <= r_plus[cut] + gamma[cut], axis=0)
        more[cut] = np.count_nonzero(null >= r_plus[cut] - gamma[cut], axis=0)
    return np.minimum(1.0, 2.0 * np.minimum(less, more) / 2 ** n_q)

"""How big and how sure: intervals of the mean paired value, the paired effect size, and the
one-sided bound a non-inferiority gate reads.

The sample is the queries; a column of ``x`` (Q, P) holds one pair's per-query paired values
(RPP(a, b) for a preference measure, m(a) - m(b) for a metric), and what is estimated is
their mean over the population of queries the collection samples.

- ``t``: mean +- t_{(1+c)/2, Q-1} s / sqrt(Q), as ``scipy.stats.ttest_1samp(column)
  .confidence_interval(c)``;
- ``percentile`` and ``bca``: the paired bootstrap (the queries resampled with replacement,
  each pair's values resampled together), as ``scipy.stats.bootstrap((column,), np.mean,
  method=..., rng=numpy.random.default_rng(seed))``: the same resamples (one (B, Q) draw of
  query indices for every pair), the same resample means to the bit, so the same intervals;
- the effect size d_z = mean / s (Cohen 1988; Lakens 2013), times Hedges' exact correction
  J(Q - 1) = Gamma(df/2) / (sqrt(df/2) Gamma((df-1)/2)), which makes it unbiased under
  normality (Hedges' g_z).

A column whose values are all equal has the point interval [value, value] by every method
(scipy: the same for t, NaN for BCa, a degenerate bootstrap distribution), and the effect
size 0 when the values are 0, else an infinite one of their sign (no spread to measure by).
"""
from __future__ import annotations

import numpy as np

from ..aggregate import mean_preference
from ..errors import InputError
from .paired import by_name, of_runs, pair_values

INTERVALS = ("t", "percentile", "bca")
DEFAULT_RESAMPLES = 9999  # scipy.stats.bootstrap's n_resamples
# Elements of the largest array of gathered resamples (32 MiB of float64); the draws do not
# depend on it (numpy draws the same indices in blocks of rows as in one call).
_GATHER_ELEMENTS = 1 << 22


def _constant(x: np.ndarray) -> np.ndarray:
    """(P,) whether every value of a column equals its first."""
    return (x == x[:1]).all(axis=0)


def _needs_two(n: int) -> None:
    """An InputError unless there are two queries (one value has no spread)."""
    if n < 2:
        raise InputError(f"an interval of the mean needs at least 2 queries (got {n})")


def t_quantile(probability: float, df: int) -> float:
    """Student's t quantile: the value below which ``probability`` of t_df lies."""
    from scipy.special import stdtrit  # lazily: scipy costs other commands its import time

    return float(stdtrit(df, probability))


def _standard_error(x: np.ndarray) -> np.ndarray:
    """(P,) s / sqrt(Q) of each column; exactly 0 for a constant column (whose s may round
    to 1.7e-17 rather than 0)."""
    n = len(x)
    return np.where(_constant(x), 0.0, x.std(axis=0, ddof=1) / np.sqrt(n))


def t_interval(x: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """(low, high), each (P,): the two-sided t-interval of each column's mean at ``level``,
    centred on the mean rpp prints (:func:`mean_preference`)."""
    _needs_two(len(x))
    mean = mean_preference(x)
    half = t_quantile(1 - (1 - level) / 2, len(x) - 1) * _standard_error(x)
    return mean - half, mean + half


def upper_bound(x: np.ndarray, level: float, mean: np.ndarray | None = None) -> np.ndarray:
    """(P,) the one-sided upper t bound of each column's mean at ``level``: mean +
    t_{level, Q-1} s / sqrt(Q), ``scipy.stats.ttest_1samp(column, alternative="less")
    .confidence_interval(level).high``; ``mean`` replaces the column means (a value printed
    elsewhere, e.g. a difference of the means rpp eval prints)."""
    _needs_two(len(x))
    centre = mean_preference(x) if mean is None else mean
    return centre + t_quantile(level, len(x) - 1) * _standard_error(x)


def hedges_factor(df: int) -> float:
    """Hedges' exact small-sample correction J(df) = Gamma(df/2) / (sqrt(df/2)
    Gamma((df-1)/2)); 0 for df = 1, where d has no finite mean."""
    from scipy.special import gammaln

    if df <= 1:
        return 0.0
    return float(np.exp(gammaln(df / 2) - gammaln((df - 1) / 2)) / np.sqrt(df / 2))


def effect_size(x: np.ndarray) -> np.ndarray:
    """(P,) Hedges' g_z of each column: J(Q - 1) mean / s, s with Q - 1 degrees of freedom
    (d_z = t / sqrt(Q) is g_z / J). NaN with 2 queries (J(1) = 0: d_z has no finite mean);
    a constant column: 0 when it is 0, else +-inf."""
    _needs_two(len(x))
    mean = mean_preference(x)
    constant = _constant(x)
    j = hedges_factor(len(x) - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = j * mean / x.std(axis=0, ddof=1) if j > 0 else np.full(x.shape[1], np.nan)
    spreadless = np.where(mean == 0, 0.0, np.copysign(np.inf, mean))
    return np.where(constant, spreadless, g).astype(np.float64)


def bootstrap_means(x: np.ndarray, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """(P, B) the mean of each column on each of ``resamples`` resamples of the queries: one
    (B, Q) draw of indices, ``rng.integers(0, Q, (B, Q))``, shared by every column, and each
    mean taken as numpy takes it over one contiguous row (pairwise summation), the bits
    scipy.stats.bootstrap gets. Per column, a block of resamples is one gather from a
    column that stays in cache (a block at most _GATHER_ELEMENTS)."""
    n, n_cols = x.shape
    cols = np.ascontiguousarray(x.T)
    out = np.empty((n_cols, resamples))
    rows = max(1, _GATHER_ELEMENTS // n)
    for lo in range(0, resamples, rows):
        hi = min(resamples, lo + rows)
        idx = rng.integers(0, n, (hi - lo, n))
        for c, col in enumerate(cols):  # a loop over pairs; each a (rows, Q) gather
            out[c, lo:hi] = col[idx].mean(axis=-1)
    return out


def _quantiles(ordered: np.ndarray, probabilities: np.ndarray) -> np.ndarray:
    """(P, k) linear-interpolation quantiles (numpy's and scipy's default, Hyndman & Fan's
    type 7) of each sorted row of ``ordered`` (P, B) at its row of ``probabilities`` (P, k);
    NaN where a probability is."""
    last = ordered.shape[1] - 1
    h = np.nan_to_num(probabilities, nan=0.0) * last
    lo = np.clip(np.floor(h).astype(np.int64), 0, last)
    hi = np.minimum(lo + 1, last)
    t = h - lo
    a = np.take_along_axis(ordered, lo, axis=1)
    b = np.take_along_axis(ordered, hi, axis=1)
    value = np.where(t < 0.5, a + (b - a) * t, b - (b - a) * (1 - t))
    return np.where(np.isnan(probabilities), np.nan, value)


def _bca_probabilities(x: np.ndarray, means: np.ndarray, level: float) -> np.ndarray:
    """(P, 2) the BCa interval's two probabilities (Efron & Tibshirani 1993, ch. 14):
    bias z0 = Phi^-1 of the share of resample means below the mean (ties counting half, as
    scipy), acceleration a = sum d^3 / (6 (sum d^2)^(3/2)) with d the deviations from the
    mean, which is the jackknife's for the mean in closed form."""
    from scipy.special import ndtr, ndtri

    cols = np.ascontiguousarray(x.T)
    theta = cols.mean(axis=1)[:, None]  # np.mean of each column, the bits scipy compares
    below = (np.count_nonzero(means < theta, axis=1) + np.count_nonzero(means <= theta, axis=1))
    z0 = ndtri(below / (2 * means.shape[1]))[:, None]
    dev = cols - theta
    with np.errstate(divide="ignore", invalid="ignore"):
        accel = ((dev ** 3).sum(axis=1) / (6 * (dev ** 2).sum(axis=1) ** 1.5))[:, None]
        z = ndtri(np.array([(1 - level) / 2, 1 - (1 - level) / 2]))[None, :]
        return ndtr(z0 + (z0 + z) / (1 - accel * (z0 + z)))


def bootstrap_interval(x: np.ndarray, level: float, method: str, resamples: int,
                       rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(low, high), each (P,): the paired bootstrap ``percentile`` or ``bca`` interval of
    each column's mean at ``level`` (see the module)."""
    _needs_two(len(x))
    means = bootstrap_means(x, resamples, rng)
    if method == "bca":
        probabilities = _bca_probabilities(x, means, level)
    else:
        tail = (1 - level) / 2
        probabilities = np.broadcast_to([tail, 1 - tail], (x.shape[1], 2))
    means.sort(axis=1)
    ends = _quantiles(means, probabilities)
    mean = mean_preference(x)
    constant = _constant(x)
    return np.where(constant, mean, ends[:, 0]), np.where(constant, mean, ends[:, 1])


def interval(x: np.ndarray, method: str, level: float, resamples: int,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of each column's mean by ``method`` (one of INTERVALS) at ``level``."""
    if method == "t":
        return t_interval(x, level)
    if method in ("percentile", "bca"):
        return bootstrap_interval(x, level, method, resamples, rng)
    raise ValueError(f"unknown interval {method!r}")


def pair_intervals(values: np.ndarray, method: str, level: float, resamples: int,
                   seed: int, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, effect size) of every unordered run pair (a < b, ``np.triu_indices``
    order) of a metric's (Q, R) or a preference measure's (Q, R, R) values. A bootstrap
    resamples from a fresh ``default_rng(seed)`` with the runs in name order, each pair
    oriented by name, so an interval does not depend on the order the runs were given in
    (a pair given the other way round gets (-high, -low))."""
    x = pair_values(values)
    size = effect_size(x)
    if method == "t":
        low, high = t_interval(x, level)
        return low, high, size
    order, index, flipped = by_name(names)
    c_low, c_high = interval(pair_values(of_runs(values, order)), method, level, resamples,
                             np.random.default_rng(seed))
    low = np.where(flipped, -c_high[index], c_low[index])
    high = np.where(flipped, -c_low[index], c_high[index])
    return low, high, size

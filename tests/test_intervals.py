"""Intervals, effect sizes, rank tests and FDR corrections against scipy on the same inputs:
hypothesis-drawn per-query values (ties, zeros, n = 2 ... 500, constant columns), to 1e-12,
the bootstrap with the same resamples (the same generator and seed)."""
from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats
from scipy.special import loggamma

from rpp_cli.aggregate import mean_preference
from rpp_cli.errors import InputError
from rpp_cli.stats import (adjust, bootstrap_interval, effect_size, hedges_factor,
                           pair_intervals, sign_test, significance, t_interval, upper_bound,
                           wilcoxon)
from rpp_cli.stats import intervals as intervals_module

TOL = 1e-12


def close(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal to 1e-12, absolute below 1 and relative above."""
    got, want = np.asarray(got, dtype=float), np.asarray(want, dtype=float)
    return bool(np.all(np.abs(got - want) <= TOL * np.maximum(1.0, np.abs(want))))


def columns(draw, n: int, k: int) -> np.ndarray:
    """(n, k) paired values of one of the shapes IR gives: a grid of tenths (P@10, exact ties
    and zeros), RPP-like fractions, continuous values, a constant column."""
    out = np.empty((n, k))
    for j in range(k):
        kind = draw(st.sampled_from(["tenths", "fractions", "continuous", "constant"]))
        if kind == "tenths":
            a = np.array(draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)))
            b = np.array(draw(st.lists(st.integers(0, 10), min_size=n, max_size=n)))
            out[:, j] = a / 10 - b / 10  # floats of exact ties: 0.3 - 0.2 vs 0.2 - 0.1
        elif kind == "fractions":
            top = draw(st.integers(1, 7))
            out[:, j] = np.array(draw(st.lists(st.integers(-top, top), min_size=n,
                                               max_size=n))) / top
        elif kind == "continuous":
            seed = draw(st.integers(0, 2 ** 32 - 1))
            rng = np.random.default_rng(seed)
            out[:, j] = rng.normal(draw(st.floats(-1, 1)), draw(st.floats(0.01, 1)), n)
        else:
            out[:, j] = draw(st.sampled_from([0.0, 0.1, -0.25, 1 / 3]))
    return out


@st.composite
def paired(draw, low: int = 2, high: int = 500) -> np.ndarray:
    """(n, k) paired values, n drawn from ``low``..``high`` (most often small)."""
    n = draw(st.one_of(st.integers(low, min(high, 30)), st.integers(low, high)))
    return columns(draw, n, draw(st.integers(1, 4)))


def scipy_t(column: np.ndarray, level: float) -> tuple[float, float]:
    """scipy's t-interval of the mean; the point for a constant column (scipy's standard
    error of 0.1, 0.1, 0.1 is 1e-17, not 0)."""
    if (column == column[0]).all():
        return float(np.mean(column)), float(np.mean(column))
    ci = scipy_stats.ttest_1samp(column, 0.0).confidence_interval(level)
    return float(ci.low), float(ci.high)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(paired(), st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_t_interval_and_upper_bound_equal_scipys(x, level):
    low, high = t_interval(x, level)
    bound = upper_bound(x, level)
    for j in range(x.shape[1]):
        assert close([low[j], high[j]], scipy_t(x[:, j], level))
        if not (x[:, j] == x[0, j]).all():
            ref = scipy_stats.ttest_1samp(x[:, j], 0.0, alternative="less")
            assert close(bound[j], ref.confidence_interval(level).high)
        else:
            assert bound[j] == low[j] == high[j]


def hedges(df: int) -> float:
    """J(df) through scipy's log-gamma."""
    return float(np.exp(loggamma(df / 2) - loggamma((df - 1) / 2)) / np.sqrt(df / 2))


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(paired(3))
def test_effect_size_is_scipys_t_over_root_n_times_hedges_j(x):
    n = len(x)
    g = effect_size(x)
    for j in range(x.shape[1]):
        col = x[:, j]
        if (col == col[0]).all():
            assert g[j] == (0.0 if col[0] == 0 else math.copysign(math.inf, col[0]))
        else:
            t = scipy_stats.ttest_1samp(col, 0.0).statistic
            assert close(g[j], t / np.sqrt(n) * hedges(n - 1))


def test_hedges_factor():
    """J(1) = 0 (d has no finite mean with one degree of freedom); J(df) against the gamma
    ratio and Hedges' approximation 1 - 3 / (4 df - 1); J tends to 1."""
    assert hedges_factor(1) == 0.0
    for df in (2, 3, 5, 10, 24, 99, 499, 5000):
        assert close(hedges_factor(df), hedges(df))
        assert abs(hedges_factor(df) - (1 - 3 / (4 * df - 1))) < 0.035 / df ** 2
    assert 0.9999 < hedges_factor(20000) < 1
    assert np.isnan(effect_size(np.array([[0.1], [0.3]])))[0]  # 2 queries: no g


def scipy_bootstrap(column: np.ndarray, level: float, method: str, resamples: int,
                    seed: int) -> tuple[float, float]:
    """scipy.stats.bootstrap's interval of the mean with default_rng(seed)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # DegenerateDataWarning: NaN is compared below
        res = scipy_stats.bootstrap((column,), np.mean, n_resamples=resamples, method=method,
                                    confidence_level=level, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


@settings(max_examples=120, deadline=None)
@given(paired(2, 300), st.sampled_from(["percentile", "bca"]), st.sampled_from([0.8, 0.95]),
       st.integers(0, 2 ** 63 - 1), st.sampled_from([1, 99, 999]))
@pytest.mark.slow
def test_bootstrap_intervals_equal_scipys_with_the_same_resamples(x, method, level, seed, b):
    low, high = bootstrap_interval(x, level, method, b, np.random.default_rng(seed))
    for j in range(x.shape[1]):
        col = x[:, j]
        ref = scipy_bootstrap(col, level, method, b, seed)
        if (col == col[0]).all():  # rpp: the point; scipy: NaN (BCa) or the point's float
            assert low[j] == high[j] == mean_preference(col[:, None])[0]
            assert np.isnan(ref).all() or close([low[j], high[j]], ref)
            assert method == "bca" or not np.isnan(ref).any()
        elif np.isnan(ref).any():  # BCa undefined (every resample on one side)
            assert np.isnan([low[j], high[j]]).all()
        else:
            assert close([low[j], high[j]], ref), (method, j, low[j], high[j], ref)


def test_bootstrap_draws_do_not_depend_on_the_block_size(monkeypatch):
    """Blocks of a few resamples (the memory bound) draw the indices of one big draw, and
    every resample mean keeps scipy's bits."""
    x = np.round(np.random.default_rng(3).normal(0.1, 0.3, size=(37, 5)), 2)
    whole = bootstrap_interval(x, 0.95, "bca", 1999, np.random.default_rng(11))
    monkeypatch.setattr(intervals_module, "_GATHER_ELEMENTS", 37 * 7)  # 7 resamples a block
    blocked = bootstrap_interval(x, 0.95, "bca", 1999, np.random.default_rng(11))
    assert np.array_equal(whole, blocked)
    for j in range(5):
        assert close([blocked[0][j], blocked[1][j]],
                     scipy_bootstrap(x[:, j], 0.95, "bca", 1999, 11))


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 6), st.integers(3, 40), st.sampled_from(["t", "percentile", "bca"]),
       st.integers(0, 1000))
def test_pair_intervals_do_not_depend_on_the_order_of_the_runs(n_runs, n_q, method, seed):
    """The runs given in another order: each pair's interval is the same, (-high, -low) when
    the pair comes the other way round, to the bit; so is its effect size, negated."""
    rng = np.random.default_rng(seed)
    values = np.round(rng.normal(size=(n_q, n_runs)), 2)
    names = [f"run{i}" for i in rng.permutation(n_runs)]
    perm = rng.permutation(n_runs)
    low, high, size = pair_intervals(values, method, 0.9, 199, 5, names)
    p_low, p_high, p_size = pair_intervals(values[:, perm], method, 0.9, 199, 5,
                                           [names[i] for i in perm])
    ia, ib = np.triu_indices(n_runs, 1)
    where = {(a, b): k for k, (a, b) in enumerate(zip(ia, ib))}
    for k, (a, b) in enumerate(zip(perm[ia], perm[ib])):
        if a < b:
            m = where[a, b]
            assert (p_low[k], p_high[k], p_size[k]) == (low[m], high[m], size[m])
        else:
            m = where[b, a]
            assert (p_low[k], p_high[k], p_size[k]) == (-high[m], -low[m], -size[m])


def test_an_interval_needs_two_queries():
    for call in (lambda x: t_interval(x, 0.95), lambda x: effect_size(x),
                 lambda x: bootstrap_interval(x, 0.95, "bca", 9, np.random.default_rng(0))):
        with pytest.raises(InputError, match="at least 2 queries"):
            call(np.array([[0.5]]))


PERMUTED_UP_TO = 13  # scipy's "auto": ties or zeros up to this n take its permutation path


def scipy_wilcoxon(d: np.ndarray) -> float:
    """``scipy.stats.wilcoxon(d).pvalue``, with its permutation path (ties or zeros, n <= 13)
    run through scipy's own ``permutation_test`` on a vectorized statistic: scipy calls its
    statistic once per sign pattern (2.4 s a call at n = 13, most of this file's time). The
    statistic is scipy's r+: the average ranks of |d| among the nonzero values (sign flips do
    not change them) summed over the positive values. Checked against scipy's own call by
    test_the_reference_is_scipys_wilcoxon."""
    d = np.asarray(d, dtype=float)
    nonzero = d != 0
    if len(d) > PERMUTED_UP_TO or (nonzero.all() and len(np.unique(np.abs(d))) == len(d)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return float(scipy_stats.wilcoxon(d).pvalue)
    ranks = np.zeros(len(d))
    ranks[nonzero] = scipy_stats.rankdata(np.abs(d[nonzero]))

    def r_plus(flipped: np.ndarray, axis: int) -> np.ndarray:
        return np.sum((flipped > 0) * ranks, axis=axis)
    return float(scipy_stats.permutation_test((d,), r_plus, vectorized=True,
                                              permutation_type="samples", n_resamples=9999,
                                              alternative="two-sided", axis=-1).pvalue)


@pytest.mark.slow
@pytest.mark.parametrize("d", [
    [2, -1, 0],
    [1, 1, -1, 2, 0, 0, -3],
    [0.3 - 0.2, 0.2 - 0.1, -0.1, 0.5, 0.5, 0, -0.4, 0.1, 0.2, -0.2],
    [3, -3, 1, 1, 2, 0, -2, 4, 1, -1, 5, 2, 0],
    [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 14],
])
def test_the_reference_is_scipys_wilcoxon(d):
    """The vectorized reference gives scipy's own p-value on ties and zeros, n = 3 ... 13
    (the permutation path, to its last n) and 15 (scipy's call itself)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = scipy_stats.wilcoxon(d).pvalue
    assert scipy_wilcoxon(np.array(d)) == want


def wilcoxon_tie_values(draw, n: int) -> np.ndarray:
    """Values with exact ties and zeros (integers), or continuous ones."""
    if draw(st.booleans()):
        top = draw(st.integers(1, 6))
        return np.array(draw(st.lists(st.integers(-top, top), min_size=n, max_size=n)),
                        dtype=float)
    return np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1))).normal(0.2, 1, n)


@st.composite
def rank_columns(draw) -> np.ndarray:
    """(n, k) values for the rank tests, n = 1 ... 80: every method of scipy's "auto"
    (exact to 50 without ties, enumerated to 13 with them, the normal approximation)."""
    n = draw(st.one_of(st.integers(1, 16), st.integers(1, 80)))
    return np.column_stack([wilcoxon_tie_values(draw, n) for _ in range(draw(st.integers(1, 3)))])


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(rank_columns())
def test_wilcoxon_and_sign_test_equal_scipys(x):
    p, s = wilcoxon(x), sign_test(x)
    for j in range(x.shape[1]):
        col = x[:, j]
        nonzero = int(np.count_nonzero(col))
        ref = scipy_wilcoxon(col) if nonzero else math.nan
        assert close(p[j], 1.0 if math.isnan(ref) else ref), (col, p[j], ref)
        pos = int((col > 0).sum())
        assert close(s[j], scipy_stats.binomtest(pos, nonzero).pvalue if nonzero else 1.0)


@pytest.mark.slow
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10), st.integers(0, 10)), min_size=1, max_size=60))
def test_wilcoxon_ties_precision_differences_as_exact_arithmetic_does(hits):
    """P@10 differences a/10 - b/10 as floats (0.3 - 0.2 = 0.09999999999999998, 0.2 - 0.1 =
    0.1) tie as their integer numerators do: the p-value is scipy's on a - b, which is the
    same test (ranks do not see the scale)."""
    a = np.array([h[0] for h in hits])
    b = np.array([h[1] for h in hits])
    x = (a / 10 - b / 10)[:, None]
    ref = scipy_wilcoxon(a - b) if (a != b).any() else 1.0
    assert close(wilcoxon(x)[0], ref)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.floats(0, 1), st.sampled_from([0.0, 0.01, 0.05, 1.0])),
                min_size=2, max_size=60), st.sampled_from(["bh", "by"]))
def test_fdr_corrections_equal_scipys_false_discovery_control(p, method):
    p = np.array(p)
    assert close(adjust(p, method), scipy_stats.false_discovery_control(p, method=method))


def test_fdr_corrections_by_hand():
    """BH: p_(i) m / i, then the running minimum from the largest; BY: times 1 + 1/2 + 1/3."""
    p = np.array([0.04, 0.01, 0.03])
    assert np.allclose(adjust(p, "bh"), [0.04, 0.03, 0.04])
    assert np.allclose(adjust(p, "by"), np.array([0.04, 0.03, 0.04]) * (1 + 1 / 2 + 1 / 3))
    assert adjust(np.array([]), "bh").size == 0


def test_rank_tests_through_significance_do_not_depend_on_run_order():
    rng = np.random.default_rng(4)
    values = np.round(rng.normal(size=(20, 4)), 1)
    names = ["d", "b", "a", "c"]
    for test in ("wilcoxon", "sign"):
        p = significance(values, test, 100, rng, names)
        assert np.array_equal(p, significance(values[:, ::-1], test, 100, rng, names[::-1])[
            [5, 4, 2, 3, 1, 0]])
        x = values[:, :1] - values[:, 1:2]
        assert p[0] == (wilcoxon(x) if test == "wilcoxon" else sign_test(x))[0]

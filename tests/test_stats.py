"""Significance kernels against scipy, hand arithmetic and constructed cases."""
from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as scipy_stats

from rpp_cli.errors import InputError
from rpp_cli.stats import adjust, hsd, kendall_tau_b, pair_values, randomization, ttest

RNG = np.random.default_rng(7)
X = RNG.normal(0.1, 0.5, size=(12, 5))  # 12 queries, 5 columns of paired values


def antisymmetric(raw: np.ndarray) -> np.ndarray:
    """A (Q, R, R) preference tensor from any (Q, R, R) array."""
    return (raw - raw.transpose(0, 2, 1)) / 2


def test_pair_values_preference_and_metric():
    t = antisymmetric(RNG.normal(size=(3, 4, 4)))
    ia, ib = np.triu_indices(4, 1)
    assert np.array_equal(pair_values(t), t[:, ia, ib])
    m = RNG.normal(size=(3, 4))
    assert np.allclose(pair_values(m)[:, 0], m[:, 0] - m[:, 1])
    assert np.allclose(pair_values(m)[:, -1], m[:, 2] - m[:, 3])


def test_metric_differences_equal_in_exact_arithmetic_are_ties():
    """An AP of 1/2 comes out as (1 + 2/4)/3 or (1/2 + 2/3 + 3/9)/3 (relevant items at ranks
    1, 4 or 2, 3, 9 of 3), a sum of precisions of 3/10 as 0.1 + 0.2 or 0.3: different floats,
    a difference of exactly 0."""
    ap = [(1 / 1 + 2 / 4) / 3, (1 / 2 + 2 / 3 + 3 / 9) / 3]
    tenths = [0.1 + 0.2, 0.3]
    assert ap[0] != ap[1] and tenths[0] != tenths[1]  # the case: the rounding this is about
    m = np.array([tenths + [0.5], ap + [0.5 + 1e-9]])
    diffs = pair_values(m)  # pairs (0, 1), (0, 2), (1, 2)
    assert diffs[:, 0].tolist() == [0.0, 0.0]
    assert diffs[1, 1:].tolist() == [ap[0] - (0.5 + 1e-9), ap[1] - (0.5 + 1e-9)]  # kept
    assert ttest(diffs[:, :1]).tolist() == [1.0]
    assert randomization(diffs[:, :1], 100, np.random.default_rng(0)).tolist() == [1.0]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=2, max_size=11))
def test_randomization_of_precision_differences_equals_integer_enumeration(hits):
    """P@5 differences a/5 - b/5 as floats (0.2 + 0.4 - 0.6 is 5.6e-17, not 0), against the
    exact p of the integer numerators: every sign vector enumerated in integers."""
    k = np.array([a - b for a, b in hits])
    x = (np.array([a for a, _ in hits]) / 5 - np.array([b for _, b in hits]) / 5)[:, None]
    signs = np.array(list(itertools.product([1, -1], repeat=len(k))))
    exact = np.mean(np.abs(signs @ k) >= abs(k.sum()))
    assert randomization(x, 1 << 12, np.random.default_rng(0)).tolist() == [exact]


def test_ttest_equals_scipy_ttest_1samp():
    expected = [scipy_stats.ttest_1samp(X[:, j], 0.0).pvalue for j in range(X.shape[1])]
    assert np.allclose(ttest(X), expected, rtol=1e-12, atol=0)


def test_ttest_of_metric_differences_equals_scipy_ttest_rel():
    m = RNG.uniform(size=(15, 3))
    ia, ib = np.triu_indices(3, 1)
    expected = [scipy_stats.ttest_rel(m[:, a], m[:, b]).pvalue for a, b in zip(ia, ib)]
    assert np.allclose(ttest(pair_values(m)), expected, rtol=1e-12, atol=0)


def test_ttest_without_variance():
    x = np.array([[0.0, 0.5], [0.0, 0.5], [0.0, 0.5]])
    assert ttest(x).tolist() == [1.0, 0.0]


def test_ttest_of_equal_values_whose_sd_rounds_above_zero():
    """Three differences of exactly 0.1: their sd (ddof=1) is 1.7e-17, not 0, and scipy's p
    is 9.6e-33; every value equal and not 0 is p = 0, as for any other constant column."""
    x = np.array([[0.1, -0.3, 0.0], [0.1, -0.3, 0.0], [0.1, -0.3, 0.0]])
    assert x[:, 0].std(ddof=1) > 0  # the case: the rounding this test is about
    assert ttest(x).tolist() == [0.0, 0.0, 1.0]


def test_ttest_needs_two_queries():
    with pytest.raises(InputError, match="at least 2 queries"):
        ttest(np.ones((1, 3)))


def sign_flip_exact(x: np.ndarray) -> np.ndarray:
    """Exact two-sided sign-flip p-values by brute-force enumeration (independent of rpp)."""
    n = len(x)
    signs = np.array(list(itertools.product([1.0, -1.0], repeat=n)))
    null = np.abs(signs @ x)
    observed = np.abs(x.sum(axis=0))
    return (null >= observed - 1e-12).mean(axis=0)


def test_randomization_exact_equals_scipy_permutation_test():
    x = X[:10]  # 2**10 = 1024 sign vectors <= 2000 permutations: exact enumeration
    got = randomization(x, 2000, np.random.default_rng(0))
    for j in range(x.shape[1]):
        ref = scipy_stats.permutation_test((x[:, j],), np.mean, permutation_type="samples",
                                           n_resamples=np.inf, alternative="two-sided")
        assert got[j] == pytest.approx(ref.pvalue, abs=1e-12)
    assert np.allclose(got, sign_flip_exact(x))


def test_randomization_monte_carlo_within_sampling_error_of_exact():
    x = RNG.normal(0.15, 0.6, size=(16, 6))  # 2**16 > 4000: sampled
    b = 4000
    exact = sign_flip_exact(x)
    got = randomization(x, b, np.random.default_rng(3))
    # (count + 1) / (b + 1) convention: a multiple of 1 / (b + 1), never 0
    counts = got * (b + 1)
    assert np.allclose(counts, np.round(counts)) and (got >= 1 / (b + 1)).all()
    tolerance = 4 * np.sqrt(exact * (1 - exact) / b) + 2 / b
    assert (np.abs(got - exact) <= tolerance).all()


def test_randomization_is_seeded():
    x = RNG.normal(size=(30, 4))
    a = randomization(x, 500, np.random.default_rng(11))
    b = randomization(x, 500, np.random.default_rng(11))
    assert np.array_equal(a, b)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=14, max_size=20),
       st.integers(0, 2 ** 32 - 1))
def test_randomization_symmetric_and_bounded(values, seed):
    x = np.array(values)[:, None]
    p = randomization(x, 300, np.random.default_rng(seed))
    q = randomization(-x, 300, np.random.default_rng(seed))
    assert p == q
    assert 0 < p[0] <= 1
    if not x.any():
        assert p[0] == 1


def hsd_exact(values: np.ndarray) -> np.ndarray:
    """HSD p-values by enumerating every relabelling of every query (tiny inputs only)."""
    n_q, n_runs = values.shape[:2]
    observed = np.abs(pair_values(values).mean(axis=0))
    maxima = []
    for perms in itertools.product(itertools.permutations(range(n_runs)), repeat=n_q):
        if values.ndim == 3:
            means = np.mean([values[q][np.ix_(p, p)] for q, p in enumerate(perms)], axis=0)
            maxima.append(np.abs(means).max())
        else:
            means = np.mean([values[q][list(p)] for q, p in enumerate(perms)], axis=0)
            maxima.append(means.max() - means.min())
    maxima = np.array(maxima)
    return np.array([(maxima >= o - 1e-12).mean() for o in observed])


@pytest.mark.parametrize("kind", ["metric", "preference"])
def test_hsd_within_sampling_error_of_exact_enumeration(kind):
    rng = np.random.default_rng(5)
    values = (rng.normal(size=(4, 3)) + [0.8, 0.0, -0.3] if kind == "metric"
              else antisymmetric(rng.normal(size=(4, 3, 3)) + 0.4 * np.triu(np.ones((3, 3)))))
    exact = hsd_exact(values)  # 6**4 = 1296 relabellings
    b = 5000
    got = hsd(values, b, np.random.default_rng(9))
    tolerance = 4 * np.sqrt(exact * (1 - exact) / b) + 2 / b
    assert (np.abs(got - exact) <= tolerance).all(), (got, exact)


def hsd_numpy(values: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """HSD p-values as rpp computed them before its kernel, literally: blocks of trials of
    _CACHE_ELEMENTS // width, permutations drawn in numpy's own layout, each block summed one
    query at a time in numpy."""
    from rpp_cli.stats.paired import _CACHE_ELEMENTS, _extreme_counts, _slack

    n_q, n_runs = values.shape[:2]
    observed = np.abs(pair_values(values).mean(axis=0))
    slack = _slack(n_q, 2 * np.abs(values).reshape(n_q, -1).max(axis=1).sum() / n_q)
    ia, ib = np.triu_indices(n_runs, 1)
    width = len(ia) if values.ndim == 3 else n_runs
    step = max(1, _CACHE_ELEMENTS // max(width, 1))
    count = np.zeros(len(ia), dtype=np.int64)
    for lo in range(0, permutations, step):
        b = min(step, permutations - lo)
        perm = rng.permuted(np.broadcast_to(np.arange(n_runs), (n_q, b, n_runs)), axis=2)
        sums = np.zeros((b, width))
        for q in range(n_q):
            p = perm[q]
            sums += (values[q].take(p[:, ia] * n_runs + p[:, ib]) if values.ndim == 3
                     else values[q].take(p))
        maxima = (np.abs(sums).max(axis=1) if values.ndim == 3
                  else sums.max(axis=1) - sums.min(axis=1)) / n_q
        count += _extreme_counts(maxima[:, None], observed, slack)
    return (count + 1) / (permutations + 1)


@pytest.mark.parametrize("kind,runs", [("metric", 9), ("preference", 9), ("preference", 60),
                                       ("metric", 2)])
@pytest.mark.slow
def test_hsd_p_values_are_those_of_the_numpy_loop(kind, runs):
    """The kernel sums the trials as the per-query numpy loop did, from the same random draws
    (drawn into a C-ordered block): the p-values are the same bits, over full blocks and a
    last partial one (60 runs: 1,770 pairs, 9 trials a block)."""
    rng = np.random.default_rng(12)
    values = (rng.normal(size=(40, runs)) if kind == "metric"
              else antisymmetric(rng.normal(size=(40, runs, runs))))
    got = hsd(values, 2500, np.random.default_rng(3))
    assert got.tobytes() == hsd_numpy(values, 2500, np.random.default_rng(3)).tobytes()
    assert 0 < got.min() <= got.max() <= 1


def test_hsd_dominant_metric_run_and_identical_runs():
    rng = np.random.default_rng(1)
    noise = rng.normal(0, 0.01, size=(30, 1))
    values = np.hstack([np.full((30, 1), 1.0), noise, noise, noise])  # run 0 dominates
    b = 2000
    p = hsd(values, b, np.random.default_rng(0))
    ia, ib = np.triu_indices(4, 1)
    for pair, pv in zip(zip(ia, ib), p):
        if 0 in pair:
            assert pv == 1 / (b + 1)  # never reached by a relabelling: the minimum p
        else:
            assert pv == 1.0  # identical runs: observed 0, every trial reaches it


def test_hsd_dominant_preference_run_and_identical_runs():
    n_q, n_runs = 25, 4
    t = np.zeros((n_q, n_runs, n_runs))
    t[:, 0, 1:] = 1.0  # run 0 preferred to every other run on every query
    t[:, 1:, 0] = -1.0
    b = 1000
    p = hsd(t, b, np.random.default_rng(0))
    ia, ib = np.triu_indices(n_runs, 1)
    assert p[ia == 0].max() < 0.01
    assert (p[ia > 0] == 1.0).all()


def test_bonferroni_by_hand():
    p = np.array([0.01, 0.04, 0.03, 0.2])
    assert np.allclose(adjust(p, "bonferroni"), [0.04, 0.16, 0.12, 0.8])
    assert np.allclose(adjust(np.array([0.3, 0.5]), "bonferroni"), [0.6, 1.0])


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04, 0.2 -> x4, x3, x2, x1 = 0.04, 0.09, 0.08, 0.2 -> running max
    p = np.array([0.01, 0.04, 0.03, 0.2])
    assert np.allclose(adjust(p, "holm"), [0.04, 0.09, 0.09, 0.2])
    tied = np.array([0.02, 0.02, 0.5])
    assert np.allclose(adjust(tied, "holm"), [0.06, 0.06, 0.5])
    assert np.allclose(adjust(np.array([0.4, 0.45]), "holm"), [0.8, 0.8])


def test_no_correction_is_identity():
    p = np.array([0.2, 0.01])
    assert adjust(p, "none") is p


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0, 1, allow_nan=False), min_size=1, max_size=30))
def test_holm_between_raw_and_bonferroni(values):
    p = np.array(values)
    holm = adjust(p, "holm")
    assert (holm >= p - 1e-15).all() and (holm <= adjust(p, "bonferroni") + 1e-15).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(holm[order]) >= 0).all()  # monotone in the raw p-values


@settings(max_examples=80, deadline=None)
@given(st.integers(2, 9).flatmap(lambda n: st.tuples(
    st.lists(st.integers(0, 3), min_size=n, max_size=n),
    st.lists(st.integers(0, 3), min_size=n, max_size=n))))
def test_kendall_tau_b_equals_scipy_with_ties(xy):
    x, y = (np.array(v, dtype=float) for v in xy)
    got = float(kendall_tau_b(x, y))
    ref = scipy_stats.kendalltau(x, y, variant="b").statistic
    if math.isnan(ref):
        assert math.isnan(got)
    else:
        assert got == pytest.approx(ref, abs=1e-12)


def test_kendall_tau_b_batched():
    x = RNG.normal(size=(50, 7))
    y = x + RNG.normal(scale=0.5, size=(50, 7))
    got = kendall_tau_b(x, y)
    ref = [scipy_stats.kendalltau(a, b).statistic for a, b in zip(x, y)]
    assert np.allclose(got, ref, atol=1e-12)
    assert np.allclose(kendall_tau_b(x, x), 1.0) and np.allclose(kendall_tau_b(x, -x), -1.0)


@pytest.mark.parametrize("test", ["hsd", "randomization"])
def test_p_values_do_not_depend_on_the_order_of_the_runs(test):
    """The random draws are made over the runs sorted by name: reordering the runs only
    reorders the pairs."""
    from rpp_cli.stats import significance

    rng = np.random.default_rng(3)
    values = rng.normal(size=(12, 4))
    names = ["d", "b", "a", "c"]
    p = significance(values, test, 200, np.random.default_rng(7), names)
    shuffle = [2, 0, 3, 1]
    q = significance(values[:, shuffle], test, 200, np.random.default_rng(7),
                     [names[i] for i in shuffle])
    ia, ib = np.triu_indices(4, 1)
    by_pair = {frozenset((names[a], names[b])): v for a, b, v in zip(ia, ib, p)}
    for a, b, v in zip(ia, ib, q):
        assert by_pair[frozenset((names[shuffle[a]], names[shuffle[b]]))] == v


def test_hsd_blocks_of_trials_fit_their_memory_bound(monkeypatch):
    """A block of HSD trials holds at most _BLOCK_BYTES of permutations (16,384 trials of
    20,000 queries and 2 runs were 5 GB). Where the bound binds, the trials are still
    B permutations: p = (count + 1) / (B + 1); a run against its copy is p = 1."""
    from rpp_cli.stats import paired as stats

    rng_values = np.random.default_rng(5)
    values = rng_values.normal(size=(40, 3))
    values[:, 2] = values[:, 0]  # run 2 is a copy of run 0
    values[:, 1] += 0.8  # run 1 is much better
    sizes = []
    real_empty = np.empty

    def empty(shape, dtype=float):
        sizes.append(np.prod(shape) * np.dtype(dtype).itemsize)
        return real_empty(shape, dtype=dtype)

    monkeypatch.setattr(stats, "_BLOCK_BYTES", 8 * 40 * 3 * 7)  # 7 trials a block
    monkeypatch.setattr(stats.np, "empty", empty)
    p = stats.hsd(values, 100, np.random.default_rng(1))
    monkeypatch.undo()
    assert max(sizes) <= 8 * 40 * 3 * 7
    counts = p * 101
    assert np.allclose(counts, np.round(counts)) and ((counts >= 1) & (counts <= 101)).all()
    assert p[1] == 1.0 and p[0] < 0.05 and p[2] < 0.05  # pairs (0,1), (0,2), (1,2)

"""Is a difference between runs real? Paired tests, Tukey's HSD, corrections, Kendall's tau-b.

Every test is two-sided and treats the queries as the sample: for a preference measure the
per-query RPP(a, b) is tested against 0, for a metric the per-query difference m(a) - m(b).
Unordered run pairs are indexed like ``np.triu_indices(R, 1)``. The rank and sign tests are
in :mod:`.ranks`.
"""
from __future__ import annotations

import numpy as np

from ..aggregate import UNIT_ROUNDOFF, mean_preference
from ..orderings import TIE_TOLERANCE, name_order
from ..core import permuted_sums
from ..errors import InputError
from .ranks import sign_test, wilcoxon

TESTS = ("ttest", "randomization", "hsd", "wilcoxon", "sign")
CORRECTIONS = ("none", "bonferroni", "holm", "bh", "by")
DEFAULT_SEED = 2022
MAX_SEED = (1 << 63) - 1  # numpy's generators take no negative seed


MAX_DRAWS = 10_000_000  # --permutations and --samples: what the command line accepts


def checked_count(what: str, value: object, top: int = MAX_DRAWS) -> int:
    """``value`` if it is a whole number 1 .. ``top`` (what the options accept), else an
    InputError: the API's callers get the command line's rule, not a p-value of 1 or -0.25
    from 0 or -5 permutations."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) \
            or not 1 <= value <= top:
        raise InputError(f"{what} must be a whole number from 1 to {top:,} (got {value!r})")
    return int(value)


def checked_seed(seed: object) -> int:
    """``seed`` if it is a whole number 0 .. MAX_SEED (what --seed accepts), else an
    InputError: the API's callers get rpp's message, not numpy's."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) \
            or not 0 <= seed <= MAX_SEED:
        raise InputError(f"seed must be a whole number from 0 to 2^63 - 1 (got {seed!r})")
    return int(seed)
# A permuted statistic counts as "at least as extreme" when it is >= observed * (1 - this),
# as in scipy.stats.permutation_test, so float noise never drops the observed labelling; or
# when it is within the rounding bound of the sums (see _slack).
_RELATIVE_EPS = 100 * np.finfo(np.float64).eps
# Elements of the largest temporary array of a permutation loop (32 MiB of float64).
_CHUNK_ELEMENTS = 1 << 22
# Elements of a block of HSD sums, trials x pairs (128 KiB: a trial's row stays in cache).
# It also fixes which random draws fill which trial, so p-values depend on it: keep it.
_CACHE_ELEMENTS = 1 << 14
_BLOCK_BYTES = 64 << 20  # HSD permutations a block (int64); where it binds, it fixes draws too


def of_runs(values: np.ndarray, runs) -> np.ndarray:
    """The values of ``runs`` alone, in that order: a metric's (Q, R) or a preference
    measure's (Q, R, R), whose both run axes are taken."""
    return values[:, runs][:, :, runs] if values.ndim == 3 else values[:, runs]


def pair_values(values: np.ndarray) -> np.ndarray:
    """(Q, P) per-query value of every unordered pair (a < b): RPP(a, b) or m(a) - m(b).

    A metric's difference within TIE_TOLERANCE of the two values' magnitudes is exactly 0:
    trec_eval's floats of values equal in exact arithmetic may differ in the last bit (bpref
    5/9 as 0.5555555555555556 or ...57, AP 1/2 as 0.49999999999999994), and that leftover
    must not count as a preference in ties, agreement or significance (RPP's own ties are
    exact at the source)."""
    ia, ib = np.triu_indices(values.shape[1], 1)
    if values.ndim == 3:
        return values[:, ia, ib]
    a, b = values[:, ia], values[:, ib]
    diff = a - b
    scale = np.maximum(1.0, np.maximum(np.abs(a), np.abs(b)))
    return np.where(np.abs(diff) <= TIE_TOLERANCE * scale, 0.0, diff)


def ttest(x: np.ndarray) -> np.ndarray:
    """(P,) two-sided one-sample t-test p-values of the columns of ``x`` (Q, P) against 0.

    Equals scipy.stats.ttest_1samp (ttest_rel for metric differences); a column whose values
    are all equal gets p = 1 when they are 0 and p = 0 otherwise (its standard deviation may
    round to 1.7e-17 instead of 0: for three values 0.1 scipy gives a p of 9.6e-33).
    """
    from scipy.special import stdtr  # Student's t CDF (what scipy.stats.t uses); lazily,
    # as scipy costs every other command its import time

    n = len(x)
    if n < 2:
        raise InputError(f"the t-test needs at least 2 queries (got {n})")
    mean = mean_preference(x)  # 0.1, 0.2 and -0.3: a mean of 0, p = 1
    sd = x.std(axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = mean / (sd / np.sqrt(n))
    p = 2.0 * stdtr(n - 1, -np.abs(t))
    constant = (x == x[0]).all(axis=0)
    return np.where(constant, np.where(x[0] == 0, 1.0, 0.0), p)


def _slack(n_terms: int, magnitude: np.ndarray) -> np.ndarray:
    """How far apart two statistics equal in exact arithmetic can be in floats, when each is
    (a difference of) sums of ``n_terms`` values whose |values| sum to at most ``magnitude``:
    each sum errs by at most gamma_n * magnitude in any order of summation (Higham, eq. 3.5),
    and a comparison involves at most four such sums. Without it, sign flips of P@5
    differences whose exact sum is 0 fall below an observed float sum of 5.6e-17 (0.2 + 0.4
    - 0.6) and lower a p of 1."""
    gamma = n_terms * UNIT_ROUNDOFF / (1 - n_terms * UNIT_ROUNDOFF)
    return 4 * gamma * magnitude


def _extreme_counts(null: np.ndarray, observed: np.ndarray, slack: np.ndarray) -> np.ndarray:
    """(P,) how many rows of ``null`` (B, P) reach the (non-negative) ``observed``, within
    ``slack`` or scipy's relative tolerance, whichever is larger."""
    return (null >= observed - np.maximum(_RELATIVE_EPS * observed, slack)).sum(axis=0)


def randomization(x: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(P,) paired randomization (sign-flip) p-values of the columns of ``x`` (Q, P).

    Statistic |mean|. When 2**Q <= ``permutations`` every sign vector is enumerated and
    p = count / 2**Q (exact); otherwise ``permutations`` random sign vectors give
    p = (count + 1) / (permutations + 1), the observed labelling counted once.
    """
    n_q = len(x)
    observed = np.abs(x.sum(axis=0))
    slack = _slack(n_q, np.abs(x).sum(axis=0))
    exact = n_q < 63 and 2 ** n_q <= permutations
    total = 2 ** n_q if exact else permutations
    step = max(1, _CHUNK_ELEMENTS // max(n_q, x.shape[1], 1))
    count = np.zeros(x.shape[1], dtype=np.int64)
    for lo in range(0, total, step):
        hi = min(total, lo + step)
        if exact:
            bits = (np.arange(lo, hi)[:, None] >> np.arange(n_q)) & 1
        else:
            bits = rng.integers(0, 2, size=(hi - lo, n_q))
        signs = 1.0 - 2.0 * bits
        count += _extreme_counts(np.abs(signs @ x), observed, slack)
    if exact:
        return count / total
    return (count + 1) / (permutations + 1)


def hsd(values: np.ndarray, permutations: int, rng: np.random.Generator) -> np.ndarray:
    """(P,) Carterette's randomized Tukey HSD p-values of every unordered run pair.

    Each trial permutes the run labels within every query independently; its statistic is
    the largest |mean pairwise effect| over all pairs (max mean - min mean for a metric, the
    largest mean preference for a preference measure). p = (trials reaching the pair's
    observed |effect| + 1) / (permutations + 1); the family-wise error over all pairs is
    controlled by construction.
    """
    n_q, n_runs = values.shape[:2]
    observed = np.abs(pair_values(values).mean(axis=0))
    largest = np.abs(values).reshape(n_q, -1).max(axis=1, initial=0.0)
    slack = _slack(n_q, 2 * largest.sum() / n_q)  # a mean of differences of two values
    values = np.ascontiguousarray(values, dtype=np.float64)  # once, not for every block
    ia, ib = np.triu_indices(n_runs, 1)
    pairs = np.stack((ia, ib), axis=1) if values.ndim == 3 else None
    width = len(ia) if values.ndim == 3 else n_runs
    # trials a block: a cache-sized block of sums, and no more than _BLOCK_BYTES of
    # permutations (one pair's 16,384 trials of 20,000 queries would take 5 GB at once)
    step = max(1, min(_CACHE_ELEMENTS // max(width, 1), _BLOCK_BYTES // (8 * n_q * n_runs)))
    count = np.zeros(len(ia), dtype=np.int64)
    block = np.empty((n_q, min(step, permutations), n_runs), dtype=np.int64)
    for lo in range(0, permutations, step):
        b = min(step, permutations - lo)
        # perm[q, t, r]: the run whose values fill slot r of query q in trial t, drawn into a
        # C-ordered array (the same draws as numpy's own layout, which the kernel would copy);
        # a last, shorter block gets one of its own
        out = block if b == block.shape[1] else np.empty((n_q, b, n_runs), dtype=np.int64)
        perm = rng.permuted(np.broadcast_to(np.arange(n_runs), (n_q, b, n_runs)), axis=2,
                            out=out)
        sums = permuted_sums(values, perm, pairs)  # (b, width), the kernel's one pass
        if values.ndim == 3:
            maxima = np.abs(sums).max(axis=1) / n_q
        else:
            maxima = (sums.max(axis=1) - sums.min(axis=1)) / n_q
        count += _extreme_counts(maxima[:, None], observed, slack)
    return (count + 1) / (permutations + 1)


def adjust(p: np.ndarray, correction: str) -> np.ndarray:
    """p-values adjusted for the ``len(p)`` comparisons: Bonferroni or Holm's step-down (the
    family-wise error), or Benjamini-Hochberg's or Benjamini-Yekutieli's step-up (the false
    discovery rate), as ``scipy.stats.false_discovery_control``."""
    m = len(p)
    if correction == "none" or m == 0:
        return p
    if correction == "bonferroni":
        return np.minimum(1.0, p * m)
    order = np.argsort(p, kind="stable")
    rank = np.arange(1, m + 1, dtype=np.float64)
    if correction == "holm":
        stepped = np.maximum.accumulate((m - rank + 1) * p[order])
    elif correction in ("bh", "by"):
        scaled = p[order] * (m / rank)
        if correction == "by":
            scaled = scaled * np.sum(1 / rank)  # the sum of 1/i over the m hypotheses
        stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {correction!r}")
    out = np.empty(m)
    out[order] = np.minimum(1.0, stepped)
    return out


def smallest_p(test: str, n_queries: int, permutations: int) -> float:
    """The smallest p-value ``test`` can give with ``n_queries`` paired values: 2 / 2^Q for
    exact sign flips, 1 / (B + 1) for B random ones; a t-test needs two queries (1 otherwise)."""
    if test == "ttest":
        return 0.0 if n_queries >= 2 else 1.0
    if test == "randomization":
        if n_queries < 63 and 2 ** n_queries <= permutations:
            return 2.0 ** (1 - n_queries)
        return 1.0 / (permutations + 1)
    raise ValueError(f"unknown test {test!r}")


def by_name(names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The runs in name order (``order``), and for each unordered pair a < b of the runs as
    given (``np.triu_indices`` order): the index of the same two runs among the pairs of the
    runs in name order (``index``), and whether they come the other way round there
    (``flipped``: its paired values are the negation of the pair's)."""
    order = name_order(names)
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    n = len(names)
    ia, ib = np.triu_indices(n, 1)
    lo, hi = np.minimum(position[ia], position[ib]), np.maximum(position[ia], position[ib])
    return order, lo * n - lo * (lo + 1) // 2 + hi - lo - 1, position[ia] > position[ib]


def significance(values: np.ndarray, test: str, permutations: int,
                 rng: np.random.Generator, names: list[str] | None = None) -> np.ndarray:
    """(P,) unadjusted p-values of every unordered pair under ``test``. With the runs'
    ``names``, the random draws are made over the runs sorted by name, so the p-values do not
    depend on the order in which the runs were given."""
    if names is not None:
        order, index, _ = by_name(names)
        return significance(of_runs(values, order), test, permutations, rng)[index]
    if test == "ttest":
        return ttest(pair_values(values))
    if test == "randomization":
        return randomization(pair_values(values), permutations, rng)
    if test == "hsd":
        return hsd(values, permutations, rng)
    if test == "wilcoxon":
        return wilcoxon(pair_values(values))
    if test == "sign":
        return sign_test(pair_values(values))
    raise ValueError(f"unknown test {test!r}")


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between score vectors (..., R), batched; NaN when one side is all tied.

    Same definition as scipy.stats.kendalltau (variant b), vectorised because robustness
    and predictive power need tens of thousands of taus. Scores within the ordering tie
    tolerance count as ties.
    """
    from ..orderings import tie_key

    ia, ib = np.triu_indices(np.shape(x)[-1], 1)
    kx, ky = tie_key(x), tie_key(y)
    sx = np.sign(kx[..., ia] - kx[..., ib])
    sy = np.sign(ky[..., ia] - ky[..., ib])
    den = np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1).astype(float))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(den > 0, (sx * sy).sum(axis=-1) / den, np.nan)


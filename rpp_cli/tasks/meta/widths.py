"""Interval widths: ``ci_width_K`` (M), how wide the t-interval of a mean paired difference
is on K queries, over the robustness grid of K, so that a user sees how many queries an
interval of a given width needs (the paper's §6.3 question, asked the other way round).

Definition: on each of ``--samples`` random subsets of K queries (the subsets
``robust_queries_K`` draws, from the same stream), for every unordered pair of runs a < b,
the width 2 t_{1-alpha/2, K-1} s_K / sqrt(K) of the two-sided t-interval (level 1 - alpha,
the level whose intervals exclude 0 exactly when the t-test of ``power_ttest`` rejects) of
the mean of the pair's per-query values on those K queries (RPP(a, b) for a preference
measure, m(a) - m(b) for a metric), s_K their standard deviation on the subset; the value is
the mean over every (subset, pair). NaN for K = 1 (no spread to measure). One line per
measure: it does not depend on the system ordering.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from ...stats import pair_values, t_quantile
from .robustness import QUERIES, query_counts
from .study import FiniteMean, Job, Study, random_subsets


def jobs(study: Study) -> list[Job]:
    """One job per query count of the robustness grid."""
    values = [pair_values(s.values) for s in study.measured]
    who = [s.measure for s in study.measured]
    return [Job(partial(_mean_widths, values, study.rng(QUERIES, k), study.settings.samples,
                        study.n_queries, k, study.width, 1 - study.settings.alpha),
                partial(study.add, f"ci_width_{k}", who))
            for k in query_counts(study)]


def _mean_widths(values: list[np.ndarray], rng: np.random.Generator, samples: int,
                 n_queries: int, k: int, width: int, level: float) -> list[float]:
    """Each measure's mean t-interval width over ``samples`` subsets of ``k`` queries and
    every run pair (``values``: each measure's (Q, P) paired values)."""
    means = [FiniteMean() for _ in values]
    quantile = t_quantile(1 - (1 - level) / 2, k - 1) if k > 1 else np.nan
    # values less their first query's: a subset's sums of squares then lose no digits to a
    # mean far from 0 (a constant pair is 0 exactly, its width 0)
    shifted = [x - x[:1] for x in values]
    for (w,) in random_subsets(rng, samples, n_queries, (k,), width):
        for mean, x in zip(means, shifted):
            total = w @ x
            spread = np.maximum(0.0, w @ (x * x) - total * total / k)
            with np.errstate(divide="ignore", invalid="ignore"):
                mean.add(2 * quantile * np.sqrt(spread / (k - 1) / k))
    return [mean.value() for mean in means]

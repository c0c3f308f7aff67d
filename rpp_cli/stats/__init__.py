"""How sure, and how big: paired tests, corrections, intervals, effect sizes, Kendall's tau-b.

The kernels take per-query arrays (a metric's (Q, R) values or a preference measure's
(Q, R, R) tensor, or the (Q, P) paired values of :func:`pair_values`) and return numpy
arrays; the tasks of ``rpp compare``, ``check`` and ``meta`` (:mod:`rpp_cli.tasks`) turn
them into rows. The queries are the sample: for a preference measure the per-query
RPP(a, b) is the paired value, for a metric the per-query difference m(a) - m(b).

- :mod:`.paired`: the t-test, randomization, randomized Tukey HSD, the corrections, the
  order-free dispatch by run names, tau-b;
- :mod:`.ranks`: Wilcoxon's signed-rank test and the sign test;
- :mod:`.intervals`: t and bootstrap (percentile, BCa) intervals of the mean paired value,
  the effect size d_z with Hedges' correction, the one-sided bound of a non-inferiority gate.
"""
from __future__ import annotations

from .intervals import (DEFAULT_RESAMPLES, INTERVALS, bootstrap_interval, effect_size,
                        hedges_factor, interval, pair_intervals, t_interval, t_quantile,
                        upper_bound)
from .paired import (CORRECTIONS, DEFAULT_SEED, MAX_DRAWS, MAX_SEED, TESTS, adjust,
                     checked_count, checked_seed, hsd, kendall_tau_b, of_runs, pair_values,
                     randomization, significance, smallest_p, ttest)
from .ranks import sign_test, wilcoxon

__all__ = ["CORRECTIONS", "DEFAULT_RESAMPLES", "DEFAULT_SEED", "INTERVALS", "MAX_DRAWS",
           "MAX_SEED", "TESTS", "adjust", "bootstrap_interval", "checked_count",
           "checked_seed", "effect_size", "hedges_factor", "hsd", "interval",
           "kendall_tau_b", "of_runs", "pair_intervals", "pair_values", "randomization",
           "sign_test", "significance", "smallest_p", "t_interval", "t_quantile", "ttest",
           "upper_bound", "wilcoxon"]

"""``rpp compare``: evaluate, then test every pair of runs on every measure."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..aggregate import mean_preference, win_rates
from ..errors import InputError
from ..measures import resolve
from ..pipeline import Context, default_measures, evaluate_runs
from ..results import Results
from ..settings import Options
from ..stats import (CORRECTIONS, DEFAULT_RESAMPLES, DEFAULT_SEED, INTERVALS, TESTS, adjust,
                     checked_count, checked_seed, interval, pair_intervals, pair_values,
                     significance)
from ..pipeline import testable
from . import Outcome, noting


@dataclass(frozen=True)
class CompareRequest:
    """``rpp compare``'s own settings: ``-m`` (empty: as rpp eval), the test, the correction
    of its p-values, its random draws and their seed; with ``ci`` (a confidence level), the
    interval rows and effect sizes too, by ``interval`` (bootstrap: ``resamples`` draws)."""

    measures: tuple[str, ...] = ()
    test: str = "randomization"
    correction: str = "none"
    permutations: int = 10000
    seed: int = DEFAULT_SEED
    ci: float | None = None
    interval: str = "t"
    resamples: int = DEFAULT_RESAMPLES

    def check(self) -> None:
        """An InputError for settings no comparison can use, before anything is read."""
        checked_seed(self.seed)
        checked_count("permutations", self.permutations)
        checked_count("resamples", self.resamples)
        if self.test not in TESTS:
            raise InputError(f"unknown test {self.test!r} (choose from {', '.join(TESTS)})")
        if self.correction not in CORRECTIONS:
            raise InputError(f"unknown correction {self.correction!r} (choose from "
                             f"{', '.join(CORRECTIONS)})")
        if self.test == "hsd" and self.correction != "none":
            raise InputError("--test hsd already controls the error over all pairs; "
                             "use --correction none")
        if self.interval not in INTERVALS:
            raise InputError(f"unknown interval {self.interval!r} (choose from "
                             f"{', '.join(INTERVALS)})")
        if self.ci is None:
            if self.interval != "t":
                raise InputError("--interval needs --ci LEVEL (e.g. --ci 0.95)")
        elif isinstance(self.ci, bool) or not isinstance(self.ci, (int, float)) \
                or not 0 < self.ci < 1:
            raise InputError(f"--ci must be a confidence level in (0, 1) (got {self.ci!r})")


def run(qrels: str | None, runs: list[str], request: CompareRequest, options: Options
        ) -> Outcome:
    """Evaluate ``runs`` and test every pair on every measure (:func:`compare`'s rows).
    ``extras``: the evaluation (``context``) and the tested (output name, is preference)
    pairs (``tested``)."""
    request.check()
    if len(runs) < 2:
        raise InputError("compare needs at least two runs")
    with noting() as notes:
        measures = resolve(default_measures(list(request.measures) or None, options.subtopics))
        ctx = evaluate_runs(qrels, runs, measures, options, False, notes, statistics=True)
        names = testable(ctx, measures, notes)
        results = compare(ctx, names, request)
        return Outcome(results, notes, {"context": ctx, "tested": names})


def compare(ctx: Context, names: list[tuple[str, bool]], request: CompareRequest) -> Results:
    """``rpp compare`` rows: for every ordered run pair and measure M, the mean effect (``M``
    for a preference measure, ``M_diff`` for a metric) and its p-value ``M_p``; with
    ``request.ci``, also ``M_ci_low`` and ``M_ci_high`` (the interval of the mean paired
    value) and ``M_d`` (Hedges' g_z), antisymmetric as the effect.

    ``names`` lists (output name, is preference). Corrections apply per measure over the
    R(R-1)/2 unordered pairs. Every measure sees the same random permutations (a fresh
    generator from ``request.seed``), so its p-values do not depend on the other measures
    asked; so does a bootstrap.
    """
    test, correction, seed = request.test, request.correction, request.seed
    coll = ctx.collection
    results = Results(coll.qids, coll.run_names)
    ia, ib = np.triu_indices(len(coll.run_names), 1)
    first, second = np.concatenate([ia, ib]), np.concatenate([ib, ia])
    for name, is_pref in names:
        values = ctx.tensors[name] if is_pref else ctx.metrics[name]
        effect = mean_preference(pair_values(values))
        p = adjust(significance(values, test, request.permutations,
                                np.random.default_rng(seed), coll.run_names), correction)
        results.add(name if is_pref else f"{name}_diff", -1, first,
                    np.concatenate([effect, -effect]), second)
        results.add(f"{name}_p", -1, first, np.concatenate([p, p]), second)
        if request.ci is not None:
            low, high, size = pair_intervals(values, request.interval, request.ci,
                                             request.resamples, seed, coll.run_names)
            results.add(f"{name}_ci_low", -1, first, np.concatenate([low, -high]), second)
            results.add(f"{name}_ci_high", -1, first, np.concatenate([high, -low]), second)
            results.add(f"{name}_d", -1, first, np.concatenate([size, -size]), second)
    return results


def run_intervals(ctx: Context, names: list[tuple[str, bool]], request: CompareRequest
                  ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """Per tested output name, (low, high) of each run's own mean at ``request.ci``: of its
    per-query values for a metric, of its per-query win rates (whose mean is ``M_win``) for
    a preference measure; what the paper view's brackets show."""
    out = {}
    for name, is_pref in names:
        values = win_rates(ctx.tensors[name]) if is_pref else ctx.metrics[name]
        out[name] = interval(values, request.interval, request.ci, request.resamples,
                             np.random.default_rng(request.seed))
    return out

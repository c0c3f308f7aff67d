"""``rpp compare``: evaluate, then test every pair of runs on every measure."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..aggregate import mean_preference
from ..errors import InputError
from ..measures import resolve
from ..pipeline import Context, default_measures, evaluate_runs
from ..results import Results
from ..settings import Options
from ..stats import (CORRECTIONS, DEFAULT_SEED, TESTS, adjust, checked_count, checked_seed,
                     pair_values, significance)
from ..pipeline import testable
from . import Outcome, noting


@dataclass(frozen=True)
class CompareRequest:
    """``rpp compare``'s own settings: ``-m`` (empty: as rpp eval), the test, the correction
    of its p-values, its random draws and their seed."""

    measures: tuple[str, ...] = ()
    test: str = "randomization"
    correction: str = "none"
    permutations: int = 10000
    seed: int = DEFAULT_SEED


def run(qrels: str | None, runs: list[str], request: CompareRequest, options: Options
        ) -> Outcome:
    """Evaluate ``runs`` and test every pair on every measure (:func:`compare`'s rows).
    ``extras``: the evaluation (``context``) and the tested (output name, is preference)
    pairs (``tested``)."""
    checked_seed(request.seed)
    checked_count("permutations", request.permutations)
    if request.test not in TESTS:
        raise InputError(f"unknown test {request.test!r} (choose from {', '.join(TESTS)})")
    if request.correction not in CORRECTIONS:
        raise InputError(f"unknown correction {request.correction!r} (choose from "
                         f"{', '.join(CORRECTIONS)})")
    if request.test == "hsd" and request.correction != "none":
        raise InputError("--test hsd already controls the error over all pairs; "
                         "use --correction none")
    if len(runs) < 2:
        raise InputError("compare needs at least two runs")
    with noting() as notes:
        measures = resolve(default_measures(list(request.measures) or None, options.subtopics))
        ctx = evaluate_runs(qrels, runs, measures, options, False, notes)
        names = testable(ctx, measures, notes)
        results = compare(ctx, names, request.test, request.correction, request.permutations,
                          request.seed)
        return Outcome(results, notes, {"context": ctx, "tested": names})


def compare(ctx: Context, names: list[tuple[str, bool]], test: str, correction: str,
            permutations: int, seed: int) -> Results:
    """``rpp compare`` rows: for every ordered run pair and measure M, the mean effect (``M``
    for a preference measure, ``M_diff`` for a metric) and its p-value ``M_p``.

    ``names`` lists (output name, is preference). Corrections apply per measure over the
    R(R-1)/2 unordered pairs. Every measure sees the same random permutations (a fresh
    generator from ``seed``), so its p-values do not depend on the other measures asked.
    """
    coll = ctx.collection
    results = Results(coll.qids, coll.run_names)
    ia, ib = np.triu_indices(len(coll.run_names), 1)
    first, second = np.concatenate([ia, ib]), np.concatenate([ib, ia])
    for name, is_pref in names:
        values = ctx.tensors[name] if is_pref else ctx.metrics[name]
        effect = mean_preference(pair_values(values))
        p = adjust(significance(values, test, permutations, np.random.default_rng(seed),
                                coll.run_names), correction)
        results.add(name if is_pref else f"{name}_diff", -1, first,
                    np.concatenate([effect, -effect]), second)
        results.add(f"{name}_p", -1, first, np.concatenate([p, p]), second)
    return results

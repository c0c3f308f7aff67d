"""The non-inferiority gate (``rpp check --max-drop M=DELTA --confidence C``) keeps its level:
on per-query drops drawn with a known true drop equal to DELTA (the worst case the gate must
stop), it passes a share 1 - C of the candidates, within binomial error, where the point
estimate (today's gate, without --confidence) passes half of them.

The decision is :func:`rpp_cli.tasks.check.non_inferior`, the function the gate calls; the
simulation runs it on 20,000 gates at once (one column each)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rpp_cli.measures import resolve
from rpp_cli.pipeline import evaluate_runs
from rpp_cli.settings import Options
from rpp_cli.tasks.check import non_inferior

from .conftest import DEMO

TRIALS = 20_000
DELTA = 0.01


def binomial_slack(rate: float) -> float:
    """Four standard deviations of a share of TRIALS draws at ``rate``."""
    return 4 * math.sqrt(rate * (1 - rate) / TRIALS)


@pytest.mark.parametrize("n_queries", [5, 30, 120])
@pytest.mark.parametrize("confidence", [0.9, 0.95])
def test_false_pass_rate_on_normal_drops_is_one_minus_the_confidence(n_queries, confidence):
    """Normal per-query drops with mean DELTA: the t bound is exact, so the gate passes
    1 - C of them (binomial error only)."""
    rng = np.random.default_rng([n_queries, round(confidence * 100)])
    drops = rng.normal(DELTA, 0.05, size=(n_queries, TRIALS))
    bound, passed = non_inferior(drops, DELTA, confidence)
    assert abs(passed.mean() - (1 - confidence)) <= binomial_slack(1 - confidence)
    assert np.array_equal(passed, bound < DELTA)
    point = drops.mean(axis=0) <= DELTA  # the gate without --confidence
    assert abs(point.mean() - 0.5) <= binomial_slack(0.5)


def demo_drops(measure: str) -> list[np.ndarray]:
    """The demo's per-query drops of monot5's rivals on ``measure``: skewed, tied, bounded,
    as real differences are."""
    runs = [str(DEMO / "runs" / r) for r in ("monot5", "colbert", "splade", "bm25.rm3")]
    values = evaluate_runs(str(DEMO / "qrels"), runs, resolve([measure]), Options(), False,
                           []).metrics[measure.replace(".", "_")]
    return [values[:, 0] - values[:, j] for j in range(1, values.shape[1])]


@pytest.mark.parametrize("measure", ["map", "P.10"])
@pytest.mark.parametrize("n_queries", [25, 100])
def test_false_pass_rate_on_real_differences_with_a_known_true_drop(measure, n_queries):
    """Queries drawn from a population of the demo's real per-query drops, shifted so that
    the population's mean drop is exactly DELTA: the t bound is approximate on such skewed,
    tied values, so the rate is 0.05 within binomial error plus 0.01 (the approximation's
    error measured here is at most 0.008 from 25 queries on); a candidate truly worse by
    2 DELTA passes less often still."""
    rng = np.random.default_rng(n_queries)
    for population in demo_drops(measure):
        at_margin = population - population.mean() + DELTA
        drawn = at_margin[rng.integers(0, len(at_margin), (n_queries, TRIALS))]
        _, passed = non_inferior(drawn, DELTA, 0.95)
        assert abs(passed.mean() - 0.05) <= binomial_slack(0.05) + 0.01
        _, worse = non_inferior(drawn + DELTA, DELTA, 0.95)
        assert worse.mean() < passed.mean()


def test_an_equal_candidate_passes_more_often_with_more_queries():
    """The other side of the level: a candidate truly equal to the baseline passes more often
    the more queries there are (the bound shrinks as 1 / sqrt(Q))."""
    rng = np.random.default_rng(9)
    rates = [non_inferior(rng.normal(0.0, 0.05, size=(n, TRIALS)), DELTA, 0.95)[1].mean()
             for n in (10, 40, 320)]
    assert rates[0] < rates[1] < rates[2]
    # on 320 queries the mean's sd is 0.0028 and the bound 1.65 of them above it: a pass
    # whenever the mean is below 0.0054, P = Phi(1.93) = 0.97
    assert rates[2] > 0.95

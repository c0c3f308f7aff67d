"""Discriminative power and ties: ``power_ttest`` / ``power_hsd`` (M), the share of run pairs
significant at alpha under the t-test with Bonferroni over all pairs and under randomized
Tukey HSD; ``ties`` (M), the share of (query, run pair) on which M cannot tell the two runs
apart. Neither depends on the system ordering: one line per measure."""
from __future__ import annotations

from functools import partial

import numpy as np

from ...stats import adjust, pair_values, significance, ttest
from .study import Gathered, Job, Study

STREAM = 0  # its random draws: numpy.random.default_rng([seed, STREAM]) (Study.rng)


def jobs(study: Study) -> list[Job]:
    """One job per measure; the rows once every measure has its shares."""
    settings, who = study.settings, [s.measure for s in study.measured]
    gathered = Gathered(len(study.measured), partial(_add_shares, study, who))
    return [Job(partial(_shares, s.values, study.rng(STREAM), settings.alpha,
                        settings.permutations, study.ctx.collection.run_names), gathered)
            for s in study.measured]


def _shares(values: np.ndarray, rng: np.random.Generator, alpha: float, permutations: int,
            run_names: list[str]) -> tuple[float, float]:
    """The shares of run pairs significant under the t-test and under HSD."""
    p_t = adjust(ttest(pair_values(values)), "bonferroni")
    p_h = significance(values, "hsd", permutations, rng, run_names)
    return float(np.mean(p_t < alpha)), float(np.mean(p_h < alpha))


def _add_shares(study: Study, who: list[str], shares: list[tuple[float, float]]) -> None:
    """The ``power_ttest`` rows, then the ``power_hsd`` ones."""
    study.add("power_ttest", who, [t for t, _ in shares])
    study.add("power_hsd", who, [h for _, h in shares])


def ties_jobs(study: Study) -> list[Job]:
    """One job for every measure's tie share."""
    values = [s.values for s in study.measured]
    return [Job(partial(_tie_shares, values),
                partial(study.add, "ties", [s.measure for s in study.measured]))]


def _tie_shares(values: list[np.ndarray]) -> list[float]:
    """:func:`tie_share` of each measure's values."""
    return [tie_share(v) for v in values]


def tie_share(values: np.ndarray) -> float:
    """Share of (query, run pair) on which a measure's per-query values (Q, R) or preferences
    (Q, R, R) do not tell the two runs apart."""
    return float(np.mean(pair_values(values) == 0))

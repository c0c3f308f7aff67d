"""Agreement between measures: ``agreement_tau`` (A, B), Kendall's tau-b between the system
orderings of A and B; ``agreement_sign`` / ``agreement_r`` (A, B), how often the per-query
differences of A and B have the same sign, and their Pearson r, over every query and pair of
runs (paper §6.1). Also what the plots draw: each measure's differences, and the scatters of a
preference measure against a metric."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...orderings import name_order
from ...stats import kendall_tau_b, of_runs, pair_values
from .study import Job, Study, pairs


def jobs(study: Study) -> list[Job]:
    """Two jobs: the orderings' taus, then the per-query signs and r."""
    full = {s.name: f for s, f in zip(study.subjects, study.full)}
    named = [(a.name, b.name) for a, b in pairs(study.subjects)]
    diffs = {s.measure: s.values for s in study.measured}
    measured = [(a.measure, b.measure) for a, b in pairs(study.measured)]
    order = name_order(study.ctx.collection.run_names)  # pairs summed in one order
    return [Job(partial(_ordering_taus, full, named), partial(_add_ordering_taus, study)),
            Job(partial(_per_query, diffs, measured, order), partial(_add_per_query, study))]


def _ordering_taus(full: dict[str, np.ndarray], named: list[tuple[str, str]]) -> list[float]:
    """Kendall's tau-b between the whole orderings of each pair of studied names."""
    if not named:
        return []
    return kendall_tau_b(np.stack([full[a] for a, _ in named]),
                         np.stack([full[b] for _, b in named])).tolist()


def _add_ordering_taus(study: Study, taus: list[float]) -> None:
    """The ``agreement_tau`` rows (none with one subject)."""
    both = pairs(study.subjects)
    if both:
        study.add("agreement_tau", [a.name for a, _ in both], taus, [b.name for _, b in both])


def _per_query(diffs: dict[str, np.ndarray], measured: list[tuple[str, str]],
               order: np.ndarray) -> tuple[list[float], list[float]]:
    """Per pair of measures: the share of (query, run pair) differences of the same sign, and
    their :func:`pearson_r`, over the runs in ``order``."""
    x = {name: pair_values(of_runs(values, order)).ravel() for name, values in diffs.items()}
    return ([float(np.mean(np.sign(x[a]) == np.sign(x[b]))) for a, b in measured],
            [pearson_r(x[a], x[b]) for a, b in measured])


def _add_per_query(study: Study, value: tuple[list[float], list[float]]) -> None:
    """The ``agreement_sign`` and ``agreement_r`` rows, and the plots' differences and
    scatters (none with one measure)."""
    both = pairs(study.measured)
    if not both:
        return
    diff = {s.measure: pair_values(s.values).ravel() for s in study.measured}
    study.differences.update(diff)  # the plots' (Fig. 2 and the scatters)
    for a, b in both:
        if a.values.ndim == 3 and b.values.ndim == 2:
            study.scatter[(a.measure, b.measure)] = (diff[b.measure], diff[a.measure])
    who, others = [a.measure for a, _ in both], [b.measure for _, b in both]
    study.add("agreement_sign", who, value[0], others)
    study.add("agreement_r", who, value[1], others)


def pearson_r(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two measures' differences over the run pairs, each pair taken both ways,
    (x, y) and (-x, -y): which run of a pair comes first is the order they were given in, and
    must not move r. The points' means are then 0, so r = Σxy / sqrt(Σx² Σy²), whose terms no
    orientation changes; given the pairs in one order (meta sorts the runs by name), its bits
    are those of any argument order. NaN when either is all 0."""
    norm = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / norm if norm > 0 else float("nan")

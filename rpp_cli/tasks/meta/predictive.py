"""Predictive power: ``predictive_tau`` (A, B), the mean tau-b between A's ordering on a
random half of the queries and B's ordering on the other half, both ways, among the top runs
by map (Webber, Moffat and Zobel, SIGIR 2008)."""
from __future__ import annotations

import math
from functools import partial

import numpy as np

from ...measures import resolve
from ...orderings import top_runs
from ...pipeline import measure
from ...stats import kendall_tau_b
from .study import FiniteMean, Job, Study, Subject, pairs, random_subsets

STREAM = 4  # its random draws: numpy.random.default_rng([seed, STREAM]) (Study.rng)


def best_runs(study: Study) -> np.ndarray | None:
    """Indices of the top ``--top-fraction`` of runs by map, ties at the cut included
    (None: all runs); a note names them."""
    names = study.ctx.collection.run_names
    n_top = max(2, math.ceil(study.settings.top_fraction * len(names)))
    if n_top >= len(names):
        return None
    ap = study.ctx.metrics.get("map")
    if ap is None:
        ap = measure(study.ctx.collection, resolve(["map"]), False, []).metrics["map"]
    top = top_runs(ap.mean(axis=0), n_top)
    study.notes.append(f"predictive power among the top {len(top)} of {len(names)} runs by "
                       "map: " + " ".join(names[i] for i in top))
    return top


def jobs(study: Study) -> list[Job]:
    """One job for every ordered pair of studied names, (A, A) included."""
    runs = best_runs(study)  # here: its note is this process's
    both = pairs(study.subjects, same=True)
    compute = partial(_split_taus, study.subjects, [(a.name, b.name) for a, b in both], runs,
                      study.rng(STREAM), study.settings.samples, study.n_queries, study.width)
    return [Job(compute, partial(study.add, "predictive_tau", [a.name for a, _ in both],
                                 others=[b.name for _, b in both]))]


def _split_taus(studied: list[Subject], named: list[tuple[str, str]], runs: np.ndarray | None,
                rng: np.random.Generator, samples: int, n_queries: int,
                width: int) -> list[float]:
    """Per pair (A, B) of ``named``: the mean tau-b between A on one half and B on the other,
    over ``samples`` random splits of the queries, both ways."""
    half = n_queries // 2
    means = [FiniteMean() for _ in named]
    for w1, w2 in random_subsets(rng, samples, n_queries, (half, n_queries - half), width):
        s1 = {s.name: s.scores(w1, runs) for s in studied}
        s2 = {s.name: s.scores(w2, runs) for s in studied}
        for mean, (a, b) in zip(means, named):
            mean.add(np.concatenate([kendall_tau_b(s1[a], s2[b]),
                                     kendall_tau_b(s2[a], s1[b])]))
    return [mean.value() for mean in means]

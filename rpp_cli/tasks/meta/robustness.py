"""Robustness: ``robust_queries_K`` (M), the mean tau-b between the ordering from K random
queries and the ordering from every query; ``robust_judged_F`` (M), the same from a fraction
F of each query's relevant judgments (every measure re-evaluated per draw)."""
from __future__ import annotations

import copy
from dataclasses import replace
from functools import partial

import numpy as np

from ...collection import Collection
from ...errors import InputError
from ...measures import Measure
from ...pipeline import measure
from ...stats import kendall_tau_b
from .study import FiniteMean, Gathered, Job, Study, Subject, random_subsets, subjects

JUDGED_POLICIES = ("random", "pool")
QUERY_FRACTIONS = (0.1, 0.25, 0.5, 0.75)  # default robustness grid, as shares of the queries
QUERIES, JUDGMENTS = 2, 3  # their random draws: default_rng([seed, QUERIES, K]) (Study.rng)


def query_counts(study: Study) -> tuple[int, ...]:
    """The robustness grid: ``--query-counts`` or QUERY_FRACTIONS of the queries."""
    q, counts = study.n_queries, study.settings.query_counts
    if counts is None:
        return tuple(sorted({max(1, int(f * q)) for f in QUERY_FRACTIONS}))
    for k in counts:
        if not 1 <= k <= q:
            raise InputError(f"--query-counts: {k} is not between 1 and {q} "
                             "(the number of evaluated queries)")
    return tuple(sorted(set(counts)))


def jobs(study: Study) -> list[Job]:
    """One job per query count, then the draws of each judged fraction (a fraction given
    twice: once)."""
    out = [_by_queries(study, k) for k in query_counts(study)]
    for f in dict.fromkeys(study.settings.judged_fractions):
        out += _judged_jobs(study, f)
    return out


def _by_queries(study: Study, k: int) -> Job:
    """The job of ``robust_queries_<k>``."""
    studied = list(zip(study.subjects, study.full))
    compute = partial(_subset_taus, studied, study.rng(QUERIES, k), study.settings.samples,
                      study.n_queries, k, study.width)
    return Job(compute, partial(study.add, f"robust_queries_{k}",
                                [s.name for s in study.subjects]))


def _subset_taus(studied: list[tuple[Subject, np.ndarray]], rng: np.random.Generator,
                 samples: int, n_queries: int, k: int, width: int) -> list[float]:
    """Each subject's mean tau-b between its ordering on ``k`` random queries and its whole
    ordering, over ``samples`` draws."""
    means = [FiniteMean() for _ in studied]
    for (w,) in random_subsets(rng, samples, n_queries, (k,), width):
        for mean, (s, full) in zip(means, studied):
            mean.add(kendall_tau_b(s.scores(w), full))
    return [mean.value() for mean in means]


def _judged_jobs(study: Study, fraction: float) -> list[Job]:
    """One job per draw of ``fraction`` of the judgments; the rows once every draw is in.
    Draw k gets the stream as it is after k draws (a draw's only use of it is one uniform
    per relevant item)."""
    settings, whole = study.settings, study.ctx.collection
    policy = settings.judged_policy
    rng = study.rng(JUDGMENTS, round(fraction * 1_000_000), JUDGED_POLICIES.index(policy))
    name = f"robust_judged_{fraction_label(fraction)}" + ("_pool" if policy == "pool" else "")
    gathered = Gathered(settings.judged_samples, partial(_add_judged, study, name))
    compute = partial(_judged_taus, whole, study.measures, settings.ordering, study.full,
                      fraction, policy)
    out = []
    for _ in range(settings.judged_samples):
        out.append(Job(partial(compute, copy.deepcopy(rng)), gathered))
        rng.random(len(whole.item_query))
    return out


def _judged_taus(whole: Collection, measures: list[Measure], ordering: str,
                 full: list[np.ndarray], fraction: float, policy: str,
                 rng: np.random.Generator) -> list[float]:
    """Each subject's tau-b between its ordering on one draw of the judgments and its whole
    ordering."""
    coll = subsample_judgments(whole, fraction, rng, policy)
    sub = subjects(measure(coll, measures, False, []), measures, [], ordering)
    return [float(kendall_tau_b(s.scores()[0], f)) for s, f in zip(sub, full)]


def _add_judged(study: Study, name: str, draws: list[list[float]]) -> None:
    """The rows ``name``: each subject's mean tau over the draws."""
    taus: list[list[float]] = [[] for _ in study.subjects]
    for draw in draws:
        for i, tau in enumerate(draw):
            taus[i].append(tau)
    study.add(name, [s.name for s in study.subjects], [_mean_tau(np.array(t)) for t in taus])


def _mean_tau(taus: np.ndarray) -> float:
    """Mean over draws, skipping draws where tau is undefined (an all-tied ordering)."""
    mean = FiniteMean()
    mean.add(taus)
    return mean.value()


def subsample_judgments(coll: Collection, fraction: float, rng: np.random.Generator,
                        policy: str = "random") -> Collection:
    """``coll`` with each query's relevant judgments cut to max(1, floor(fraction * m_q));
    dropped ones become unjudged, and the corpus size n is unchanged. ``random`` keeps a
    uniform sample; ``pool`` keeps those a shallow pool of the runs would judge first: by the
    best rank any run gives the item, then by how many runs retrieve it, ties at random.
    Subtopic relevance goes with the judgment: a dropped item is relevant to no subtopic."""
    n_items = len(coll.item_query)
    keys = [rng.random(n_items)]  # its only draw (_judged_jobs advances rng the same way)
    if policy == "pool":
        retrieved = coll.ranks > 0
        best = np.where(retrieved, coll.ranks, np.iinfo(np.int64).max).min(axis=0)
        keys += [-retrieved.sum(axis=0), best]
    order = np.lexsort((*keys, coll.item_query))
    bounds = coll.item_bounds
    sizes = np.diff(bounds)
    keep_n = np.maximum(1, np.floor(fraction * sizes).astype(np.int64))
    slot = np.arange(n_items) - bounds[coll.item_query[order]]
    keep = np.zeros(n_items, dtype=bool)
    keep[order] = slot < keep_n[coll.item_query[order]]
    judged_grade = coll.judged.grade.copy()
    judged_grade[coll.item_doc[~keep]] = np.nan  # no longer judged
    return replace(coll, item_query=coll.item_query[keep], item_grade=coll.item_grade[keep],
                   item_names=coll.item_names.take(np.flatnonzero(keep)),
                   item_doc=coll.item_doc[keep], ranks=coll.ranks[:, keep],
                   judged=replace(coll.judged, grade=judged_grade),
                   subtopics=None if coll.subtopics is None else coll.subtopics.kept(keep))


def fraction_label(fraction: float) -> str:
    """A judged fraction in an output name: two decimals (0.50) when they are the fraction,
    else its shortest exact form (0.125, 0.999, 0.001), so two fractions never share a name
    and none prints as 1.00 or 0.00."""
    two = f"{fraction:.2f}"
    return two if float(two) == fraction else repr(fraction)

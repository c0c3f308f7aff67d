"""``rpp meta``: the paper's experiments on the user's own runs.

The analyses, one module each behind :data:`ANALYSES`, add rows to one Results table whose
"runs" are the measures studied (so every line keeps the contract §7 layout, value last):
``power`` and ``ties`` (:mod:`.power`), ``agreement`` (:mod:`.agreement`), ``robustness``
(:mod:`.robustness`) and ``predictive`` (:mod:`.predictive`), the default five, and
``widths`` (:mod:`.widths`) when asked; what they share is in :mod:`.study`.

Orderings matter to the last three: with ``--ordering all`` a preference measure M is
studied once per ordering, as ``M:win``, ``M:borda`` and ``M:mc4``.

Every random draw comes from ``numpy.random.default_rng([seed, analysis, ...])``, so an
analysis gives the same numbers whichever other analyses or measures are asked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ...errors import InputError
from ...measures import resolve
from ...orderings import ORDERINGS
from ...pipeline import default_measures, evaluate_runs
from ...settings import Options
from ...stats import DEFAULT_SEED, checked_count, checked_seed
from .. import Outcome, noting
from . import agreement, power, predictive, robustness, widths
from .robustness import JUDGED_POLICIES
from .study import Job, Study, run_jobs

# Each analysis' jobs, in output order.
ANALYSES: dict[str, Callable[[Study], list[Job]]] = {
    "power": power.jobs, "ties": power.ties_jobs, "agreement": agreement.jobs,
    "robustness": robustness.jobs, "predictive": predictive.jobs, "widths": widths.jobs}
# What runs when no analysis is named: the paper's experiments.
DEFAULT_ANALYSES = ("power", "ties", "agreement", "robustness", "predictive")


@dataclass(frozen=True)
class MetaOptions:
    """What ``rpp meta`` computes, and with how many random draws."""

    analyses: tuple[str, ...] = DEFAULT_ANALYSES
    alpha: float = 0.05
    permutations: int = 10_000
    samples: int = 1000
    query_counts: tuple[int, ...] | None = None  # None: QUERY_FRACTIONS of the queries
    judged_fractions: tuple[float, ...] = ()
    judged_samples: int = 10
    top_fraction: float = 0.75
    ordering: str = "mc4"  # or "all": each of ORDERINGS
    seed: int = DEFAULT_SEED
    judged_policy: str = "random"

    def __post_init__(self) -> None:
        """Analyses given as one string (``"power"``, ``"power,ties"``) as the command line
        takes them, not as its letters; each once (``power,power`` runs power once)."""
        analyses = self.analyses
        if isinstance(analyses, str):
            analyses = tuple(a.strip() for a in analyses.split(",") if a.strip())
        object.__setattr__(self, "analyses", tuple(dict.fromkeys(analyses)))


@dataclass(frozen=True)
class MetaRequest:
    """``rpp meta``'s own settings: ``-m`` (empty: as rpp eval) and what to compute about
    those measures."""

    measures: tuple[str, ...] = ()
    settings: MetaOptions = field(default_factory=MetaOptions)


def run(qrels: str | None, runs: list[str], request: MetaRequest, options: Options
        ) -> Outcome:
    """Evaluate ``runs`` once and run every analysis asked for (:func:`plan`, then
    :func:`execute`)."""
    return execute(plan(qrels, runs, request, options))


def plan(qrels: str | None, runs: list[str], request: MetaRequest, options: Options) -> Study:
    """Evaluate the runs once and check that the analyses asked for can run on them: the
    study's notes so far are ready to show before the long part, :func:`execute`."""
    settings = request.settings
    with noting() as notes:
        check(settings, len(runs))
        measures = resolve(default_measures(list(request.measures), options.subtopics))
        ctx = evaluate_runs(qrels, runs, measures, options, False, notes, statistics=True)
        study = Study(ctx, measures, settings, notes)
        if not study.subjects:
            raise InputError("no measure with per-query values to study")
        if study.n_queries < 2 and {"power", "predictive"} & set(settings.analyses):
            raise InputError("discriminative and predictive power need at least 2 queries")
        if {"robustness", "widths"} & set(settings.analyses):
            robustness.query_counts(study)  # bad grid values fail before any work
        return study


def jobs(study: Study) -> list[Job]:
    """Every job of the analyses asked for, in output order."""
    return [job for name in study.settings.analyses for job in ANALYSES[name](study)]


def execute(study: Study) -> Outcome:
    """Every analysis of a planned study, on the command's engine: its Results, all its notes
    (the plan's first), and what the plot draws (``scatter`` and ``differences``, from the
    agreement analysis)."""
    with noting(study.notes):
        run_jobs(jobs(study))
    return Outcome(study.results, study.notes,
                   {"scatter": study.scatter, "differences": study.differences})


def require_analyses(settings: MetaOptions) -> None:
    """At least one analysis, for whoever asks for results (``--analysis ''`` would print
    nothing and exit 0, which a script takes for a result)."""
    if not settings.analyses:
        raise InputError(f"no analysis given (choose from {','.join(ANALYSES)})")


def check(settings: MetaOptions, n_runs: int) -> None:
    """Reject option values no analysis can use, before anything is read."""
    for name in settings.analyses:
        if name not in ANALYSES:
            raise InputError(f"unknown analysis '{name}' (choose from {','.join(ANALYSES)})")
    if settings.query_counts is not None and min(settings.query_counts, default=1) < 1:
        raise InputError(f"--query-counts: {min(settings.query_counts)} is not a number of "
                         "queries (1 or more)")
    if n_runs < 2:
        raise InputError("meta needs at least two runs")
    checked_seed(settings.seed)
    checked_count("permutations", settings.permutations)
    checked_count("samples", settings.samples)
    checked_count("judged samples", settings.judged_samples, 1_000_000)
    if not 0 < settings.alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {settings.alpha:g})")
    if settings.judged_policy not in JUDGED_POLICIES:
        raise InputError(f"unknown judged policy '{settings.judged_policy}' (choose from "
                         f"{', '.join(JUDGED_POLICIES)})")
    if settings.ordering not in (*ORDERINGS, "all"):
        raise InputError(f"unknown ordering '{settings.ordering}'")
    if not 0 < settings.top_fraction <= 1:
        raise InputError(f"--top-fraction must be in (0, 1] (got {settings.top_fraction:g})")
    for f in settings.judged_fractions:
        if not 0 < f <= 1:
            raise InputError(f"--judged-fractions: {f:g} is not in (0, 1]")


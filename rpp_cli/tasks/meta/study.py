"""What the analyses of ``rpp meta`` share: the measures under study (:class:`Subject`), the
one Results table their rows go to (:class:`Study`), the jobs that fill it and how they run,
and the random query subsets the sampling analyses draw."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ...engine import current
from ...measures import Measure
from ...orderings import ORDERINGS, name_order, query_table, subset_scores
from ...pipeline import Context
from ...results import Results
from ...stats import of_runs
from ...pipeline import testable

if TYPE_CHECKING:
    from . import MetaOptions


@dataclass(frozen=True)
class Job:
    """One independent piece of meta's work: ``compute`` is pure (any engine may run it, in
    another process or on another machine), ``finish`` adds its value's rows in this one."""

    compute: Callable[[], Any]
    finish: Callable[[Any], None]


class Gathered:
    """The ``finish`` of ``n`` jobs whose rows need all their values: hands the values, in
    job order, to ``done`` once the last has arrived (jobs finish in output order)."""

    def __init__(self, n: int, done: Callable[[list[Any]], None]) -> None:
        self.n, self.done = n, done
        self.values: list[Any] = []

    def __call__(self, value: Any) -> None:
        """One job's value; the rows once every value is in."""
        self.values.append(value)
        if len(self.values) == self.n:
            self.done(self.values)


def run_jobs(jobs: list[Job]) -> None:
    """Every job, computed by the command's engine (any order, any machine), finished here in
    output order; only ``compute`` (and what it holds) travels."""
    values = current().imap(_call, [job.compute for job in jobs], "rpp meta")
    for job, value in zip(jobs, values):
        job.finish(value)


def _call(compute: Callable[[], Any]) -> Any:
    """A job's value (the function engines map)."""
    return compute()


@dataclass
class Subject:
    """One measure under study with one system ordering: its per-query values, oriented so
    that higher is better. ``measure`` names the measure, ``name`` the line (``M:mc4`` when
    several orderings of M are studied)."""

    name: str
    values: np.ndarray  # metric (Q, R) or preference (Q, R, R)
    ordering: str  # "mean" for a metric, one of ORDERINGS for a preference measure
    measure: str
    run_names: list[str]  # MC4 solves over the runs in name order (orderings.mc4_scores)

    def scores(self, weights: np.ndarray | None = None,
               runs: np.ndarray | None = None) -> np.ndarray:
        """(S, R) ordering scores on query subsets ``weights`` (S, Q), optionally only
        among ``runs``."""
        values, names = self.values, self.run_names
        if runs is not None:
            values = of_runs(values, runs)
            names = [names[r] for r in runs]
        return subset_scores(*query_table(values, self.ordering), weights, name_order(names))


def subjects(ctx: Context, measures: list[Measure], notes: list[str],
             ordering: str = "mc4") -> list[Subject]:
    """The measures with per-query values, metrics negated when lower is better; a preference
    measure once per ordering with ``ordering`` "all"."""
    lower = {out for m in measures for out in m.outputs if not m.higher_is_better}
    out = []
    names = testable(ctx, measures, notes)
    coll = ctx.collection
    arrays = {name: ctx.tensors[name] if is_pref else ctx.metrics[name] for name, is_pref in names}
    if len({len(v) for v in arrays.values()}) > 1:  # one query set for every comparison
        notes.append(f"meta studies every measure on the {len(coll.evaluated)} queries with a "
                     f"relevant item (trec_eval's and ir_measures' measures alone average over "
                     f"{len(coll.qids)})")
        arrays = {name: coll.on_evaluated(v) for name, v in arrays.items()}
    runs = coll.run_names
    for name, is_pref in names:
        values = arrays[name]
        values = -values if name in lower else values
        if not is_pref:
            out.append(Subject(name, values, "mean", name, runs))
        elif ordering == "all":
            out += [Subject(f"{name}:{o}", values, o, name, runs) for o in ORDERINGS]
        else:
            out.append(Subject(name, values, ordering, name, runs))
    return out


def pairs(items: list[Subject], same: bool = False) -> list[tuple[Subject, Subject]]:
    """Every ordered pair of ``items``, (a, a) included when ``same``."""
    return [(a, b) for a in items for b in items if same or a is not b]


class Study:
    """One ``rpp meta`` call's measures under study and the Results the analyses fill (its
    "runs" are the studied names, so every line keeps the contract §7 layout), with the
    plots' data the agreement analysis leaves and the notes gathered on the way."""

    def __init__(self, ctx: Context, measures: list[Measure], settings: MetaOptions,
                 notes: list[str]) -> None:
        self.ctx, self.measures, self.settings, self.notes = ctx, measures, settings, notes
        self.subjects = subjects(ctx, measures, notes, settings.ordering)
        # one per measure: what does not depend on the ordering (power, ties, signs)
        self.measured = list({s.measure: s for s in self.subjects[::-1]}.values())[::-1]
        names = list(dict.fromkeys(n for s in self.subjects for n in (s.measure, s.name)))
        self.results = Results([], names, subject="measure")
        self._index = {name: i for i, name in enumerate(names)}
        self.n_queries = len(self.subjects[0].values) if self.subjects else 0
        self.width = len(ctx.collection.run_names) ** 2  # widest per-sample row of a draw
        self.full = [s.scores()[0] for s in self.subjects]  # each subject's whole ordering
        self.scatter: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.differences: dict[str, np.ndarray] = {}  # measure -> per (query, pair a < b)

    def rng(self, *key: int) -> np.random.Generator:
        """The random stream of one analysis (``key``: its number and parameters), the same
        whichever other analyses or measures are asked for."""
        return np.random.default_rng([self.settings.seed, *key])

    def add(self, name: str, who: list[str], values: list[float],
            others: list[str] | None = None) -> None:
        """Rows ``name`` for the studied names ``who`` (and ``others``, for pairs)."""
        idx = np.array([self._index[w] for w in who], dtype=np.int64)
        other = None if others is None else np.array([self._index[w] for w in others],
                                                     dtype=np.int64)
        self.results.add(name, -1, idx, np.array(values, dtype=np.float64), other)


SAMPLE_BLOCK_ELEMENTS = 1 << 22  # elements of the largest array of one block of draws (32 MiB)


def random_subsets(rng: np.random.Generator, samples: int, n_queries: int,
                   sizes: tuple[int, ...], width: int = 1) -> Iterator[list[np.ndarray]]:
    """Disjoint random query subsets of the given sizes per sample, as 0/1 (S, Q) weights,
    one list per block of samples: a block's arrays hold at most about
    SAMPLE_BLOCK_ELEMENTS elements, ``width`` being the widest per-sample row its user
    computes (R^2 for a preference table), so memory does not grow with ``samples``. The
    draws are the same whatever the block size (one stream of uniforms, row after row)."""
    rows = max(1, SAMPLE_BLOCK_ELEMENTS // max(n_queries, width, 1))
    for lo in range(0, samples, rows):
        order = np.argsort(rng.random((min(rows, samples - lo), n_queries)), axis=1)
        out, first = [], 0
        for size in sizes:
            w = np.zeros(order.shape)
            np.put_along_axis(w, order[:, first:first + size], 1.0, axis=1)
            out.append(w)
            first += size
        yield out


class FiniteMean:
    """Mean of the finite values added so far, block by block (an undefined tau, from an
    all-tied ordering, is skipped). One block gives exactly numpy's mean of its finite
    values; more blocks add their sums."""

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, values: np.ndarray) -> None:
        """One block's values."""
        finite = values[np.isfinite(values)]
        self.total += float(finite.sum())
        self.count += len(finite)

    def value(self) -> float:
        """The mean so far (NaN with no finite value)."""
        return self.total / self.count if self.count else float("nan")

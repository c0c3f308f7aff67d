"""Meta-evaluation (``rpp meta``): the paper's experiments on the user's own runs.

Five analyses, each a list of jobs that add rows to one Results table whose "runs" are the
measures studied (so every line keeps the contract §7 layout, value last):

- ``power_ttest`` / ``power_hsd`` (M): share of run pairs significant at alpha under the
  t-test with Bonferroni over all pairs, and under randomized Tukey HSD;
- ``ties`` (M): share of (query, run pair) on which M cannot tell the two runs apart;
- ``agreement_tau`` (A, B): Kendall's tau-b between the system orderings of A and B;
  ``agreement_sign`` / ``agreement_r`` (A, B): how often the per-query differences of A and
  B have the same sign, and their Pearson r, over every query and pair of runs (paper §6.1);
- ``robust_queries_K`` / ``robust_judged_F`` (M): mean tau-b between the ordering from K
  random queries (or from a fraction F of each query's relevant judgments) and the ordering
  from everything;
- ``predictive_tau`` (A, B): mean tau-b between A's ordering on a random half of the queries
  and B's ordering on the other half, both ways (Webber, Moffat and Zobel, SIGIR 2008).

Orderings matter to the last three: with ``--ordering all`` a preference measure M is
studied once per ordering, as ``M:win``, ``M:borda`` and ``M:mc4``.

Every random draw comes from ``numpy.random.default_rng([seed, analysis, ...])``, so an
analysis gives the same numbers whichever other analyses or measures are asked for.
"""
from __future__ import annotations

import copy
import math
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

import numpy as np

from .aggregate import ORDERINGS, name_order, query_table, subset_scores, top_runs
from .collection import Collection
from .engine import current
from .errors import InputError
from .pipeline import Context, Options, default_measures, evaluate_runs, measure
from .measures import Measure, resolve
from .results import Results
from .stats import (DEFAULT_SEED, adjust, checked_count, checked_seed, kendall_tau_b,
                    of_runs, pair_values, significance, testable, ttest)

ANALYSES = ("power", "ties", "agreement", "robustness", "predictive")
JUDGED_POLICIES = ("random", "pool")
QUERY_FRACTIONS = (0.1, 0.25, 0.5, 0.75)  # default robustness grid, as shares of the queries


@dataclass(frozen=True)
class Job:
    """One independent piece of meta's work: ``compute`` is pure (any engine may run it, in
    another process or on another machine), ``finish`` adds its value's rows in this one."""

    compute: Callable[[], Any]
    finish: Callable[[Any], None]


@dataclass(frozen=True)
class MetaOptions:
    """What ``rpp meta`` computes, and with how many random draws."""

    analyses: tuple[str, ...] = ANALYSES
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
        takes them, not as its letters; each once (``power,power`` printed every line twice)."""
        analyses = self.analyses
        if isinstance(analyses, str):
            analyses = tuple(a.strip() for a in analyses.split(",") if a.strip())
        object.__setattr__(self, "analyses", tuple(dict.fromkeys(analyses)))


@dataclass
class Subject:
    """One measure under study with one system ordering: its per-query values, oriented so
    that higher is better. ``measure`` names the measure, ``name`` the line (``M:mc4`` when
    several orderings of M are studied)."""

    name: str
    values: np.ndarray  # metric (Q, R) or preference (Q, R, R)
    ordering: str  # "mean" for a metric, one of ORDERINGS for a preference measure
    measure: str
    run_names: list[str]  # MC4 solves over the runs in name order (aggregate.mc4_scores)

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


def subsample_judgments(coll: Collection, fraction: float, rng: np.random.Generator,
                        policy: str = "random") -> Collection:
    """``coll`` with each query's relevant judgments cut to max(1, floor(fraction * m_q));
    dropped ones become unjudged, and the corpus size n is unchanged. ``random`` keeps a
    uniform sample; ``pool`` keeps those a shallow pool of the runs would judge first: by the
    best rank any run gives the item, then by how many runs retrieve it, ties at random."""
    n_items = len(coll.item_query)
    keys = [rng.random(n_items)]  # its only draw (Meta's judged jobs advance rng the same way)
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
                   judged=replace(coll.judged, grade=judged_grade))


class FiniteMean:
    """Mean of the finite values added so far, block by block (an undefined tau, from an
    all-tied ordering, is skipped). One block gives exactly numpy's mean of its finite
    values; more blocks add their sums."""

    def __init__(self) -> None:
        self.total, self.count = 0.0, 0

    def add(self, values: np.ndarray) -> None:
        finite = values[np.isfinite(values)]
        self.total += float(finite.sum())
        self.count += len(finite)

    def value(self) -> float:
        return self.total / self.count if self.count else float("nan")


def _mean_tau(taus: np.ndarray) -> float:
    """Mean over draws, skipping draws where tau is undefined (an all-tied ordering)."""
    mean = FiniteMean()
    mean.add(taus)
    return mean.value()


class Meta:
    """The jobs of one ``rpp meta`` call and the Results they fill."""

    def __init__(self, ctx: Context, measures: list[Measure], opts: MetaOptions,
                 notes: list[str]) -> None:
        self.ctx, self.measures, self.opts, self.notes = ctx, measures, opts, notes
        self.subjects = subjects(ctx, measures, notes, opts.ordering)
        # one per measure: what does not depend on the ordering (power, ties, signs)
        self.measured = list({s.measure: s for s in self.subjects[::-1]}.values())[::-1]
        names = list(dict.fromkeys(n for s in self.subjects for n in (s.measure, s.name)))
        self.results = Results([], names, subject="measure")
        self._index = {name: i for i, name in enumerate(names)}
        self.n_queries = len(self.subjects[0].values) if self.subjects else 0
        self._width = len(ctx.collection.run_names) ** 2  # widest per-sample row of a draw
        self._full = [s.scores()[0] for s in self.subjects]
        self.scatter: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
        self.differences: dict[str, np.ndarray] = {}  # measure -> per (query, pair a < b)

    def jobs(self) -> list[Job]:
        """Every job of the selected analyses, in output order."""
        out: list[Job] = []
        for analysis in self.opts.analyses:
            out += getattr(self, f"_{analysis}_jobs")()
        return out

    def _rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.opts.seed, *key])

    def _add(self, name: str, who: list[str], values: list[float],
             others: list[str] | None = None) -> None:
        """Rows ``name`` for the studied names ``who`` (and ``others``, for pairs)."""
        idx = np.array([self._index[w] for w in who], dtype=np.int64)
        other = None if others is None else np.array([self._index[w] for w in others],
                                                     dtype=np.int64)
        self.results.add(name, -1, idx, np.array(values, dtype=np.float64), other)

    def _pairs(self, items: list[Subject], same: bool = False) -> list[tuple[Subject, Subject]]:
        return [(a, b) for a in items for b in items if same or a is not b]

    # -- discriminative power and ties -------------------------------------------------
    def _power_jobs(self) -> list[Job]:
        shares: dict[str, list[float]] = {"power_ttest": [], "power_hsd": []}

        alpha, permutations = self.opts.alpha, self.opts.permutations
        run_names = self.ctx.collection.run_names

        def one(subject: Subject) -> Job:
            values, rng = subject.values, self._rng(0)  # what travels to the engine

            def compute() -> tuple[float, float]:
                p_t = adjust(ttest(pair_values(values)), "bonferroni")
                p_h = significance(values, "hsd", permutations, rng, run_names)
                return float(np.mean(p_t < alpha)), float(np.mean(p_h < alpha))

            def finish(value: tuple[float, float]) -> None:
                shares["power_ttest"].append(value[0])
                shares["power_hsd"].append(value[1])
                if len(shares["power_hsd"]) == len(self.measured):
                    for name, values in shares.items():
                        self._add(name, [s.measure for s in self.measured], values)
            return Job(compute, finish)
        return [one(s) for s in self.measured]

    def _ties_jobs(self) -> list[Job]:
        values = [s.values for s in self.measured]
        return [Job(lambda: [tie_share(v) for v in values],
                    lambda shares: self._add("ties", [s.measure for s in self.measured],
                                             shares))]

    # -- agreement -----------------------------------------------------------------------
    def _agreement_jobs(self) -> list[Job]:
        full = {s.name: f for s, f in zip(self.subjects, self._full)}
        named = [(a.name, b.name) for a, b in self._pairs(self.subjects)]
        diffs = {s.measure: s.values for s in self.measured}
        measured = [(a.measure, b.measure) for a, b in self._pairs(self.measured)]

        def orderings() -> list[float]:
            if not named:
                return []
            return kendall_tau_b(np.stack([full[a] for a, _ in named]),
                                 np.stack([full[b] for _, b in named])).tolist()

        def add_orderings(taus: list[float]) -> None:
            pairs = self._pairs(self.subjects)
            if pairs:
                self._add("agreement_tau", [a.name for a, _ in pairs], taus,
                          [b.name for _, b in pairs])

        order = name_order(self.ctx.collection.run_names)  # pairs summed in one order

        def per_query() -> tuple[list[float], list[float]]:
            x = {name: pair_values(of_runs(values, order)).ravel()
                 for name, values in diffs.items()}
            return ([float(np.mean(np.sign(x[a]) == np.sign(x[b]))) for a, b in measured],
                    [pearson_r(x[a], x[b]) for a, b in measured])

        def add_per_query(value: tuple[list[float], list[float]]) -> None:
            pairs = self._pairs(self.measured)
            if not pairs:
                return
            diff = {s.measure: pair_values(s.values).ravel() for s in self.measured}
            self.differences.update(diff)  # the plots' (Fig. 2 and the scatters)
            for a, b in pairs:
                if a.values.ndim == 3 and b.values.ndim == 2:
                    self.scatter[(a.measure, b.measure)] = (diff[b.measure], diff[a.measure])
            who, others = [a.measure for a, _ in pairs], [b.measure for _, b in pairs]
            self._add("agreement_sign", who, value[0], others)
            self._add("agreement_r", who, value[1], others)
        return [Job(orderings, add_orderings), Job(per_query, add_per_query)]

    # -- robustness ----------------------------------------------------------------------
    def query_counts(self) -> tuple[int, ...]:
        """The robustness grid: ``--query-counts`` or QUERY_FRACTIONS of the queries."""
        q = self.n_queries
        if self.opts.query_counts is None:
            return tuple(sorted({max(1, int(f * q)) for f in QUERY_FRACTIONS}))
        for k in self.opts.query_counts:
            if not 1 <= k <= q:
                raise InputError(f"--query-counts: {k} is not between 1 and {q} "
                                 "(the number of evaluated queries)")
        return tuple(sorted(set(self.opts.query_counts)))

    def _robustness_jobs(self) -> list[Job]:
        studied, samples, n_queries = list(zip(self.subjects, self._full)), self.opts.samples, \
            self.n_queries

        def by_queries(k: int) -> Job:
            rng, width = self._rng(2, k), self._width

            def compute() -> list[float]:
                means = [FiniteMean() for _ in studied]
                for (w,) in random_subsets(rng, samples, n_queries, (k,), width):
                    for mean, (s, full) in zip(means, studied):
                        mean.add(kendall_tau_b(s.scores(w), full))
                return [mean.value() for mean in means]
            return Job(compute, lambda taus: self._add(f"robust_queries_{k}",
                                                       [s.name for s in self.subjects], taus))
        out = [by_queries(k) for k in self.query_counts()]
        for f in dict.fromkeys(self.opts.judged_fractions):  # a fraction given twice: once
            out += self._judged_jobs(f)
        return out

    def _judged_jobs(self, fraction: float) -> list[Job]:
        policy = self.opts.judged_policy
        rng = self._rng(3, round(fraction * 1_000_000), JUDGED_POLICIES.index(policy))
        taus: list[list[float]] = [[] for _ in self.subjects]
        name = f"robust_judged_{fraction_label(fraction)}" + ("_pool" if policy == "pool" else "")

        whole, measures, ordering, full = (self.ctx.collection, self.measures,
                                           self.opts.ordering, self._full)

        def draw(rng: np.random.Generator) -> Job:
            def compute() -> list[float]:
                coll = subsample_judgments(whole, fraction, rng, policy)
                sub = subjects(measure(coll, measures, False, []), measures, [], ordering)
                return [float(kendall_tau_b(s.scores()[0], f)) for s, f in zip(sub, full)]

            def finish(value: list[float]) -> None:
                for i, tau in enumerate(value):
                    taus[i].append(tau)
                if len(taus[0]) == self.opts.judged_samples:
                    self._add(name, [s.name for s in self.subjects],
                              [_mean_tau(np.array(t)) for t in taus])
            return Job(compute, finish)

        jobs = []
        for _ in range(self.opts.judged_samples):  # draw k: the stream after k draws
            jobs.append(draw(copy.deepcopy(rng)))
            rng.random(len(whole.item_query))  # the stream after one draw: its only use of rng
        return jobs

    # -- predictive power ----------------------------------------------------------------
    def top_runs(self) -> np.ndarray | None:
        """Indices of the top ``--top-fraction`` of runs by map, ties at the cut included
        (None: all runs)."""
        names = self.ctx.collection.run_names
        n_top = max(2, math.ceil(self.opts.top_fraction * len(names)))
        if n_top >= len(names):
            return None
        ap = self.ctx.metrics.get("map")
        if ap is None:
            ap = measure(self.ctx.collection, resolve(["map"]), False, []).metrics["map"]
        top = top_runs(ap.mean(axis=0), n_top)
        self.notes.append(f"predictive power among the top {len(top)} of {len(names)} runs by "
                          "map: " + " ".join(names[i] for i in top))
        return top

    def _predictive_jobs(self) -> list[Job]:
        runs = self.top_runs()  # here: its note is this process's
        rng, samples, n_queries, studied, width = (self._rng(4), self.opts.samples,
                                                   self.n_queries, self.subjects, self._width)
        pairs = [(a.name, b.name) for a, b in self._pairs(studied, same=True)]

        def compute() -> list[float]:
            half = n_queries // 2
            means = [FiniteMean() for _ in pairs]
            for w1, w2 in random_subsets(rng, samples, n_queries, (half, n_queries - half),
                                         width):
                s1 = {s.name: s.scores(w1, runs) for s in studied}
                s2 = {s.name: s.scores(w2, runs) for s in studied}
                for mean, (a, b) in zip(means, pairs):
                    mean.add(np.concatenate([kendall_tau_b(s1[a], s2[b]),
                                             kendall_tau_b(s2[a], s1[b])]))
            return [mean.value() for mean in means]

        def finish(values: list[float]) -> None:
            pairs = self._pairs(self.subjects, same=True)
            self._add("predictive_tau", [a.name for a, _ in pairs], values,
                      [b.name for _, b in pairs])
        return [Job(compute, finish)]

    def run(self) -> Results:
        """Every job, computed by the command's engine (any order, any machine), finished
        here in output order."""
        jobs = self.jobs()
        values = current().imap(_call, [job.compute for job in jobs], "rpp meta")
        for job, value in zip(jobs, values):  # only ``compute`` (and what it holds) travels
            job.finish(value)
        return self.results


def _call(compute: Callable[[], Any]) -> Any:
    """A job's value (the function engines map)."""
    return compute()


def tie_share(values: np.ndarray) -> float:
    """Share of (query, run pair) on which a measure's per-query values (Q, R) or preferences
    (Q, R, R) do not tell the two runs apart."""
    return float(np.mean(pair_values(values) == 0))


def pearson_r(x: np.ndarray, y: np.ndarray) -> float:
    """Pearson's r of two measures' differences over the run pairs, each pair taken both ways,
    (x, y) and (-x, -y): which run of a pair comes first is the order they were given in, and
    must not move r (centring one orientation did: 0.961 or 0.966 for the same runs). The
    points' means are then 0, so r = Σxy / sqrt(Σx² Σy²), whose terms no orientation changes;
    given the pairs in one order (meta sorts the runs by name), its bits are those of any
    argument order. NaN when either is all 0."""
    norm = math.sqrt(float(x @ x) * float(y @ y))
    return float(x @ y) / norm if norm > 0 else float("nan")


def require_analyses(opts: MetaOptions) -> None:
    """At least one analysis, for whoever asks for results (``--analysis ''`` printed nothing
    and exited 0, which a script takes for a result)."""
    if not opts.analyses:
        raise InputError(f"no analysis given (choose from {','.join(ANALYSES)})")


def check(opts: MetaOptions, n_runs: int) -> None:
    """Reject option values no analysis can use, before anything is read."""
    for name in opts.analyses:
        if name not in ANALYSES:
            raise InputError(f"unknown analysis '{name}' (choose from {','.join(ANALYSES)})")
    if opts.query_counts is not None and min(opts.query_counts, default=1) < 1:
        raise InputError(f"--query-counts: {min(opts.query_counts)} is not a number of queries "
                         "(1 or more)")
    if n_runs < 2:
        raise InputError("meta needs at least two runs")
    checked_seed(opts.seed)
    checked_count("permutations", opts.permutations)
    checked_count("samples", opts.samples)
    checked_count("judged samples", opts.judged_samples, 1_000_000)
    if not 0 < opts.alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {opts.alpha:g})")
    if opts.judged_policy not in JUDGED_POLICIES:
        raise InputError(f"unknown judged policy '{opts.judged_policy}' (choose from "
                         f"{', '.join(JUDGED_POLICIES)})")
    if opts.ordering not in (*ORDERINGS, "all"):
        raise InputError(f"unknown ordering '{opts.ordering}'")
    if not 0 < opts.top_fraction <= 1:
        raise InputError(f"--top-fraction must be in (0, 1] (got {opts.top_fraction:g})")
    for f in opts.judged_fractions:
        if not 0 < f <= 1:
            raise InputError(f"--judged-fractions: {f:g} is not in (0, 1]")


def fraction_label(fraction: float) -> str:
    """A judged fraction in an output name: two decimals (0.50) when they are the fraction,
    else its shortest exact form (0.125, 0.999, 0.001), so two fractions never share a name
    and none prints as 1.00 or 0.00."""
    two = f"{fraction:.2f}"
    return two if float(two) == fraction else repr(fraction)


def plan_meta(qrels_path: str, run_paths: list[str], measure_names: list[str] | None,
              options: Options, opts: MetaOptions, notes: list[str]) -> Meta:
    """Evaluate the runs once and lay out the jobs of ``rpp meta``."""
    check(opts, len(run_paths))
    measures = resolve(default_measures(measure_names, options.subtopics))
    ctx = evaluate_runs(qrels_path, run_paths, measures, options, False, notes)
    meta = Meta(ctx, measures, opts, notes)
    if not meta.subjects:
        raise InputError("no measure with per-query values to study")
    if meta.n_queries < 2 and {"power", "predictive"} & set(opts.analyses):
        raise InputError("discriminative and predictive power need at least 2 queries")
    if "robustness" in opts.analyses:
        meta.query_counts()  # bad grid values fail before any work
    return meta

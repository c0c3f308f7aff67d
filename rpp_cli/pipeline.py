"""What every evaluating command does first: read -> encode -> measure -> one Results table
(the commands' own flows are in :mod:`rpp_cli.tasks`)."""
from __future__ import annotations

import functools
import math
import os
import sys
from contextlib import closing

from dataclasses import dataclass, field, replace

import numpy as np

from .aggregate import add_metric, add_preference
from .collection import Collection, counted, encode
from .engine import Processes, current
from .engine.threads import side_by_side
from .errors import InputError, number
from .io.identity import check_inputs
from .io.qrels import Qrels, SubtopicQrels, read_qrels, read_subtopic_qrels
from . import memory
from .core.table import split, split_stream
from .measures import pytrec_adapter
from .measures import (ALL_QUERIES, DEFAULTS, FAMILIES, PREFERENCE, SUBTOPIC_DEFAULTS, Measure,
                       across_runs)
from .results import Results
from .settings import Options


@dataclass
class Context:
    """What a measure family reads (the collection, options) and writes (rows, raw arrays)."""

    collection: Collection
    results: Results
    per_query: bool = False
    jobs: int = 1  # threads for per-run work
    # preference: (E, R, R) over the evaluated queries (rpp's own measures, contract §6)
    tensors: dict[str, np.ndarray] = field(default_factory=dict)
    # metric: (Q, R) for trec_eval's and ir_measures' measures, (E, R) for rpp's own
    metrics: dict[str, np.ndarray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # for stderr

    def add_preference(self, name: str, per_query: np.ndarray) -> None:
        """One of rpp's own preference measures, (Q, R, R) over the collection's queries (or
        its evaluated ones): printed and kept on the evaluated queries (contract §6)."""
        values = self.collection.on_evaluated(per_query)
        add_preference(self.results, name, values, self.per_query, self.collection.evaluated)
        self.tensors[name] = values

    def add_metric(self, name: str, per_query: np.ndarray, keep: bool = True) -> None:
        """One of rpp's own per-run measures, (Q, R): as :meth:`add_preference`; ``keep``
        False for informative outputs that no test or ordering reads."""
        values = self.collection.on_evaluated(per_query)
        add_metric(self.results, name, values, self.per_query, queries=self.collection.evaluated)
        if keep:
            self.metrics[name] = values

    def part(self) -> "Context":
        """An empty context for one family's work, to :meth:`absorb` after."""
        return replace(self, results=Results(self.results.qids, self.results.runs,
                                             list(self.results.measures)),
                       tensors={}, metrics={}, notes=[])

    def absorb(self, part: "Context") -> None:
        """Add what ``part`` holds after what this one holds, as if it had been added here."""
        self.results.extend(part.results)
        self.tensors.update(part.tensors)
        self.metrics.update(part.metrics)
        self.notes.extend(part.notes)


def split_paths(paths: list[str], subtopics: str | None, notes: list[str] | None = None
                ) -> tuple[str | None, list[str]]:
    """QRELS and RUN... from the arguments. With subtopic qrels QRELS may be ``-`` or
    omitted: the first argument is QRELS when its first line has 4 fields (a run has 5-6).
    ``-`` there is no QRELS, and standard input is not read: a note says so when it is not a
    terminal (``rpp eval --subtopics s - run < qrels`` read no qrels)."""
    if not paths:
        raise InputError("missing QRELS and RUN... arguments")
    first, rest = paths[0], paths[1:]
    if subtopics is not None:
        if first == "-":
            first = None
            if notes is not None and sys.stdin is not None and not sys.stdin.isatty():
                notes.append("'-' as QRELS with --subtopics means no QRELS (each item's grade "
                             "is its largest over the subtopic qrels): standard input is not "
                             "read; give the qrels file by name to use it")
        elif _first_line_fields(first) != 4:
            first, rest = None, paths
    if not rest:
        raise InputError("missing RUN... arguments")
    return first, rest


def _first_line_fields(path: str) -> int:
    """The field count of the first data line of ``path``: from its first window for a file
    (a run of gigabytes is not read whole, and kept, to tell it from qrels); a pipe
    (``<(cat qrels)``) can be read only once, so it is read whole and its bytes kept for
    the reader whose turn it is."""
    if not os.path.isfile(path):
        return int(split(path, (), (4, 5, 6), "qrels or run", again=True).nfields[0])
    with closing(split_stream(path, (), (4, 5, 6), "qrels or run")) as tables:
        return next(int(t.nfields[0]) for t in tables if len(t))


def load(qrels_path: str | None, run_paths: list[str], options: Options,
         notes: list[str], across_runs: bool = True, need_relevant: bool = True) -> Collection:
    """Read the qrels and runs and join them (contract §1-2); without QRELS an item's grade
    is its largest over the subtopic qrels. ``across_runs``: the measures compare unjudged
    docnos across runs (the corpus size, interleaving); without it, they are not coded in
    the shared dictionary and the corpus size is left out (see :func:`encode`)."""
    if options.level is not None and not 0 < options.level < math.inf:  # NaN too
        raise InputError("relevance level must be a finite number > 0 (got "
                         f"{number(options.level)})")
    if options.corpus_size is not None and options.corpus_size < 1:
        raise InputError(f"--corpus-size must be positive (got {options.corpus_size})")
    check_inputs([qrels_path, options.subtopics, *run_paths])
    subtopics = read_subtopic_qrels(options.subtopics) if options.subtopics else None
    twins = subtopics.numeric_twins() if subtopics else []
    if twins:
        qid, a, b = twins[0]
        are = "is" if len(twins) == 1 else "are"
        notes.append(f"{options.subtopics}: {counted(len(twins), 'pair', 'pairs')} of subtopic "
                     f"ids {are} one number "
                     f"(query {qid}: '{a}' and '{b}'): distinct subtopics here, one to ndeval "
                     "(rpp ndeval merges them)")
    # (handed straight to encode, which then holds the only reference: the judgments' docnos
    # are freed once it has made the items' own)
    coll = encode(_qrels(qrels_path, subtopics, options, notes), run_paths, options, notes,
                  subtopics, across_runs=across_runs, need_relevant=need_relevant)
    if subtopics is not None and qrels_path is not None:
        notes.extend(_unshared_subtopics(subtopics, coll, qrels_path))
        notes.extend(_subtopic_only_note(subtopics, coll, qrels_path))
    return coll


def _qrels(path: str | None, subtopics: SubtopicQrels | None, options: Options,
           notes: list[str]) -> Qrels:
    """The qrels at ``path`` (a note if lines repeat a pair), or the subtopic qrels' own."""
    if path is None:
        return subtopics.overall
    qrels = read_qrels(path, notes, options.jobs)
    if qrels.repeated:
        notes.append(f"{path}: {counted(qrels.repeated, 'line judges', 'lines judge')} a "
                     "(query, docno) pair judged on an earlier line: each pair keeps its "
                     "largest grade (trec_eval refuses such qrels); subtopic qrels (qid "
                     "subtopic docno grade) go with --subtopics")
    return qrels


def _unshared_subtopics(subtopics: SubtopicQrels, coll: Collection, qrels_path: str
                        ) -> list[str]:
    """Subtopic qrels that judge none of the evaluated queries are another collection's: an
    error (every diversity measure would be 0 without a word). A note names the evaluated
    queries they do not judge, which have no subtopic."""
    evaluated = [coll.qids[q] for q in coll.evaluated.tolist()]
    missing = [q for q in evaluated if q not in subtopics.first_line]
    if evaluated and len(missing) == len(evaluated):
        raise InputError(f"shares no evaluated query with the qrels ({qrels_path}): are they "
                         "from one collection?", path=subtopics.path)
    if not missing:
        return []
    shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
    return [f"{subtopics.path}: {len(missing)} of {len(evaluated)} evaluated queries have no "
            f"line here ({shown}): they have no subtopic, so ndeval's measures score them 0 "
            "and st-* sees only their relevant items (population t*)"]


def _subtopic_only_note(subtopics: SubtopicQrels, coll: Collection, qrels_path: str
                        ) -> list[str]:
    """A note for queries with items relevant to a subtopic but none relevant in QRELS: QRELS
    decides which queries are evaluated, so the subtopic measures skip them, where ndeval
    (which reads the subtopic qrels alone) counts them."""
    evaluated = {coll.qids[q] for q in coll.evaluated.tolist()}
    skipped = sorted(q for q in set(coll.qids) - evaluated
                     if any(subtopics.relevant(q).values()))
    if not skipped:
        return []
    shown = ", ".join(skipped[:5]) + (" ..." if len(skipped) > 5 else "")
    return [f"{counted(len(skipped), 'query has', 'queries have')} items relevant to a "
            f"subtopic but none relevant in {qrels_path} ({shown}): the QRELS decides which "
            "queries are evaluated, so the subtopic measures (st-*, and ndeval's, which ndeval "
            "would count) skip them; omit QRELS to take each item's largest subtopic grade"]


def measure(coll: Collection, measures: list[Measure], per_query: bool,
            notes: list[str], jobs: int = 1) -> Context:
    """Compute ``measures`` on ``coll``, family by family, into one Context. Where the engine
    forks workers, the families run side by side, each in a thread and a context of its own,
    absorbed in family order: their work in this process (populations, sums, planning) and
    one family's last shards overlap the others' shards, and the workers stay ``-j`` in all
    (the engine's slots)."""
    if len(coll.run_names) < 2 and any(m.kind == PREFERENCE for m in measures):
        notes.append("preferences need two runs: only per-run measures computed (give two or "
                     "more RUN files for them)")
        measures = [m for m in measures if m.kind != PREFERENCE]
    outputs = [name for m in measures for name in m.outputs]  # fixes the output order
    ctx = Context(coll, Results(coll.qids, coll.run_names, outputs), per_query, jobs,
                  notes=notes)
    by_family: dict[str, list[Measure]] = {}
    for m in measures:
        by_family.setdefault(m.family, []).append(m)
    families = [(FAMILIES[fam], group) for fam, group in by_family.items()]
    engine = current()
    if len(families) < 2 or not isinstance(engine, Processes) or engine.workers < 2:
        for compute, group in families:
            compute(ctx, group)
    else:  # side by side: what one does in this process overlaps the others' workers
        parts = [ctx.part() for _ in families]
        side_by_side([functools.partial(compute, part, group)
                      for part, (compute, group) in zip(parts, families)], "rpp-measures")
        for part in parts:  # in family order: the rows, notes and arrays of one by one
            ctx.absorb(part)
    notes.extend(query_set_note(coll, measures))
    notes.extend(f"measure '{m.name}': no judgment has a grade >= {number(level)} (the largest is "
                 f"{top:g}), so it is 0 for every run and query"
                 for m, level, top in unreached_levels(coll.judged.grade, measures))
    return ctx


def unreached_levels(grades: np.ndarray, measures: list[Measure]
                     ) -> list[tuple[Measure, float, float]]:
    """The measures with a relevance level of their own (``P(rel=2)@5``) that no judgment
    reaches, with that level and the largest grade: each is 0 whatever the runs rank."""
    top = float(np.nanmax(grades, initial=-np.inf))
    return [(m, m.level, top) for m in measures if m.level is not None and not top >= m.level]


def query_set_note(coll: Collection, measures: list[Measure]) -> list[str]:
    """A note when rpp's own measures (queries with a relevant item) and trec_eval's and
    ir_measures' (every query of the qrels, as trec_eval -c) average over different queries
    (contract §6)."""
    own = [m.name for m in measures if not m.all_queries]
    trec = [m.name for m in measures if m.all_queries]
    if not (own and trec) or len(coll.evaluated) == len(coll.qids):
        return []
    level = "" if coll.level is None else f" (grade >= {number(coll.level)})"
    whose = " and ".join(ALL_QUERIES[f] for f in ALL_QUERIES
                         if any(m.family == f for m in measures))
    return [f"rpp's measures ({_some(own)}) average over the {len(coll.evaluated)} queries "
            f"with a relevant item{level}, {whose} ({_some(trec)}) over all "
            f"{len(coll.qids)} queries of the qrels, as trec_eval -c does"]


def _some(names: list[str]) -> str:
    """The first three names, then an ellipsis."""
    return ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")


def default_measures(measure_names: list[str] | None, subtopics: str | None) -> list[str]:
    """The ``-m`` values, or the defaults: rpp eval's, plus ST-RPP and ndeval's measures
    when subtopic qrels are given."""
    return list(measure_names) if measure_names else DEFAULTS + (SUBTOPIC_DEFAULTS if subtopics
                                                                 else [])


def libraries_first(measures: list[Measure], statistics: bool = False) -> None:
    """Load the C libraries the work will use before any thread of rpp's starts: glibc gives
    a thread the thread-local storage of a library loaded after it started on the thread's
    first use of it, and ends the process (status 127, "cannot allocate memory for
    thread-local data") when memory is short then, where rpp would say out of memory.
    ``statistics``: the command tests or bounds (compare, check, meta), with scipy's special
    functions (some 0.3 s of CPU to load: not for the commands that do not)."""
    import numpy.random  # noqa: F401 - the draws of tests, intervals and meta's samples

    if statistics:
        memory.load_scipy_special()  # the distributions of rpp_cli.stats (never a spin)
    if any(m.trec is not None for m in measures):
        pytrec_adapter.load_library()


def evaluate_runs(qrels_path: str | None, run_paths: list[str], measures: list[Measure],
                  options: Options, per_query: bool, notes: list[str],
                  need_relevant: bool | None = None, statistics: bool = False) -> Context:
    """Read, join and measure: the flow of every command that evaluates runs. Qrels with no
    relevant item (at ``-l``) are an error when a measure of rpp's own is asked for (nothing
    to compare), or when ``need_relevant`` says so; trec_eval's alone score them as it does.
    ``statistics``: see :func:`libraries_first`."""
    if need_relevant is None:
        need_relevant = any(not m.all_queries for m in measures)
    libraries_first(measures, statistics)
    coll = load(qrels_path, run_paths, options, notes, across_runs(measures), need_relevant)
    return measure(coll, measures, per_query, notes, options.jobs)


def testable(ctx: Context, measures: list[Measure], notes: list[str]
             ) -> list[tuple[str, bool]]:
    """(output name, is preference) of every measure with per-query values, in -m order;
    a note for each one without (e.g. gm_map). What compare, check and meta test."""
    names = []
    for m in measures:
        for out in [m.name] if m.kind == PREFERENCE else m.studied:
            if out in ctx.tensors or out in ctx.metrics:
                names.append((out, out in ctx.tensors))
            else:
                notes.append(f"{out}: no per-query values (an aggregate only), so not tested; "
                             "leave it out of -m")
    return names


def query_counts(ctx: Context, names: list[tuple[str, bool]]) -> list[int]:
    """The number of queries each of :func:`testable`'s ``names`` averages over: the evaluated
    ones for rpp's own measures, every qrels query for trec_eval's and ir_measures' (§6)."""
    return [len(ctx.tensors[n] if pref else ctx.metrics[n]) for n, pref in names]

"""The trec family: trec_eval's measures, planned in passes over shards of queries and
aggregated as trec_eval aggregates them, as the collection's trec_eval release computes them.

Numbers come from pytrec_eval (trec_eval 9.0.8's own C code, :mod:`.pytrec_adapter`), except
those of the measures 10.0 added or changed, which rpp computes from the same rankings
(:mod:`.trec_computed`); ``-m`` is read by :mod:`.trec_names`, and what each measure is by
:mod:`.trec_table`.
"""
from __future__ import annotations

import functools
import math
import operator
import re
from dataclasses import dataclass, field

import numpy as np

from ..aggregate import add_metric
from ..engine import Lazy, current, query_shards
from . import trec_computed
from .pytrec_adapter import Bridge, Compaction, Evaluator, negative_only, pytrec_level
from .registry import REGISTRY, SET, Measure, family, register
from .trec_names import TrecRequest, cutoffs, trec_measure
from .trec_table import LATEST, NICKNAMES, OLDEST, TABLE, Aggregation, nickname_members


@dataclass
class Pass:
    """One pytrec_eval evaluator per shard of queries, given every run once: the measures of
    one relevance level whose parameters agree. trec_eval takes one parameter text per
    measure, so cutoff lists merge (``P.5`` and ``P@10`` are ``P.5,10``) and other parameters
    must be equal."""

    level: int
    params: dict[str, str | None] = field(default_factory=dict)  # base -> parameter text

    def admit(self, req: TrecRequest) -> bool:
        """Add ``req`` to this pass (True), or leave the pass as it was when they clash."""
        if req.base not in self.params or self.params[req.base] == req.params:
            self.params.setdefault(req.base, req.params)
            return True
        if not req.record.cutoffs:
            return False
        merged = TrecRequest(req.base, ",".join(map(repr, sorted(
            set(cutoffs(TrecRequest(req.base, self.params[req.base]))) | set(cutoffs(req))))))
        names = merged.output_names()
        if len(set(names)) != len(names):  # two float cutoffs print alike: pytrec keeps one
            return False
        self.params[req.base] = merged.params
        return True

    @property
    def requests(self) -> list[TrecRequest]:
        """The pass's measures with their (merged) parameters."""
        return [TrecRequest(base, params) for base, params in self.params.items()]

    @property
    def names(self) -> list[str]:
        """The printed names of the pass's measures, in the order of its values."""
        return [n for req in self.requests for n in req.output_names()]


def plan_passes(wanted: list[tuple[TrecRequest, int]]) -> tuple[list[Pass], list[int]]:
    """The passes that compute every (request, relevance level) of ``wanted``: one per level,
    another only where parameters clash; and the pass of each request."""
    passes: list[Pass] = []
    where = []
    for req, level in wanted:
        home = next((i for i, p in enumerate(passes) if p.level == level and p.admit(req)), None)
        if home is None:
            passes.append(Pass(level))
            passes[-1].admit(req)
            home = len(passes) - 1
        where.append(home)
    return passes, where


TREC_SHARD_WORK = 1 << 17  # a shard's judgments and one run's rows at most: a worker holds
# pytrec_eval's copy of them (some 50 bytes a judgment, more a row; the runs one at a time)
# and their dicts a batch at a time


@dataclass(frozen=True)
class TrecShard:
    """What pytrec_eval needs for a shard of queries, renumbered from 0: the judged codes of
    those queries (``query``, ``grade``) and each run's rows (``runs``: the bounds of each
    query's rows, and their codes, in the narrowest integer type that holds them: a shard
    sent to a Dask worker is 2 bytes a row where it has under 32,767 judged codes)."""

    n_queries: int
    query: np.ndarray
    grade: np.ndarray
    runs: list[tuple[np.ndarray, np.ndarray]]


def trec_shards(judged, runs: list, release: str = LATEST) -> tuple[np.ndarray, Lazy]:
    """Query bounds of the shards and the shards themselves (built on demand): each query's
    judged codes, and each run's rows of those queries in trec_eval ``release``'s order
    (9.0.8 ranks by scores cast to C float: the runs' ``trec_doc``; 10.0 by the doubles, as
    rpp does)."""
    index = np.int32 if len(judged.query) < 1 << 31 else np.int64  # (half of int64's bytes)
    by_query = np.argsort(judged.query, kind="stable").astype(index)
    judged_bounds = np.searchsorted(judged.query[by_query], np.arange(len(judged.qids) + 1))
    slot = np.empty(len(by_query), dtype=index)  # code -> its place in by_query
    slot[by_query] = np.arange(len(by_query), dtype=index)
    run_bounds = [r.bounds(len(judged.qids)) for r in runs]
    rows = [np.diff(b) for b in run_bounds]
    judgments = np.diff(judged_bounds)
    work = np.asarray(sum(rows), dtype=np.float64) + judgments + 1.0  # every run's rows
    # what a worker holds in pytrec_eval at once: the judgments and one run's rows
    held = functools.reduce(np.maximum, rows, np.zeros_like(judgments)) + judgments + 1.0
    bounds = query_shards(work, current().workers, TREC_SHARD_WORK, shrink=True, held=held)

    def build(i: int) -> TrecShard:
        q0, q1 = int(bounds[i]), int(bounds[i + 1])
        first = judged_bounds[q0]
        codes = by_query[first:judged_bounds[q1]]  # a query's rows hold only its own codes
        kind = code_type(len(codes))
        parts = []
        for r, at in zip(runs, run_bounds):
            lo, hi = int(at[q0]), int(at[q1])
            doc = (r.trec_doc if release == OLDEST and r.trec_doc is not None
                   else r.doc)[lo:hi]
            judged_row = doc < len(slot)
            local = np.where(judged_row, slot[np.where(judged_row, doc, 0)] - first,
                             len(codes))  # unjudged: any code >= len(codes)
            parts.append((at[q0:q1 + 1] - lo, local.astype(kind)))
        return TrecShard(q1 - q0, judged.query[codes] - q0, judged.grade[codes], parts)
    return bounds, Lazy(len(bounds) - 1, build)


def code_type(n_codes: int) -> np.dtype:
    """The narrowest signed integer type that holds 0..n_codes (a shard's judged codes and
    the code that marks an unjudged row)."""
    return np.min_scalar_type(-1 - n_codes)


def evaluate_shard(shard: TrecShard, passes: list[Pass], release: str = LATEST
                   ) -> list[np.ndarray]:
    """For each pass, the (R, Q of the shard, names) values of every run on one shard of
    queries, as trec_eval ``release`` gives them: the shard's judgments given to one
    pytrec_eval evaluator per pass, each run converted once and given to every pass, and the
    measures rpp computes (:mod:`.trec_computed`) from the same rankings. Under 10.0 a query
    a run lacks is evaluated as trec_eval 10.0 -c does, on its stand-in ranking."""
    bridge = Bridge(shard.query, shard.grade, shard.n_queries)
    evaluators = [Evaluator(bridge.qrels, p.requests, p.level, compaction=bridge.compaction,
                            release=release) for p in passes]
    own = [[r for r in p.requests if not r.record.text and r.record.by_rpp(release)]
           for p in passes]
    names = [p.names for p in passes]
    known = ~np.isnan(shard.grade)
    grade = np.trunc(np.where(known, shard.grade, -1.0)).astype(np.int64)
    code_rel = np.append(np.where(~known, trec_computed.NONPOOL,
                                  np.where(grade < 0, trec_computed.UNJUDGED, grade)),
                         trec_computed.NONPOOL)  # the last: every code of an unjudged row
    per_pass: list[list[np.ndarray]] = [[] for _ in passes]
    for bounds, doc in shard.runs:
        lacking = np.zeros(shard.n_queries, dtype=bool)
        if release != OLDEST:
            bounds, doc, lacking = stand_ins(bounds, doc, len(shard.grade))
        run = bridge.run(bounds, doc)
        rel = code_rel[np.minimum(doc, len(shard.grade))]
        for evaluator, extra, p, wanted, out in zip(evaluators, own, passes, names, per_pass):
            values = _values(evaluator.evaluate(run), bridge.qids, wanted)
            if extra:
                rankings = trec_computed.Rankings.of(bounds, rel, shard.query[known],
                                                     grade[known], p.level)
                for n, v in trec_computed.evaluate(rankings, extra, release).items():
                    values[:, wanted.index(n)] = np.nan_to_num(v, nan=0.0)
            for k, n in enumerate(wanted):
                if trec_computed.zeroed_for_stand_in(n):
                    values[lacking, k] = 0.0
            out.append(values)
    return [np.stack(out) if out else np.zeros((0, shard.n_queries, len(wanted)))
            for wanted, out in zip(names, per_pass)]


def stand_ins(bounds: np.ndarray, doc: np.ndarray, unjudged: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A run's rows with trec_eval 10.0 -c's stand-in ranking for each query it lacks: one
    document the qrels do not judge (code ``unjudged``); and which queries got one."""
    lacking = np.diff(bounds) == 0
    doc = np.insert(doc, bounds[:-1][lacking], unjudged)
    counts = np.where(lacking, 1, np.diff(bounds))
    return np.concatenate(([0], np.cumsum(counts))), doc, lacking


def evaluate_passes(judged, runs: list, passes: list[Pass], release: str = LATEST
                    ) -> list[dict[str, np.ndarray]]:
    """For each pass, its printed measure names -> (Q, R) values: the passes run on each shard
    of queries, shards run by the command's engine (pytrec_eval holds the GIL: worker
    processes, not threads)."""
    _, shards = trec_shards(judged, runs, release)
    parts = list(current().imap(functools.partial(evaluate_shard, passes=passes,
                                                  release=release), shards,
                                "trec_eval measures"))
    out = []
    for i, p in enumerate(passes):
        values = np.concatenate([part[i] for part in parts], axis=1)  # (R, Q, names)
        out.append({n: values[:, :, k].T for k, n in enumerate(p.names)})
    return out


@family("trec", all_queries="trec_eval's")
def compute(ctx, measures) -> None:
    """trec_eval measures through pytrec_eval, per query and aggregated as trec_eval does.
    Measures asked by their ir_measures name print under it; all share one pytrec_eval pass
    per relevance level (``P(rel=2)@5`` has its own level), see :func:`plan_passes`."""
    coll = ctx.collection
    odd = negative_only(coll.judged.query, coll.judged.grade, len(coll.qids)).tolist()
    if odd:
        listed = ", ".join(coll.qids[q] for q in odd[:5]) + (" ..." if len(odd) > 5 else "")
        ctx.notes.append(f"{len(odd)} {'query' if len(odd) == 1 else 'queries'} with only "
                         f"negative grades ({listed}): no document is relevant there, and rpp "
                         "evaluates them as trec_eval does where it can (trec_eval stops on "
                         "such a query when it evaluates it first, and crashes on grades all "
                         "below -1)")
    levels = [pytrec_level(coll.level if m.level is None else m.level) for m in measures]
    passes, where = plan_passes([(m.trec, level) for m, level in zip(measures, levels)])
    # what the grades refuse (ndcg_cut above 255...), named by the qrels' largest grade, before
    # any shard, which would name its own
    known = coll.judged.grade[~np.isnan(coll.judged.grade)]
    whole = Compaction.of(np.maximum(np.trunc(known), -1).astype(np.int64))
    del known  # (a copy of every grade: the passes peak without it)
    for p in passes:
        for req in p.requests:
            if not req.record.by_rpp(coll.trec_eval):
                whole.request(req)
    computed = evaluate_passes(coll.judged, coll.runs, passes, coll.trec_eval)
    for m, p in zip(measures, where):
        record = m.trec.record
        for n, shown in zip(m.trec.output_names(), m.outputs):
            values = computed[p][n]
            overall = np.array([aggregate(n, values[:, r]) for r in range(len(coll.run_names))])
            if n == "num_rel":
                overall = _complete_num_rel(ctx, shown, coll.judged.grade, overall)
            per_query = record.per_query and ctx.per_query
            add_metric(ctx.results, shown, values, per_query, overall)
            if record.aggregation is not Aggregation.GEOMETRIC:
                ctx.metrics[shown] = values


def complete_num_rel(grade: np.ndarray) -> int:
    """num_rel's ``all`` under trec_eval -c (m_num_rel.c): every judgment of the qrels with a
    grade > 0 (atol; NaN: not judged there), whatever the relevance level."""
    return int(np.count_nonzero(np.trunc(np.nan_to_num(grade, nan=0.0)) > 0))


def _complete_num_rel(ctx, shown: str, grade: np.ndarray, summed: np.ndarray) -> np.ndarray:
    """num_rel's ``all`` for every run as trec_eval -c prints it (:func:`complete_num_rel`),
    which under ``-l 2`` or more is not the sum of the per-query lines (``summed``): a note
    says so then."""
    count = float(complete_num_rel(grade))
    if np.any(summed != count):
        ctx.notes.append(f"{shown}: its 'all' line counts every judgment with a grade > 0 "
                         f"({count:.0f}), as trec_eval -c does whatever the level, not the sum "
                         "of its per-query lines")
    return np.full_like(summed, count)


def _values(per_query: dict[str, dict[str, float]], qids: list[str], names: list[str]
            ) -> np.ndarray:
    """(Q, len(names)) values; NaN and absent (empty rankings) count 0 as in trec_eval -c."""
    empty: dict[str, float] = {}
    rows = map(per_query.get, qids, [empty] * len(qids))
    out = np.array([list(map(row.get, names, [0.0] * len(names))) for row in rows],
                   dtype=np.float64).reshape(len(qids), len(names))
    return np.nan_to_num(out, nan=0.0)


GM_FLOOR = 1e-5  # pytrec_eval's per-query value of a gm_ measure is log(max(v, GM_FLOOR))


def aggregate(name: str, values: np.ndarray, n_queries: int | None = None) -> float:
    """trec_eval's ``all`` value of the measure that prints as ``name`` from per-query values
    (missing ones count 0); a name with parameters (``P_10``) is a mean.

    ``n_queries`` (trec_eval -c) is the divisor when larger than the number of values.
    """
    n = max(len(values), n_queries or 0)
    # one += per query in query order, as trec_eval accumulates (no pairwise/compensated sum)
    total = functools.reduce(operator.add, values.tolist(), 0.0)
    how = TABLE[name].aggregation if name in TABLE else Aggregation.MEAN
    if how is Aggregation.SUM:
        return total
    if how is Aggregation.QUERIES:
        return float(n)
    if how is Aggregation.GEOMETRIC:
        total += (n - len(values)) * math.log(GM_FLOOR)
        return math.exp(total / n)
    return total / n if n else 0.0


for _record in TABLE.values():
    # not text (runid, relstring); nor a name rpp's own measure has (rbp: rank_biased's)
    if not _record.text and _record.name not in REGISTRY:
        _what = re.sub(r" \(\.[^)]*\)$", "", _record.description)  # syntax: parameters
        _since = "" if _record.since == OLDEST else f" {_record.since}"
        register(trec_measure(TrecRequest(_record.name), _record.name,
                              f"trec_eval{_since}: {_what}", parameters=_record.usage))
for _nick, _members in NICKNAMES.items():
    _older = [m for m in _members if m not in nickname_members(_nick, OLDEST)]
    register(Measure(_nick, SET, "trec", f"trec_eval's set: {' '.join(_members)}" + (
        f" (trec_eval {OLDEST}: without {' '.join(_older)})" if _older else ""),
                     trec=TrecRequest(_nick)))

"""The pytrec_eval adapter: trec_eval's own C code (pytrec_eval) given rpp's judgments and
rankings so that it computes what trec_eval computes on the files.

Queries and documents reach it under short names (:class:`Bridge`), grades as compact levels
(:class:`Compaction`), rankings in trec_eval's order as scores -1, -2, ...; :class:`Evaluator`
works around what pytrec_eval mishandles (gain pairs read once, trec_eval's -N, empty rankings).
"""
from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from ..core import nested_dicts
from ..errors import InputError
from ..io.judged import BLOCK_ROWS, chunk_cuts
from ..settings import TREC_EVAL_RELEASES
from .trec_names import TrecRequest, c_atof, c_atol
from .trec_table import OLDEST, Parameters


# trec_eval sizes a table per query by its largest grade, and ndcg's gain set-up is quadratic
# in it: grades up to here reach it as themselves, larger ones as the next free levels.
COMPACT_ABOVE = 255


@dataclass(frozen=True)
class Compaction:
    """How judgments reach trec_eval at a cost set by the number of distinct grades, not their
    size: grade ``high[i]`` (the distinct grades above COMPACT_ABOVE, ascending) becomes level
    ``COMPACT_ABOVE + 1 + i``, smaller grades stay themselves. Order is kept, so every relevance
    level maps to one; gains (ndcg, ndcg_rel, Rndcg, G) are given for the moved levels as
    ``level=grade`` pairs, so every measure's value is unchanged. Except with gains that are
    not whole numbers, which are refused: trec_eval sorts the gains of every level from 0 to
    the largest grade comparing their difference cast to an int, so gains less than 1 apart
    (1.5 and the default gain 2 of level 2) compare equal and their order, which the ideal
    ranking follows, depends on the levels the compaction leaves out."""

    high: np.ndarray

    @classmethod
    def of(cls, grades: np.ndarray) -> "Compaction":
        """The compaction for these (integer) grades."""
        return cls(np.unique(grades[grades > COMPACT_ABOVE]))

    def levels(self, grades: np.ndarray) -> np.ndarray:
        """The level trec_eval is given for each grade (integers; ``grades`` itself when no
        grade lies above COMPACT_ABOVE)."""
        if not len(self.high):
            return grades
        moved = grades > COMPACT_ABOVE
        return np.where(moved, COMPACT_ABOVE + 1 + np.searchsorted(self.high, grades), grades)

    def relevance_level(self, level: int) -> int:
        """trec_eval's ``-l`` for the levels: the level of the least grade >= ``level``."""
        if level <= COMPACT_ABOVE:
            return level
        return COMPACT_ABOVE + 1 + int(np.searchsorted(self.high, level))

    def request(self, req: TrecRequest) -> TrecRequest:
        """``req`` as trec_eval must be asked for it on the levels."""
        if not len(self.high):
            return req
        if req.base == "ndcg_cut":
            raise InputError(f"measure '{req.spec}' takes each grade as its gain and the qrels "
                             f"have grades above {COMPACT_ABOVE} (up to {int(self.high[-1])}): "
                             "use ndcg with level=gain pairs, or smaller grades")
        if req.record.parameters is not Parameters.GAIN_PAIRS:
            return req
        given = [] if req.params is None else [p.split("=") for p in req.params.split(",")]
        fractional = [gain for _, gain in given if not float(c_atof(gain)).is_integer()]
        if fractional:  # see the class's note
            raise InputError(f"measure '{req.spec}': gain {fractional[0]} is not a whole number "
                             f"and the qrels have grades above {COMPACT_ABOVE} (up to "
                             f"{int(self.high[-1])}); trec_eval's order of such gains depends "
                             "on every level up to the largest grade: use whole-number gains, "
                             "or smaller grades")
        pairs, covered, high = [], set(), set(self.high.tolist())
        for level, gain in given:  # trec_eval reads a pair's level with atol
            grade = c_atol(level)
            if grade <= COMPACT_ABOVE:
                pairs.append(f"{level}={gain}")
            elif grade in high:
                pairs.append(f"{self.relevance_level(grade)}={gain}")
                covered.add(grade)
        pairs += [f"{self.relevance_level(g)}={g}" for g in self.high.tolist() if g not in covered]
        return TrecRequest(req.base, ",".join(pairs))


NO_COMPACTION = Compaction(np.zeros(0, dtype=np.int64))


class Evaluator:
    """pytrec_eval set up once for some qrels and measures, then given run after run.

    Values are keyed by trec_eval's printed measure names. ``num_docs_in_coll`` is trec_eval's
    ``-N`` (only utility's 4th coefficient reads it); pytrec_eval has no such setting, so
    utility is then recomputed from its counts. ``compaction`` says how the qrels' grades were
    made levels (:class:`Compaction`). Not to be shared between threads: it replaces a
    single-use pytrec_eval evaluator after each run (below); each shard builds its own.

    Only the measures pytrec_eval computes as trec_eval ``release`` does are asked of it
    (:meth:`TrecMeasure.by_rpp` says which are not); under 10.0, a level=gain pair whose level
    is not an integer (``ndcg.p=2``) is dropped, as 10.0's setup_gains drops it (9.0.8 read it
    with atol: level 0).

    Level=gain pairs (ndcg.1=3,2=9) are usable once per pytrec_eval evaluator: trec_eval's
    get_param_pairs overwrites each '=' and ',' of the parameter text with NUL, and pytrec_eval
    restores only the commas, so a second evaluation reads malformed pairs, trec_eval fails and
    pytrec_eval goes on with freed parameters (a segfault). Such measures get a fresh
    pytrec_eval evaluator for every run.
    """

    def __init__(self, qrels: Mapping[str, Mapping[str, int]], requests: list[TrecRequest],
                 level: int = 1, judged_only: bool = False, num_docs_in_coll: int = 0,
                 compaction: Compaction = NO_COMPACTION,
                 release: str = TREC_EVAL_RELEASES[0]) -> None:
        self.numeric = [r for r in requests if not r.record.text
                        and not r.record.by_rpp(release)]
        asked = [compaction.request(integer_levels(r, release)) for r in self.numeric]
        specs = {r.spec for r in asked}
        self.utility = next((r for r in self.numeric if r.base == "utility"), None)
        self.num_docs_in_coll = num_docs_in_coll
        if self.utility is not None and num_docs_in_coll:
            specs |= {"num_ret", "num_rel", "num_rel_ret"}
        self.renamed = {r.base: r.output_names()[0] for r in self.numeric if r.params is not None
                        and r.record.parameters in (Parameters.FLOATS, Parameters.GAIN_PAIRS)}
        self._qrels = qrels
        relevance_level = compaction.relevance_level(level)
        self._setup = (specs, relevance_level, judged_only)
        self._single_use = any(r.record.parameters is Parameters.GAIN_PAIRS
                               and r.params is not None for r in asked)
        self._spent = False  # its gain pairs were read: the next run needs fresh ones
        self._batch_of: dict[str, int] = {}  # each judged query's evaluator
        self._evaluators = self._pytrec_evals() if self.numeric else None

    def _pytrec_evals(self) -> list:
        """pytrec_eval evaluators for the qrels and measures, one per batch of queries
        (:meth:`Judgments.batches`; a dict of qrels is one batch): each copies its batch's
        judgments, whose dicts are then let go."""
        import pytrec_eval_ext

        specs, relevance_level, judged_only = self._setup
        batches = self._qrels.batches() if isinstance(self._qrels, Judgments) \
            else [self._qrels]
        out = []
        for batch in batches:
            judged = {q: d for q, d in batch.items() if d}
            self._batch_of.update(dict.fromkeys(judged, len(out)))
            judged[_PRIMER] = {_PRIMER: max(0, relevance_level - 1)}  # (see _PRIMER)
            out.append(pytrec_eval_ext.RelevanceEvaluator(judged, specs, relevance_level,
                                                          judged_only))
        return out

    def evaluate(self, run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """Per-query values of one run (queries with an empty ranking are left out), each
        query's from the evaluator of its batch (the others' are not judged)."""
        if self._evaluators is None:
            return {q: {} for q in run}
        if self._spent:
            self._evaluators = self._pytrec_evals()
        self._spent = self._single_use and bool(run)
        parts: list[dict[str, dict[str, float]]] = [{} for _ in self._evaluators]
        for q, ranking in run.items():
            k = self._batch_of.get(q)
            if k is not None:
                parts[k][q] = ranking
        raw: dict[str, dict[str, float]] = {}
        for evaluator, part in zip(self._evaluators, parts):
            if part:
                raw.update(evaluator.evaluate({_PRIMER: {_PRIMER: 0.0}, **part}))
        raw.pop(_PRIMER, None)
        if self.renamed:
            raw = {q: {self.renamed.get(k, k): v for k, v in vals.items()}
                   for q, vals in raw.items()}
        if self.utility is not None and self.num_docs_in_coll:
            name = self.utility.output_names()[0]
            for vals in raw.values():
                vals[name] = _utility(self.utility, vals, self.num_docs_in_coll)
        return raw


def load_library() -> None:
    """Load pytrec_eval's C++ library now, in the calling thread (see
    :func:`rpp_cli.pipeline.libraries_first`)."""
    import pytrec_eval_ext  # noqa: F401


def evaluate(qrels: Mapping[str, Mapping[str, int]], run: dict[str, dict[str, float]],
             requests: list[TrecRequest], level: int = 1, judged_only: bool = False,
             num_docs_in_coll: int = 0, compaction: Compaction = NO_COMPACTION,
             release: str = TREC_EVAL_RELEASES[0]) -> dict[str, dict[str, float]]:
    """Per-query values of one run (see :class:`Evaluator`)."""
    return Evaluator(qrels, requests, level, judged_only, num_docs_in_coll,
                     compaction, release).evaluate(run)


_INTEGER = re.compile(r"[+-]?[0-9]+")  # 10.0's valid_int: a sign, then digits only


def integer_levels(req: TrecRequest, release: str) -> TrecRequest:
    """``req`` with the level=gain pairs trec_eval ``release`` reads: under 10.0 only those
    whose level is an integer (``ndcg.p=2,1=3`` is ``ndcg.1=3``; none left: the defaults)."""
    if release == OLDEST or req.record.parameters is not Parameters.GAIN_PAIRS \
            or req.params is None:
        return req
    kept = [p for p in req.params.split(",") if _INTEGER.fullmatch(p.split("=")[0])]
    return TrecRequest(req.base, ",".join(kept) if kept else None)


# trec_eval's buffers grow on demand (te_chk_and_malloc) and a first request of size 0 fails:
# an empty ranking evaluated first (-M 0, a run missing a query) makes measures fail and
# pytrec_eval crash. A one-doc query evaluated first (a qid no input can hold: control
# characters are rejected) sizes them, as trec_eval's own reading does. Its one judgment has
# grade level - 1: bpref and gm_bpref sum a query's judgments of grades 0 .. level - 1 from
# its table of grades 0 .. its largest (a table that only grows), so a query whose grades all
# lie below level - 1 read past it (the sum is then unused: no judgment is relevant).
_PRIMER = "\x01rpp-primer"


def _utility(req: TrecRequest, counts: dict[str, float], num_docs_in_coll: int) -> float:
    """trec_eval's m_utility.c, term by term in its order, from pytrec_eval's counts."""
    p = list(req.record.defaults) if req.params is None else \
        [c_atof(v) for v in req.params.split(",")]
    rel_ret, ret, rel = (int(counts[k]) for k in ("num_rel_ret", "num_ret", "num_rel"))
    return (p[0] * rel_ret + p[1] * (ret - rel_ret) + p[2] * (rel - rel_ret)
            + p[3] * (num_docs_in_coll + rel_ret - ret - rel))


# The largest ranking trec_eval is fed by position: -1.0, -2.0, ... are exact C floats up to here.
MAX_DEPTH = 1 << 24


def checked_depth(bounds: np.ndarray) -> int:
    """The longest ranking of a query (rows bounds[q]:bounds[q+1]); over MAX_DEPTH is an error."""
    depth = int(np.diff(bounds).max(initial=0))
    if depth > MAX_DEPTH:
        raise InputError(f"a query has {depth:,} ranked documents; trec_eval measures are "
                         f"limited to {MAX_DEPTH:,}")
    return depth


DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # in byte order


def ranked_names(depth: int) -> list[str]:
    """``u`` and each rank 0..depth-1 in base 62 of one width: names whose byte order is the
    ranks' order, so that the unjudged part of a ranking reaches trec_eval's sort by docno
    already sorted (fewer comparisons in its merge sort). Only
    ``depth`` names are made, whatever the width."""
    width, capacity = 1, len(DIGITS)
    while capacity < depth:
        width, capacity = width + 1, capacity * len(DIGITS)
    return ["u" + "".join(digits)
            for digits in itertools.islice(itertools.product(DIGITS, repeat=width), depth)]


def position_scores(depth: int) -> list[float]:
    """The scores that hand pytrec_eval a ranking in the given order: -1, -2, ..., -depth."""
    return [-(k + 1.0) for k in range(depth)]


def negative_only(query: np.ndarray, grade: np.ndarray, n_queries: int) -> np.ndarray:
    """Queries (of 0..n_queries-1) whose every grade is negative (after trec_eval's atol), given
    each judged code's query and grade. trec_eval 9.0.8 evaluates one when its largest grade is
    -1 and it is not the first query evaluated: none of its documents is relevant, those it
    judged negatively are "in the pool, not judged", the others count as retrieved. It stops on
    one evaluated first ("Can't calculate measure", exit 4) and crashes on one whose grades are
    all below -1 (its table of grades has a negative size). rpp evaluates every such query as
    in the first case (the bridge gives pytrec_eval its grades as -1, after a primer query:
    see _PRIMER), and says so in a note (contract §6). A block of codes at a time: no
    temporary as long as the judgments."""
    top = np.full(n_queries, -np.inf)
    for lo in range(0, len(grade), BLOCK_ROWS):
        part = grade[lo:lo + BLOCK_ROWS]
        known = ~np.isnan(part)
        np.maximum.at(top, query[lo:lo + BLOCK_ROWS][known], np.trunc(part[known]))
    return np.flatnonzero(top < 0)


# Judgments made Python dicts at once for pytrec_eval, which copies them (its copy, some 50
# bytes a judgment, stays; the dicts, as much again, are let go batch by batch).
QRELS_BATCH = 1 << 18


class Judgments(Mapping):
    """A shard's judgments as pytrec_eval takes them, ``{query: {document: level}}``, kept as
    arrays and made dicts when asked: a query at a time (the Mapping) or a batch of whole
    queries of about QRELS_BATCH judgments at a time (:meth:`batches`), so that no more than
    a batch of them is ever Python objects. Query q's judgments are ``levels``
    [bounds[q]:bounds[q + 1]], each named by its place among them (``names``)."""

    def __init__(self, qids: list[str], bounds: np.ndarray, names: list[str],
                 levels: np.ndarray) -> None:
        self.qids, self.bounds, self.names = qids, bounds, names
        self.levels = levels.astype(np.min_scalar_type(-1 - int(np.abs(levels).max(initial=0))))
        self._index = {q: i for i, q in enumerate(qids)}

    def __getitem__(self, qid: str) -> dict[str, int]:
        q = self._index[qid]
        return self._dicts(q, q + 1)[qid]

    def __iter__(self) -> Iterator[str]:
        return iter(self.qids)

    def __len__(self) -> int:
        return len(self.qids)

    def batches(self) -> Iterator[dict[str, dict[str, int]]]:
        """The judgments as dicts, a batch of whole queries at a time, in query order."""
        cuts = chunk_cuts(self.bounds, QRELS_BATCH).tolist()
        for q0, q1 in zip(cuts, cuts[1:]):
            yield self._dicts(q0, q1)

    def _dicts(self, q0: int, q1: int) -> dict[str, dict[str, int]]:
        """Queries q0..q1-1 as pytrec_eval takes them."""
        lo, hi = int(self.bounds[q0]), int(self.bounds[q1])
        return nested_dicts(self.qids[q0:q1], self.bounds[q0:q1 + 1] - lo, self.names,
                            positions(self.bounds, q0, q1), self.levels[lo:hi].tolist(), True)


def positions(bounds: np.ndarray, q0: int, q1: int) -> np.ndarray:
    """(rows,) int64 each row's place within its query, for the rows of queries q0..q1-1
    (query q's rows are bounds[q]:bounds[q + 1])."""
    rows = np.arange(int(bounds[q0]), int(bounds[q1]))
    return rows - np.repeat(bounds[q0:q1], np.diff(bounds[q0:q1 + 1]))


class Bridge:
    """The collection as pytrec_eval sees it. Queries are named by index and documents by
    their place in their query (a judged document as its index among the query's judgments,
    any other as ``u`` and its rank: :func:`ranked_names`), and each run is given in
    trec_eval's own order (C-float score desc, docno desc) with scores -1, -2, ...: the same
    rankings and judgments, whatever bytes the ids hold. A document's name only has to be
    unique within its query, so a few thousand short strings serve every query: far fewer
    Python objects than the docno texts, and cheap for trec_eval's sort of each ranking by
    docno. ``query``/``grade`` describe judged codes 0..J-1."""

    def __init__(self, query: np.ndarray, grade: np.ndarray, n_queries: int) -> None:
        known = np.flatnonzero(~np.isnan(grade))
        self.n_judged = len(grade)
        self.scores: list[float] = []
        self.qids = [str(q) for q in range(n_queries)]
        by_query = known[np.argsort(query[known], kind="stable")]
        del known
        bounds = np.searchsorted(query[by_query], np.arange(n_queries + 1))
        self.n_local = int(np.diff(bounds).max(initial=0))
        # code -> its index among its query's judgments; -1 for a code given pytrec_eval no
        # grade, and for the last entry, which every code of an unjudged row (>= J) reads
        self.local = np.full(self.n_judged + 1, -1, dtype=np.int32)
        self.names = [str(k) for k in range(self.n_local)]
        # trec_eval's atol; below 0, -1: trec_eval reads any negative grade as "in the pool,
        # not judged", but sizes a table by a query's largest grade + 1, so a query whose
        # grades are all below -1 would crash it (see negative_only)
        grades = np.empty(len(by_query), dtype=np.int64)
        cuts = chunk_cuts(bounds, QRELS_BATCH).tolist()
        for q0, q1 in zip(cuts, cuts[1:]):  # a batch of queries at a time: no long temporary
            lo, hi = int(bounds[q0]), int(bounds[q1])
            self.local[by_query[lo:hi]] = positions(bounds, q0, q1)
            grades[lo:hi] = np.maximum(np.trunc(grade[by_query[lo:hi]]), -1)
        del by_query
        self.compaction = Compaction.of(grades)
        self.qrels = Judgments(self.qids, bounds, self.names, self.compaction.levels(grades))

    def run(self, bounds: np.ndarray, doc: np.ndarray) -> dict[str, dict[str, float]]:
        """A run's rows (query q's codes are ``doc[bounds[q]:bounds[q + 1]]``, in trec_eval's
        order) as pytrec_eval wants them; every evaluated query present ({} = empty)."""
        depth = checked_depth(bounds)
        if depth > len(self.scores):  # names of unjudged documents by position, as needed
            del self.names[self.n_local:]
            self.names += ranked_names(depth)
            self.scores = position_scores(depth)
        position = positions(bounds, 0, len(bounds) - 1)
        local = self.local[np.minimum(doc, self.n_judged)]
        name = np.where(local >= 0, local, self.n_local + position)
        return nested_dicts(self.qids, bounds, self.names, name, self.scores)


def pytrec_level(level: float | None) -> int:
    """pytrec_eval's relevance level for rpp's ``-l`` (grades are integers there)."""
    return 1 if level is None else max(1, math.ceil(level))

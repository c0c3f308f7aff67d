"""The pytrec_eval bridge: trec_eval 9.0.8's measures, names, parameters and aggregation.

Numbers always come from pytrec_eval (trec_eval's own C code); this module only parses
``-m`` the way trec_eval does, validates parameters first (pytrec_eval aborts or segfaults
on some malformed ones), names the outputs as trec_eval prints them and aggregates ``all``.
"""
from __future__ import annotations

import functools
import math
import operator
import re
from dataclasses import dataclass

import numpy as np

from ..core import nested_dicts
from ..progress import progress
from ..errors import InputError

# trec_eval's internal measure order (te_trec_measures), which is also the output order.
ORDER = (
    "runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank iprec_at_recall "
    "P relstring recall infAP gm_bpref Rprec_mult utility 11pt_avg binG G ndcg ndcg_rel Rndcg "
    "ndcg_cut map_cut relative_P success set_P set_relative_P set_recall set_map set_F "
    "num_nonrel_judged_ret").split()

NICKNAMES = {
    "official": ("runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank "
                 "iprec_at_recall P").split(),
    "all_trec": list(ORDER),
    "set": ("runid num_q num_ret num_rel num_rel_ret utility set_P set_recall set_relative_P "
            "set_map set_F").split(),
}

_LONG_CUTOFF_DEFAULT = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
_RECALL_POINTS = tuple(i / 10 for i in range(11))
LONG_CUTOFFS = {"P": _LONG_CUTOFF_DEFAULT, "recall": _LONG_CUTOFF_DEFAULT,
                "ndcg_cut": _LONG_CUTOFF_DEFAULT, "map_cut": _LONG_CUTOFF_DEFAULT,
                "relative_P": _LONG_CUTOFF_DEFAULT, "success": (1, 5, 10)}
FLOAT_CUTOFFS = {"iprec_at_recall": _RECALL_POINTS,
                 "Rprec_mult": tuple(round(0.2 * i, 1) for i in range(1, 11))}
FLOAT_PARAMS = {"utility", "11pt_avg", "set_F", "relstring"}  # atof'd, raw text in the name
PAIR_PARAMS = {"G", "ndcg", "ndcg_rel", "Rndcg"}
SUM_MEASURES = {"num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"}
LONG_MEASURES = SUM_MEASURES | {"num_q"}
GEOMETRIC = {"gm_map", "gm_bpref"}
TEXT_MEASURES = {"runid", "relstring"}
NOT_PER_QUERY = {"runid", "num_q", "gm_map", "gm_bpref"}
GM_FLOOR = 1e-5

DESCRIPTIONS = {
    "runid": "run tag (text)", "num_q": "number of queries evaluated",
    "num_ret": "documents retrieved", "num_rel": "relevant documents",
    "num_rel_ret": "relevant documents retrieved", "map": "mean average precision",
    "gm_map": "geometric mean of AP (floor 1e-5)", "Rprec": "precision at R",
    "bpref": "binary preference", "recip_rank": "reciprocal rank of the first relevant",
    "iprec_at_recall": "interpolated precision at recall levels (.p1,p2 in [0,1])",
    "P": "precision at cutoffs (.k1,k2)", "relstring": "relevance string of the top docs (text)",
    "recall": "recall at cutoffs (.k1,k2)", "infAP": "inferred AP",
    "gm_bpref": "geometric mean of bpref", "Rprec_mult": "precision at multiples of R (.m1,m2)",
    "utility": "linear utility (.a,b,c,d)", "11pt_avg": "11-point interpolated average precision",
    "binG": "binary G", "G": "G with gains (.lvl=gain,...)",
    "ndcg": "nDCG over the whole ranking (.lvl=gain,...)",
    "ndcg_rel": "nDCG averaged over relevant docs", "Rndcg": "nDCG at R",
    "ndcg_cut": "nDCG at cutoffs (.k1,k2)", "map_cut": "AP at cutoffs (.k1,k2)",
    "relative_P": "precision relative to the best possible at cutoffs (.k1,k2)",
    "success": "1 if a relevant doc is in the top k (.k1,k2)", "set_P": "set precision",
    "set_relative_P": "set relative precision", "set_recall": "set recall",
    "set_map": "set precision x recall", "set_F": "set F measure (.beta)",
    "num_nonrel_judged_ret": "judged non-relevant documents retrieved",
}


@dataclass(frozen=True)
class TrecRequest:
    """One trec_eval measure with its parameter text (``None``: trec_eval's defaults)."""

    base: str
    params: str | None = None

    @property
    def spec(self) -> str:
        """The measure string trec_eval itself parses."""
        return self.base if self.params is None else f"{self.base}.{self.params}"

    def output_names(self) -> list[str]:
        """The names trec_eval prints for this measure, in its order."""
        if self.base in LONG_CUTOFFS:
            cuts = LONG_CUTOFFS[self.base] if self.params is None else _long_cutoffs(self)
            return [f"{self.base}_{c}" for c in cuts]
        if self.base in FLOAT_CUTOFFS:
            cuts = FLOAT_CUTOFFS[self.base] if self.params is None else _float_cutoffs(self)
            return [f"{self.base}_{_c_float_name(c)}" for c in cuts]
        if self.params is not None:  # float and pair parameters: raw text in the name
            return [f"{self.base}_{self.params}"]
        return [self.base]


def is_trec_name(name: str) -> bool:
    """True when ``name`` looks like a trec_eval measure or nickname (params allowed)."""
    base = name.split(".", 1)[0]
    return base in ORDER or base in NICKNAMES or _underscore_form(name) is not None


def parse(names: list[str], *, allow_underscore: bool = True,
          check: bool = True) -> list[TrecRequest]:
    """trec_eval's ``-m`` semantics: nicknames expand, repeats merge, first params win.

    With ``allow_underscore``, the printed form ``P_10`` is accepted for ``P.10`` (rpp eval).
    Unknown names raise InputError; so do invalid parameters (with ``check``; trec_eval itself
    checks them later, see :func:`validate`), before pytrec_eval ever sees them.
    """
    chosen: dict[str, str | None] = {}
    order: list[str] = []
    for raw in names:
        name = raw
        if allow_underscore and "." not in raw and raw not in ORDER and raw not in NICKNAMES:
            name = _underscore_form(raw) or raw
        base, dot, params = name.partition(".")
        if dot and params == "":
            raise InputError(f"improper measure parameters in '{raw}'")
        if base in NICKNAMES:
            members = NICKNAMES[base]
        elif base in ORDER:
            members = [base]
        else:
            raise InputError(f"unknown measure '{raw}' (see: rpp measures)")
        for member in members:
            if member not in chosen:
                order.append(member)
                chosen[member] = None
            if base == member and dot and chosen[member] is None:
                chosen[member] = params
    requests = [TrecRequest(b, chosen[b]) for b in order]
    if check:
        for req in requests:
            validate(req)
    return requests


def _underscore_form(name: str) -> str | None:
    """``P_10`` -> ``P.10``, ``iprec_at_recall_0.10`` -> ``iprec_at_recall.0.10``."""
    for base in sorted(set(LONG_CUTOFFS) | set(FLOAT_CUTOFFS) | set(FLOAT_PARAMS) | PAIR_PARAMS,
                       key=len, reverse=True):
        if name.startswith(base + "_") and len(name) > len(base) + 1:
            return f"{base}.{name[len(base) + 1:]}"
    return None


def _atol(text: str) -> int:
    """C's atol: leading integer prefix, 0 when there is none."""
    m = re.match(r"\s*[+-]?\d+", text)
    return int(m.group()) if m else 0


def c_atof(text: str) -> float:
    """C's atof: the longest leading float prefix, 0.0 when there is none."""
    m = re.match(r"\s*[+-]?(\d+\.?\d*([eE][+-]?\d+)?|\.\d+([eE][+-]?\d+)?)", text)
    return float(m.group()) if m else 0.0


def _long_cutoffs(req: TrecRequest) -> list[int]:
    cuts = sorted(_atol(p) for p in req.params.split(","))
    if cuts[0] <= 0:
        raise InputError(f"measure '{req.spec}': cutoffs must be positive integers")
    if len(set(cuts)) != len(cuts):
        raise InputError(f"measure '{req.spec}': duplicate cutoffs")
    return cuts


def _float_cutoffs(req: TrecRequest) -> list[float]:
    cuts = sorted(c_atof(p) for p in req.params.split(","))
    if len(set(cuts)) != len(cuts):
        raise InputError(f"measure '{req.spec}': duplicate cutoffs")
    return cuts


def _c_float_name(value: float) -> str:
    """trec_eval's ``%3.2f`` parameter name, cut to 8 characters as its buffer does."""
    return ("%3.2f" % value)[:8]


def validate(req: TrecRequest) -> None:
    """Reject what trec_eval rejects (and what pytrec_eval would mis-handle) before pytrec_eval
    can abort the process on it; accept what trec_eval accepts (``atof`` of any float param)."""
    if req.params is None:
        return
    if req.base in LONG_CUTOFFS:
        _long_cutoffs(req)
    elif req.base in FLOAT_CUTOFFS:
        names = req.output_names()  # sorts the cutoffs and rejects duplicates
        if len(set(names)) != len(names):  # trec_eval prints both; pytrec_eval keeps one
            raise InputError(f"measure '{req.spec}': two cutoffs print as the same name")
    elif req.base in PAIR_PARAMS:
        if not _PAIRS.fullmatch(req.params):
            raise InputError(f"measure '{req.spec}': parameters must be level=gain pairs")
    elif req.base == "utility" and len(req.params.split(",")) != 4:
        # trec_eval fails at calc time; pytrec_eval would print 0.0
        raise InputError(f"measure '{req.spec}': needs exactly 4 coefficients")
    elif req.base not in FLOAT_PARAMS:
        raise InputError(f"measure '{req.base}' takes no parameters (got '{req.spec}')")


# trec_eval's get_param_pairs: ``name=value`` items, no empty item, no second '=' in one.
_PAIRS = re.compile(r"[^,=]*=[^,=]*(,[^,=]*=[^,=]*)*")


class Evaluator:
    """pytrec_eval set up once for some qrels and measures, then given run after run.

    Values are keyed by trec_eval's printed measure names. ``num_docs_in_coll`` is trec_eval's
    ``-N`` (only utility's 4th coefficient reads it); pytrec_eval has no such setting, so
    utility is then recomputed from its counts. pytrec_eval holds the GIL throughout, so
    one evaluator serves every thread.
    """

    def __init__(self, qrels: dict[str, dict[str, int]], requests: list[TrecRequest],
                 level: int = 1, judged_only: bool = False, num_docs_in_coll: int = 0) -> None:
        import pytrec_eval_ext

        self.numeric = [r for r in requests if r.base not in TEXT_MEASURES]
        specs = {r.spec for r in self.numeric}
        self.utility = next((r for r in self.numeric if r.base == "utility"), None)
        self.num_docs_in_coll = num_docs_in_coll
        if self.utility is not None and num_docs_in_coll:
            specs |= {"num_ret", "num_rel", "num_rel_ret"}
        self.renamed = {r.base: r.output_names()[0] for r in self.numeric if r.params is not None
                        and (r.base in FLOAT_PARAMS or r.base in PAIR_PARAMS)}
        judged = {q: d for q, d in qrels.items() if d}
        judged[_PRIMER] = {_PRIMER: 0}
        self._evaluator = pytrec_eval_ext.RelevanceEvaluator(judged, specs, level, judged_only) \
            if self.numeric else None

    def evaluate(self, run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """Per-query values of one run (queries with an empty ranking are left out)."""
        if self._evaluator is None:
            return {q: {} for q in run}
        raw = self._evaluator.evaluate({_PRIMER: {_PRIMER: 0.0}, **run}) if run else {}
        raw.pop(_PRIMER, None)
        if self.renamed:
            raw = {q: {self.renamed.get(k, k): v for k, v in vals.items()}
                   for q, vals in raw.items()}
        if self.utility is not None and self.num_docs_in_coll:
            name = self.utility.output_names()[0]
            for vals in raw.values():
                vals[name] = _utility(self.utility, vals, self.num_docs_in_coll)
        return raw


def evaluate(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]],
             requests: list[TrecRequest], level: int = 1, judged_only: bool = False,
             num_docs_in_coll: int = 0) -> dict[str, dict[str, float]]:
    """Per-query values of one run (see :class:`Evaluator`)."""
    return Evaluator(qrels, requests, level, judged_only, num_docs_in_coll).evaluate(run)


# trec_eval's buffers grow on demand (te_chk_and_malloc) and a first request of size 0 fails:
# an empty ranking evaluated first (-M 0, a run missing a query) makes measures fail and
# pytrec_eval crash. A one-doc query evaluated first (a qid no input can hold: control
# characters are rejected) sizes them, as trec_eval's own reading does.
_PRIMER = "\x01rpp-primer"


def _utility(req: TrecRequest, counts: dict[str, float], num_docs_in_coll: int) -> float:
    """trec_eval's m_utility.c, term by term in its order, from pytrec_eval's counts."""
    p = [1.0, -1.0, 0.0, 0.0] if req.params is None else [c_atof(v) for v in req.params.split(",")]
    rel_ret, ret, rel = (int(counts[k]) for k in ("num_rel_ret", "num_ret", "num_rel"))
    return (p[0] * rel_ret + p[1] * (ret - rel_ret) + p[2] * (rel - rel_ret)
            + p[3] * (num_docs_in_coll + rel_ret - ret - rel))


def aggregate(name: str, values: np.ndarray, n_queries: int | None = None) -> float:
    """trec_eval's ``all`` value of one measure from per-query values (missing ones count 0).

    ``n_queries`` (trec_eval -c) is the divisor when larger than the number of values.
    """
    n = max(len(values), n_queries or 0)
    # one += per query in query order, as trec_eval accumulates (no pairwise/compensated sum)
    total = functools.reduce(operator.add, values.tolist(), 0.0)
    if name in SUM_MEASURES:
        return total
    if name == "num_q":
        return float(n)
    if name in GEOMETRIC:
        # pytrec_eval returns log(max(v, floor)) per query for gm_* measures
        total += (n - len(values)) * math.log(GM_FLOOR)
        return math.exp(total / n)
    return total / n if n else 0.0


# The largest ranking trec_eval is fed by position: -1.0, -2.0, ... are exact C floats up to here.
MAX_DEPTH = 1 << 24


def checked_depth(bounds: np.ndarray) -> int:
    """The longest ranking of a query (rows bounds[q]:bounds[q+1]); over MAX_DEPTH is an error."""
    depth = int(np.diff(bounds).max(initial=0))
    if depth > MAX_DEPTH:
        raise InputError(f"a query has {depth:,} ranked documents; trec_eval measures are "
                         f"limited to {MAX_DEPTH:,}")
    return depth


def position_scores(depth: int) -> list[float]:
    """The scores that hand pytrec_eval a ranking in the given order: -1, -2, ..., -depth."""
    return [-(k + 1.0) for k in range(depth)]


def negative_only(judged) -> np.ndarray:
    """Queries whose every grade is negative (after trec_eval's atol): trec_eval stops on one
    ("Can't calculate measure", exit 4) and pytrec_eval crashes, so the bridge gives them no
    judgment: they score 0, and count in ``all`` as any query of the qrels (contract §6)."""
    known = ~np.isnan(judged.grade)
    top = np.full(len(judged.qids), -np.inf)
    np.maximum.at(top, judged.query[known], np.trunc(judged.grade[known]))
    return np.flatnonzero(top < 0)


class Bridge:
    """The collection as pytrec_eval sees it. Queries are named by index and documents by
    their exact code (a judged code as its number, any other as ``u`` and its position), and
    each run is given in trec_eval's own order (C-float score desc, docno desc) with scores
    -1, -2, ...: the same rankings and judgments, whatever bytes the ids hold, and far fewer
    Python objects than the docno texts."""

    def __init__(self, judged) -> None:
        known = np.flatnonzero(~np.isnan(judged.grade))
        self.n_judged = len(judged.grade)
        self.names = [str(c) for c in range(self.n_judged)]
        self.scores: list[float] = []
        self.qids = [str(q) for q in range(len(judged.qids))]
        known = known[~np.isin(judged.query[known], negative_only(judged))]
        by_query = known[np.argsort(judged.query[known], kind="stable")]
        bounds = np.searchsorted(judged.query[by_query], np.arange(len(self.qids) + 1))
        grades = np.trunc(judged.grade[by_query]).astype(np.int64).tolist()  # trec_eval's atol
        self.qrels = nested_dicts(self.qids, bounds, self.names, by_query, grades, True)

    def run(self, rows) -> dict[str, dict[str, float]]:
        """A run's rows as pytrec_eval wants them; every evaluated query present ({} = empty)."""
        doc = rows.doc if rows.trec_doc is None else rows.trec_doc
        bounds = np.searchsorted(rows.qidx, np.arange(len(self.qids) + 1))
        depth = checked_depth(bounds)
        if depth > len(self.scores):  # names of unjudged documents by position, as needed
            self.names += [f"u{k}" for k in range(len(self.scores), depth)]
            self.scores = position_scores(depth)
        position = rows.rank - 1  # trec_doc has as many rows per query as doc
        name = np.where(doc < self.n_judged, doc, self.n_judged + position)
        return nested_dicts(self.qids, bounds, self.names, name, self.scores)


def evaluate_runs(judged, runs: list, requests: list[TrecRequest], level: float | None
                  ) -> tuple[list[str], list[np.ndarray]]:
    """The printed names of ``requests`` and, for each run, its (Q, names) values: one
    pytrec_eval evaluator for the judgments, given the runs in turn (it holds the GIL, so
    threads would not help)."""
    names = [n for req in requests for n in req.output_names()]
    bridge = Bridge(judged)
    evaluator = Evaluator(bridge.qrels, requests, 1 if level is None else max(1, math.ceil(level)))
    values = [_values(evaluator.evaluate(bridge.run(runs[r])), bridge.qids, names)
              for r in progress(range(len(runs)), "trec_eval measures")]
    return names, values


from . import METRIC, SET, Measure, family, register  # noqa: E402  (registry imports us)


@family("trec")
def compute(ctx, measures) -> None:
    """trec_eval measures through pytrec_eval, per query and aggregated as trec_eval does.
    Measures asked by their ir_measures name print under it; one with its own relevance level
    (``P(rel=2)@5``) gets an evaluator of its own."""
    from ..aggregate import add_metric

    coll = ctx.collection
    odd = negative_only(coll.judged).tolist()
    if odd:
        shown = ", ".join(coll.qids[q] for q in odd[:5]) + (" ..." if len(odd) > 5 else "")
        ctx.notes.append(f"{len(odd)} {'query' if len(odd) == 1 else 'queries'} with only "
                         f"negative grades ({shown}): trec_eval stops on them, rpp scores them 0 "
                         "in trec_eval's measures")
    groups: dict[tuple, list] = {}
    for m in measures:
        key = ("alias", m.options["level"], m.name) if "shown_as" in m.options else ("trec",)
        groups.setdefault(key, []).append(m)
    for key, group in groups.items():
        level = coll.level if key[0] == "trec" or key[1] is None else key[1]
        names, per_run = evaluate_runs(coll.judged, coll.runs, [m.trec for m in group], level)
        shown = {n: n for n in names} if key[0] == "trec" else {names[0]: key[2]}
        for i, n in enumerate(names):
            values = np.stack([v[:, i] for v in per_run], axis=1)
            overall = np.array([aggregate(n, values[:, r]) for r in range(len(coll.run_names))])
            per_query = n not in NOT_PER_QUERY and ctx.per_query
            add_metric(ctx.results, shown[n], values, per_query, overall)
            if n not in GEOMETRIC:
                ctx.metrics[shown[n]] = values


def _values(per_query: dict[str, dict[str, float]], qids: list[str], names: list[str]
            ) -> np.ndarray:
    """(Q, len(names)) values; NaN and absent (empty rankings) count 0 as in trec_eval -c."""
    empty: dict[str, float] = {}
    rows = map(per_query.get, qids, [empty] * len(qids))
    out = np.array([list(map(row.get, names, [0.0] * len(names))) for row in rows],
                   dtype=np.float64).reshape(len(qids), len(names))
    return np.nan_to_num(out, nan=0.0)


def _parameters(base: str) -> str:
    """``-m`` parameter syntax of ``base`` and trec_eval's defaults, for ``rpp measures``."""
    if base in LONG_CUTOFFS:
        return f"{base}.k1,k2,... (default {','.join(map(str, LONG_CUTOFFS[base]))})"
    if base in FLOAT_CUTOFFS:
        return f"{base}.x1,x2,... (default {','.join(map(str, FLOAT_CUTOFFS[base]))})"
    if base in PAIR_PARAMS:
        return f"{base}.grade=gain,... (default: gain = grade)"
    return {"utility": "utility.a,b,c,d (default 1,-1,0,0)",
            "11pt_avg": "11pt_avg.r1,r2,... (default 0.0,0.1,...,1.0)",
            "set_F": "set_F.beta (default 1)"}.get(base, "")


for _base in ORDER:
    if _base not in TEXT_MEASURES:  # runid, relstring: text, not numbers
        _what = re.sub(r" \(\.[^)]*\)$", "", DESCRIPTIONS[_base])  # syntax: parameters
        register(Measure(_base, METRIC, "trec", f"trec_eval: {_what}",
                         trec=TrecRequest(_base), parameters=_parameters(_base)))
for _nick, _members in NICKNAMES.items():
    register(Measure(_nick, SET, "trec", f"trec_eval's set: {' '.join(_members)}",
                     trec=TrecRequest(_nick)))

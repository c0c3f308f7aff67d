"""The pytrec_eval bridge: trec_eval 9.0.8's measures, names, parameters and aggregation.

Numbers always come from pytrec_eval (trec_eval's own C code); this module only parses
``-m`` the way trec_eval does, validates parameters first (pytrec_eval aborts or segfaults
on some malformed ones), names the outputs as trec_eval prints them and aggregates ``all``.
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
import re
from dataclasses import dataclass, field

import numpy as np

from ..core import nested_dicts
from ..engine import Lazy, current, query_shards
from ..errors import InputError
from ..io.qrels import GRADE_MAX, GRADE_MIN

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


def base_name(name: str) -> str:
    """The trec_eval measure ``name`` names, in either spelling: ``relstring_5`` and
    ``relstring.5`` are ``relstring``."""
    return (_underscore_form(name) or name).partition(".")[0]


def is_trec_name(name: str) -> bool:
    """True when ``name`` looks like a trec_eval measure or nickname (params allowed)."""
    base = name.split(".", 1)[0]
    return base in ORDER or base in NICKNAMES or _underscore_form(name) is not None


def parse(names: list[str], *, allow_underscore: bool = True, check: bool = True,
          first_wins: bool = True) -> list[TrecRequest]:
    """trec_eval's ``-m`` semantics: nicknames expand, repeats merge, first params win.

    With ``allow_underscore``, the printed form ``P_10`` is accepted for ``P.10`` (rpp eval).
    Unknown names raise InputError; so do invalid parameters (with ``check``; trec_eval itself
    checks them later, see :func:`validate`), before pytrec_eval ever sees them. Without
    ``first_wins`` (rpp eval: each measure asked is printed or refused), a measure given two
    different parameter lists has its cutoffs merged, or is an InputError (see :func:`_merged`),
    instead of its second list dropped.
    """
    chosen: dict[str, str | None] = {}
    order: list[str] = []
    plain: dict[str, bool] = {}  # measures asked without parameters -> named by themselves
    for raw in names:
        name = raw
        if allow_underscore and raw.partition(".")[0] not in ORDER and raw not in NICKNAMES:
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
                chosen[member] = params if first_wins or member not in plain else \
                    _with_defaults(member, params, plain[member], raw)
            elif base == member and dot and chosen[member] != params and not first_wins:
                chosen[member] = _merged(base, chosen[member], params, raw)
            elif not dot and chosen[member] is not None and not first_wins:
                chosen[member] = _with_defaults(member, chosen[member], base == member, raw)
            if not dot:
                plain[member] = plain.get(member, False) or base == member
    requests = [TrecRequest(b, chosen[b]) for b in order]
    if check:
        for req in requests:
            validate(req)
    return requests


def _with_defaults(base: str, params: str, by_name: bool, raw: str) -> str:
    """``base`` asked both with its default parameters and with ``params`` (``-m P -m P.7``,
    ``-m official -m P.7``): cutoffs print together (5, ..., 1000 and 7); other parameters,
    asked for by the measure's own name both ways, are an InputError (``-m ndcg -m ndcg.1=3``:
    one pass cannot give both), and given a nickname's defaults they win, as in trec_eval."""
    defaults = LONG_CUTOFFS.get(base) or FLOAT_CUTOFFS.get(base)
    if defaults is not None:
        return _merged(base, ",".join(map(str, defaults)), params, raw)
    if by_name:
        raise InputError(f"measure '{base}' is given twice with different parameters ('{base}' "
                         f"and '{base}.{params}'): give it once (trec_eval would keep one and "
                         "drop the other)")
    return params


def _merged(base: str, first: str, more: str, raw: str) -> str:
    """Cutoffs given twice (``-m P.5 -m P_10``) as one list, in order (``5,10``); any other
    parameters given twice differently are an InputError (trec_eval keeps the first)."""
    if base in LONG_CUTOFFS or base in FLOAT_CUTOFFS:  # one cutoff once, however written
        read = _atol if base in LONG_CUTOFFS else c_atof  # (5 and 05, 0.1 and 0.10)
        kept: dict[float, str] = {}
        for cut in first.split(",") + more.split(","):
            kept.setdefault(read(cut), cut)
        return ",".join(kept.values())
    raise InputError(f"measure '{base}' is given twice with different parameters "
                     f"('{base}.{first}' and '{raw}'): give it once (trec_eval would keep the "
                     "first and drop the second)")


_PARAMETER_STARTS = set("0123456789+-.")


def _underscore_form(name: str) -> str | None:
    """``P_10`` -> ``P.10``, ``iprec_at_recall_0.10`` -> ``iprec_at_recall.0.10``; parameters
    are numbers or grade=gain pairs, so ``ndcg_cut10`` is no ``ndcg`` with parameters."""
    for base in sorted(set(LONG_CUTOFFS) | set(FLOAT_CUTOFFS) | set(FLOAT_PARAMS) | PAIR_PARAMS,
                       key=len, reverse=True):
        rest = name[len(base) + 1:]
        if name.startswith(base + "_") and rest[:1] in _PARAMETER_STARTS:
            return f"{base}.{rest}"
    return None


def _atol(text: str) -> int:
    """C's atol: leading integer prefix (ASCII digits only), 0 when there is none."""
    m = re.match(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text)
    return int(m.group()) if m else 0


# C's strtod: decimal, hexadecimal (0x1p-1), inf/infinity and nan, after C's white space.
_C_FLOAT = re.compile(r"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*"
                      r"|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)|(?P<dec>[0-9]+\.?[0-9]*"
                      r"(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan))",
                      re.IGNORECASE)


def c_atof(text: str) -> float:
    """C's atof: the longest leading float prefix (hexadecimal, ``inf``, ``nan`` too), 0.0 when
    none; what trec_eval (and pytrec_eval's copy of it) reads a measure's parameters with."""
    m = _C_FLOAT.match(text)
    if not m:
        return 0.0
    sign = -1.0 if m["sign"] == "-" else 1.0
    if m["hex"] is None:
        return sign * float(m["dec"])
    try:
        return sign * float.fromhex(m["hex"])
    except OverflowError:  # strtod gives HUGE_VAL
        return sign * math.inf


# trec_eval sorts cutoffs by their difference taken as a C int, and multiplies float cutoffs
# by R into a C long: parameters beyond these bounds garble its order, names or values.
C_INT_MAX = (1 << 31) - 1


def _long_cutoffs(req: TrecRequest) -> list[int]:
    cuts = sorted(_atol(p) for p in req.params.split(","))
    if cuts[0] <= 0 or cuts[-1] > C_INT_MAX:
        raise InputError(f"measure '{req.spec}': cutoffs must be positive integers up to "
                         f"{C_INT_MAX}")
    if len(set(cuts)) != len(cuts):
        raise InputError(f"measure '{req.spec}': duplicate cutoffs")
    return cuts


def _finite(req: TrecRequest, values: list[float], bound: float = math.inf) -> list[float]:
    """``values`` of ``req``'s parameters, each finite and at most ``bound`` in magnitude."""
    if not all(math.isfinite(v) and abs(v) <= bound for v in values):
        limit = "" if bound == math.inf else f" of magnitude at most {int(bound)}"
        raise InputError(f"measure '{req.spec}': parameters must be finite numbers{limit}")
    return values


def _float_cutoffs(req: TrecRequest) -> list[float]:
    cuts = sorted(_finite(req, [c_atof(p) for p in req.params.split(",")], C_INT_MAX))
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
        pairs = [p.split("=") for p in req.params.split(",")]
        if not all(GRADE_MIN <= _atol(level) <= GRADE_MAX for level, _ in pairs):
            raise InputError(f"measure '{req.spec}': levels must be grades, integers from "
                             f"{GRADE_MIN} to {GRADE_MAX}")
        _finite(req, [c_atof(gain) for _, gain in pairs])
    elif req.base == "utility" and len(req.params.split(",")) != 4:
        # trec_eval fails at calc time; pytrec_eval would print 0.0
        raise InputError(f"measure '{req.spec}': needs exactly 4 coefficients")
    elif req.base not in FLOAT_PARAMS:
        raise InputError(f"measure '{req.base}' takes no parameters (got '{req.spec}')")
    else:
        _finite(req, [c_atof(p) for p in req.params.split(",")])


# trec_eval's get_param_pairs: ``name=value`` items, no empty item, no second '=' in one.
_PAIRS = re.compile(r"[^,=]*=[^,=]*(,[^,=]*=[^,=]*)*")


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
        """The level trec_eval is given for each grade (int64)."""
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
        if req.base not in PAIR_PARAMS:
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
            grade = _atol(level)
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

    Level=gain pairs (ndcg.1=3,2=9) are usable once per pytrec_eval evaluator: trec_eval's
    get_param_pairs overwrites each '=' and ',' of the parameter text with NUL, and pytrec_eval
    restores only the commas, so a second evaluation reads malformed pairs, trec_eval fails and
    pytrec_eval goes on with freed parameters (a segfault). Such measures get a fresh
    pytrec_eval evaluator for every run.
    """

    def __init__(self, qrels: dict[str, dict[str, int]], requests: list[TrecRequest],
                 level: int = 1, judged_only: bool = False, num_docs_in_coll: int = 0,
                 compaction: Compaction = NO_COMPACTION) -> None:
        self.numeric = [r for r in requests if r.base not in TEXT_MEASURES]
        asked = [compaction.request(r) for r in self.numeric]
        specs = {r.spec for r in asked}
        self.utility = next((r for r in self.numeric if r.base == "utility"), None)
        self.num_docs_in_coll = num_docs_in_coll
        if self.utility is not None and num_docs_in_coll:
            specs |= {"num_ret", "num_rel", "num_rel_ret"}
        self.renamed = {r.base: r.output_names()[0] for r in self.numeric if r.params is not None
                        and (r.base in FLOAT_PARAMS or r.base in PAIR_PARAMS)}
        judged = {q: d for q, d in qrels.items() if d}
        relevance_level = compaction.relevance_level(level)
        judged[_PRIMER] = {_PRIMER: max(0, relevance_level - 1)}  # (see _PRIMER)
        self._setup = (judged, specs, relevance_level, judged_only)
        self._single_use = any(r.base in PAIR_PARAMS and r.params is not None for r in asked)
        self._spent = False  # its gain pairs were read: the next run needs a fresh one
        self._evaluator = self._pytrec_eval() if self.numeric else None

    def _pytrec_eval(self):
        """A pytrec_eval evaluator for the qrels and measures."""
        import pytrec_eval_ext

        return pytrec_eval_ext.RelevanceEvaluator(*self._setup)

    def evaluate(self, run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
        """Per-query values of one run (queries with an empty ranking are left out)."""
        if self._evaluator is None:
            return {q: {} for q in run}
        if self._spent:
            self._evaluator = self._pytrec_eval()
        self._spent = self._single_use and bool(run)
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
             num_docs_in_coll: int = 0, compaction: Compaction = NO_COMPACTION
             ) -> dict[str, dict[str, float]]:
    """Per-query values of one run (see :class:`Evaluator`)."""
    return Evaluator(qrels, requests, level, judged_only, num_docs_in_coll,
                     compaction).evaluate(run)


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


DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"  # in byte order


def ranked_names(depth: int) -> list[str]:
    """``u`` and each rank 0..depth-1 in base 62 of one width: names whose byte order is the
    ranks' order, so that the unjudged part of a ranking reaches trec_eval's sort by docno
    already sorted (fewer comparisons in its merge sort: L, 2.72-2.81 -> 2.54-2.72 s). Only
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
    see _PRIMER), and says so in a note (contract §6)."""
    known = ~np.isnan(grade)
    top = np.full(n_queries, -np.inf)
    np.maximum.at(top, query[known], np.trunc(grade[known]))
    return np.flatnonzero(top < 0)


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
        bounds = np.searchsorted(query[by_query], np.arange(n_queries + 1))
        counts = np.diff(bounds)
        self.n_local = int(counts.max(initial=0))
        # code -> its index among its query's judgments; -1 for a code given pytrec_eval no
        # grade, and for the last entry, which every code of an unjudged row (>= J) reads
        self.local = np.full(self.n_judged + 1, -1, dtype=np.int64)
        self.local[by_query] = np.arange(len(by_query)) - np.repeat(bounds[:-1], counts)
        self.names = [str(k) for k in range(self.n_local)]
        # trec_eval's atol; below 0, -1: trec_eval reads any negative grade as "in the pool,
        # not judged", but sizes a table by a query's largest grade + 1, so a query whose
        # grades are all below -1 would crash it (see negative_only)
        grades = np.maximum(np.trunc(grade[by_query]), -1).astype(np.int64)
        self.compaction = Compaction.of(grades)
        self.qrels = nested_dicts(self.qids, bounds, self.names, self.local[by_query],
                                  self.compaction.levels(grades).tolist(), True)

    def run(self, bounds: np.ndarray, doc: np.ndarray) -> dict[str, dict[str, float]]:
        """A run's rows (query q's codes are ``doc[bounds[q]:bounds[q + 1]]``, in trec_eval's
        order) as pytrec_eval wants them; every evaluated query present ({} = empty)."""
        depth = checked_depth(bounds)
        if depth > len(self.scores):  # names of unjudged documents by position, as needed
            del self.names[self.n_local:]
            self.names += ranked_names(depth)
            self.scores = position_scores(depth)
        position = np.arange(len(doc)) - np.repeat(bounds[:-1], np.diff(bounds))
        local = self.local[np.minimum(doc, self.n_judged)]
        name = np.where(local >= 0, local, self.n_local + position)
        return nested_dicts(self.qids, bounds, self.names, name, self.scores)


def pytrec_level(level: float | None) -> int:
    """pytrec_eval's relevance level for rpp's ``-l`` (grades are integers there)."""
    return 1 if level is None else max(1, math.ceil(level))


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
        if req.base not in LONG_CUTOFFS and req.base not in FLOAT_CUTOFFS:
            return False
        merged = TrecRequest(req.base, ",".join(map(repr, sorted(
            set(_cutoffs(TrecRequest(req.base, self.params[req.base]))) | set(_cutoffs(req))))))
        names = merged.output_names()
        if len(set(names)) != len(names):  # two float cutoffs print alike: pytrec keeps one
            return False
        self.params[req.base] = merged.params
        return True

    @property
    def requests(self) -> list[TrecRequest]:
        return [TrecRequest(base, params) for base, params in self.params.items()]

    @property
    def names(self) -> list[str]:
        """The printed names of the pass's measures, in the order of its values."""
        return [n for req in self.requests for n in req.output_names()]


def _cutoffs(req: TrecRequest) -> list[float] | list[int]:
    """The cutoffs of a cutoff measure, its defaults when it has no parameters."""
    if req.base in LONG_CUTOFFS:
        return list(LONG_CUTOFFS[req.base]) if req.params is None else _long_cutoffs(req)
    return list(FLOAT_CUTOFFS[req.base]) if req.params is None else _float_cutoffs(req)


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


def trec_shards(judged, runs: list) -> tuple[np.ndarray, Lazy]:
    """Query bounds of the shards and the shards themselves (built on demand): each query's
    judged codes, and each run's rows of those queries in trec_eval's order."""
    by_query = np.argsort(judged.query, kind="stable")
    judged_bounds = np.searchsorted(judged.query[by_query], np.arange(len(judged.qids) + 1))
    slot = np.empty(len(by_query), dtype=np.int64)  # code -> its place in by_query
    slot[by_query] = np.arange(len(by_query))
    run_bounds = [r.bounds(len(judged.qids)) for r in runs]
    rows = sum(np.diff(b) for b in run_bounds)
    bounds = query_shards(np.asarray(rows, dtype=np.float64) + 1.0, current().workers)

    def build(i: int) -> TrecShard:
        q0, q1 = int(bounds[i]), int(bounds[i + 1])
        first = judged_bounds[q0]
        codes = by_query[first:judged_bounds[q1]]  # a query's rows hold only its own codes
        kind = code_type(len(codes))
        parts = []
        for r, at in zip(runs, run_bounds):
            lo, hi = int(at[q0]), int(at[q1])
            doc = (r.doc if r.trec_doc is None else r.trec_doc)[lo:hi]
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


def evaluate_shard(shard: TrecShard, passes: list[Pass]) -> list[np.ndarray]:
    """For each pass, the (R, Q of the shard, names) values of every run on one shard of
    queries: the shard's judgments given to one pytrec_eval evaluator per pass, each run
    converted once and given to every pass."""
    bridge = Bridge(shard.query, shard.grade, shard.n_queries)
    evaluators = [Evaluator(bridge.qrels, p.requests, p.level, compaction=bridge.compaction)
                  for p in passes]
    names = [p.names for p in passes]
    per_pass: list[list[np.ndarray]] = [[] for _ in passes]
    for bounds, doc in shard.runs:
        run = bridge.run(bounds, doc)
        for evaluator, wanted, out in zip(evaluators, names, per_pass):
            out.append(_values(evaluator.evaluate(run), bridge.qids, wanted))
    return [np.stack(out) if out else np.zeros((0, shard.n_queries, len(wanted)))
            for wanted, out in zip(names, per_pass)]


def evaluate_passes(judged, runs: list, passes: list[Pass]) -> list[dict[str, np.ndarray]]:
    """For each pass, its printed measure names -> (Q, R) values: the passes run on each shard
    of queries, shards run by the command's engine (pytrec_eval holds the GIL: worker
    processes, not threads)."""
    _, shards = trec_shards(judged, runs)
    parts = list(current().imap(functools.partial(evaluate_shard, passes=passes), shards,
                                "trec_eval measures"))
    out = []
    for i, p in enumerate(passes):
        values = np.concatenate([part[i] for part in parts], axis=1)  # (R, Q, names)
        out.append({n: values[:, :, k].T for k, n in enumerate(p.names)})
    return out


from . import METRIC, SET, Measure, family, register  # noqa: E402  (registry imports us)


@family("trec")
def compute(ctx, measures) -> None:
    """trec_eval measures through pytrec_eval, per query and aggregated as trec_eval does.
    Measures asked by their ir_measures name print under it; all share one pytrec_eval pass
    per relevance level (``P(rel=2)@5`` has its own level), see :func:`plan_passes`."""
    from ..aggregate import add_metric

    coll = ctx.collection
    odd = negative_only(coll.judged.query, coll.judged.grade, len(coll.qids)).tolist()
    if odd:
        listed = ", ".join(coll.qids[q] for q in odd[:5]) + (" ..." if len(odd) > 5 else "")
        ctx.notes.append(f"{len(odd)} {'query' if len(odd) == 1 else 'queries'} with only "
                         f"negative grades ({listed}): no document is relevant there, and rpp "
                         "evaluates them as trec_eval does where it can (trec_eval stops on "
                         "such a query when it evaluates it first, and crashes on grades all "
                         "below -1)")
    levels = [pytrec_level(coll.level if m.options.get("level") is None else m.options["level"])
              for m in measures]
    passes, where = plan_passes([(m.trec, level) for m, level in zip(measures, levels)])
    # what the grades refuse (ndcg_cut above 255...), named by the qrels' largest grade, before
    # any shard, which would name its own
    known = coll.judged.grade[~np.isnan(coll.judged.grade)]
    whole = Compaction.of(np.maximum(np.trunc(known), -1).astype(np.int64))
    for p in passes:
        for req in p.requests:
            whole.request(req)
    computed = evaluate_passes(coll.judged, coll.runs, passes)
    for m, p in zip(measures, where):
        for n, shown in zip(m.trec.output_names(), m.outputs):
            values = computed[p][n]
            overall = np.array([aggregate(n, values[:, r]) for r in range(len(coll.run_names))])
            if n == "num_rel":
                overall = _complete_num_rel(ctx, shown, coll.judged.grade, overall)
            per_query = n not in NOT_PER_QUERY and ctx.per_query
            add_metric(ctx.results, shown, values, per_query, overall)
            if n not in GEOMETRIC:
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

"""ir_measures' names (``nDCG@10``, ``P@5``, ``AP``, ``RR``, ``R@100``, ``P(rel=2)@5``, ...) and
the everyday measures ir_measures has and trec_eval lacks, computed as ir_measures computes them:

- ``RR@k`` (``RR(rel=N)@k``): MS MARCO's official MRR@k (ir_measures' msmarco provider): the
  reciprocal rank of the first item with grade >= N (default 1) in the top k;
- ``Judged@k`` (``Judged``: the whole ranking): the share of the top k that the qrels judge, out
  of the ranking's length when it is shorter (ir_measures' judged provider);
- ``ERR@k``: expected reciprocal rank as TREC's gdeval.pl computes it (ir_measures' gdeval
  provider): the user stops at rank i with probability R_i = (2^g_i - 1) / 2^4 for a grade g_i
  of 0-4, ERR@k = Σ_{i <= k} R_i / i · Π_{j < i} (1 - R_j).

Each follows its provider's order of tied scores: the msmarco and judged providers sort by score
descending, then docno ascending; gdeval (and trec_eval) by docno descending. Grades are read as
trec_eval reads them (their integer part). The trec_eval measures the two share print the
pytrec_eval numbers under the name typed."""
from __future__ import annotations

import re

import numpy as np

from ..aggregate import add_metric
from ..errors import InputError, number
from ..io.qrels import GRADE_MAX
from .pytrec_adapter import pytrec_level
from .registry import METRIC, Measure, family, register
from .trec_names import C_INT_MAX

# ir_measures name -> (trec_eval measure, its cutoff parameter is the @k)
ALIASES = {
    "AP": ("map", "map_cut"), "nDCG": ("ndcg", "ndcg_cut"), "P": (None, "P"),
    "R": (None, "recall"), "RR": ("recip_rank", None), "Rprec": ("Rprec", None),
    "Bpref": ("bpref", None), "infAP": ("infAP", None), "Success": (None, "success"),
    "NumRet": ("num_ret", None), "NumRel": ("num_rel", None), "NumRelRet": ("num_rel_ret", None),
    "SetP": ("set_P", None), "SetR": ("set_recall", None),
    "SetF": ("set_F", None), "IPrec": (None, "iprec_at_recall"),
}
# Computed here: name -> (takes a relevance level, needs a cutoff, description with {k}).
OWN = {
    "RR": (True, True, "MS MARCO's MRR@{k}: reciprocal rank of the first relevant item in the "
                       "top {k}, ties by docno ascending (ir_measures' msmarco provider)"),
    "Judged": (False, False, "share of the top {k} that the qrels judge, ties by docno "
                             "ascending (ir_measures' judged provider)"),
    "ERR": (False, True, "expected reciprocal rank of the top {k}, grades 0-4, as gdeval.pl "
                         "(ir_measures' gdeval provider)"),
}
NOT_TREC = {"RBP", "Compat", "INST", "INSQ", "alpha_nDCG", "NERR", "SDCG", "accuracy", "BPM",
            "EPM", "Precision", "NumQ"}
# ir_measures measures rpp has under a name and a definition of its own: what to type instead
RPP_SPELLING = {
    "RBP": "rpp's RBP is rbp.P (e.g. rbp.0.8), binary (grade > 0, or >= -l) with its residual "
           "rbp_res.P; ir_measures' RBP (trectools) weighs each item by its grade and averages "
           "the weights of tied scores",
    "alpha_nDCG": "rpp's is alpha-nDCG@k (ndeval v4.5, alpha 0.5), with --subtopics",
    "NumQ": "ir_measures counts the queries the run has; rpp's num_q counts every query of "
            "the qrels, as trec_eval -c does (the queries its averages are over)",
}
GDEVAL_MAX_GRADE = 4  # gdeval.pl's $MAX_JUDGMENT: R_i = (2^g - 1) / 2^4
_SYNTAX = re.compile(r"(?P<name>[A-Za-z_]+)(\(rel=(?P<rel>\d+)\))?(@(?P<cut>[0-9.]+))?")
_ANY_PARAMETERS = re.compile(r"(?P<name>[A-Za-z_]+)(\([^()]*\))?(@[0-9.]+)?")  # RBP(p=0.8)@10


def _not_in_rpp(name: str) -> str | None:
    """The ir_measures measure ``name`` names, with any parameters, when rpp lacks it."""
    m = _ANY_PARAMETERS.fullmatch(name)
    return m["name"] if m and m["name"] in NOT_TREC else None


def is_alias(name: str) -> bool:
    """True when ``name`` is written in ir_measures' syntax (and not trec_eval's)."""
    if _not_in_rpp(name):
        return True
    m = _SYNTAX.fullmatch(name)
    return bool(m) and (m["name"] in ALIASES or m["name"] in OWN) and (
        "@" in name or "(" in name or m["name"] not in ("P", "Rprec", "infAP"))


def is_own(name: str) -> bool:
    """True when rpp computes ``name`` itself (``RR@k``, ``Judged@k``, ``ERR@k``)."""
    m = _SYNTAX.fullmatch(name)
    return bool(m) and m["name"] in OWN and (m["name"] != "RR" or m["cut"] is not None)


def translate(name: str) -> tuple[str, int | None]:
    """The trec_eval spelling of an ir_measures name, and its relevance level (None: -l's)."""
    missing = _not_in_rpp(name)
    if missing in RPP_SPELLING:
        raise InputError(f"measure '{name}': {RPP_SPELLING[missing]}")
    if missing is not None:
        raise InputError(f"measure '{name}' is ir_measures' own and not in rpp: rpp computes "
                         "trec_eval's measures and RR@k, Judged@k, ERR@k (rpp measures lists "
                         "them)")
    m = _SYNTAX.fullmatch(name)
    plain, cut = ALIASES[m["name"]]
    if m["cut"] is None:
        if plain is None:
            raise InputError(f"measure '{name}' needs a cutoff, e.g. {m['name']}@10")
        spec = plain
    else:
        if cut is None:
            raise InputError(f"measure '{name}': {m['name']} takes no cutoff in trec_eval")
        spec = f"{cut}.{m['cut']}"
    _check_rel(name, m["rel"])
    if m["name"] == "NumRet" and m["rel"] is not None:
        spec = "num_rel_ret"  # ir_measures: the items retrieved with grade >= N
    return spec, None if m["rel"] is None else int(m["rel"])


def _check_rel(name: str, rel: str | None) -> None:
    """``rel=N`` is a relevance level from 1 to the largest grade (``RR(rel=0)@10`` was taken
    as level 1, silently)."""
    if rel is not None and not 1 <= int(rel) <= GRADE_MAX:
        raise InputError(f"measure '{name}': rel= takes a relevance level from 1 to {GRADE_MAX}")


def own_measure(name: str) -> Measure:
    """The measure for ``RR@k``, ``RR(rel=N)@k``, ``Judged``, ``Judged@k`` or ``ERR@k``."""
    m = _SYNTAX.fullmatch(name)
    takes_rel, needs_cut, what = OWN[m["name"]]
    if m["rel"] is not None and not takes_rel:
        raise InputError(f"measure '{name}': {m['name']} takes no relevance level")
    if m["cut"] is None and needs_cut:
        raise InputError(f"measure '{name}' needs a cutoff, e.g. {m['name']}@20")
    if m["cut"] is not None and not (m["cut"].isdigit() and 0 < int(m["cut"]) <= C_INT_MAX):
        raise InputError(f"measure '{name}': the cutoff must be a whole number from 1 to "
                         f"{C_INT_MAX}")
    _check_rel(name, m["rel"])
    cutoff = None if m["cut"] is None else int(m["cut"])
    level = None if m["rel"] is None else int(m["rel"])
    parameters = {"RR": "RR@k, RR(rel=N)@k: grade >= N is relevant (default: -l, else 1)",
                  "Judged": "Judged@k, or Judged for the whole ranking",
                  "ERR": "ERR@k; grades 0-4 (integer part), -l does not apply"}[m["name"]]
    return Measure(name, METRIC, "ir_measures",
                   what.format(k=cutoff if cutoff is not None else "ranking"),
                   options={"provider": m["name"], "cutoff": cutoff}, level=level,
                   parameters=parameters,
                   counts_retrieved=m["name"] == "Judged",  # judged documents retrieved
                   gain_weighted=m["name"] == "ERR")  # grades 0-4 as gains, whatever -l says


# ir_measures' NumRet with rel=N is not num_ret at a level: it counts the items retrieved with
# grade >= N, trec_eval's num_rel_ret (its NumRelRet is NumRet(rel=1)).
_SPELLED = {"num_ret": "NumRet (NumRet(rel=N) is num_rel_ret)",
            "num_rel_ret": "NumRelRet, or NumRet(rel=N) for a level"}


def spelling(trec_base: str) -> str | None:
    """How ir_measures writes a trec_eval measure (for ``rpp measures``), or None."""
    if trec_base in _SPELLED:
        return _SPELLED[trec_base]
    for name, (plain, cut) in ALIASES.items():
        if trec_base == plain:
            return f"{name}, (rel=N) for a level"
        if trec_base == cut:
            return f"{name}@k, (rel=N) for a level"
    return None


for _example in ("RR@10", "Judged@10", "ERR@20"):
    register(own_measure(_example))


def docno_ascending_ranks(rows) -> np.ndarray:
    """(rows,) 1-based rank of each row of a run when tied scores go by docno ascending (the
    msmarco and judged providers) rather than descending (contract §2): each group of tied
    rows is read backwards."""
    rank = rows.rank
    if rows.tied is None:
        return rank
    first = np.flatnonzero(~rows.tied)  # the first row of each group of tied rows
    group = np.cumsum(~rows.tied) - 1
    end = np.append(first[1:], len(rank))
    return rank[first[group] + end[group] - 1 - np.arange(len(rank))]


def reciprocal_rank(query: np.ndarray, rank: np.ndarray, hit: np.ndarray, n_queries: int,
                    cutoff: int) -> np.ndarray:
    """(Q,) 1 / the best rank <= ``cutoff`` of a ``hit`` row of each query (0: none)."""
    best = np.full(n_queries, np.inf)
    take = hit & (rank <= cutoff)
    np.minimum.at(best, query[take], rank[take].astype(np.float64))
    return np.where(np.isfinite(best), 1.0 / best, 0.0)


def judged_share(query: np.ndarray, rank: np.ndarray, judged: np.ndarray, n_queries: int,
                 cutoff: int | None) -> np.ndarray:
    """(Q,) judged rows among the top ``cutoff`` over min(cutoff, depth) (0: empty ranking)."""
    depth = np.bincount(query, minlength=n_queries)
    top = np.ones(len(rank), dtype=bool) if cutoff is None else rank <= cutoff
    count = np.bincount(query[top & judged], minlength=n_queries).astype(np.float64)
    shown = depth if cutoff is None else np.minimum(depth, cutoff)
    return np.divide(count, shown, out=np.zeros(n_queries), where=shown > 0)


# ERR@k is computed on a (queries, k) grid; blocks of queries bound its size.
_GRID_CELLS = 1 << 22


def expected_reciprocal_rank(query: np.ndarray, rank: np.ndarray, grade: np.ndarray,
                             n_queries: int, cutoff: int) -> np.ndarray:
    """(Q,) gdeval.pl's ERR@cutoff of rows in ranking order with gdeval grades 0-4, in its
    operations and their order (products and sums from rank 1 down), so the doubles are
    gdeval's."""
    top = rank <= cutoff
    query, rank, grade = query[top], rank[top], grade[top]
    width = int(rank.max(initial=0))
    out = np.zeros(n_queries)
    if width == 0:
        return out
    stop = (2.0 ** grade - 1) / 2.0 ** GDEVAL_MAX_GRADE
    step = max(1, _GRID_CELLS // width)
    bounds = np.searchsorted(query, np.arange(0, n_queries + step, step))
    for block, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
        first = block * step
        grid = np.zeros((min(step, n_queries - first), width))
        grid[query[lo:hi] - first, rank[lo:hi] - 1] = stop[lo:hi]
        decay = np.ones_like(grid)
        np.multiply.accumulate(1 - grid[:, :-1], axis=1, out=decay[:, 1:])
        out[first:first + len(grid)] = np.add.accumulate(
            grid * decay / np.arange(1.0, width + 1), axis=1)[:, -1]
    return out


def gdeval_grades(coll) -> np.ndarray:
    """(J,) gdeval's grade of each judged code: the integer part of a positive grade, else 0.
    A grade over gdeval's maximum is an error (gdeval.pl stops on it)."""
    grade = np.trunc(np.nan_to_num(coll.judged.grade, nan=0.0))
    over = grade > GDEVAL_MAX_GRADE
    if over.any():
        j = int(np.argmax(over))
        raise InputError(f"ERR@k takes gdeval's grades 0-{GDEVAL_MAX_GRADE}; query "
                         f"{coll.judged.qids[coll.judged.query[j]]} has an item of grade "
                         f"{number(coll.judged.grade[j])}")
    return np.maximum(grade, 0.0)


@family("ir_measures", all_queries="ir_measures'")
def compute(ctx, measures: list[Measure]) -> None:
    """RR@k, Judged@k and ERR@k of every run on every query of the qrels (ir_measures averages
    over them all, as trec_eval -c: contract §6), each ranked as its provider ranks."""
    coll = ctx.collection
    n_q, n_judged = len(coll.qids), len(coll.judged.query)
    grade = coll.judged.grade
    integer = np.trunc(np.nan_to_num(grade, nan=0.0))
    gains = gdeval_grades(coll) if any(m.options["provider"] == "ERR" for m in measures) \
        else None
    values = {m.name: np.zeros((n_q, len(coll.runs))) for m in measures}
    for r, rows in enumerate(coll.runs):  # one vectorised pass per run
        judged = rows.doc < n_judged
        code = np.where(judged, rows.doc, 0)
        qidx, ascending = rows.qidx, None
        for m in measures:
            provider, cutoff = m.options["provider"], m.options["cutoff"]
            if provider == "ERR":
                g = np.where(judged, gains[code], 0.0)
                values[m.name][:, r] = expected_reciprocal_rank(qidx, rows.rank, g, n_q,
                                                                cutoff)
                continue
            ascending = docno_ascending_ranks(rows) if ascending is None else ascending
            if provider == "RR":
                level = pytrec_level(coll.level if m.level is None else m.level)
                hit = judged & (integer[code] >= level)
                values[m.name][:, r] = reciprocal_rank(qidx, ascending, hit, n_q, cutoff)
            else:
                known = judged & ~np.isnan(grade[code])
                values[m.name][:, r] = judged_share(qidx, ascending, known, n_q, cutoff)
    for m in measures:
        add_metric(ctx.results, m.name, values[m.name], ctx.per_query)
        ctx.metrics[m.name] = values[m.name]

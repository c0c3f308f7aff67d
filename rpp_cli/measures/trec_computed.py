"""trec_eval's measures that rpp computes itself, in trec_eval 10.0's arithmetic: the three
10.0 added (rbp, rbp_resid, unj) and, under 10.0, the two whose recall cutoffs it rounds
otherwise than 9.0.8 (iprec_at_recall, 11pt_avg), which pytrec_eval (9.0.8's C) cannot give.

Each reads what trec_eval's form_res_rels gives a measure, from the rankings pytrec_eval is
given: a query's ranking as relevance codes in trec_eval's order after -M (and -J), a grade
>= 0, NONPOOL for a document the qrels lack, UNJUDGED for a negative grade; and the query's
judgments (how many reach the relevance level, the largest grade). Every double is made by
the C's operations in the C's order (sequential sums, ``cur_p *= p``, ``lround``), so the
values are the C's to the last bit.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .trec_names import TrecRequest, c_atof, cutoffs, persistence_pairs
from .trec_table import OLDEST

NONPOOL = -1  # not in the qrels (trec_eval's RELVALUE_NONPOOL)
UNJUDGED = -2  # in the qrels with a negative grade (RELVALUE_UNJUDGED)
C_NAN = -math.nan  # 0.0 / 0.0 in C on x86: the default NaN, sign bit set (prints -nan)

# trec_eval 10.0 -c stands a one-document ranking in for a judged query a run lacks, then
# zeroes these values (as named exactly: utility_1,-1,0,0 keeps the stand-in's -1).
STAND_IN_DOCNO = b"ceci_nest_pas_un_docno"
STAND_IN_SCORE = 1.0
_ZEROED = ("num_ret", "utility", "rbp_resid")


def zeroed_for_stand_in(name: str) -> bool:
    """Whether trec_eval 10.0 -c prints 0 for ``name`` on a query the run lacks, whatever its
    stand-in ranking gives (relstring, also cleared, is text: its writer's)."""
    return name in _ZEROED or name.startswith("unj")


@dataclass(frozen=True)
class Rankings:
    """Q queries' rankings as trec_eval's measures see them."""

    bounds: np.ndarray  # (Q + 1,) the rows of query q are bounds[q]:bounds[q + 1]
    rel: np.ndarray  # (rows,) int64 relevance code of each ranked row (see module doc)
    num_rel: np.ndarray  # (Q,) judgments with a grade >= the relevance level
    levels: np.ndarray  # (Q,) trec_eval's num_rel_levels: the largest grade >= 0 judged, + 1
    level: int  # the relevance level (-l)

    @classmethod
    def of(cls, bounds: np.ndarray, rel: np.ndarray, judged_query: np.ndarray,
           judged_grade: np.ndarray, level: int, judged_only: bool = False) -> "Rankings":
        """From rows in trec_eval's order and the judgments (query index, integer grade) of
        the same queries; ``judged_only`` (-J): unjudged rows leave the rankings."""
        bounds = np.asarray(bounds, dtype=np.int64)
        rel = np.asarray(rel, dtype=np.int64)
        n_q = len(bounds) - 1
        if judged_only:
            query = np.repeat(np.arange(n_q), np.diff(bounds))
            keep = rel >= 0
            rel = rel[keep]
            bounds = np.searchsorted(query[keep], np.arange(n_q + 1))
        num_rel = np.bincount(judged_query[judged_grade >= level], minlength=n_q)
        top = np.full(n_q, -1, dtype=np.int64)
        known = judged_grade >= 0
        np.maximum.at(top, judged_query[known], judged_grade[known])
        return cls(bounds, rel, num_rel, top + 1, level)

    @property
    def query(self) -> np.ndarray:
        """(rows,) the query of each row."""
        return np.repeat(np.arange(len(self.bounds) - 1), np.diff(self.bounds))

    @property
    def position(self) -> np.ndarray:
        """(rows,) 0-based position of each row in its query's ranking."""
        return np.arange(len(self.rel)) - np.repeat(self.bounds[:-1], np.diff(self.bounds))


def evaluate(rankings: Rankings, requests: list[TrecRequest], release: str
             ) -> dict[str, np.ndarray]:
    """Printed name -> (Q,) values of every request rpp computes under ``release``."""
    out: dict[str, np.ndarray] = {}
    for req in requests:
        names = req.output_names()
        if req.base == "iprec_at_recall":
            values = interpolated(rankings, cutoffs(req), release)
            out.update(zip(names, values.T))
        elif req.base == "11pt_avg":
            points = [c_atof(x) for x in req.params.split(",")] if req.params is not None \
                else list(req.record.defaults)
            out[names[0]] = eleven_point(interpolated(rankings, points, release))
        elif req.base == "unj":
            out.update(zip(names, unjudged(rankings, cutoffs(req)).T))
        elif req.base == "rbp":
            out[names[0]] = rank_biased(rankings, *persistence_pairs(req))
        elif req.base == "rbp_resid":
            out[names[0]] = residual(rankings, persistence_pairs(req)[0])
    return out


def recall_cutoff(share: float, num_rel: np.ndarray, release: str) -> np.ndarray:
    """The rank of relevant documents a recall ``share`` stands for: ``lround(share * R)``
    (10.0), or ``(long) (share * R + 0.9)`` (9.0.8: truncated towards zero)."""
    x = share * num_rel.astype(np.float64)
    if release == OLDEST:
        return np.trunc(x + 0.9).astype(np.int64)
    whole = np.floor(np.abs(x))  # lround: halves away from zero (a - floor(a) is exact)
    return (np.sign(x) * (whole + (np.abs(x) - whole >= 0.5))).astype(np.int64)


def interpolated(rankings: Rankings, shares: list[float], release: str) -> np.ndarray:
    """(Q, len(shares)) interpolated precision at each recall share, in the given order, as
    m_iprec_at_recall.c and m_11pt_avg.c give them: the shares' cutoffs are visited from the
    last one down while the ranking is read bottom up, so a cutoff above the relevant
    documents retrieved is 0 while it ends the list, a cutoff met is the best precision at or
    below its relevant document, and every cutoff after one that is not met (0, negative,
    or out of order) takes the precision of the whole read (NaN for an empty ranking)."""
    n_q = len(rankings.bounds) - 1
    hit = rankings.rel >= rankings.level
    query = rankings.query[hit]
    k = np.bincount(query, minlength=n_q)  # relevant documents retrieved
    first = np.concatenate(([0], np.cumsum(k)))  # query q's relevant rows in ``best``
    nth = (np.arange(len(query)) - first[query] + 1).astype(np.float64)
    best = _suffix_max(nth / (rankings.position[hit] + 1.0), query, n_q)
    whole = np.where(np.diff(rankings.bounds) > 0, 0.0, C_NAN)  # num_rel_ret / num_ret
    whole[k > 0] = best[first[:-1][k > 0]]
    values = np.zeros((n_q, len(shares)))
    skipping = np.ones(n_q, dtype=bool)
    stuck = np.zeros(n_q, dtype=bool)
    reached = k.copy()  # the relevant rank the bottom-up read has come to
    for i in range(len(shares) - 1, -1, -1):
        cut = recall_cutoff(shares[i], rankings.num_rel, release)
        skipping &= cut > k
        met = ~skipping & ~stuck & (cut >= 1) & (cut <= reached)
        stuck |= ~skipping & ~met
        at = np.where(met, first[:-1] + cut - 1, 0)
        values[:, i] = np.where(met, best[at] if len(best) else 0.0,
                                np.where(stuck, whole, 0.0))
        reached = np.where(met, cut, reached)
    return values


def _suffix_max(values: np.ndarray, group: np.ndarray, n_groups: int) -> np.ndarray:
    """Each value's maximum over the values at or after it in its group (groups ascending,
    contiguous): exact, on the values' ranks, shifted apart group by group."""
    if len(values) == 0:
        return values
    distinct, rank = np.unique(values, return_inverse=True)
    shift = (n_groups - 1 - group[::-1]).astype(np.int64) * len(distinct)
    return distinct[(np.maximum.accumulate(rank[::-1] + shift) - shift)[::-1]]


def eleven_point(values: np.ndarray) -> np.ndarray:
    """(Q,) 11pt_avg from :func:`interpolated`'s values: summed from the last share down, as
    the C adds them, over the number of shares."""
    total = np.zeros(len(values))
    for i in range(values.shape[1] - 1, -1, -1):
        total = total + values[:, i]
    return total / values.shape[1]


def unjudged(rankings: Rankings, cuts: list[int]) -> np.ndarray:
    """(Q, len(cuts)) m_unjudged.c: the documents of the top k not in the qrels or judged
    negatively, over k (a ranking shorter than k counts as if filled with judged ones)."""
    flagged = (rankings.rel == NONPOOL) | (rankings.rel == UNJUDGED)
    query, position = rankings.query, rankings.position
    n_q = len(rankings.bounds) - 1
    return np.stack([np.bincount(query[flagged & (position < c)], minlength=n_q) / float(c)
                     for c in cuts], axis=1).reshape(n_q, len(cuts))


# trec_eval 10.0's rbp reads its min and max gain uninitialised: what the measure computed just
# before it left in its stack frame. After these (found by trying each) that is not benign,
# and trec_eval prints other numbers (unscaled gains after iprec_at_recall and 11pt_avg).
RBP_UNSET_AFTER = frozenset({"iprec_at_recall", "11pt_avg", "G", "ndcg", "ndcg_rel",
                             "ndcg_cut"})


def rank_biased(rankings: Rankings, p: float, pairs: dict[int, float]) -> np.ndarray:
    """(Q,) m_rbp.c: (1 - p) Σ gain_i p^i. A query's gains are its grades 0 .. its largest
    (``grade=gain`` pairs replace or add some); when one lies outside [0, 1] they are all
    mapped onto it, (g - min) / (max - min). trec_eval leaves min and max unset before it
    scans the gains; rpp takes the gains' own minimum and maximum, what the code means."""
    gain = np.zeros(len(rankings.rel))
    query = rankings.query
    for levels in np.unique(rankings.levels).tolist():
        table = dict(pairs)
        for grade in range(levels):
            table.setdefault(grade, float(grade))
        if not table:  # no grade >= 0 judged and no pair: every gain 0
            continue
        low, high = min(table.values()), max(table.values())
        if low < 0 or high > 1:  # (high == low: 0 / 0 in C)
            table = {g: (v - low) / (high - low) if high != low else C_NAN
                     for g, v in table.items()}
        rows = rankings.levels[query] == levels
        codes = np.array(sorted(table), dtype=np.int64)
        slot = np.searchsorted(codes, rankings.rel[rows])
        found = (slot < len(codes)) & (codes[np.minimum(slot, len(codes) - 1)] ==
                                       rankings.rel[rows])
        gains = np.array([table[g] for g in codes.tolist()])
        gain[rows] = np.where(found, gains[np.minimum(slot, len(codes) - 1)], 0.0)
    weights, _ = _powers(rankings, p)
    terms = np.where(gain != 0, gain * weights, 0.0)
    return (1.0 - p) * _sequential_sums(terms, rankings)


def residual(rankings: Rankings, p: float) -> np.ndarray:
    """(Q,) m_rbp_resid.c: p^d + (1 - p) Σ_{unjudged i} p^i over a ranking of depth d with an
    unjudged document in it (not in the qrels, or judged negatively); 0 without one."""
    flagged = rankings.rel < 0
    weights, after = _powers(rankings, p)
    total = _sequential_sums(np.where(flagged, weights, 0.0), rankings)
    any_flagged = np.bincount(rankings.query[flagged], minlength=len(total)) > 0
    return np.where(any_flagged, after + (1 - p) * total, 0.0)


def _powers(rankings: Rankings, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(rows,) p^i at each row's position i, and (Q,) p^depth of each query, as the C makes
    them: ``cur_p = cur_p * p`` from 1, one product per row."""
    depth = int(np.diff(rankings.bounds).max(initial=0))
    power = np.ones(depth + 1)
    np.multiply.accumulate(np.full(depth, p), out=power[1:])
    return power[rankings.position], power[np.diff(rankings.bounds)]


# the (queries, depth) grid of a sequential sum is cut into blocks of queries of this size
_GRID_CELLS = 1 << 22


def _sequential_sums(terms: np.ndarray, rankings: Rankings) -> np.ndarray:
    """(Q,) each query's terms added one by one from 0.0 in ranking order, as a C loop adds
    them (numpy's sums pair terms up, which rounds otherwise)."""
    bounds = rankings.bounds
    n_q = len(bounds) - 1
    width = int(np.diff(bounds).max(initial=0)) + 1
    out = np.zeros(n_q)
    step = max(1, _GRID_CELLS // width)
    query, position = rankings.query, rankings.position
    for lo in range(0, n_q, step):
        hi = min(n_q, lo + step)
        rows = slice(bounds[lo], bounds[hi])
        grid = np.zeros((hi - lo, width))  # column 0: the sum's starting 0.0
        grid[query[rows] - lo, position[rows] + 1] = terms[rows]
        out[lo:hi] = np.add.accumulate(grid, axis=1)[:, -1]
    return out

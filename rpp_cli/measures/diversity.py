"""The TREC Web track diversity measures, exactly as the track's ndeval (v4.5) computes them.

Relevance is binary per subtopic. Every measure is numpy over (queries, positions, subtopics).
Float sums keep ndeval's order so that every printed digit, and every tie of its greedy ideal
ranking, is ndeval's: cumulative sums run along positions (``cumsum`` is sequential) and the
novelty gain of a position is summed subtopic by subtopic (a loop over the few subtopic
columns). Powers (1-α)^c and β^i are repeated products, as in ndeval.

ndeval prints NaN for nNRBP when the ideal NRBP is 0 (a query with no relevant subtopic);
here that value is 0 and the callers say so on stderr.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterator, NamedTuple

import numpy as np

from ..populations import SubtopicIndex, require
from .registry import METRIC, Measure, family, register

DEPTH = 20  # ndeval's rank cutoff arrays
CUTOFFS = (5, 10, 20)
ALPHA = 0.5  # redundancy: a subtopic's gain decays by (1 - α) with each item relevant to it
BETA = 0.5  # NRBP's patience

_FAMILIES = (  # name, has a cutoff, description ({k}: the cutoff)
    ("ERR-IA", True, "intent-aware expected reciprocal rank of the top {k} (α 0.5), over "
                     "its collection-independent maximum"),
    ("nERR-IA", True, "ERR-IA of the top {k} over that of ndeval's greedy ideal ranking"),
    ("alpha-DCG", True, "α-DCG of the top {k} (α 0.5), over its collection-independent "
                        "maximum"),
    ("alpha-nDCG", True, "α-DCG of the top {k} over that of ndeval's greedy ideal ranking"),
    ("NRBP", False, "novelty- and rank-biased precision (α 0.5, β 0.5)"),
    ("nNRBP", False, "NRBP over that of ndeval's greedy ideal ranking"),
    ("MAP-IA", False, "intent-aware mean average precision"),
    ("P-IA", True, "intent-aware precision of the top {k}"),
    ("strec", True, "subtopic recall of the top {k}: share of the subtopics covered"),
)
# ndeval's column order; the registry and `rpp ndeval` both use it.
NAMES = [f"{base}@{k}" if cut else base for base, cut, _ in _FAMILIES
         for k in (CUTOFFS if cut else (None,))]
DEFAULTS = ["ERR-IA@20", "alpha-nDCG@20", "MAP-IA", "strec@20"]

for _base, _cut, _what in _FAMILIES:
    for _k in CUTOFFS if _cut else (None,):
        register(Measure(f"{_base}@{_k}" if _cut else _base, METRIC, "diversity",
                         _what.format(k=_k) + " (ndeval v4.5; needs --subtopics)"))

# disc(i) = 1 / log2(i + 2) at 0-based position i, with C's log as ndeval writes it.
_DISCOUNT = np.array([1.0] + [math.log(2.0) / math.log(i + 2.0) for i in range(1, DEPTH)])
_POSITION = np.arange(1.0, DEPTH + 1.0)


@dataclass(frozen=True)
class Judgments:
    """Which item is relevant to which subtopic of its query: all ndeval reads from qrels."""

    membership: np.ndarray  # (I + 1, T) bool; the last row (index -1) is "no item"
    item_query: np.ndarray  # (I,) query of each item
    docno_rank: np.ndarray  # (I,) byte order of the docnos (ideal ties go to the larger)
    count: np.ndarray  # (Q,) number of subtopics S
    nrel: np.ndarray  # (Q, T) relevant items of each subtopic

    @classmethod
    def from_index(cls, index: SubtopicIndex, item_query: np.ndarray,
                   item_docno: list[str]) -> Judgments:
        """The judgments of items grouped by query, from their subtopic index."""
        n = len(item_docno)
        member = np.vstack([index.membership(n), np.zeros((1, index.width), dtype=bool)])
        docnos = np.array([d.encode("utf-8", "surrogateescape") for d in item_docno],
                          dtype=bytes)
        rank = np.unique(docnos, return_inverse=True)[1].ravel() if n else np.zeros(0, int)
        return cls(member, item_query, rank, index.count, index.relevant_counts())


class Series(NamedTuple):
    """The novelty-based measures of ranked lists, before ideal normalisation."""

    err: np.ndarray  # (Q, DEPTH) ERR-IA@k at k = 1..DEPTH
    dcg: np.ndarray  # (Q, DEPTH) alpha-DCG@k
    nrbp: np.ndarray  # (Q,)


def novelty(rel: np.ndarray, alpha: float) -> np.ndarray:
    """(Q, L) gain of each position: Σ_t rel_t · (1-α)^(items above relevant to t)."""
    seen = np.cumsum(rel, axis=1) - rel
    decay = np.multiply.accumulate(np.concatenate(([1.0], np.full(rel.shape[1], 1.0 - alpha))))
    score = np.zeros(rel.shape[:2])
    for t in range(rel.shape[2]):  # subtopic by subtopic: ndeval's float order
        score += np.where(rel[:, :, t], decay[seen[:, :, t]], 0.0)
    return score


def _ratio(num: np.ndarray, den: np.ndarray, where: np.ndarray) -> np.ndarray:
    """num / den where ``where``, else 0."""
    num, den = np.broadcast_arrays(np.asarray(num, dtype=np.float64), den)
    return np.divide(num, den, out=np.zeros(num.shape), where=where)


def series(rel: np.ndarray, count: np.ndarray, alpha: float, beta: float) -> Series:
    """ERR-IA@k and alpha-DCG@k over ndeval's "ideal ideal" (S gains decaying by 1-α at each
    rank), and NRBP over the whole list; 0 for queries without subtopics."""
    score = novelty(rel, alpha)
    top = score[:, :DEPTH]
    first = np.column_stack([count.astype(np.float64),
                             np.full((len(count), DEPTH - 1), 1.0 - alpha)])
    gain = np.multiply.accumulate(first, axis=1)  # S (1-α)^i as repeated products
    has = (count > 0)[:, None]
    dcg = _ratio(np.cumsum(top * _DISCOUNT, axis=1), np.cumsum(gain * _DISCOUNT, axis=1), has)
    err = _ratio(np.cumsum(top / _POSITION, axis=1), np.cumsum(gain / _POSITION, axis=1), has)
    decay = np.multiply.accumulate(np.concatenate(([1.0], np.full(rel.shape[1] - 1, beta))))
    total = np.cumsum(score * decay, axis=1)[:, -1]
    factor = _ratio(1.0 - (1.0 - alpha) * beta, count.astype(np.float64), count > 0)
    return Series(err, dcg, total * factor)


def intent_aware(rel: np.ndarray, count: np.ndarray,
                 nrel: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """MAP-IA (Q,), P-IA@k and strec@k (Q, DEPTH) of ranked lists."""
    hits = np.cumsum(rel, axis=1)  # items so far relevant to each subtopic
    precision = np.where(rel, hits / np.arange(1.0, rel.shape[1] + 1.0)[None, :, None], 0.0)
    ap_sum = np.cumsum(precision, axis=1)[:, -1, :]
    total = np.zeros(len(count))
    for t in range(rel.shape[2]):  # subtopic by subtopic: ndeval's float order
        total += _ratio(ap_sum[:, t], nrel[:, t], nrel[:, t] > 0)
    has = count > 0
    mapia = _ratio(total, count, has)
    top = hits[:, :DEPTH, :]
    p_ia = _ratio(top.sum(axis=2), _POSITION * count[:, None], has[:, None])
    strec = _ratio((top > 0).sum(axis=2), count[:, None], has[:, None])
    return mapia, p_ia, strec


class Listed(NamedTuple):
    """Ranked lists as their entries: item ``item[k]`` at 0-based ``position[k]`` of query
    ``query[k]``'s list; a position without an entry holds no relevant item. One deep list
    costs its entries, not a row of its depth for every query."""

    query: np.ndarray
    position: np.ndarray
    item: np.ndarray


def _room(values: np.ndarray) -> np.ndarray:
    """``values`` (>= 1) rounded up to a power of two, as exponents: a group's key."""
    return np.ceil(np.log2(np.maximum(values, 1))).astype(np.int64)


def _groups(key: np.ndarray, owner: np.ndarray) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """For each distinct ``key`` (one per query): its queries, and the entries (items, list
    entries) whose ``owner`` query is one of them; both ascending."""
    order = np.argsort(key, kind="stable")
    entries = np.argsort(key[owner], kind="stable")
    entry_key = key[owner][entries]
    for group in np.split(order, np.flatnonzero(np.diff(key[order])) + 1):
        a, b = np.searchsorted(entry_key, [key[group[0]], key[group[0]] + 1])
        yield group, entries[a:b]


def ideal_ranking(judgments: Judgments, alpha: float) -> Listed:
    """ndeval's greedy ideal: repeatedly the item of largest novelty gain, ties to the larger
    docno. Items relevant to no subtopic add nothing and are left out.

    Queries are independent: they are ranked in groups of about as many subtopics and items
    (each rounded up to a power of two), so that one query of 3,000 subtopics or of 4,000
    items widens or lengthens no other's steps.
    """
    n_queries = len(judgments.count)
    items = np.flatnonzero(judgments.membership[:-1].any(axis=1))
    item_query = judgments.item_query[items]
    length = np.bincount(item_query, minlength=n_queries)
    key = np.where(length > 0, _room(judgments.count) * 64 + _room(length), -1)
    parts = [np.zeros((3, 0), dtype=np.int64)]
    for queries, mine in _groups(key, item_query):
        if key[queries[0]] < 0:
            continue  # no item relevant to a subtopic
        ranked = _greedy(judgments, alpha, items[mine], queries)
        r, c = np.nonzero(ranked >= 0)
        parts.append(np.stack([queries[r], c, ranked[r, c]]))
    query, position, item = np.concatenate(parts, axis=1)
    return Listed(query, position, item)


def _greedy(judgments: Judgments, alpha: float, items: np.ndarray,
            queries: np.ndarray) -> np.ndarray:
    """(len(queries), N) the greedy ideal of ``queries`` (ascending), from ``items`` (theirs,
    each relevant to a subtopic); -1 pads.

    Items with the same subtopics have the same gain at every step, so the greedy runs over
    those classes, taking a class's items in descending docno order; a class is scored from
    its own subtopics only. Each step depends on the last, so steps are a loop; each is numpy
    over the queries that still have items: queries are taken most items first, so those are
    a prefix.
    """
    n_queries = len(queries)
    n_topics = int(judgments.count[queries].max())
    member = judgments.membership[:, :n_topics][items]
    local = np.searchsorted(queries, judgments.item_query[items])
    # queries renumbered most items first: step s works on the first active[s] of them
    by_items = np.argsort(-np.bincount(local, minlength=n_queries), kind="stable")
    place = np.empty(n_queries, dtype=np.int64)
    place[by_items] = np.arange(n_queries)
    query = place[local]
    # classes: distinct (query, subtopics) rows, as bytes (the query big-endian, then the
    # subtopic bits) so that np.unique sorts them by query and compares them exactly
    key = np.hstack([query.astype(">u8").view(np.uint8).reshape(-1, 8),
                     np.packbits(member, axis=1)])
    key = np.ascontiguousarray(key).view(np.dtype((np.void, key.shape[1]))).ravel()
    first_item, of_class = np.unique(key, return_index=True, return_inverse=True)[1:]
    of_class = of_class.ravel()
    cls_query = query[first_item]
    first_class = np.searchsorted(cls_query, np.arange(n_queries + 1))
    slot = np.arange(len(first_item)) - first_class[cls_query]
    length = np.bincount(query, minlength=n_queries)  # non-increasing
    active = np.searchsorted(-length, -np.arange(length[0]), side="left")  # length > s
    width = np.maximum.accumulate(np.diff(first_class))  # classes the first k queries need
    # each class's subtopics, ascending (n_topics pads: a column of gain 0 that stays 0)
    cls, topic = np.nonzero(member[first_item])
    per_class = np.bincount(cls, minlength=len(first_item))
    nth = np.arange(len(cls)) - np.searchsorted(cls, cls)
    topics = np.full((n_queries, int(width[-1]), int(per_class.max())), n_topics,
                     dtype=np.int64)
    topics[cls_query[cls], slot[cls], nth] = topic
    rank = judgments.docno_rank[items]
    queue = items[np.lexsort((-rank, of_class))]  # by class, docno desc
    start = np.zeros(topics.shape[:2], dtype=np.int64)
    size = np.zeros_like(start)
    start[cls_query, slot] = np.searchsorted(np.sort(of_class), np.arange(len(first_item)))
    size[cls_query, slot] = np.bincount(of_class, minlength=len(first_item))
    taken = np.zeros_like(size)
    gain = np.ones((n_queries, n_topics + 1))
    gain[:, n_topics] = 0.0
    ideal = np.full((n_queries, int(length[0])), -1, dtype=np.int64)
    for step, k in enumerate(active.tolist()):  # one rank per step: each pick lowers the next
        w = int(width[k - 1])
        rows = np.arange(k)
        live = taken[:k, :w] < size[:k, :w]
        # a class's gain: its subtopics' gains added one by one in subtopic order, as ndeval
        # adds them (cumsum is a sequential sum; the padding's zeros add nothing)
        score = np.cumsum(gain[rows[:, None, None], topics[:k, :w]], axis=2)[:, :, -1]
        score = np.where(live, score, -np.inf)
        nxt = queue[np.minimum(start[:k, :w] + taken[:k, :w], len(queue) - 1)]
        best = live & (score == score.max(axis=1, keepdims=True))
        pick = np.where(best, judgments.docno_rank[nxt], -1).argmax(axis=1)
        ideal[:k, step] = nxt[rows, pick]
        taken[rows, pick] += 1
        picked = topics[rows, pick]  # (k, subtopics of a class): each once, pads at the end
        gain[rows[:, None], picked] *= 1.0 - alpha  # the pad column: 0 stays 0
    return ideal[place]


@dataclass(frozen=True)
class Scorer:
    """ndeval's 21 values of ranked lists, for one set of judgments and parameters."""

    judgments: Judgments
    alpha: float
    beta: float
    ideal: Series

    @classmethod
    def prepare(cls, judgments: Judgments, alpha: float = ALPHA, beta: float = BETA) -> Scorer:
        """Compute the greedy ideal ranking's measures once for every run to come."""
        n = len(judgments.count)
        err, dcg, nrbp = np.zeros((n, DEPTH)), np.zeros((n, DEPTH)), np.zeros(n)
        for rows, rel in _by_room(judgments, ideal_ranking(judgments, alpha)):
            err[rows], dcg[rows], nrbp[rows] = series(rel, judgments.count[rows], alpha, beta)
        return cls(judgments, alpha, beta, Series(err, dcg, nrbp))

    @property
    def undefined(self) -> np.ndarray:
        """(Q,) queries whose nNRBP is 0/0 (ideal NRBP 0): ndeval prints NaN, we print 0."""
        return self.ideal.nrbp == 0

    def evaluate(self, listed: Listed) -> np.ndarray:
        """(Q, 21) values in ndeval's column order (NAMES) of every query's ranked list."""
        out = np.zeros((len(self.judgments.count), len(NAMES)))
        for rows, rel in _by_room(self.judgments, listed):
            count = self.judgments.count[rows]
            run = series(rel, count, self.alpha, self.beta)
            mapia, p_ia, strec = intent_aware(rel, count,
                                              self.judgments.nrel[rows, :rel.shape[2]])
            ideal = Series(*(x[rows] for x in self.ideal))
            scored = run.dcg != 0
            n_err = _ratio(run.err, ideal.err, scored)
            n_dcg = _ratio(run.dcg, ideal.dcg, scored)
            n_nrbp = _ratio(run.nrbp, ideal.nrbp, ideal.nrbp != 0)
            cut = [k - 1 for k in CUTOFFS]
            out[rows] = np.column_stack([run.err[:, cut], n_err[:, cut], run.dcg[:, cut],
                                         n_dcg[:, cut], run.nrbp, n_nrbp, mapia, p_ia[:, cut],
                                         strec[:, cut]])
        return out


_ROOM_ELEMENTS = 1 << 22  # (queries, positions, subtopics) of a batch: 4M, 32 MB as int64


def _by_room(judgments: Judgments, listed: Listed
             ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """(queries, their (q, L, T) relevance) in groups of queries that need about the same
    room: positions up to the last item listed (at least DEPTH) and the query's subtopics,
    each rounded up to a power of two, so that one deep or wide query pads no other beyond
    twice its own (one topic of 3,000 subtopics made 200 topics' arrays 15 GB). Positions
    past a list's last item and subtopics past a query's count add nothing to any sum: the
    values are the one padded array's, bit for bit."""
    count = judgments.count
    length = np.full(len(count), DEPTH, dtype=np.int64)
    np.maximum.at(length, listed.query, listed.position + 1)
    key = _room(length) * 64 + _room(count)
    in_group = np.empty(len(count), dtype=np.int64)
    for group, mine in _groups(key, listed.query):
        in_group[group] = np.arange(len(group))
        mine = mine[np.argsort(in_group[listed.query[mine]], kind="stable")]
        at = in_group[listed.query[mine]]  # ascending: a batch's entries are a slice
        room = int(length[group].max()) * max(int(count[group].max()), 1)
        per = max(1, _ROOM_ELEMENTS // room)  # queries a batch: its arrays stay bounded
        for lo in range(0, len(group), per):
            rows = group[lo:lo + per]
            x, y = np.searchsorted(at, [lo, lo + per])
            lists = np.full((len(rows), int(length[rows].max())), -1, dtype=np.int64)
            lists[at[x:y] - lo, listed.position[mine[x:y]]] = listed.item[mine[x:y]]
            # the subtopic columns first: a (q, L, every T) array is the 15 GB above
            yield rows, judgments.membership[:, :int(count[rows].max())][lists]


def undefined_note(how_many: str) -> str:
    """The stderr note for nNRBP values ndeval prints as NaN (``how_many``: "2 queries")."""
    return (f"nNRBP is 0/0 for {how_many} (no relevant subtopic, or ideal NRBP 0): "
            "ndeval prints -nan, rpp prints 0")


def collection_lists(coll, r: int, member: np.ndarray) -> Listed:
    """The subtopic-relevant items run ``r`` retrieved, at their 0-based ranks."""
    rank = coll.ranks[r]
    hit = np.flatnonzero((rank > 0) & member)
    return Listed(coll.item_query[hit], rank[hit] - 1, hit)


@family("diversity")
def compute(ctx, measures: list[Measure]) -> None:
    """ndeval's measures per query and run; ``all`` is the mean over evaluated queries."""
    coll = ctx.collection
    index = require(coll, f"measure '{measures[0].name}'")
    scorer = Scorer.prepare(Judgments.from_index(index, coll.item_query, coll.item_docno))
    member = scorer.judgments.membership[:-1].any(axis=1)
    values = np.stack([scorer.evaluate(collection_lists(coll, r, member))
                       for r in range(len(coll.run_names))], axis=1)  # (Q, R, 21)
    for m in measures:
        per_query = values[:, :, NAMES.index(m.name)]
        ctx.add_metric(m.name, per_query)
    undefined = coll.on_evaluated(scorer.undefined)
    if any(m.name == "nNRBP" for m in measures) and undefined.any():
        n = int(undefined.sum())
        ctx.notes.append(undefined_note(f"{n} {'query' if n == 1 else 'queries'}"))

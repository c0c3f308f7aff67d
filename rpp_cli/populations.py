"""Populations of relevant items and their worst-case positions (contract §2-3).

A population is a group of a query's relevant items: one per distinct relevant grade λ
(the items with grade >= λ), or one per subtopic plus the background t* of all relevant items
(ST-RPP). All of a collection's populations are laid out as segments of one member array
(:class:`Populations`); :func:`worst_case_positions` gives each run's f_i(P) over them.
The subtopic index (:class:`SubtopicIndex`) also tells ndeval's measures which item is
relevant to which subtopic. This module reads a collection through :class:`Items` and imports
nothing of the collection's own, which builds on it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .errors import InputError
from .io.qrels import SubtopicQrels

# A position key is segment * _SEG + rank; unretrieved members get _UNRET, above any rank.
_UNRET = np.int64(1 << 40)
_SEG = np.int64(1 << 41)

INT64_SUMS = 1 << 62  # m x n from which mean_positions sums in Python's integers, not int64

BACKGROUND = "*"  # the label of the background population t* (``rpp levels``)


@dataclass(frozen=True)
class Populations:
    """Groups of relevant items (contract §3) laid out as segments of one member array.

    Segments are ordered by query; ``member_item`` lists each segment's items consecutively.
    """

    member_item: np.ndarray  # (L,) item index
    member_seg: np.ndarray  # (L,) segment index, non-decreasing
    seg_query: np.ndarray  # (S,) query index of each segment, non-decreasing

    @property
    def seg_size(self) -> np.ndarray:
        """(S,) number of members of each segment."""
        return np.bincount(self.member_seg, minlength=len(self.seg_query))

    @property
    def seg_starts(self) -> np.ndarray:
        """(S,) where each segment's members begin (for reduceat over segments)."""
        return np.searchsorted(self.member_seg, np.arange(len(self.seg_query)))

    @property
    def level(self) -> np.ndarray:
        """(L,) recall level i (1-based) of each member slot within its segment."""
        return np.arange(len(self.member_seg)) - self.seg_starts[self.member_seg] + 1


@dataclass(frozen=True)
class SubtopicIndex:
    """Subtopics with at least one relevant item, as segments of item indices, per query."""

    pops: Populations  # one segment per subtopic; segments of a query in subtopic order
    names: list[str]  # subtopic id of each segment
    n_queries: int

    @property
    def count(self) -> np.ndarray:
        """(Q,) number of subtopics of each query (ndeval's S)."""
        return np.bincount(self.pops.seg_query, minlength=self.n_queries)

    @property
    def local(self) -> np.ndarray:
        """(segments,) 0-based position of each subtopic within its query."""
        first = np.searchsorted(self.pops.seg_query, np.arange(self.n_queries))
        return np.arange(len(self.names)) - first[self.pops.seg_query]

    @property
    def width(self) -> int:
        """The largest number of subtopics of a query (columns of the matrices below)."""
        return int(self.count.max()) if self.n_queries else 0

    def membership(self, n_items: int) -> np.ndarray:
        """(n_items, width) bool: item i is relevant to the t-th subtopic of its query."""
        out = np.zeros((n_items, self.width), dtype=bool)
        out[self.pops.member_item, self.local[self.pops.member_seg]] = True
        return out

    def relevant_counts(self) -> np.ndarray:
        """(Q, width) number of relevant items of each subtopic (0 past a query's last)."""
        out = np.zeros((self.n_queries, self.width), dtype=np.int64)
        out[self.pops.seg_query, self.local] = self.pops.seg_size
        return out

    def kept(self, keep: np.ndarray) -> "SubtopicIndex":
        """The index over the items ``keep`` marks (a bool per item), renumbered in order: the
        others are no longer relevant to any subtopic, and a subtopic left with no relevant
        item is no longer one."""
        new_item = np.cumsum(keep) - 1
        member = keep[self.pops.member_item]
        seg = self.pops.member_seg[member]
        alive = np.bincount(seg, minlength=len(self.names)) > 0
        renumber = np.cumsum(alive) - 1
        pops = Populations(new_item[self.pops.member_item[member]], renumber[seg],
                           self.pops.seg_query[alive])
        return SubtopicIndex(pops, [n for n, a in zip(self.names, alive.tolist()) if a],
                             self.n_queries)


class Items(Protocol):
    """What populations are drawn from: a collection's items, grouped by query (the
    ``Collection`` of ``rpp_cli.collection`` is one)."""

    item_query: np.ndarray  # (I,) query index of each item, grouped by query
    item_grade: np.ndarray  # (I,) its grade in the main qrels
    subtopics: SubtopicIndex | None
    binary: bool  # the relevant items are one population, whatever their grades

    @property
    def relevant(self) -> np.ndarray:
        """(I,) bool: the item is relevant in the main qrels."""

    @property
    def item_bounds(self) -> np.ndarray:
        """(Q + 1,) offsets of each query's items."""


def graded_populations(coll: Items) -> Populations:
    """One population per distinct relevant grade λ of a query: items with grade >= λ; with
    ``coll.binary``, one of all its relevant items (pref_eval's reading of graded qrels).

    Each is the tail of the query's items in ascending grade order, gathered straight from
    that order, so memory follows the levels, not items x grades. Members come in ascending
    grade order within a population; every reader sorts their positions (or sums them)."""
    q, g = coll.item_query, coll.item_grade
    rel = coll.relevant
    if coll.binary:  # every relevant item at one grade, the others below it
        g = np.where(rel, 1.0, -np.inf)
    seg_query, seg_lambda = distinct_pairs(q[rel], g[rel])  # (query, λ), sorted
    bounds = coll.item_bounds
    grade = np.where(np.isnan(g), -np.inf, g)  # judged elsewhere only: never a member
    ascending = np.lexsort((grade, q))  # each query's items (grouped by query) by grade
    # how many of its query's items reach λ: those after the segment when segments (kind 0)
    # and items (kind 1) are sorted together by (query, value, kind)
    kinds = np.concatenate([np.zeros(len(seg_query), np.int8), np.ones(len(q), np.int8)])
    merged = np.lexsort((kinds, np.concatenate([seg_lambda, grade]),
                         np.concatenate([seg_query, q])))
    items_before = np.cumsum(kinds[merged]) - kinds[merged]  # items ahead of each position
    at = np.empty(len(merged), dtype=np.int64)
    at[merged] = np.arange(len(merged))
    segs = at[:len(seg_query)]  # each segment's place in the merged order
    end = bounds[seg_query + 1]
    size = end - items_before[segs]
    member_seg = np.repeat(np.arange(len(seg_query)), size)
    offset = np.arange(len(member_seg)) - np.repeat(np.cumsum(size) - size, size)
    member_item = ascending[np.repeat(end - size, size) + offset]
    return Populations(member_item, member_seg, seg_query)


def distinct_pairs(query: np.ndarray, grade: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct (query, grade) pairs, sorted by query then grade: what np.unique(...,
    axis=1) gives, by one lexsort (np.unique's sort of rows is many times slower)."""
    order = np.lexsort((grade, query))
    query, grade = query[order].astype(np.int64), grade[order]
    first = np.ones(len(query), dtype=bool)
    first[1:] = (query[1:] != query[:-1]) | (grade[1:] != grade[:-1])
    return query[first], grade[first]


def subtopic_key(subtopic: str) -> tuple:
    """Subtopic order: numeric ids (ASCII digits, as ndeval reads them) by value (ndeval's
    order), then other ids by bytes (``²``, ``١`` among them: str.isdigit takes them and
    int() refuses the first)."""
    if subtopic.isascii() and subtopic.isdigit():
        return (0, int(subtopic), subtopic)
    return (1, 0, subtopic.encode("utf-8", "surrogateescape"))


def relevant_docnos(sq: SubtopicQrels, qid: str) -> set[str]:
    """Docnos of a query relevant to at least one of its subtopics."""
    return set().union(*sq.relevant(qid).values())


def encode_subtopics(sq: SubtopicQrels, qids: list[str], item_query: np.ndarray,
                     item_docno: list[str], only: np.ndarray | None = None) -> SubtopicIndex:
    """Index the subtopics of ``qids`` (of the query indices ``only``, if given: the others
    get none) over items grouped by query (each relevant docno must be an item of its
    query)."""
    bounds = np.searchsorted(item_query, np.arange(len(qids) + 1)).tolist()
    member_item: list[int] = []
    member_seg: list[int] = []
    seg_query: list[int] = []
    names: list[str] = []
    for qi in range(len(qids)) if only is None else only.tolist():
        qid = qids[qi]
        lo = bounds[qi]
        index = {d: lo + k for k, d in enumerate(item_docno[lo:bounds[qi + 1]])}
        relevant = sq.relevant(qid)
        for sub in sorted(relevant, key=subtopic_key):
            member_item += [index[d] for d in relevant[sub]]
            member_seg += [len(names)] * len(relevant[sub])
            seg_query.append(qi)
            names.append(sub)
    pops = Populations(np.array(member_item, dtype=np.int64),
                       np.array(member_seg, dtype=np.int64),
                       np.array(seg_query, dtype=np.int64))
    return SubtopicIndex(pops, names, len(qids))


def require(coll: Items, what: str) -> SubtopicIndex:
    """The collection's subtopics, or an InputError naming ``what`` needs them."""
    if coll.subtopics is None:
        raise InputError(f"{what} needs subtopic qrels (--subtopics FILE)")
    return coll.subtopics


def subtopic_populations(coll: Items) -> Populations:
    """ST-RPP's populations (contract §3): each subtopic, then the background t* of all relevant
    items (grade > 0, or >= the relevance level, in the main qrels), per query."""
    return labelled_subtopic_populations(coll)[0]


def labelled_subtopic_populations(coll: Items) -> tuple[Populations, list[str]]:
    """:func:`subtopic_populations` and a label for each segment: its subtopic id, or
    :data:`BACKGROUND` for t*, so that ``rpp levels`` can name the populations it prints."""
    index = require(coll, "ST-RPP (st-rpp, st-dcgrpp, st-invrpp)")
    sub = index.pops
    rel = np.flatnonzero(coll.relevant)
    bg_query = np.unique(coll.item_query[rel])
    seg_query = np.concatenate([sub.seg_query, bg_query])
    member_item = np.concatenate([sub.member_item, rel])
    member_seg = np.concatenate([sub.member_seg, len(sub.seg_query) +
                                 np.searchsorted(bg_query, coll.item_query[rel])])
    order = np.argsort(seg_query, kind="stable")  # segments by query, background last
    renumber = np.empty_like(order)
    renumber[order] = np.arange(len(order))
    member_seg = renumber[member_seg]
    by_seg = np.argsort(member_seg, kind="stable")
    names = index.names + [BACKGROUND] * len(bg_query)
    labels = [names[s] for s in order.tolist()]
    return Populations(member_item[by_seg], member_seg[by_seg], seg_query[order]), labels


def worst_case_positions(ranks: np.ndarray, pops: Populations,
                         corpus_size: np.ndarray | None = None) -> np.ndarray:
    """f_i(P) for every run and member slot (contract §2): (R, L) int64.

    Retrieved members take their ranks in increasing order; the i-th member when the run
    missed it sits at n - m_P + i. A retrieved i-th member is never below that place (the
    items above it and the m_P - i members after it are distinct items of the corpus), but
    it can be at it: then a run that missed the member ties with the one that retrieved it
    (see :func:`positions_and_ties`). Without ``corpus_size`` n is taken as infinite, as the
    paper's reference code does.
    """
    pos, missed = _member_ranks(ranks, pops)
    return np.where(missed, np.broadcast_to(_bottom(pops, corpus_size), pos.shape), pos)


def positions_and_ties(ranks: np.ndarray, pops: Populations, corpus_size: np.ndarray | None
                       ) -> tuple[np.ndarray, np.ndarray]:
    """:func:`worst_case_positions`, and the queries (ascending) where at some member slot one
    run retrieved the member at n - m_P + i, the place a run that missed it is given, while
    another run missed it: the corpus size n ties the two there, where a larger corpus (or
    pref_eval, which ranks a missed item below every retrieved one) would prefer the run that
    retrieved it. That takes a run whose ranking holds every item of the query's corpus
    (contract §2) from that member down: a small pool, or runs that rerank one candidate list
    whose last candidate is relevant."""
    pos, missed = _member_ranks(ranks, pops)
    bottom = _bottom(pops, corpus_size)
    tied = ((pos == bottom) & ~missed).any(axis=0) & missed.any(axis=0)
    return (np.where(missed, np.broadcast_to(bottom, pos.shape), pos),
            np.unique(pops.seg_query[pops.member_seg[tied]]))


def _member_ranks(ranks: np.ndarray, pops: Populations) -> tuple[np.ndarray, np.ndarray]:
    """(R, L) each run's ranks of each population's members in increasing order, the members
    it missed last, and (R, L) which slots those are."""
    r = ranks[:, pops.member_item]
    key = np.where(r > 0, r, _UNRET) + pops.member_seg * _SEG
    key.sort(axis=1)
    pos = key - pops.member_seg * _SEG
    return pos, pos == _UNRET


def _bottom(pops: Populations, corpus_size: np.ndarray | None) -> np.ndarray:
    """(L,) n - m_P + i, the place of a missed i-th member (n infinite without a size)."""
    size = pops.seg_size[pops.member_seg]
    n = _UNRET if corpus_size is None else corpus_size[pops.seg_query[pops.member_seg]]
    return n - size + pops.level


def mean_positions(ranks: np.ndarray, pops: Populations,
                   corpus_size: np.ndarray | None = None) -> np.ndarray:
    """(R, S) the mean of :func:`worst_case_positions` over each segment, without sorting:
    a retrieved member sits at its rank, and the m - k members a run missed take the levels
    k + 1 .. m, at n - m + i, which sum to (m - k)(n - m) + (m(m + 1) - k(k + 1)) / 2. The
    sum is an exact integer, made a float and divided: the float the positions' own sum gives
    while it is under 2^53 (past it, one rounding of the sum instead of one per addition)."""
    r = ranks[:, pops.member_item]
    starts = pops.seg_starts
    k = np.add.reduceat((r > 0).astype(np.int64), starts, axis=1)
    retrieved = np.add.reduceat(r, starts, axis=1)  # a missed member's rank is 0
    m = pops.seg_size
    n = np.asarray(_UNRET if corpus_size is None else corpus_size[pops.seg_query])
    if int(m.max(initial=0)) * int(n.max(initial=0)) >= INT64_SUMS:  # millions of relevant
        retrieved, k, m, n = (a.astype(object) for a in (retrieved, k, m, n))  # exact ints
    total = retrieved + (m - k) * (n - m) + (m * (m + 1) - k * (k + 1)) // 2
    return np.asarray(total, dtype=np.float64) / np.asarray(m, dtype=np.float64)

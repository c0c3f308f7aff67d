"""Subtopics of a collection's items (contract §3): one population per subtopic, per query.

Built once from subtopic qrels for a list of queries and their items. ST-RPP takes its
populations from it (plus the background population of all relevant items), and ndeval's
diversity measures take from it which item is relevant to which subtopic.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .collection import Collection, Populations
from .errors import InputError
from .io.qrels import SubtopicQrels


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


def require(coll: Collection, what: str) -> SubtopicIndex:
    """The collection's subtopics, or an InputError naming ``what`` needs them."""
    if coll.subtopics is None:
        raise InputError(f"{what} needs subtopic qrels (--subtopics FILE)")
    return coll.subtopics


def subtopic_populations(coll: Collection) -> Populations:
    """ST-RPP's populations (contract §3): each subtopic, then the background t* of all relevant
    items (grade > 0, or >= the relevance level, in the main qrels), per query."""
    return labelled_subtopic_populations(coll)[0]


BACKGROUND = "*"  # the label of the background population t* (``rpp levels``)


def labelled_subtopic_populations(coll: Collection) -> tuple[Populations, list[str]]:
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

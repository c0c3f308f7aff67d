"""Integer-coded queries and items, rankings and worst-case positions (contract §2-3).

``encode`` joins the runs to the qrels once. Every (query, docno) the collection meets, judged
or retrieved, gets a code in one exact dictionary (bytes compared on every hit): judged ones
first, so a code below ``n_judged`` is a judgment. Every query of the qrels gets an index (trec_eval
-c's set, trec_eval order; ``evaluated`` marks those with a relevant item), every relevant item a
column, and every run a row of ranks (0 = not retrieved); the corpus size n of a query is its
number of items and retrieved codes. Runs are read and joined by a pool of threads
(the kernel releases the GIL); populations and worst-case positions are numpy on the arrays.
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .core import Column, Dictionary, column_of, rank_rows
from .core.memory import release_free_memory
from .errors import InputError, number
from .io.qrels import Qrels, SubtopicQrels, relevant, sort_qids
from .io.runs import name_runs
from .join import Coder, LoadedRun, RunRows, load_run
from .parallel import PER_RUN_THREADS, map_runs, threads_for

if TYPE_CHECKING:
    from .subtopics import SubtopicIndex

RESERVED_QID = "all"  # the qid column of the summary lines (contract §7)

# A position key is segment * _SEG + rank; unretrieved members get _UNRET, above any rank.
_UNRET = np.int64(1 << 40)
_SEG = np.int64(1 << 41)


@dataclass(frozen=True)
class Judged:
    """The judged (query, docno) codes 0..J-1 of a collection."""

    qids: list[str]  # every query of the qrels, trec_eval order
    query: np.ndarray  # (J,) query index of each code
    grade: np.ndarray  # (J,) grade in the main qrels, NaN when judged elsewhere only


@dataclass
class Collection:
    """Everything the measures need, as arrays over queries, relevant items and runs.

    With subtopic qrels the items also include those relevant to a subtopic only (see
    :attr:`relevant` for the items relevant in the main qrels).
    """

    run_names: list[str]
    qids: list[str]  # every query of the qrels (trec_eval -c's query set), trec_eval order
    evaluated: np.ndarray  # (E,) indices of the queries with a relevant item (rpp's own measures)
    item_query: np.ndarray  # (I,) query index of each relevant item, grouped by query
    item_grade: np.ndarray  # (I,) its grade
    item_names: Column  # (I,) its docno's bytes (item_docno: as text, made when asked)
    item_doc: np.ndarray  # (I,) its code in the dictionary
    ranks: np.ndarray  # (R, I) rank of each relevant item in each run, 0 = not retrieved
    runs: list[RunRows]
    judged: Judged  # the judged codes 0..J-1
    corpus_size: np.ndarray | None  # (Q,) n of each query (contract §2); None when no
    # measure asked for needs it (several runs, encoded without ``across_runs``)
    level: float | None = None
    subtopics: SubtopicIndex | None = None

    @functools.cached_property
    def item_docno(self) -> list[str]:
        """(I,) each item's docno as text: made the first time it is asked for (subtopic
        measures, ``meta``'s subsamples), not by every command (tall: 574,000 strings)."""
        return self.item_names.texts()

    @property
    def relevant(self) -> np.ndarray:
        """(I,) bool: the item is relevant in the main qrels (contract §1, with the level)."""
        return relevant(self.item_grade, self.level)

    def on_evaluated(self, values: np.ndarray) -> np.ndarray:
        """The rows of the evaluated queries of a per-query array over :attr:`qids` (a (Q, ...)
        array); an array over the evaluated queries already is returned as it is (the
        evaluated queries are a subset of all, so equal lengths mean equal sets)."""
        return values if len(values) == len(self.evaluated) else values[self.evaluated]

    def by_evaluated(self, pops: Populations) -> Populations:
        """``pops`` with each segment's query numbered among the evaluated queries (every
        population belongs to one): for kernels that give every query a value."""
        return replace(pops, seg_query=np.searchsorted(self.evaluated, pops.seg_query))

    @property
    def item_bounds(self) -> np.ndarray:
        """(Q + 1,) offsets: the items of query q are ``item_bounds[q]:item_bounds[q + 1]``."""
        return np.searchsorted(self.item_query, np.arange(len(self.qids) + 1))


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
        return np.bincount(self.member_seg, minlength=len(self.seg_query))

    @property
    def seg_starts(self) -> np.ndarray:
        """(S,) where each segment's members begin (for reduceat over segments)."""
        return np.searchsorted(self.member_seg, np.arange(len(self.seg_query)))

    @property
    def level(self) -> np.ndarray:
        """(L,) recall level i (1-based) of each member slot within its segment."""
        return np.arange(len(self.member_seg)) - self.seg_starts[self.member_seg] + 1


def graded_populations(coll: Collection) -> Populations:
    """One population per distinct relevant grade λ of a query: items with grade >= λ.

    Each is the tail of the query's items in ascending grade order, gathered straight from
    that order, so memory follows the levels: checking every item of a query against every
    grade made items x grades candidates (49M for 7,000 distinct grades, half again the
    levels). Members come in ascending grade order within a population; every reader sorts
    their positions (or sums them)."""
    q, g = coll.item_query, coll.item_grade
    rel = coll.relevant
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
    axis=1) gives, by one lexsort (15x faster on tall's 900,000 relevant items)."""
    order = np.lexsort((grade, query))
    query, grade = query[order].astype(np.int64), grade[order]
    first = np.ones(len(query), dtype=bool)
    first[1:] = (query[1:] != query[:-1]) | (grade[1:] != grade[:-1])
    return query[first], grade[first]


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


INT64_SUMS = 1 << 62  # m x n from which mean_positions sums in Python's integers, not int64


def encode(qrels: Qrels, run_paths: list[str], *, level: float | None = None,
           corpus_size: int | None = None, dedup: bool = False,
           notes: list[str] | None = None, subtopics: SubtopicQrels | None = None,
           jobs: int = 1, names: Sequence[str | None] = (), names_from: str = "file",
           max_docs: int | None = None, across_runs: bool = True,
           need_relevant: bool = True) -> Collection:
    """Read the runs and join them to the qrels: queries, relevant items, ranks
    (contract §1-2); with ``subtopics``, items relevant to a subtopic are items too. Runs are
    read and joined by ``jobs`` threads; ``max_docs`` keeps each query's top K of a run.
    Runs are named by :func:`name_runs` (``names``: --name; ``names_from``: file or tag).
    The subtopic populations themselves are the caller's to add (subtopics.encode_subtopics):
    this module does not depend on that one. Without ``across_runs`` (no measure compares
    unjudged docnos across runs), each run codes its unjudged docnos fresh, as one run does,
    and with several runs the corpus size (and --corpus-size's check) is left out.
    ``need_relevant``: no query with a relevant item is an error (rpp's own measures have
    nothing to compare); without it, trec_eval's measures score every query 0, with a note."""
    notes = notes if notes is not None else []
    release_free_memory()  # what reading the qrels freed: the runs' arrays will not reuse it
    evaluated_qids = qrels.relevant_qids(level)
    if not evaluated_qids:
        what = "no query has a relevant item" + (f" at level {number(level)}" if level else "")
        if need_relevant:
            raise InputError(what, path=qrels.path)
        at = " at that level" if level else ""
        notes.append(f"{qrels.path}: {what}: the measures of relevance{at} (map, P, recall, "
                     "...) are 0 for every run and query, as trec_eval -c prints them")
    qids = sort_qids(qrels.qids)  # trec_eval -c's query set, whatever the level
    if RESERVED_QID in qids:
        raise InputError(f"query id '{RESERVED_QID}' is reserved for the summary lines",
                         path=qrels.path)
    qpos = {q: i for i, q in enumerate(qids)}
    evaluated = np.array([qpos[q] for q in evaluated_qids], dtype=np.int64)
    docs = qrels.dictionary()  # codes 0..J-1 of the judgments, keyed by place in qids
    judged_grade = qrels.grade
    subtopic_item = None
    if subtopics is not None:  # items judged only in the subtopic qrels are judged too
        sub = subtopics.overall
        epos = {q: qpos[q] for q in evaluated_qids}  # subtopics of the evaluated queries only
        sub_q = np.array([epos.get(q, -1) for q in sub.qids], dtype=np.int64)[sub.qid]
        rows = np.flatnonzero(sub_q >= 0)
        subtopic_item = docs.add(sub.docno.take(rows), sub_q[rows])[
            subtopics.subtopic_relevant[rows]]
        judged_grade = np.concatenate((judged_grade, np.full(len(docs) - len(qrels.grade),
                                                             np.nan)))
    n_judged = len(docs)
    judged_query = docs.keys().copy()
    item_doc, item_names = _items(docs, judged_query, judged_grade, level, subtopic_item)
    item_query = judged_query[item_doc]
    item_of_doc = np.full(n_judged, -1, dtype=np.int64)
    item_of_doc[item_doc] = np.arange(len(item_doc))

    judged = Judged(qids, judged_query, judged_grade)
    readers = min(threads_for(run_paths, jobs), len(run_paths))
    per_run = max(1, min(jobs // readers, PER_RUN_THREADS))  # the cores readers leave idle
    shared = len(run_paths) > 1 and across_runs
    coder = Coder(docs, shared)
    ranks = np.zeros((len(run_paths), len(item_doc)), dtype=np.int64)

    def read(r: int) -> tuple[LoadedRun, float | None]:
        """Run r read and joined, its items' ranks in ranks[r] (in the reading threads)."""
        run = load_run(r, len(run_paths), run_paths[r], qpos, coder, dedup, qrels.path,
                       max_docs, per_run)
        return run, _place_items(run.rows, len(qids), n_judged, item_of_doc, ranks[r])

    read_runs = map_runs(read, len(run_paths), readers, label="reading runs")
    loaded = [run for run, _ in read_runs]
    run_names = name_runs(loaded, names, names_from)
    for (run, judged_top), name in zip(read_runs, run_names):
        unjudged, missing = run.unjudged, run.missing
        notes.extend(_judged_notes(name, judged_top))
        if unjudged:
            notes.append(f"{name}: {counted(unjudged, 'query', 'queries')} not in the qrels, "
                         "ignored")
        if run.repeats:
            notes.append(f"{run.path}: {counted(run.repeats, 'repeated docno', 'repeated docnos')}"
                         " dropped, kept the best-scored copy of each")
        if missing:
            shown = ", ".join(qids[q] for q in missing[:5]) + (" ..." if len(missing) > 5 else "")
            notes.append(f"{name}: {counted(len(missing), 'judged query', 'judged queries')} "
                         f"not in the run, scored as empty rankings as trec_eval -c does "
                         f"({shown}); if they should not count, leave them out of the qrels")
    union = None  # the distinct items of each query, over every run: codes must be shared
    if shared or len(run_paths) == 1:
        union = corpus_sizes(coder.code_query(), [run.rows.doc for run in loaded], item_doc,
                             len(qids))
    del docs  # the dictionary's work is done: what it held goes back to the system
    coder = None  # (it holds the dictionary)
    release_free_memory()
    if corpus_size is not None and union is not None and (union > corpus_size).any():
        q = int(np.argmax(union > corpus_size))
        raise InputError(f"--corpus-size {corpus_size} is smaller than the {union[q]} "
                         f"distinct items of query {qids[q]}")
    return Collection(run_names, qids, evaluated, item_query,
                      _item_grades(judged_grade, item_doc),
                      item_names, item_doc, ranks, [run.rows for run in loaded],
                      judged,
                      union if corpus_size is None else np.full(len(qids), corpus_size,
                                                                  dtype=np.int64), level)


def corpus_sizes(code_query: list[np.ndarray], run_docs: list[np.ndarray],
                 item_doc: np.ndarray, n_queries: int) -> np.ndarray:
    """(Q,) default corpus size n (contract §2, paper §5.5): the distinct items of each query
    in the union of every run's ranking (after -M) and its relevant items (the items), from
    their codes (dense, one per (query, docno); the arrays of ``code_query`` give each code's
    query, one after the other): a mark per code, so the cost is one pass over the rows (no
    sort, no copy of them)."""
    seen = np.zeros(sum(len(keys) for keys in code_query), dtype=bool)
    for docs in (*run_docs, item_doc):
        seen[docs] = True
    sizes, start = np.zeros(n_queries, dtype=np.int64), 0
    for keys in code_query:
        for lo in range(0, len(keys), COUNT_CHUNK):  # bincount copies its input as int64
            part = keys[lo:lo + COUNT_CHUNK]
            sizes += np.bincount(part[seen[start + lo:start + lo + len(part)]],
                                 minlength=n_queries)
        start += len(keys)
    return sizes


COUNT_CHUNK = 1 << 22  # codes counted at once by corpus_sizes


def _place_items(rows: RunRows, n_queries: int, n_judged: int, item_of_doc: np.ndarray,
                 ranks: np.ndarray) -> float | None:
    """Set ``ranks`` (one run's row of the items' ranks) from the run's judged rows, and
    return the judged share of its top 10 (mean over queries; None when it retrieved no
    judged docno), for :func:`_judged_notes`."""
    counts = np.diff(rows.bounds(n_queries))
    hit = np.flatnonzero(rows.doc < n_judged)  # the judged rows: few, in most runs
    query = rows.qidx[hit]
    rank = hit - (np.cumsum(counts) - counts)[query] + 1
    item = item_of_doc[rows.doc[hit]]
    ranks[item[item >= 0]] = rank[item >= 0]
    if len(query) == 0:
        return None
    shown = np.minimum(counts, 10)
    top = np.bincount(query[rank <= 10], minlength=len(counts))
    return float((top[shown > 0] / shown[shown > 0]).mean())


def _judged_notes(name: str, judged_top: float | None) -> list[str]:
    """A warning when nothing a run retrieved is judged (document qrels with passage runs?),
    a note when under half of its top 10 is: its scores then say little. Each says what to do.
    ``judged_top``: the judged share of its top 10 (see :func:`_place_items`)."""
    if judged_top is None:
        return [f"{name}: none of the docnos it retrieved is judged, so it scores 0: check that "
                "the run and the qrels use the same document ids (documents or passages?)"]
    if judged_top < 0.5:
        return [f"{name}: only {judged_top:.0%} of its top 10 is judged (mean over queries); "
                "unjudged documents count as non-relevant, so its scores are likely too low: "
                "judge its top documents, or also read -m bpref, which ignores them"]
    return []


def _item_grades(judged_grade: np.ndarray, item_doc: np.ndarray) -> np.ndarray:
    """Main-qrels grade of each item; 0 for items judged in the subtopic qrels only."""
    return np.nan_to_num(judged_grade[item_doc], nan=0.0)


def _items(docs: Dictionary, judged_query: np.ndarray, judged_grade: np.ndarray,
           level: float | None, subtopic_item: np.ndarray | None) -> tuple[np.ndarray, Column]:
    """Codes of the items, and their docnos' bytes: judged relevant in the main qrels (or
    relevant to a subtopic), grouped by query and, within one, in byte order of the docno."""
    is_item = relevant(np.nan_to_num(judged_grade, nan=0.0), level)
    if subtopic_item is not None:
        is_item[subtopic_item] = True
    codes = np.flatnonzero(is_item)
    query = judged_query[codes]
    names = column_of(docs.strings(codes))
    order = rank_rows(names, query, np.zeros(len(codes)),
                      int(query.max(initial=-1)) + 1)[::-1]  # by query, docno ascending
    pick = order[np.argsort(query[order], kind="stable")]
    return codes[pick], names.take(pick)


def counted(n: int, one: str, many: str) -> str:
    """``n`` and the noun in its number: "1 query", "3 queries"."""
    return f"{n} {one if n == 1 else many}"



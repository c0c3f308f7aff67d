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

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from .core import Column, Dictionary, column_of, group_positions, rank_rows
from .core.memory import release_free_memory
from .errors import InputError
from .io.qrels import Qrels, SubtopicQrels, relevant, sort_qids, to_text
from .io.runs import name_runs, read_run
from .parallel import PER_RUN_THREADS, map_runs, threads_for

if TYPE_CHECKING:
    from .subtopics import SubtopicIndex

RESERVED_QID = "all"  # the qid column of the summary lines (contract §7)

# A position key is segment * _SEG + rank; unretrieved members get _UNRET, above any rank.
_UNRET = np.int64(1 << 40)
_SEG = np.int64(1 << 41)


@dataclass
class RunRows:
    """The rows of one run that the evaluation uses (queries of the qrels, duplicates resolved),
    in ranking order: by query, then score desc, docno desc. No docno text is kept: ``doc``
    codes identify them exactly."""

    qidx: np.ndarray  # int32 query index of each row (non-decreasing)
    doc: np.ndarray  # code of the (query, docno) in the collection's dictionary (int32
    # while the codes fit, 4 bytes a kept row: see _narrow)
    trec_doc: np.ndarray | None  # the codes in trec_eval's order (C-float scores; its top K
    # with -M K), when that differs from ``doc``; a query has as many rows in both
    tied: np.ndarray | None = None  # (rows,) bool: same score as the row above in its query
    # (None: no two rows tie); ir_measures' providers order such rows by docno ascending

    @property
    def rank(self) -> np.ndarray:
        """1-based rank of each row within its query."""
        return group_positions(self.qidx) + 1


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
    item_docno: list[str]  # (I,) its docno
    item_doc: np.ndarray  # (I,) its code in the dictionary
    ranks: np.ndarray  # (R, I) rank of each relevant item in each run, 0 = not retrieved
    runs: list[RunRows]
    judged: Judged  # the judged codes 0..J-1
    corpus_size: np.ndarray  # (Q,) n of each query (contract §2)
    level: float | None = None
    subtopics: SubtopicIndex | None = None

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
    def level(self) -> np.ndarray:
        """(L,) recall level i (1-based) of each member slot within its segment."""
        starts = np.searchsorted(self.member_seg, np.arange(len(self.seg_query)))
        return np.arange(len(self.member_seg)) - starts[self.member_seg] + 1


def graded_populations(coll: Collection) -> Populations:
    """One population per distinct relevant grade λ of a query: items with grade >= λ."""
    q, g = coll.item_query, coll.item_grade
    rel = coll.relevant
    pairs = np.unique(np.stack([q[rel].astype(np.float64), g[rel]]), axis=1)  # (query, λ)
    seg_query = pairs[0].astype(np.int64)
    seg_lambda = pairs[1]
    bounds = coll.item_bounds
    # every item of a segment's query is a candidate; the ones with grade >= λ are members
    width = bounds[seg_query + 1] - bounds[seg_query]
    cand_seg = np.repeat(np.arange(len(seg_query)), width)
    offset = np.arange(len(cand_seg)) - np.repeat(np.cumsum(width) - width, width)
    candidate = bounds[seg_query][cand_seg] + offset
    keep = g[candidate] >= seg_lambda[cand_seg]
    member_item, member_seg = candidate[keep], cand_seg[keep]
    return Populations(member_item, member_seg, seg_query)


def worst_case_positions(ranks: np.ndarray, pops: Populations,
                         corpus_size: np.ndarray | None = None) -> np.ndarray:
    """f_i(P) for every run and member slot (contract §2): (R, L) int64.

    Retrieved members take their ranks in increasing order; the i-th member when the run
    missed it sits at n - m_P + i. With a small n a missed item can tie with or beat an item
    another run retrieved deep down (a run of depth 1 puts its missed items at n); without
    ``corpus_size`` n is taken as infinite, as the paper's reference code does.
    """
    r = ranks[:, pops.member_item]
    key = np.where(r > 0, r, _UNRET) + pops.member_seg * _SEG
    key.sort(axis=1)
    pos = key - pops.member_seg * _SEG
    missed = pos == _UNRET
    size = pops.seg_size[pops.member_seg]
    n = _UNRET if corpus_size is None else corpus_size[pops.seg_query[pops.member_seg]]
    bottom = np.broadcast_to(n - size + pops.level, pos.shape)
    return np.where(missed, bottom, pos)


def encode(qrels: Qrels, run_paths: list[str], *, level: float | None = None,
           corpus_size: int | None = None, dedup: bool = False,
           notes: list[str] | None = None, subtopics: SubtopicQrels | None = None,
           jobs: int = 1, names: Sequence[str | None] = (), names_from: str = "file",
           max_docs: int | None = None) -> Collection:
    """Read the runs and join them to the qrels: queries, relevant items, ranks
    (contract §1-2); with ``subtopics``, items relevant to a subtopic are items too. Runs are
    read and joined by ``jobs`` threads; ``max_docs`` keeps each query's top K of a run.
    Runs are named by :func:`name_runs` (``names``: --name; ``names_from``: file or tag).
    The subtopic populations themselves are the caller's to add (subtopics.encode_subtopics):
    this module does not depend on that one."""
    notes = notes if notes is not None else []
    release_free_memory()  # what reading the qrels freed: the runs' arrays will not reuse it
    evaluated_qids = qrels.relevant_qids(level)
    if not evaluated_qids:
        raise InputError("no query has a relevant item" + (f" at level {level:g}" if level else ""),
                         path=qrels.path)
    qids = sort_qids(qrels.qids)  # trec_eval -c's query set, whatever the level
    if RESERVED_QID in qids:
        raise InputError(f"query id '{RESERVED_QID}' is reserved for the summary lines",
                         path=qrels.path)
    qpos = {q: i for i, q in enumerate(qids)}
    evaluated = np.array([qpos[q] for q in evaluated_qids], dtype=np.int64)
    docs = Dictionary(len(qids))
    main_q = np.array([qpos[q] for q in qrels.qids], dtype=np.int64)[qrels.qid]
    docs.add(qrels.docno, main_q)  # codes 0..J-1, in this order
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
    item_doc = _items(docs, judged_query, judged_grade, level, subtopic_item)
    item_query = judged_query[item_doc]
    item_docno = [to_text(d) for d in docs.strings(item_doc)]
    item_of_doc = np.full(n_judged, -1, dtype=np.int64)
    item_of_doc[item_doc] = np.arange(len(item_doc))

    judged = Judged(qids, judged_query, judged_grade)
    readers = min(threads_for(run_paths, jobs), len(run_paths))
    per_run = max(1, min(jobs // readers, PER_RUN_THREADS))  # the cores readers leave idle
    loaded = map_runs(lambda r: _load_run(r, run_paths[r], qpos, docs, dedup,
                                          qrels.path, max_docs, per_run),
                      len(run_paths), readers, label="reading runs")
    run_names = name_runs(loaded, names, names_from)
    ranks = np.zeros((len(loaded), len(item_doc)), dtype=np.int64)
    for r, (run, name) in enumerate(zip(loaded, run_names)):
        rows, unjudged, missing = run.rows, run.unjudged, run.missing
        hit = rows.doc < n_judged
        rank = rows.rank
        item = item_of_doc[rows.doc[hit]]
        ranks[r, item[item >= 0]] = rank[hit][item >= 0]
        notes.extend(_judged_notes(name, rows.qidx, rank, hit, len(qids)))
        if unjudged:
            notes.append(f"{name}: {_count(unjudged, 'query', 'queries')} not in the qrels, "
                         "ignored")
        notes.extend(run.notes)
        if missing:
            shown = ", ".join(qids[q] for q in missing[:5]) + (" ..." if len(missing) > 5 else "")
            notes.append(f"{name}: {_count(len(missing), 'judged query', 'judged queries')} "
                         f"not in the run, scored as empty rankings as trec_eval -c does "
                         f"({shown}); if they should not count, leave them out of the qrels")
    union = corpus_sizes(docs.keys(), [run.rows.doc for run in loaded], item_doc, len(qids))
    del docs  # the dictionary's work is done: what it held goes back to the system
    release_free_memory()
    if corpus_size is not None and (union > corpus_size).any():
        q = int(np.argmax(union > corpus_size))
        raise InputError(f"--corpus-size {corpus_size} is smaller than the {union[q]} "
                         f"distinct items of query {qids[q]}")
    return Collection(run_names, qids, evaluated, item_query,
                      _item_grades(judged_grade, item_doc),
                      item_docno, item_doc, ranks, [run.rows for run in loaded],
                      judged,
                      union if corpus_size is None else np.full(len(qids), corpus_size,
                                                                  dtype=np.int64), level)


def corpus_sizes(code_query: np.ndarray, run_docs: list[np.ndarray], item_doc: np.ndarray,
                 n_queries: int) -> np.ndarray:
    """(Q,) default corpus size n (contract §2, paper §5.5): the distinct items of each query
    in the union of every run's ranking (after -M) and its relevant items (the items), from
    their codes (dense, one per (query, docno); ``code_query`` gives each code's query): a
    mark per code, so the cost is one pass over the rows (no sort, no copy of them)."""
    seen = np.zeros(len(code_query), dtype=bool)
    for docs in (*run_docs, item_doc):
        seen[docs] = True
    return np.bincount(code_query[seen], minlength=n_queries).astype(np.int64)


def _judged_notes(name: str, query: np.ndarray, rank: np.ndarray, judged: np.ndarray,
                  n_queries: int) -> list[str]:
    """A warning when nothing a run retrieved is judged (document qrels with passage runs?),
    a note when under half of its top 10 is: its scores then say little. Each says what to do."""
    if not judged.any():
        return [f"{name}: none of the docnos it retrieved is judged, so it scores 0: check that "
                "the run and the qrels use the same document ids (documents or passages?)"]
    top = rank <= 10
    shown = np.bincount(query[top], minlength=n_queries)
    fraction = np.bincount(query[top & judged], minlength=n_queries)[shown > 0] / shown[shown > 0]
    if fraction.mean() < 0.5:
        return [f"{name}: only {fraction.mean():.0%} of its top 10 is judged (mean over queries); "
                "unjudged documents count as non-relevant, so its scores are likely too low: "
                "judge its top documents, or also read -m bpref, which ignores them"]
    return []


def _item_grades(judged_grade: np.ndarray, item_doc: np.ndarray) -> np.ndarray:
    """Main-qrels grade of each item; 0 for items judged in the subtopic qrels only."""
    return np.nan_to_num(judged_grade[item_doc], nan=0.0)


def _items(docs: Dictionary, judged_query: np.ndarray, judged_grade: np.ndarray,
           level: float | None, subtopic_item: np.ndarray | None) -> np.ndarray:
    """Codes of the items: judged relevant in the main qrels (or relevant to a subtopic),
    grouped by query and, within one, in byte order of the docno."""
    is_item = relevant(np.nan_to_num(judged_grade, nan=0.0), level)
    if subtopic_item is not None:
        is_item[subtopic_item] = True
    codes = np.flatnonzero(is_item)
    query = judged_query[codes]
    order = rank_rows(column_of(docs.strings(codes)), query, np.zeros(len(codes)),
                      int(query.max(initial=-1)) + 1)  # by query, docno descending
    return codes[order][::-1][np.argsort(query[order][::-1], kind="stable")]


@dataclass
class LoadedRun:
    """What reading and joining one run file leaves: its name sources and its rows."""

    path: str
    tag: str | None
    rows: RunRows
    notes: list[str]
    unjudged: int  # queries of the run the qrels do not judge
    missing: list[int]  # queries of the qrels the run has no line for


def _load_run(r: int, path: str, qpos: dict[str, int], docs: Dictionary, dedup: bool,
               qrels_path: str, max_docs: int | None, threads: int = 1) -> LoadedRun:
    """Read one run and join it: rows of the qrels' queries, duplicates resolved, ranked, cut
    to ``max_docs`` per query, each (query, docno) coded in ``docs`` (shared by all runs; safe
    from several threads). ``threads``: the cores the other readers leave idle, which split
    the file's windows and code its rows side by side."""
    run = read_run(path, threads=threads)
    texts = [to_text(q) for q in run.qid_values]
    unjudged = sum(q not in qpos for q in texts)  # qpos: every query of the qrels
    query = run.per_row(np.array([qpos.get(q, -1) for q in texts], dtype=np.int64))
    keep = query >= 0
    if not keep.any():
        raise InputError(f"shares no query with the qrels ({qrels_path})", path=run.path)
    path, tag, line_of = run.path, run.tag, run.docno_line()
    docno, score = run.docno, run.score
    del run  # what is held from here on is named: each array is replaced as it is reordered
    if not keep.all():
        rows = np.flatnonzero(keep)  # file rows of the qrels' queries
        docno, score, query = docno.take(rows), score[rows], query[rows]
        del rows
    del keep
    order = rank_rows(docno, query, score, len(qpos))
    tied, trec = _ties_and_trec_order(docno, query, score, order, len(qpos))
    counts = np.bincount(query, minlength=len(qpos))
    del score, query  # the ranking is all that is needed of them: never copied in its order
    data, starts, lens = docno.data, docno.starts, docno.lens
    del docno  # one column at a time: a reordered copy replaces its file-order one
    starts = starts[order]
    lens = lens[order]
    docno = Column(data, starts, lens)
    del data, starts, lens, order
    query = np.repeat(np.arange(len(qpos), dtype=np.int64), counts)  # ranked: by query
    code, repeat = docs.add_batch(docno, query, r, threads)
    notes: list[str] = []
    if repeat.any():
        _resolve_duplicates(path, docno, line_of, list(qpos), query, code, repeat, dedup,
                            notes)
        trec, tied = _without(~repeat, trec, tied)
        query, code = query[~repeat], code[~repeat]
    del docno
    code = _narrow(code)
    trec_doc = None if trec is None else code[trec]
    if max_docs is not None:  # -M K: each query's top K in either order, as trec_eval's -M
        keep = group_positions(query) < max_docs  # the same rows of a query in both orders
        query, code, tied = query[keep], code[keep], tied[keep]
        if trec_doc is not None:
            trec_doc = trec_doc[keep]
            trec_doc = None if (trec_doc == code).all() else trec_doc
    rows_out = RunRows(query.astype(np.int32), code, trec_doc, tied if tied.any() else None)
    present = np.zeros(len(qpos), dtype=bool)
    present[query] = True
    return LoadedRun(path, tag, rows_out, notes, unjudged, np.flatnonzero(~present).tolist())


TIE_CHUNK = 1 << 20  # ranked rows compared at once by _ties_and_trec_order


def _ties_and_trec_order(docno: Column, query: np.ndarray, score: np.ndarray,
                         order: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray | None]:
    """For rows in file order and their ranking ``order`` (rank_rows): which ranked row has
    the same score as the row above in its query, and trec_eval's order of the ranked rows
    (scores cast to C float, where that ties scores that differ the docno decides), or None
    when it is the ranking itself. The ranking is walked a chunk at a time, so no ranked copy
    of the scores is made."""
    n = len(order)
    tied = np.zeros(n, dtype=bool)
    differs = False
    for lo in range(1, n, TIE_CHUNK):
        rows = order[lo - 1:lo + TIE_CHUNK]
        q, s = query[rows], score[rows]
        same = q[1:] == q[:-1]
        equal = same & (s[1:] == s[:-1])
        tied[lo:lo + len(equal)] = equal
        with np.errstate(over="ignore"):
            single = s.astype(np.float32)
        differs = differs or bool((same & (single[1:] == single[:-1]) & ~equal).any())
    if not differs:
        return tied, None
    with np.errstate(over="ignore"):
        single = score.astype(np.float32).astype(np.float64)
    ranked_at = np.empty(n, dtype=np.int64)  # file row -> its place in the ranking
    ranked_at[order] = np.arange(n)
    return tied, ranked_at[rank_rows(docno, query, single, n_queries)]


def _narrow(codes: np.ndarray) -> np.ndarray:
    """Dictionary codes (>= 0) as int32 when they all fit, else as they are: a run keeps one
    per row, so this halves them (index arrays of either type select the same elements)."""
    return codes.astype(np.int32) if codes.max(initial=0) < 1 << 31 else codes


def _without(kept: np.ndarray, trec: np.ndarray | None, tied: np.ndarray
             ) -> tuple[np.ndarray | None, np.ndarray]:
    """``trec`` (an order of the ranked rows, or None) and ``tied`` of the rows ``kept`` alone,
    as :func:`_ties_and_trec_order` would give them, without their scores: an order
    restricted to a subset is the subset's order (a strict order: rows break ties), and tied
    rows are stretches of one score within a query, so two kept rows tie when one stretch
    holds both."""
    stretch = np.cumsum(~tied)[kept]
    tied = np.concatenate(([False], stretch[1:] == stretch[:-1]))
    if trec is None:
        return None, tied
    renumber = np.cumsum(kept) - 1
    trec = renumber[trec[kept[trec]]]
    return (None if (trec == np.arange(len(trec))).all() else trec), tied


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _resolve_duplicates(path: str, docno: Column, line_of: Callable[[int], int],
                        qids: list[str], query: np.ndarray, code: np.ndarray,
                        repeat: np.ndarray, dedup: bool, notes: list[str]) -> None:
    """Ranked rows whose (query, docno) ``code`` repeats (``repeat``: not its first row in
    ranking order): an error at the first repeat in file order, or with ``dedup`` a note (the
    caller keeps the best-scored copy: the first in ranking order, the earliest line among
    equal scores). Lines are found from the docnos' offsets (``line_of``)."""
    if not dedup:
        repeated = np.flatnonzero(np.isin(code, code[repeat]))
        seen: set[int] = set()
        for i in repeated[np.argsort(docno.starts[repeated])].tolist():  # in file order
            if int(code[i]) in seen:
                break  # the first line that repeats an earlier one
            seen.add(int(code[i]))
        early = int(docno.starts[code == code[i]].min())
        raise InputError(f"docno '{docno.text(i)}' repeated in query {qids[query[i]]} "
                         f"(first at line {line_of(early)}); use --dedup to keep "
                         "the best-scored copy", path, line_of(int(docno.starts[i])))
    notes.append(f"{path}: {_count(int(repeat.sum()), 'repeated docno', 'repeated docnos')}"
                 " dropped, kept the best-scored copy of each")

"""Integer-coded queries and items, and the runs' ranks of the items (contract §1-2).

``encode`` joins the runs to the qrels once. Every (query, docno) the collection meets, judged
or retrieved, gets a code in one exact dictionary (bytes compared on every hit): judged ones
first, so a code below ``n_judged`` is a judgment. Every query of the qrels gets an index (trec_eval
-c's set, trec_eval order; ``evaluated`` marks those with a relevant item), every relevant item a
column, and every run a row of ranks (0 = not retrieved); the corpus size n of a query is its
number of items and retrieved codes. Runs are read and joined by a pool of threads (the kernel
releases the GIL) while one more finds the items. The populations over the items and their
worst-case positions are :mod:`rpp_cli.populations`'s.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from .core import Column, rank_rows
from .memory import release_free_memory
from .errors import InputError, number
from .io.judged import JudgedIndex
from .io.qrels import Qrels, SubtopicQrels, relevant, sort_qids
from .io.runs import name_runs
from .join import Coder, LoadedRun, QueryPlaces, RunRows, load_run
from .engine.threads import map_ordered, pool, runs_beside
from .io.budget import PER_RUN_THREADS, threads_for
from .populations import Populations, SubtopicIndex, encode_subtopics
from .settings import LATEST_TREC_EVAL, Options, trec_eval_release

RESERVED_QID = "all"  # the qid column of the summary lines (contract §7)


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
    subtopics: SubtopicIndex | None = None  # with subtopic qrels: their index over the items
    trec_eval: str = LATEST_TREC_EVAL  # the trec_eval release trec_eval's measures follow
    binary: bool = False  # --binary: one population of a query's relevant items (pref_eval's)

    @functools.cached_property
    def item_docno(self) -> list[str]:
        """(I,) each item's docno as text: made the first time it is asked for (subtopic
        measures, ``meta``'s subsamples), not by every command (a string per relevant item)."""
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


def encode(qrels: Qrels, run_paths: list[str], options: Options = Options(),
           notes: list[str] | None = None, subtopics: SubtopicQrels | None = None, *,
           across_runs: bool = True, need_relevant: bool = True) -> Collection:
    """Read the runs and join them to the qrels: queries, relevant items, ranks
    (contract §1-2), as ``options`` say (level, corpus size, --dedup, -M, run names, and
    ``jobs``: the threads that read and join the runs). ``subtopics`` (the subtopic qrels
    ``options.subtopics`` names, read): items relevant to a subtopic are items too, and the
    collection's subtopic index covers the evaluated queries. Without ``across_runs`` (no
    measure compares unjudged docnos across runs), each run codes its unjudged docnos fresh,
    as one run does, and with several runs the corpus size (and --corpus-size's check) is
    left out. ``need_relevant``: no query with a relevant item is an error (rpp's own
    measures have nothing to compare); without it, trec_eval's measures score every query 0,
    with a note."""
    notes = notes if notes is not None else []
    level, corpus_size, jobs = options.level, options.corpus_size, options.jobs
    release = trec_eval_release(options.trec_eval)
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
    judged_grade, qrels_path, graded = qrels.grade, qrels.path, len(qrels.grade)
    del qrels  # the judgments' docnos live on in ``docs`` alone, unless the caller holds them
    subtopic_item = None
    if subtopics is not None:  # items judged only in the subtopic qrels are judged too
        sub = subtopics.overall
        epos = {q: qpos[q] for q in evaluated_qids}  # subtopics of the evaluated queries only
        sub_q = np.array([epos.get(q, -1) for q in sub.qids], dtype=np.int64)[sub.qid]
        rows = np.flatnonzero(sub_q >= 0)
        subtopic_item = docs.add(sub.docno.take(rows), sub_q[rows])[
            subtopics.subtopic_relevant[rows]]
        judged_grade = np.concatenate((judged_grade, np.full(len(docs) - graded,
                                                             np.nan)))
    n_judged = len(docs)
    judged_query = docs.keys()  # an array of its own
    judged = Judged(qids, judged_query, judged_grade)
    readers = min(threads_for(run_paths, jobs), len(run_paths))
    per_run = _threads_per_run(len(run_paths), readers, jobs)
    shared = len(run_paths) > 1 and across_runs
    coder = Coder(docs, shared)

    def prepare() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The items' codes, the item of each judged code (-1: none) and the runs' rows of
        ranks: found beside the readers, which need them once a run is joined."""
        item_doc = _items(docs, judged_query, judged_grade, level, subtopic_item)
        item_of_doc = np.full(n_judged, -1,
                              dtype=np.int32 if len(item_doc) < 1 << 31 else np.int64)
        item_of_doc[item_doc] = np.arange(len(item_doc))
        return item_doc, item_of_doc, np.zeros((len(run_paths), len(item_doc)), dtype=np.int64)

    def read(r: int) -> tuple[LoadedRun, float | None]:
        """Run r read and joined, its items' ranks in ranks[r] (in the reading threads)."""
        run = load_run(r, len(run_paths), run_paths[r], queries, coder, options.dedup,
                       qrels_path, options.max_docs, per_run[r])
        _, item_of_doc, ranks = items.result()
        return run, _place_items(run.rows, len(qids), n_judged, item_of_doc, ranks[r])

    queries = QueryPlaces(qids)
    # beside the readers: the items, the dictionary's next chunks when runs share it, then the
    # corpus sizes (-j 1: each call first, in this thread)
    with pool(2 if jobs > 1 else 0, "rpp-encode") as beside:
        items = beside.submit(prepare)
        if shared and runs_beside(beside):
            docs.build_ahead(beside)
        try:
            read_runs = map_ordered(read, len(run_paths), readers, label="reading runs")
        finally:
            docs.build_ahead(None)
        item_doc, item_of_doc, ranks = items.result()
        items = item_of_doc = None  # (one entry a judgment: let go once the runs are placed)
        item_query = judged_query[item_doc]
        release_free_memory()  # what the runs' joins freed: what follows would not reuse it all
        loaded = [run for run, _ in read_runs]
        run_names = name_runs(loaded, options.names, options.names_from)
        notes.extend(_run_notes([(run, name, top) for (run, top), name
                                 in zip(read_runs, run_names)], qids))
        # the distinct items of each query, over every run (codes must be shared), counted
        # while this thread gathers the items' docnos (not before: the reading peaks without)
        counted = beside.submit(corpus_sizes, coder.code_query(),
                                [run.rows.doc for run in loaded], item_doc, len(qids)) \
            if shared or len(run_paths) == 1 else None
        item_names = docs.column(item_doc)
    union = None if counted is None else counted.result()
    del docs  # the dictionary's work is done: what it held goes back to the system
    coder = None  # (it holds the dictionary)
    release_free_memory()
    if corpus_size is not None and union is not None and (union > corpus_size).any():
        q = int(np.argmax(union > corpus_size))
        raise InputError(f"--corpus-size {corpus_size} is smaller than the {union[q]} "
                         f"distinct items of query {qids[q]}")
    coll = Collection(run_names, qids, evaluated, item_query,
                      _item_grades(judged_grade, item_doc),
                      item_names, item_doc, ranks, [run.rows for run in loaded],
                      judged,
                      union if corpus_size is None else np.full(len(qids), corpus_size,
                                                                  dtype=np.int64), level,
                      trec_eval=release, binary=options.binary)
    if subtopics is not None:  # indexed over the items' docnos, made (and kept) here
        coll.subtopics = encode_subtopics(subtopics, qids, item_query, coll.item_docno,
                                          evaluated)
    return coll


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


COUNT_CHUNK = 1 << 20  # codes counted at once by corpus_sizes
ITEM_BLOCK = 1 << 18  # items whose docnos _items ranks at once (whole queries)


def _place_items(rows: RunRows, n_queries: int, n_judged: int, item_of_doc: np.ndarray,
                 ranks: np.ndarray) -> float | None:
    """Set ``ranks`` (one run's row of the items' ranks) from the run's judged rows, and
    return the judged share of its top 10 (mean over queries; None when it retrieved no
    judged docno), for :func:`_judged_notes`."""
    bounds = rows.bounds(n_queries)
    counts = np.diff(bounds)
    hit = np.flatnonzero(rows.doc < n_judged)  # the judged rows: few, in most runs
    query = np.searchsorted(bounds, hit, side="right") - 1
    rank = hit - bounds[query] + 1
    item = item_of_doc[rows.doc[hit]]
    ranks[item[item >= 0]] = rank[item >= 0]
    if len(query) == 0:
        return None
    shown = np.minimum(counts, 10)
    top = np.bincount(query[rank <= 10], minlength=len(counts))
    return float((top[shown > 0] / shown[shown > 0]).mean())


def _run_notes(read: list[tuple[LoadedRun, str, float | None]], qids: list[str]) -> list[str]:
    """The notes on the runs read (each run, its name and the judged share of its top 10):
    one note per kind naming the runs it concerns (:func:`_judged_notes`; queries not in the
    qrels; judged queries a run lacks), and one per run file with repeated docnos dropped."""
    notes = _judged_notes([(name, top) for _, name, top in read])
    unjudged = [f"{run.unjudged} of {name}" for run, name, _ in read if run.unjudged]
    if unjudged:
        notes.append(f"queries not in the qrels, ignored: {', '.join(unjudged)}")
    notes.extend(f"{run.path}: {counted(run.repeats, 'repeated docno', 'repeated docnos')}"
                 " dropped, kept the best-scored copy of each" for run, _, _ in read if run.repeats)
    lacking = [f"{len(run.missing)} of {name} ({_listed(qids, run.missing)})"
               for run, name, _ in read if run.missing]
    if lacking:
        notes.append("judged queries not in the run, scored as empty rankings as trec_eval -c "
                     f"does: {'; '.join(lacking)}; if they should not count, leave them out of "
                     "the qrels")
    return notes


def _listed(qids: list[str], missing: list[int]) -> str:
    """The first five queries of ``missing`` (indices into ``qids``), "..." after them."""
    return ", ".join(qids[q] for q in missing[:5]) + (" ..." if len(missing) > 5 else "")


def _judged_notes(shares: list[tuple[str, float | None]]) -> list[str]:
    """A warning naming the runs of which nothing retrieved is judged (document qrels with
    passage runs?), a note naming those with under half of their top 10 judged, with their
    exact shares: their scores then say little. Each says what to do. ``shares``: each run's
    name and the judged share of its top 10 (see :func:`_place_items`)."""
    notes = []
    none = [name for name, top in shares if top is None]
    if none:
        notes.append(f"nothing retrieved is judged, so the run scores 0: {', '.join(none)}; "
                     "check that the runs and the qrels use the same document ids (documents "
                     "or passages?)")
    low = [f"{name} {top:.1%}" for name, top in shares if top is not None and top < 0.5]
    if low:
        notes.append(f"under half of the top 10 judged (mean over queries): {', '.join(low)}; "
                     "unjudged documents count as non-relevant, so these scores are likely too "
                     "low: read -m Judged@10 (per query with -q), -m bpref (which ignores "
                     "unjudged documents), or cut the rankings to the judged depth with -M")
    return notes


def _item_grades(judged_grade: np.ndarray, item_doc: np.ndarray) -> np.ndarray:
    """Main-qrels grade of each item; 0 for items judged in the subtopic qrels only (NaN
    there; a grade is finite), set in place: no second array as long as the items."""
    grades = judged_grade[item_doc]
    grades[np.isnan(grades)] = 0.0
    return grades


def _threads_per_run(n_runs: int, readers: int, jobs: int) -> list[int]:
    """The threads that split and join each run's windows: the cores the ``readers`` leave
    idle; the runs of a last, short round (5 runs on 2 readers: the fifth) share every core,
    which would otherwise wait for them with one thread working."""
    full = max(1, min(jobs // readers, PER_RUN_THREADS))
    short = n_runs % readers
    last = max(1, min(jobs // short, PER_RUN_THREADS)) if short else full
    return [full] * (n_runs - short) + [last] * short


def _items(docs: JudgedIndex, judged_query: np.ndarray, judged_grade: np.ndarray,
           level: float | None, subtopic_item: np.ndarray | None) -> np.ndarray:
    """Codes of the items: judged relevant in the main qrels (or relevant to a subtopic),
    grouped by query and, within one, in byte order of the docno. Ranked a block of whole
    queries at a time (ITEM_BLOCK items or so), so that only a block's docnos are held beside
    the judgments; where a query's codes are not together (items judged only in the subtopic
    qrels come after all others), in one block."""
    is_item = relevant(np.nan_to_num(judged_grade, nan=0.0), level)
    if subtopic_item is not None:
        is_item[subtopic_item] = True
    codes = np.flatnonzero(is_item)
    del is_item
    query = judged_query[codes]
    n_queries = int(query.max(initial=-1)) + 1
    starts = np.flatnonzero(np.diff(query)) + 1  # where a stretch of one query starts
    cuts = np.zeros(0, dtype=np.int64)  # where a block starts: a query's first item
    if np.count_nonzero(np.bincount(query, minlength=n_queries)) == len(starts) + 1:
        # each query's items together: blocks of whole stretches
        at = np.searchsorted(starts, np.arange(ITEM_BLOCK, len(codes), ITEM_BLOCK))
        cuts = np.unique(starts[at[at < len(starts)]])
    order = np.empty(len(codes), dtype=np.int64)
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), len(codes)]):
        names = docs.column(codes[lo:hi])  # one buffer: no bytes object per item
        order[lo:hi] = lo + rank_rows(names, query[lo:hi], np.zeros(hi - lo),
                                      n_queries)[::-1]  # by query, docno ascending
    del names
    pick = order[np.argsort(query[order], kind="stable")]
    return codes[pick]


def counted(n: int, one: str, many: str) -> str:
    """``n`` and the noun in its number: "1 query", "3 queries"."""
    return f"{n} {one if n == 1 else many}"



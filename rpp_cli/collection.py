"""Integer-coded queries and items, rankings and worst-case positions (SPEC §2-3).

``encode`` joins the runs to the qrels once: every evaluated query gets an index (trec_eval
order), every relevant item of it a column, and every run a row of ranks (0 = not retrieved).
Populations and worst-case full-corpus positions are then pure numpy on those arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .errors import InputError
from .io.qrels import Qrels, SubtopicQrels, is_relevant
from .io.runs import Run, name_runs, read_run
from .io.text import Strings, decode

if TYPE_CHECKING:
    from .subtopics import SubtopicIndex

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# A position key is segment * _SEG + rank; unretrieved members get _UNRET, above any rank.
_UNRET = np.int64(1 << 40)
_SEG = np.int64(1 << 41)


def _query_major(qidx: np.ndarray, hashes: np.ndarray, n_queries: int) -> np.ndarray:
    """Keys ordered by query first (the query index in the high bits, the hash below): rows
    that come query by query then probe the sorted item table with good locality."""
    bits = np.uint64(max(1, int(n_queries).bit_length()))
    return (qidx.astype(np.uint64) << (np.uint64(64) - bits)) | (hashes >> bits)


def _mix(qidx: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One 64-bit key per (query index, docno hash); equal pairs give equal keys."""
    with np.errstate(over="ignore"):
        return hashes ^ ((qidx.astype(np.uint64) + np.uint64(1)) * _GOLDEN)


@dataclass
class RunRows:
    """The rows of one run that the evaluation uses (evaluated queries, duplicates resolved),
    in ranking order: by query, then rank. Only these are kept, not the whole file."""

    qidx: np.ndarray  # query index of each row (non-decreasing)
    rank: np.ndarray  # 1-based rank within the query (score desc, docno desc)
    score: np.ndarray
    docno_hash: np.ndarray  # 64-bit hash of the docno (for the corpus size n)
    docno_src: object  # the docnos: a pyarrow StringArray or a numpy S array

    @property
    def utf8(self) -> bool:
        """Every docno is valid UTF-8 (pyarrow only reads valid UTF-8)."""
        if not isinstance(self.docno_src, np.ndarray) or len(self.docno_src) == 0:
            return True
        raw = self.docno_src.view(np.uint8)
        if int(raw.max()) < 128:
            return True
        try:
            b"\n".join(self.docno_src.tolist()).decode("utf-8")
        except UnicodeDecodeError:
            return False
        return True

    def docnos(self) -> list[str]:
        """The docnos as Python strings (for pytrec_eval)."""
        if isinstance(self.docno_src, np.ndarray):
            return decode(self.docno_src)
        return self.docno_src.to_pylist()


@dataclass
class LoadedRun:
    """What reading and joining one run file gives the collection (from a worker process)."""

    path: str
    tag: str | None
    rows: RunRows
    item: np.ndarray  # items the run retrieved ...
    item_rank: np.ndarray  # ... and their ranks
    missing: list[int]  # evaluated queries the run has no line for
    unjudged: int  # queries of the run the qrels do not judge
    notes: list[str]


@dataclass(frozen=True)
class _JoinTables:
    """What every run is joined against (shared with worker processes by fork)."""

    qpos: dict[str, int]
    judged: set[str]
    item_keys: np.ndarray
    item_order: np.ndarray
    items: Strings
    dedup: bool
    qrels_path: str


@dataclass
class Collection:
    """Everything the measures need, as arrays over queries, relevant items and runs.

    With subtopic qrels the items also include those relevant to a subtopic only (see
    :attr:`relevant` for the items relevant in the main qrels).
    """

    run_names: list[str]
    qids: list[str]  # evaluated queries (>= 1 relevant item), trec_eval order
    item_query: np.ndarray  # (I,) query index of each relevant item, grouped by query
    item_grade: np.ndarray  # (I,) its grade
    item_docno: list[str]  # (I,) its docno
    ranks: np.ndarray  # (R, I) rank of each relevant item in each run, 0 = not retrieved
    run_rows: list[RunRows]
    qrels: list[Qrels]
    level: float | None = None
    fixed_corpus_size: int | None = None
    _corpus_size: np.ndarray | None = field(default=None, repr=False)
    subtopics: SubtopicIndex | None = None

    @property
    def relevant(self) -> np.ndarray:
        """(I,) bool: the item is relevant in the main qrels (SPEC §1, with the level)."""
        g = self.item_grade
        return g >= self.level if self.level is not None else g > 0

    @property
    def corpus_size(self) -> np.ndarray:
        """n per query (SPEC §2): union of all runs' and all judged items, or ``--corpus-size``."""
        if self._corpus_size is None:
            self._corpus_size = _union_sizes(self)
        return self._corpus_size

    @property
    def item_bounds(self) -> np.ndarray:
        """(Q + 1,) offsets: the items of query q are ``item_bounds[q]:item_bounds[q + 1]``."""
        return np.searchsorted(self.item_query, np.arange(len(self.qids) + 1))


@dataclass(frozen=True)
class Populations:
    """Groups of relevant items (SPEC §3) laid out as segments of one member array.

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
    """f_i(P) for every run and member slot (SPEC §2): (R, L) int64.

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
           jobs: int = 1) -> Collection:
    """Read the runs and join them to the qrels: evaluated queries, relevant items, ranks
    (SPEC §1-2); with ``subtopics``, items relevant to a subtopic are items too. Runs are
    read and joined in ``jobs`` processes."""
    from .parallel import map_runs
    from .subtopics import encode_subtopics, relevant_docnos

    notes = notes if notes is not None else []
    qids = qrels.relevant_qids(level)
    if not qids:
        raise InputError("no query has a relevant item" + (f" at level {level:g}" if level else ""),
                         path=qrels.path)
    item_query, item_grade, item_docno = [], [], []
    for qi, qid in enumerate(qids):
        judged = qrels.judgments[qid]
        rel = {d for d, g in judged.items() if is_relevant(g, level)}
        if subtopics is not None:
            rel |= relevant_docnos(subtopics, qid)
        docs = sorted(rel)
        item_query += [qi] * len(docs)
        item_docno += docs
        item_grade += [judged.get(d, 0.0) for d in docs]
    item_query_a = np.array(item_query, dtype=np.int64)
    items = Strings.from_texts(item_docno)
    item_keys = _query_major(item_query_a, items.hashes(), len(qids))
    item_order = np.argsort(item_keys, kind="stable")
    if (item_keys[item_order][1:] == item_keys[item_order][:-1]).any():
        raise InputError("two relevant docnos of one query share a hash; please report this")
    tables = _JoinTables({q: i for i, q in enumerate(qids)}, set(qrels.judgments), item_keys,
                         item_order, items, dedup, qrels.path)
    loaded = map_runs(_load_run, len(run_paths), 1 if "-" in run_paths else jobs,
                      (run_paths, tables), label="reading runs")
    run_names, name_notes = name_runs(loaded)
    notes.extend(name_notes)
    ranks = np.zeros((len(loaded), len(item_docno)), dtype=np.int64)
    for r, (run, name) in enumerate(zip(loaded, run_names)):
        ranks[r, run.item] = run.item_rank
        if run.unjudged:
            notes.append(f"{name}: {_count(run.unjudged, 'query', 'queries')} not in the qrels, "
                         "ignored")
        notes.extend(run.notes)
        if run.missing:
            shown = ", ".join(qids[q] for q in run.missing[:5]) + \
                (" ..." if len(run.missing) > 5 else "")
            notes.append(f"{name}: {_count(len(run.missing), 'judged query', 'judged queries')} "
                         f"not in the run, scored as empty rankings ({shown})")
    coll = Collection(run_names, qids, item_query_a, np.array(item_grade, dtype=np.float64),
                      item_docno, ranks, [run.rows for run in loaded], [qrels], level,
                      corpus_size)
    if subtopics is not None:
        if subtopics.overall is not qrels:
            coll.qrels.append(subtopics.overall)
        coll.subtopics = encode_subtopics(subtopics, qids, item_query_a, item_docno)
    if corpus_size is not None:
        union = _union_sizes(coll, fixed=False)
        if (union > corpus_size).any():
            q = int(np.argmax(union > corpus_size))
            raise InputError(f"--corpus-size {corpus_size} is smaller than the {union[q]} "
                             f"distinct items of query {qids[q]}")
    return coll


def _load_run(r: int, paths: list[str], tables: _JoinTables) -> LoadedRun:
    """Read run ``r`` and join it to the qrels: its rows in ranking order and the ranks of
    the items it retrieved. Runs in a worker process; returns only what the parent keeps."""
    run = read_run(paths[r])
    to_query = np.array([tables.qpos.get(q, -1) for q in run.qid_values], dtype=np.int64)
    qidx = to_query[run.qid_codes]
    if not (qidx >= 0).any():
        raise InputError(f"shares no query with the qrels ({tables.qrels_path})", path=run.path)
    notes: list[str] = []
    rows = np.flatnonzero(qidx >= 0)
    rows = _resolve_duplicates(run, rows, qidx, tables.dedup, notes)
    order, rank = _rank(run, rows, qidx[rows])
    rows = rows[order]
    hashes = run.docno.hashes()[rows]
    item = _match(_query_major(qidx[rows], hashes, len(tables.qpos)), run.docno, rows,
                  tables.item_keys,
                  tables.item_order, tables.items)
    hit = item >= 0
    present = np.zeros(len(tables.qpos), dtype=bool)
    present[qidx[rows]] = True
    source = run.docno.arrow.take(rows) if run.docno.arrow is not None else \
        run.docno.bytes()[rows]
    return LoadedRun(run.path, run.tag,
                     RunRows(qidx[rows], rank, run.score[rows], hashes, source),
                     item[hit], rank[hit], np.flatnonzero(~present).tolist(),
                     sum(q not in tables.judged for q in run.qid_values), notes)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _match(keys: np.ndarray, strings: Strings, rows: np.ndarray, table_keys: np.ndarray,
           table_order: np.ndarray, table: Strings) -> np.ndarray:
    """Index into the table of each key whose string is equal, else -1 (exact, hash-assisted)."""
    out = np.full(len(keys), -1, dtype=np.int64)
    if len(table_keys) == 0:
        return out
    sorted_keys = table_keys[table_order]
    pos = np.minimum(np.searchsorted(sorted_keys, keys), len(sorted_keys) - 1)
    idx = table_order[pos]
    hit = np.flatnonzero(sorted_keys[pos] == keys)
    hit = hit[strings.equal(rows[hit], table, idx[hit])]
    out[hit] = idx[hit]
    return out


def _resolve_duplicates(run: Run, rows: np.ndarray, qidx: np.ndarray, dedup: bool,
                        notes: list[str]) -> np.ndarray:
    """Rows with a docno repeated within a query: an error, or keep the best-scored copy."""
    keys = _mix(qidx[rows], run.docno.hashes()[rows])
    k = np.sort(keys)  # a plain sort is several times faster than argsort
    if not (k[1:] == k[:-1]).any():
        return rows
    order = np.lexsort((-run.score[rows], keys))  # copies adjacent, best-scored first
    k = keys[order]
    cand = np.flatnonzero(k[1:] == k[:-1]) + 1
    a, b = rows[order[cand]], rows[order[cand - 1]]
    real = run.docno.equal(a, run.docno, b) & (qidx[a] == qidx[b])
    if not real.any():
        return rows
    a, b = a[real], b[real]
    if not dedup:
        i = int(np.argmin(np.maximum(run.line[a], run.line[b])))
        early, late = sorted((int(run.line[a[i]]), int(run.line[b[i]])))
        doc = run.docno.texts(a[i:i + 1])[0]
        qid = run.qid_values[run.qid_codes[a[i]]]
        raise InputError(f"docno '{doc}' repeated in query {qid} (first at line {early}); "
                         "use --dedup to keep the best-scored copy", run.path, late)
    notes.append(f"{run.path}: {_count(len(a), 'repeated docno', 'repeated docnos')} dropped, "
                 "kept the best-scored copy of each")
    drop = np.zeros(len(run.score), dtype=bool)
    drop[a] = True
    return rows[~drop[rows]]


def _rank(run: Run, rows: np.ndarray, qidx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order rows by query, score desc, docno desc (SPEC §2); returns order and 1-based ranks."""
    score = run.score[rows]
    small = qidx.astype(np.uint16) if len(qidx) and qidx.max() < 1 << 16 else qidx
    order = np.argsort(small, kind="stable")  # radix sort for up to 65536 queries
    q, s = qidx[order], score[order]
    same_q = q[1:] == q[:-1]
    if (same_q & (s[1:] > s[:-1])).any():  # not already best-first within each query
        order = np.lexsort((-score, qidx))
        q, s = qidx[order], score[order]
        same_q = q[1:] == q[:-1]
    eq = same_q & (s[1:] == s[:-1])
    if eq.any():  # break score ties by docno, descending bytes (trec_eval's rule)
        at = np.flatnonzero(np.concatenate((eq, [False])) | np.concatenate(([False], eq)))
        group = np.cumsum(np.concatenate(([True], ~eq)))[at]  # the tie group of each
        docno_rank = run.docno.order(rows[order[at]])
        order[at] = order[at][np.argsort(group * len(at) - docno_rank, kind="stable")]
    starts = np.flatnonzero(np.concatenate(([True], ~same_q)))
    group_start = np.repeat(starts, np.diff(np.append(starts, len(q))))
    return order, np.arange(len(q)) - group_start + 1


def _union_sizes(coll: Collection, fixed: bool = True) -> np.ndarray:
    """Distinct items per query over all runs and all judged items (or the fixed size).

    Items are told apart by a hash whose low bits are replaced by the query index, so one
    plain sort of uint64 keys counts them (two docnos of one query would need equal 64 - b
    bit hashes to merge, b = bits of the query count: below 1e-9 per query at TREC scale).
    """
    nq = len(coll.qids)
    if fixed and coll.fixed_corpus_size is not None:
        return np.full(nq, coll.fixed_corpus_size, dtype=np.int64)
    qpos = {q: i for i, q in enumerate(coll.qids)}
    jq, jd = [], []
    for qrels in coll.qrels:
        for qid, docs in qrels.judgments.items():
            if qid in qpos:
                jq += [qpos[qid]] * len(docs)
                jd += list(docs)
    bits = np.uint64(max(1, int(nq).bit_length()))
    low = (np.uint64(1) << bits) - np.uint64(1)
    parts = [(Strings.from_texts(jd).hashes() & ~low) | np.array(jq, dtype=np.uint64)]
    for rr in coll.run_rows:
        parts.append((rr.docno_hash & ~low) | rr.qidx.astype(np.uint64))
    keys = np.sort(np.concatenate(parts))
    new = np.concatenate(([True], keys[1:] != keys[:-1]))
    return np.bincount((keys[new] & low).astype(np.int64), minlength=nq).astype(np.int64)

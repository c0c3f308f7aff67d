"""Integer-coded queries and items, rankings and worst-case positions (SPEC §2-3).

``encode`` joins the runs to the qrels once: every evaluated query gets an index (trec_eval
order), every relevant item of it a column, and every run a row of ranks (0 = not retrieved).
Populations and worst-case full-corpus positions are then pure numpy on those arrays.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import InputError
from .io.qrels import Qrels, is_relevant
from .io.runs import Run
from .io.text import decode
from .progress import progress

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
# A position key is segment * _SEG + rank; unretrieved members get _UNRET, above any rank.
_UNRET = np.int64(1 << 40)
_SEG = np.int64(1 << 41)


def _mix(qidx: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """One 64-bit key per (query index, docno hash); equal pairs give equal keys."""
    with np.errstate(over="ignore"):
        return hashes ^ ((qidx.astype(np.uint64) + np.uint64(1)) * _GOLDEN)


@dataclass
class RunRows:
    """The rows of one run that the evaluation uses (evaluated queries, duplicates resolved)."""

    qidx: np.ndarray  # query index of each row
    rows: np.ndarray  # row numbers into the Run's columns
    rank: np.ndarray  # 1-based rank within the query (score desc, docno desc)


@dataclass
class Collection:
    """Everything the measures need, as arrays over queries, relevant items and runs."""

    run_names: list[str]
    runs: list[Run]
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
    pairs = np.unique(np.stack([q.astype(np.float64), g]), axis=1)  # distinct (query, λ)
    seg_query = pairs[0].astype(np.int64)
    seg_lambda = pairs[1]
    bounds = coll.item_bounds
    counts = np.array([np.count_nonzero(g[bounds[sq]:bounds[sq + 1]] >= lam)
                       for sq, lam in zip(seg_query.tolist(), seg_lambda.tolist())],
                      dtype=np.int64) if len(seg_query) else np.zeros(0, np.int64)
    member_seg = np.repeat(np.arange(len(seg_query)), counts)
    candidate = np.concatenate([np.arange(bounds[sq], bounds[sq + 1])
                                for sq in seg_query.tolist()]) if len(seg_query) else \
        np.zeros(0, np.int64)
    cand_seg = np.repeat(np.arange(len(seg_query)), bounds[seg_query + 1] - bounds[seg_query])
    keep = g[candidate] >= seg_lambda[cand_seg]
    member_item = candidate[keep]
    assert np.array_equal(cand_seg[keep], member_seg)
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


def encode(qrels: Qrels, runs: list[Run], run_names: list[str], *, level: float | None = None,
           corpus_size: int | None = None, dedup: bool = False,
           notes: list[str] | None = None) -> Collection:
    """Join runs to qrels: evaluated queries, relevant items, ranks (SPEC §1-2)."""
    notes = notes if notes is not None else []
    qids = qrels.relevant_qids(level)
    if not qids:
        raise InputError("no query has a relevant item" + (f" at level {level:g}" if level else ""),
                         path=qrels.path)
    item_query, item_grade, item_docno = [], [], []
    for qi, qid in enumerate(qids):
        rel = sorted((d, g) for d, g in qrels.judgments[qid].items() if is_relevant(g, level))
        item_query += [qi] * len(rel)
        item_docno += [d for d, _ in rel]
        item_grade += [g for _, g in rel]
    item_query_a = np.array(item_query, dtype=np.int64)
    item_keys = _mix(item_query_a, _hash_texts(item_docno))
    item_order = np.argsort(item_keys, kind="stable")
    qid_hash = _hash_texts(qids)
    qid_order = np.argsort(qid_hash, kind="stable")
    judged = set(qrels.judgments)

    ranks = np.zeros((len(runs), len(item_docno)), dtype=np.int64)
    run_rows = []
    for r, (run, name) in enumerate(progress(zip(runs, run_names), "encoding runs",
                                             length=len(runs))):
        qidx = _match(run.qid.hashes(), run.qid.strings, qid_hash, qid_order,
                      np.array([q.encode("utf-8", "surrogateescape") for q in qids]))
        if not (qidx >= 0).any():
            raise InputError("shares no query with the qrels " + f"({qrels.path})", path=run.path)
        _note_unjudged(run, name, qidx, judged, notes)
        rows = np.flatnonzero(qidx >= 0)
        rows = _resolve_duplicates(run, rows, qidx, dedup, notes)
        order, rank = _rank(run, rows, qidx[rows])
        rows = rows[order]
        run_rows.append(RunRows(qidx[rows], rows, rank))
        docno_hash = run.docno.hashes()[rows]
        item = _match(_mix(qidx[rows], docno_hash), run.docno.strings[rows], item_keys,
                      item_order, np.array([d.encode("utf-8", "surrogateescape")
                                            for d in item_docno]))
        hit = item >= 0
        ranks[r, item[hit]] = rank[hit]
        missing = sorted(set(range(len(qids))) - set(np.unique(qidx[rows]).tolist()))
        if missing:
            shown = ", ".join(qids[q] for q in missing[:5]) + (" ..." if len(missing) > 5 else "")
            notes.append(f"{name}: {_count(len(missing), 'judged query', 'judged queries')} "
                         f"not in the run, scored as empty rankings ({shown})")
    coll = Collection(run_names, runs, qids, item_query_a, np.array(item_grade, dtype=np.float64),
                      item_docno, ranks, run_rows, [qrels], level, corpus_size)
    if corpus_size is not None:
        union = _union_sizes(coll, fixed=False)
        if (union > corpus_size).any():
            q = int(np.argmax(union > corpus_size))
            raise InputError(f"--corpus-size {corpus_size} is smaller than the {union[q]} "
                             f"distinct items of query {qids[q]}")
    return coll


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _hash_texts(texts: list[str]) -> np.ndarray:
    """FNV-1a hashes of Python strings (same values as Field.hashes on their bytes)."""
    from .io.text import Field

    raw = [t.encode("utf-8", "surrogateescape") for t in texts]
    width = max((len(b) for b in raw), default=0)
    buf = np.zeros((len(raw), width), dtype=np.uint8)
    lens = np.array([len(b) for b in raw], dtype=np.int64)
    if width:
        buf[:] = np.frombuffer(b"".join(b.ljust(width, b"\0") for b in raw),
                               dtype=np.uint8).reshape(len(raw), width)
    return Field(buf, lens).hashes()


def _match(keys: np.ndarray, strings: np.ndarray, table_keys: np.ndarray,
           table_order: np.ndarray, table_strings: np.ndarray) -> np.ndarray:
    """Index into the table of each key whose string is equal, else -1 (exact, hash-assisted)."""
    sorted_keys = table_keys[table_order]
    pos = np.minimum(np.searchsorted(sorted_keys, keys), max(len(sorted_keys) - 1, 0))
    out = np.full(len(keys), -1, dtype=np.int64)
    if len(sorted_keys) == 0:
        return out
    idx = table_order[pos]
    hit = sorted_keys[pos] == keys
    hit[hit] = table_strings[idx[hit]] == strings[hit]
    out[hit] = idx[hit]
    return out


def _note_unjudged(run: Run, name: str, qidx: np.ndarray, judged: set[str],
                   notes: list[str]) -> None:
    """Count the run's queries that the qrels do not judge (SPEC §1: ignored, with a note)."""
    other = np.flatnonzero(qidx < 0)
    if len(other) == 0:
        return
    qids = decode(run.qid.strings[other[_first_of_each(run.qid.hashes()[other])]])
    unjudged = [q for q in qids if q not in judged]
    if unjudged:
        notes.append(f"{name}: {_count(len(unjudged), 'query', 'queries')} not in the qrels, "
                     "ignored")


def _first_of_each(keys: np.ndarray) -> np.ndarray:
    """Index of the first occurrence of each distinct key (sort based; np.unique is slow)."""
    order = np.argsort(keys, kind="stable")
    k = keys[order]
    return order[np.concatenate(([True], k[1:] != k[:-1]))]


def _resolve_duplicates(run: Run, rows: np.ndarray, qidx: np.ndarray, dedup: bool,
                        notes: list[str]) -> np.ndarray:
    """Rows with a docno repeated within a query: an error, or keep the best-scored copy."""
    keys = _mix(qidx[rows], run.docno.hashes()[rows])
    order = np.lexsort((-run.score[rows], keys))
    k = keys[order]
    same = k[1:] == k[:-1]
    if not same.any():
        return rows
    cand = np.flatnonzero(same) + 1
    strings = run.docno.strings
    a, b = rows[order[cand]], rows[order[cand - 1]]
    real = (strings[a] == strings[b]) & (qidx[a] == qidx[b])
    if not real.any():
        return rows
    dup_rows, kept_rows = a[real], b[real]
    if not dedup:
        i = int(np.argmin(np.maximum(run.line[dup_rows], run.line[kept_rows])))
        late, early = sorted((int(run.line[dup_rows[i]]), int(run.line[kept_rows[i]])))[::-1]
        doc = strings[dup_rows[i]].decode("utf-8", "replace")
        qid = run.qid.strings[dup_rows[i]].decode("utf-8", "replace")
        raise InputError(f"docno '{doc}' repeated in query {qid} (first at line {early}); "
                         "use --dedup to keep the best-scored copy", run.path, late)
    notes.append(f"{run.path}: {_count(len(dup_rows), 'repeated docno', 'repeated docnos')} dropped, "
                 "kept the best-scored copy of each")
    drop = np.zeros(len(run.score), dtype=bool)
    drop[dup_rows] = True
    return rows[~drop[rows]]


def _rank(run: Run, rows: np.ndarray, qidx: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Order rows by query, score desc, docno desc (SPEC §2); returns order and 1-based ranks."""
    score = run.score[rows]
    order = np.lexsort((-score, qidx))
    q, s = qidx[order], score[order]
    tied = np.zeros(len(order), dtype=bool)
    eq = (q[1:] == q[:-1]) & (s[1:] == s[:-1])
    tied[1:] |= eq
    tied[:-1] |= eq
    if tied.any():  # break score ties by docno, descending bytes (trec_eval's rule)
        tie_rows = rows[order[tied]]
        _, code = np.unique(run.docno.strings[tie_rows], return_inverse=True)
        tiebreak = np.zeros(len(order), dtype=np.int64)
        tiebreak[tied] = -code.ravel()
        order = order[np.lexsort((tiebreak, -s, q))]
        q = qidx[order]
    starts = np.flatnonzero(np.concatenate(([True], q[1:] != q[:-1])))
    group_start = np.repeat(starts, np.diff(np.append(starts, len(q))))
    return order, np.arange(len(q)) - group_start + 1


def _union_sizes(coll: Collection, fixed: bool = True) -> np.ndarray:
    """Distinct items per query over all runs and all judged items (or the fixed size)."""
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
    qparts = [np.array(jq, dtype=np.int64)]
    hparts = [_hash_texts(jd)]
    for run, rr in zip(coll.runs, coll.run_rows):
        qparts.append(rr.qidx)
        hparts.append(run.docno.hashes()[rr.rows])
    q = np.concatenate(qparts)
    keys = _mix(q, np.concatenate(hparts))
    order = np.argsort(keys)
    k, qo = keys[order], q[order]
    new = np.concatenate(([True], (k[1:] != k[:-1]) | (qo[1:] != qo[:-1])))
    return np.bincount(qo[new], minlength=nq).astype(np.int64)

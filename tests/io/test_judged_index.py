"""The judgments' dictionary built a chunk of queries at a time (io/judged.py JudgedIndex)
against one exact dictionary of them all (core.Dictionary, what the reader handed over
before), and pytrec_eval given the judgments a batch of queries at a time against given them
at once: the same codes, keys, strings and repeat marks; the same values.
"""
from __future__ import annotations

import random
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import rpp_cli.io.judged as judged
import rpp_cli.measures.pytrec_adapter as adapter
from rpp_cli.core import Dictionary, column_of
from rpp_cli.io.qrels import read_qrels, sort_qids
from rpp_cli.measures.trec_names import TrecRequest

from .test_qrels_windows import hostile_qrels


def qrels_and_reference(tmp_path, seed: int):
    """Qrels read from hostile lines, and one Dictionary of their judgments keyed as the
    index is (the query's place in trec_eval order), coded in judgment order."""
    path = tmp_path / "qrels"
    path.write_bytes(hostile_qrels(seed, 300))
    qrels = read_qrels(str(path))
    place = {q: i for i, q in enumerate(sort_qids(qrels.qids))}
    keys = np.array([place[q] for q in qrels.qids], dtype=np.int64)[qrels.qid]
    whole = Dictionary(len(qrels.qids))
    assert whole.add(qrels.docno, keys).tolist() == list(range(len(qrels.grade)))
    return qrels, keys, whole


def rows_to_code(rng: random.Random, qrels, keys: np.ndarray, n: int):
    """``n`` rows (docno, key) in ascending key order, as a run's batch is coded: judged
    pairs, judged docnos under another query, docnos nobody judged, repeats."""
    docnos = [qrels.docno.bytes(j) for j in range(len(qrels.grade))]
    n_keys = int(keys.max()) + 1
    rows = []
    for _ in range(n):
        pick = rng.random()
        if pick < 0.5:
            j = rng.randrange(len(docnos))
            rows.append((docnos[j], int(keys[j])))
        elif pick < 0.7:
            rows.append((rng.choice(docnos), rng.randrange(n_keys)))
        else:
            rows.append((f"u{rng.randrange(40)}".encode(), rng.randrange(n_keys)))
    rows.sort(key=lambda r: r[1])
    return column_of([d for d, _ in rows]), np.array([k for _, k in rows], dtype=np.int64)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [1, 2, 5, judged.CHUNK_ROWS])
def test_lookups_find_the_codes_of_one_dictionary(tmp_path, monkeypatch, seed, chunk):
    """Frozen, the index finds every judged pair's code and nothing else (-1), in chunks of
    any size, whatever the rows' keys; a key out of range is absent, as in a Dictionary."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", chunk)
    qrels, keys, whole = qrels_and_reference(tmp_path, seed)
    whole.freeze()
    index = qrels.dictionary()
    index.freeze()
    rng = random.Random(seed)
    for n in (0, 1, 50, 400):
        col, row_keys = rows_to_code(rng, qrels, keys, n)
        assert index.find(col, row_keys).tolist() == whole.find(col, row_keys).tolist()
    col, _ = rows_to_code(rng, qrels, keys, 3)
    assert index.find(col, np.array([-1, len(qrels.qids), 0])).tolist()[:2] == [-1, -1]
    assert len(index) == len(qrels.grade)
    assert index.keys().tolist() == whole.keys().tolist()
    assert index.strings() == whole.strings()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("chunk", [1, 3, judged.CHUNK_ROWS])
@pytest.mark.parametrize("threads", [1, 3])
def test_adding_codes_as_one_dictionary_does(tmp_path, monkeypatch, seed, chunk, threads):
    """Batches added (a run's rows, several runs' batch numbers) and plain adds (items of
    subtopic qrels): the judged codes and the repeat marks are the Dictionary's; a new
    (key, docno) gets the next free code, one per pair, whatever the chunk or thread order;
    keys(), strings() and a lookup once frozen agree with the pairs added."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", chunk)
    qrels, keys, whole = qrels_and_reference(tmp_path, seed)
    index = qrels.dictionary()
    rng = random.Random(seed)
    pairs: dict[tuple[int, bytes], int] = {}
    for batch in range(6):
        col, row_keys = rows_to_code(rng, qrels, keys, rng.choice([0, 1, 30, 200]))
        if batch == 5:
            got, again = index.add(col, row_keys), None
            want = whole.add(col, row_keys)
        else:
            got, again = index.add_batch(col, row_keys, batch % 3, threads)
            want, want_again = whole.add_batch(col, row_keys, batch % 3)
            assert again.tolist() == want_again.tolist()
        judged_rows = want < len(qrels.grade)
        assert got[judged_rows].tolist() == want[judged_rows].tolist()
        for k, docno, code in zip(row_keys.tolist(), (col.bytes(i) for i in range(len(col))),
                                  got.tolist()):
            assert pairs.setdefault((k, docno), code) == code
    assert len(index) == len(whole) == len(set(pairs.values()) | set(range(len(qrels.grade))))
    codes = np.array(sorted(set(pairs.values())), dtype=np.int64)
    by_code = {code: pair for pair, code in pairs.items()}
    assert index.keys()[codes].tolist() == [by_code[c][0] for c in codes.tolist()]
    assert index.strings(codes) == [by_code[c][1] for c in codes.tolist()]
    col = index.column(codes[::-1])
    assert [col.bytes(i) for i in range(len(col))] == [by_code[c][1] for c in codes[::-1]]
    index.freeze()
    pair_col = column_of([docno for _, docno in pairs])
    assert index.find(pair_col, np.array([k for k, _ in pairs])).tolist() == \
        list(pairs.values())
    with pytest.raises(RuntimeError, match="frozen"):
        index.add(pair_col, np.array([k for k, _ in pairs]))


def test_a_lookup_builds_only_the_chunks_of_its_queries(tmp_path, monkeypatch):
    """A run that ranks one query costs one chunk's dictionary, not the file's."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", 4)
    qrels, keys, _ = qrels_and_reference(tmp_path, 3)
    index = qrels.dictionary()
    index.freeze()
    j = len(qrels.grade) // 2
    assert index.find(column_of([qrels.docno.bytes(j)]), keys[j:j + 1]).tolist() == [j]
    built = [m for m in index._maps if m is not None]
    assert len(built) == 1 and len(index._maps) > 3  # one chunk of several
    assert np.count_nonzero(keys == keys[j]) <= len(built[0]) < len(qrels.grade) // 3


@pytest.mark.parametrize("seed", range(3))
def test_chunks_built_ahead_change_no_code_and_cost_one_chunk_more(tmp_path, monkeypatch, seed):
    """build_ahead: batches of some queries only, added with the next chunk's dictionary
    built on a thread of its own, get the codes, repeat marks, keys and strings they get
    without; and no chunk is built but those the batches need and the one after each."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", 3)
    qrels, keys, _ = qrels_and_reference(tmp_path, seed)
    ahead, alone = qrels.dictionary(), qrels.dictionary()
    rng = random.Random(seed)
    chosen = set(rng.sample(sorted(set(keys.tolist())), max(1, len(set(keys.tolist())) // 4)))
    needed: set[int] = set()
    with ThreadPoolExecutor(1) as pool:
        ahead.build_ahead(pool)
        for batch in range(8):
            col, row_keys = rows_to_code(rng, qrels, keys, rng.choice([1, 30, 200]))
            mine = np.flatnonzero(np.isin(row_keys, list(chosen)))
            col, row_keys = col.take(mine), row_keys[mine]
            needed |= set((np.searchsorted(ahead._cuts, ahead._qid_of[row_keys], side="right")
                           - 1).tolist())
            got = ahead.add_batch(col, row_keys, batch % 3)
            want = alone.add_batch(col, row_keys, batch % 3)
            assert [g.tolist() for g in got] == [w.tolist() for w in want]
        ahead.build_ahead(None)
    built = {k for k, m in enumerate(ahead._maps) if m is not None}
    assert needed <= built <= needed | {k + 1 for k in needed}
    assert built - needed and len(ahead._maps) > len(built)  # ahead, and not every chunk
    assert ahead.keys().tolist() == alone.keys().tolist()
    assert ahead.strings() == alone.strings()


REQUESTS = ["map", "ndcg", "P.5", "num_rel", "bpref", "ndcg.1=3,2=9,3=20", "Rprec"]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("batch", [1, 2, 7])
def test_pytrec_eval_given_a_batch_of_queries_at_a_time_gives_the_same_values(
        monkeypatch, seed, batch):
    """The bridge's judgments made dicts a batch of queries at a time (one pytrec_eval
    evaluator a batch) and all at once (one evaluator): the same values for every query of
    every run, gain pairs (read once per evaluator) included, run after run."""
    rng = np.random.default_rng(seed)
    n_queries, n_judged = 9, 120
    query = np.sort(rng.integers(0, n_queries, n_judged))
    grade = rng.choice([0.0, 0.0, 1.0, 2.0, 3.0, -1.0, np.nan], n_judged)
    bridge = adapter.Bridge(query, grade, n_queries)
    requests = [TrecRequest(*(r.split(".", 1) if "." in r else (r, None))) for r in REQUESTS]
    whole = adapter.Evaluator(dict(bridge.qrels.items()), requests)
    monkeypatch.setattr(adapter, "QRELS_BATCH", batch)
    batched = adapter.Evaluator(bridge.qrels, requests)
    assert len(batched._evaluators) > 1
    for _ in range(3):
        bounds = np.concatenate(([0], np.cumsum(rng.integers(0, 12, n_queries))))
        doc = rng.integers(0, n_judged + 20, int(bounds[-1]))
        run = bridge.run(bounds, np.minimum(doc, n_judged))
        assert batched.evaluate(run) == whole.evaluate(run)

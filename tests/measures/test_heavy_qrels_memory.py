"""What ``rpp eval`` holds on heavy qrels beyond the qrels themselves: the relevant items'
docnos as one buffer (no bytes object per item), trec_eval's shards cut by their rows and
their judgments (pytrec_eval is given a dict entry for each), and no freed heap counted
again by the worker processes forked for them.

Qrels shaped like a judged track (string qids such as 1001_3, 90 judged docnos a query of
mixed shapes and lengths, grades 0-3), from tests/io's heavy-qrels generator.
"""
from __future__ import annotations

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

import rpp_cli.collection as collection
import rpp_cli.measures.pytrec_adapter as adapter
from rpp_cli.collection import _items, encode
from rpp_cli.engine import session
from rpp_cli.io.judged import CHUNK_ROWS
from rpp_cli.io.qrels import read_qrels
from rpp_cli.measures.trec import trec_shards
from tests.io.test_qrels_memory import heavy_qrels

# memory measured on 180,000 judgments: the full suite's, not the edit loop's
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Qrels of 2,000 queries x 90 judgments, and a run of one query's 100 rows."""
    qrels, _, _, small = heavy_qrels(tmp_path_factory.mktemp("heavy"), queries=2_000)
    return qrels, small


@pytest.mark.parametrize("block", [None, 1, 997, 40_000])
def test_relevant_items_docnos_are_one_buffer(heavy, monkeypatch, block):
    """Finding the relevant items peaks under 150 bytes an item (96 measured: the docnos'
    bytes, their offsets and lengths, the sort's index arrays); a bytes object per item
    peaked at 361. The items come by query, then docno bytes, with their own docnos, ranked
    a block of whole queries at a time (ITEM_BLOCK: 1 item, a block of one query each)."""
    if block is not None:
        monkeypatch.setattr(collection, "ITEM_BLOCK", block)
    qrels = read_qrels(heavy[0])
    docs = qrels.dictionary()
    judged_query = docs.keys().copy()
    tracemalloc.start()
    try:
        codes = _items(docs, judged_query, qrels.grade, None, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(codes) == int((qrels.grade > 0).sum()) > 70_000
    assert peak / len(codes) < 150
    strings = docs.strings(codes)
    assert docs.column(codes).texts() == [s.decode() for s in strings]
    keys = list(zip(judged_query[codes].tolist(), strings))
    assert keys == sorted(keys)


@pytest.mark.parametrize("block", [None, 1, 997])
def test_relevant_items_of_queries_apart_are_ranked_together(heavy, monkeypatch, block):
    """Where a query's codes are not together (as items judged only in the subtopic qrels
    come after the others), the items still come by query, then docno bytes."""
    if block is not None:
        monkeypatch.setattr(collection, "ITEM_BLOCK", block)
    qrels = read_qrels(heavy[0])
    docs = qrels.dictionary()
    apart = np.arange(len(qrels.grade)) % 7  # each of 7 queries' codes spread over all
    codes = _items(docs, apart, qrels.grade, None, None)
    assert len(codes) == int((qrels.grade > 0).sum())
    keys = list(zip(apart[codes].tolist(), docs.strings(codes)))
    assert keys == sorted(keys)


def test_judged_keys_make_no_second_array_as_long(heavy):
    """The key of every judged code costs the returned array and a chunk's worth beside it
    (repeating the keys whole, then joining the added codes' on, held 16 bytes a code); the
    keys are each judgment's query, in trec_eval order."""
    qrels = read_qrels(heavy[0])
    docs = qrels.dictionary()
    tracemalloc.start()
    try:
        keys = docs.keys()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(keys) == len(qrels.grade) == 180_000
    assert peak <= keys.nbytes + 8 * CHUNK_ROWS + 100_000  # 2.88 MB before, 1.97 MB now
    order = sorted(range(len(qrels.qids)), key=lambda q: qrels.qids[q].encode())
    place = np.argsort(order)
    assert keys.tolist() == np.repeat(place, np.diff(qrels.qid_bounds)).tolist()


def reference_negative_only(query: np.ndarray, grade: np.ndarray, n_queries: int) -> list[int]:
    """The queries whose every known grade's integer part (trec_eval's atol) is negative, a
    judgment at a time; a query with no known grade is one (nothing in it is relevant)."""
    top = [None] * n_queries
    for q, g in zip(query.tolist(), grade.tolist()):
        if g == g:  # not NaN
            top[q] = max(top[q], int(g)) if top[q] is not None else int(g)
    return [q for q in range(n_queries) if top[q] is None or top[q] < 0]


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("block", [1, 7, adapter.BLOCK_ROWS])
def test_negative_only_queries_a_block_at_a_time(monkeypatch, seed, block):
    """Queries whose grades are all negative (-0.5 is 0 to trec_eval's atol, so not; -1 and
    -3 are), found a block of judged codes at a time, whatever the block: the codes of a
    query apart (subtopic items come after the judgments), NaN grades (judged elsewhere only)
    and a query with none but those."""
    monkeypatch.setattr(adapter, "BLOCK_ROWS", block)
    rng = np.random.default_rng(seed)
    n_queries, n_codes = 40, 900
    query = rng.integers(0, n_queries - 1, n_codes)
    grade = rng.choice([0.0, 1.0, 2.0, -0.5, -1.0, -3.0, np.nan], n_codes)
    negative = rng.choice(n_queries - 1, 12, replace=False)
    grade[np.isin(query, negative)] = rng.choice([-1.0, -3.0, -7.5, np.nan], 1)[0]
    query = np.append(query, [n_queries - 1, n_queries - 1])
    grade = np.append(grade, [np.nan, np.nan])
    got = adapter.negative_only(query, grade, n_queries).tolist()
    assert got == reference_negative_only(query, grade, n_queries)
    assert n_queries - 1 in got and set(negative.tolist()) <= set(got)


def test_negative_only_holds_no_array_as_long_as_the_judgments():
    """Over 2M judged codes: a float per query and a block's temporaries (under 2 MB); its
    mask and index arrays over every code held 38 MB (1.4 MB now)."""
    n_queries = 20_000
    query = np.repeat(np.arange(n_queries), 100)
    grade = np.tile(np.array([0.0, 1.0, np.nan, -1.0]), len(query) // 4)
    tracemalloc.start()
    try:
        got = adapter.negative_only(query, grade, n_queries)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(got) == 0 and len(query) == 2_000_000
    assert peak < 2_000_000


def test_trec_shards_share_out_the_judgments(heavy):
    """Against a run of one query, the 180,000 judgments are cut into several shards, none
    with more than 30 % of them (cut by the run's rows alone, one shard held them all), and
    the shards cover every query once, in order."""
    qrels_path, run_path = heavy
    coll = encode(read_qrels(qrels_path), [run_path])
    with session(2):
        bounds, shards = trec_shards(coll.judged, coll.runs)
    per_query = np.bincount(coll.judged.query, minlength=len(coll.qids))
    held = np.add.reduceat(per_query, bounds[:-1])
    assert bounds[0] == 0 and bounds[-1] == len(coll.qids) and (np.diff(bounds) > 0).all()
    assert len(shards) > 2 and held.max() <= 0.3 * held.sum()
    assert sum(len(shards[i].grade) for i in range(len(shards))) == len(coll.judged.grade)


FORKED = """import os
import numpy as np
from rpp_cli import memory
from rpp_cli.engine import Processes

memory.tune()  # the CLI's allocator: freed blocks under 64 MiB stay in the heap


def parent_rss_mb(_shard):
    with open(f"/proc/{os.getppid()}/status") as f:
        line = next(x for x in f if x.startswith("VmRSS:"))
    return int(line.split()[1]) // 1024


blocks = [np.ones(1 << 17) for _ in range(300)]  # 300 MiB of 1 MiB blocks on the heap
del blocks[:-1]  # all freed but the last, which keeps the heap's top from shrinking
print(max(Processes(2).imap(parent_rss_mb, list(range(4)))))
"""


def test_workers_fork_from_a_trimmed_heap():
    """The parent hands its heap's free pages back before it forks workers: as a worker
    sees it, the parent holds under 150 MB after freeing 299 of 300 MiB (31 MB measured;
    331 MB without the trim, pages every worker would share and count)."""
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True,
                          check=True)
    assert int(done.stdout) < 150

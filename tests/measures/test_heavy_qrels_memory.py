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

from rpp_cli.collection import _items, encode
from rpp_cli.engine import session
from rpp_cli.io.judged import CHUNK_ROWS
from rpp_cli.io.qrels import read_qrels
from rpp_cli.measures.trec import trec_shards
from tests.io.test_qrels_memory import heavy_qrels


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Qrels of 2,000 queries x 90 judgments, and a run of one query's 100 rows."""
    qrels, _, _, small = heavy_qrels(tmp_path_factory.mktemp("heavy"), queries=2_000)
    return qrels, small


def test_relevant_items_docnos_are_one_buffer(heavy):
    """Finding the relevant items peaks under 150 bytes an item (96 measured: the docnos'
    bytes, their offsets and lengths, the sort's index arrays); a bytes object per item
    peaked at 361. The items come by query, then docno bytes, with their own docnos."""
    qrels = read_qrels(heavy[0])
    docs = qrels.dictionary()
    judged_query = docs.keys().copy()
    tracemalloc.start()
    try:
        codes, names = _items(docs, judged_query, qrels.grade, None, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(codes) == int((qrels.grade > 0).sum()) > 70_000
    assert peak / len(codes) < 150
    strings = docs.strings(codes)
    assert names.texts() == [s.decode() for s in strings]
    keys = list(zip(judged_query[codes].tolist(), strings))
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
from rpp_cli.core import memory
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


@pytest.mark.slow
def test_workers_fork_from_a_trimmed_heap():
    """The parent hands its heap's free pages back before it forks workers: as a worker
    sees it, the parent holds under 150 MB after freeing 299 of 300 MiB (31 MB measured;
    331 MB without the trim, pages every worker would share and count)."""
    done = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True,
                          check=True)
    assert int(done.stdout) < 150

"""The judgments' dictionary handing out what it holds a block of codes at a time
(io/judged.py JudgedIndex): the docnos of any codes as one Column, in any order, codes added
after the judgments among them, whatever the block and the chunk; the key of every code made
once while no code is added; and nothing as long as the codes held beside what is returned.

Qrels from the hostile generator (string qids, mixed docnos, repeats, lines of a query apart),
checked against the docnos the reader kept and the pairs each add was given.
"""
from __future__ import annotations

import random
import tracemalloc

import numpy as np
import pytest

import rpp_cli.io.judged as judged
from rpp_cli.io.qrels import read_qrels

from ..conftest import tiered
from .test_judged_index import qrels_and_reference, rows_to_code
from .test_qrels_memory import heavy_qrels


def index_with_added_codes(tmp_path, seed: int):
    """Qrels, their index with codes added after the judgments (a run's rows, in batches),
    and the docno of every code."""
    qrels, keys, _ = qrels_and_reference(tmp_path, seed)
    index = qrels.dictionary()
    docno = {j: qrels.docno.bytes(j) for j in range(len(qrels.grade))}
    rng = random.Random(seed)
    for batch in range(3):
        col, row_keys = rows_to_code(rng, qrels, keys, 150)
        codes, _ = index.add_batch(col, row_keys, batch)
        for code, i in zip(codes.tolist(), range(len(col))):
            assert docno.setdefault(code, col.bytes(i)) == col.bytes(i)
    assert len(index) == len(docno) > len(qrels.grade)
    return qrels, index, docno


@pytest.mark.parametrize("seed", tiered(range(3)))
@pytest.mark.parametrize("block", [1, 3, 64, judged.BLOCK_ROWS])
@pytest.mark.parametrize("chunk", [1, 4, judged.CHUNK_ROWS])
def test_column_and_strings_of_any_codes_a_block_at_a_time(tmp_path, monkeypatch, seed,
                                                           block, chunk):
    """Ascending, descending, shuffled with repeats, judged only, added only, none: each
    row's docno; the judged codes' docnos back to back in row order, the added ones' after
    them; strings() the same bytes."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(judged, "BLOCK_ROWS", block)
    qrels, index, docno = index_with_added_codes(tmp_path, seed)
    rng = np.random.default_rng(seed)
    every = np.arange(len(index))
    for codes in (every, every[::-1], rng.choice(every, 300), every[:len(qrels.grade)],
                  every[len(qrels.grade):], every[:0]):
        col = index.column(codes)
        want = [docno[c] for c in codes.tolist()]
        assert [col.bytes(i) for i in range(len(col))] == want
        own = codes < len(qrels.grade)
        assert bytes(col.data) == b"".join(w for w, o in zip(want, own) if o) + \
            b"".join(w for w, o in zip(want, own) if not o)
        assert index.strings(codes) == want
    with pytest.raises(IndexError):
        index.column(np.array([0, len(index)]))


def test_keys_are_made_once_until_a_code_is_added(tmp_path):
    """Asked again, keys() gives the array it gave (read-only: its callers share it); once a
    code is added, a new one with the added code's key, the first left as it was."""
    qrels, keys, _ = qrels_and_reference(tmp_path, 1)
    index = qrels.dictionary()
    first = index.keys()
    assert index.keys() is first and not first.flags.writeable
    assert first.tolist() == keys.tolist()
    with pytest.raises(ValueError):
        first[0] = 1
    col, row_keys = rows_to_code(random.Random(1), qrels, keys, 40)
    index.add(col, row_keys)
    again = index.keys()
    assert again is not first and len(again) == len(index) > len(first)
    assert again[:len(first)].tolist() == first.tolist() == keys.tolist()
    assert index.keys() is again


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    """Qrels of 500 queries x 90 judgments (45,000 codes)."""
    return heavy_qrels(tmp_path_factory.mktemp("heavy"), queries=500)[0]


def test_column_of_every_judgment_holds_a_block_beside_it(heavy, monkeypatch):
    """The docnos of every judgment: the Column (their bytes, 12 bytes a row) and, beside
    it, a mask of a byte a code and the offsets of a block and of a chunk (8 bytes a row
    each); an int64 array as long as the codes would add 8 bytes a code."""
    monkeypatch.setattr(judged, "CHUNK_ROWS", 2048)
    monkeypatch.setattr(judged, "BLOCK_ROWS", 1024)
    qrels = read_qrels(heavy)
    index = qrels.dictionary()
    codes = np.arange(len(qrels.grade))
    tracemalloc.start()
    try:
        col = index.column(codes)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    held = len(col.data) + col.starts.nbytes + col.lens.nbytes
    assert len(col.data) == len(qrels.docno_bytes) and len(codes) == 45_000
    assert peak <= held + len(codes) + 64 * (2048 + 1024) + 50_000

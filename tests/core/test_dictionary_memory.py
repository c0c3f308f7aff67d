"""What the exact dictionary (core.Dictionary over the kernel's StrMap) holds a distinct
(key, docno): the docno's bytes and a few dozen bytes more.

A collection's docnos are coded in one dictionary, a table per query; on tall-deep (7.4 million
distinct (query, docno) pairs, 148 a query) it was the largest thing alive at the peak. The
kernel keeps a 12-byte item an entry (where its bytes end, its code, the last batch that met
it), an index of 8-byte slots (hash, item) at most 3/4 full, and a 4-byte key a code; a
table's items and slots are sized for its first rows, and its arrays grow by a quarter. Here
it is filled as encode fills it (each query's judged docnos first, then five runs that each
rank 100 of its pool of 150, their repeats stamped) and measured twice: the kernel's own
count of what it allocated (``nbytes``), and what a fresh process keeps resident, the
allocator's share included.
"""
from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rpp_cli.core import Column, Dictionary, _kernel

from ..realistic import DOCNO_STYLES, _docnos

# memory measured in fresh processes and on a million docnos: the full suite's, not the
# edit loop's
pytestmark = pytest.mark.slow

KEYS, POOL, JUDGED, RUNS, DEPTH = 2000, 150, 90, 5, 100


def _collection(seed: int = 36) -> tuple[bytes, np.ndarray, list[np.ndarray]]:
    """Docnos of 1-100 bytes in every style (UTF-8 among them), each key's pool of POOL drawn
    from a universe the keys share: the docnos back to back, their lengths, and the rows of
    each call (the judged, then each run's) as (key, docno index), grouped by key."""
    rng = random.Random(seed)
    styles = [fn for fn in DOCNO_STYLES.values() if fn is not None]
    universe = [d.encode() for d in _docnos(rng, styles, 40_000)]
    lens = np.array([len(d) for d in universe], dtype=np.int32)
    draw = np.random.default_rng(seed)
    pools = np.stack([draw.choice(len(universe), POOL, replace=False) for _ in range(KEYS)])
    keys = np.arange(KEYS)[:, None]
    picks = [pools[:, :JUDGED]] + [
        np.take_along_axis(pools, np.argsort(draw.random((KEYS, POOL)), axis=1)[:, :DEPTH], 1)
        for _ in range(RUNS)]
    calls = [np.stack(np.broadcast_arrays(keys, pick), -1).reshape(-1, 2) for pick in picks]
    return b"".join(universe), lens, calls


def _fill(data: bytes, lens: np.ndarray, calls: list[np.ndarray]) -> Dictionary:
    """A dictionary of KEYS keys filled by ``calls``: the first added, the others (runs)
    added as batches."""
    starts = np.concatenate(([0], np.cumsum(lens)[:-1])).astype(np.int64)
    docs = Dictionary(KEYS)
    for batch, rows in enumerate(calls):
        col = Column(data, starts[rows[:, 1]], lens[rows[:, 1]])
        if batch == 0:
            docs.add(col, rows[:, 0])
        else:
            docs.add_batch(col, rows[:, 0], batch)
    return docs


def _distinct(lens: np.ndarray, calls: list[np.ndarray]) -> tuple[int, int]:
    """(distinct (key, docno) pairs of ``calls``, their docnos' bytes)."""
    pairs = np.unique(np.concatenate(calls), axis=0)
    return len(pairs), int(lens[pairs[:, 1]].sum())


def test_a_distinct_docno_costs_its_bytes_and_under_45_more():
    """nbytes: the tables (slots, items, arenas, with the unused tails of their growth) and
    the codes' keys (in chunks that double) come to the docnos' bytes + under 45 bytes an
    entry (38 measured: items 14, slots 14, keys 7, the arenas' unused tails 3)."""
    data, lens, calls = _collection()
    docs = _fill(data, lens, calls)
    entries, strings = _distinct(lens, calls)
    assert len(docs) == entries > 250_000
    extra = (docs.nbytes() - strings) / entries
    assert 12 + 8 / 0.75 < extra < 45  # at least an item and 4/3 slots (at most 3/4 used)


def test_keys_beyond_32_bits_are_refused():
    """A code's key is kept in 4 bytes: a dictionary of more than 2^32 keys is refused, before
    anything is allocated for them."""
    with pytest.raises(ValueError, match="n_keys"):
        _kernel.StrMap((1 << 32) + 1)
    with pytest.raises(ValueError, match="n_keys"):
        _kernel.StrMap(0)


CHILD = """
from rpp_cli.memory import release_free_memory, tune
tune()  # the CLI's allocator settings
from tests.core.test_dictionary_memory import _collection, _distinct, _fill
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
data, lens, calls = _collection()
release_free_memory()  # what making them freed: the dictionary would reuse it unseen
before = rss()
docs = _fill(data, lens, calls)
release_free_memory()  # the arrays of the calls, freed
print(rss() - before, *_distinct(lens, calls))
"""


def test_a_fresh_process_keeps_the_bytes_and_under_55_more():
    """The same dictionary in a fresh process keeps the docnos' bytes + under 55 bytes an
    entry resident (43 measured: nbytes, the allocator's headers and partly used pages; the
    dictionary before, with 24-byte slots at most half full, 16-byte entries and arenas that
    doubled, kept 125). Linux with glibc, as the suite's other memory tests: it reads /proc
    and has glibc's heap trimmed."""
    out = subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True,
                         check=True, cwd=Path(__file__).resolve().parents[2]).stdout.split()
    grown, entries, strings = map(int, out)
    assert entries > 250_000
    assert 0 < (grown - strings) / entries < 55

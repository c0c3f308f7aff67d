"""QueryDocs (rpp_cli/core, the kernel's DocScores): one long query's distinct docnos and
their best scores, compact. Checked against literal Python references: rank_rows' order of the
same docnos and scores (score descending, docno descending by bytes), trec_eval's order on
scores cast to C float, a dict for repeats (the first repeat's row and its first copy's place;
with dedup the highest score, the earliest on ties), and the bytes it holds per docno."""
from __future__ import annotations

import random

import numpy as np
import pytest

from rpp_cli.core import QueryDocs, column_of, rank_rows

# ties as doubles, ties only as C floats (trec_eval's order then differs), negatives, huge
SCORES = (1.0, 1.0 + 2**-30, 1.0 + 2**-29, 0.5, 0.5 + 2**-31, -3.0, 2.5e38, 3.4e38, 7e-300)


def _docnos(rng: random.Random, n: int) -> list[bytes]:
    """``n`` distinct docnos of mixed shapes and lengths: shared prefixes (doc1, doc10),
    UTF-8, 40-byte hex, and lengths over 255 (two length bytes) up to the 4,096 limit."""
    out: dict[bytes, None] = {}
    while len(out) < n:
        k = rng.randint(0, 9)
        d = (b"doc%d" % rng.randint(0, 300) if k < 3 else
             ("Zürich_%d" % rng.randint(0, 99)).encode() if k == 3 else
             b"%040x" % rng.getrandbits(160) if k == 4 else
             b"x" * rng.choice((254, 255, 256, 300, 4096)) + b"%d" % rng.randint(0, 9)
             if k == 5 else b"clueweb12-%04dtw-%05d" % (rng.randint(0, 99), rng.randint(0, 99)))
        out[d[:4096]] = None
    return list(out)


def _ranked_texts(docs: QueryDocs, refs: np.ndarray) -> list[bytes]:
    col = docs.column(refs)
    return [bytes(col.data[s:s + n]) for s, n in zip(col.starts.tolist(), col.lens.tolist())]


@pytest.mark.parametrize("seed", range(25))
def test_the_ranking_is_rank_rows_and_trec_evals(seed):
    """Docnos added in chunks of any size come back in rank_rows' order with their scores,
    and ``places`` maps trec_eval's order (C-float scores) to places in that ranking."""
    rng = random.Random(seed)
    names = _docnos(rng, rng.choice((0, 1, 2, 17, 300, 2000)))
    score = np.array([rng.choice(SCORES) if rng.random() < 0.7 else rng.uniform(-1, 1)
                      for _ in names])
    docs, at = QueryDocs(), 0
    while at < len(names):
        step = rng.randint(1, 400)
        assert docs.add(column_of(names[at:at + step]), score[at:at + step], False) == (-1, -1)
        at += step
    assert len(docs) == len(names) and docs.repeats == 0
    col, query = column_of(names), np.zeros(len(names), dtype=np.int64)
    want = rank_rows(col, query, score, 1)
    ranked = docs.ranked()
    assert _ranked_texts(docs, ranked) == [names[i] for i in want]
    assert np.array_equal(docs.scores(ranked), score[want])
    with np.errstate(over="ignore"):
        single = score.astype(np.float32).astype(np.float64)
    trec = rank_rows(col, query, single, 1)
    place = np.empty(len(names), dtype=np.int64)
    place[want] = np.arange(len(names))
    assert docs.places(ranked, docs.ranked(single=True)).tolist() == place[trec].tolist()
    assert _ranked_texts(docs, ranked) == [names[i] for i in want]  # docnos outlive scores


@pytest.mark.parametrize("seed", range(25))
def test_repeats_are_found_as_they_are_added(seed):
    """Without dedup the first repeat stops the adding: its row in the call and the place of
    its first copy among the distinct docnos (a literal dict says which); with dedup each
    docno keeps its highest score, the earliest on a tie, and the repeats are counted."""
    rng = random.Random(seed)
    pool = _docnos(rng, rng.randint(1, 60))
    rows = [rng.choice(pool) for _ in range(rng.randint(1, 300))]
    score = np.array([rng.choice((1.0, 2.0, 0.5, -1.0)) for _ in rows])
    seen: dict[bytes, int] = {}
    first = next(((i, seen[d]) for i, d in enumerate(rows) if d in seen
                  or seen.setdefault(d, len(seen)) is None), None)
    docs, at, got = QueryDocs(), 0, None
    while at < len(rows) and got is None:
        step = rng.randint(1, 50)
        i, ordinal = docs.add(column_of(rows[at:at + step]), score[at:at + step], False)
        got = (at + i, ordinal) if i >= 0 else None
        at += step
    assert got == first
    best: dict[bytes, float] = {}
    for d, s in zip(rows, score.tolist()):
        best[d] = max(best.get(d, s), s)
    dedup = QueryDocs()
    for lo in range(0, len(rows), 7):
        assert dedup.add(column_of(rows[lo:lo + 7]), score[lo:lo + 7], True) == (-1, -1)
    assert dedup.repeats == len(rows) - len(best) and len(dedup) == len(best)
    ranked = dedup.ranked()
    assert dict(zip(_ranked_texts(dedup, ranked), dedup.scores(ranked).tolist())) == best


def test_a_docno_costs_its_bytes_nine_more_and_the_index():
    """Held: each docno's bytes, 8 bytes of score and 1 of length (3 over 254 bytes), and an
    index of 5 bytes a slot kept 60-90 % full (5.6-8.3 bytes a docno)."""
    rng = random.Random(5)
    for n in (1000, 30_000, 200_000):
        names = [b"clueweb12-%04dtw-%05d" % divmod(i, 100_000) for i in range(n - 10)]
        names += [b"y" * 300 + b"%d" % i for i in range(10)]
        docs = QueryDocs()
        docs.add(column_of(names), np.array([rng.random() for _ in names]), False)
        arena = sum(map(len, names)) + 9 * n + 2 * 10
        index = docs.nbytes() - arena
        assert 5 / 0.9 * n <= index <= 5 / 0.6 * n, (n, index / n)
        docs.ranked()  # the index is freed: the arena is what is left
        assert docs.nbytes() == arena


def test_misuse_is_an_error_not_a_crash():
    """Adding after ranking, scores after places, a reference outside the arena, arrays of
    different lengths and growing an arena a Column still reads are refused."""
    docs = QueryDocs()
    docs.add(column_of([b"a", b"bb"]), np.array([1.0, 2.0]), False)
    col = docs.column(np.array([0], dtype=np.uint32))  # a view of the arena: it cannot grow
    with pytest.raises(BufferError):
        docs.add(column_of([b"c"]), np.array([1.0]), False)
    del col
    with pytest.raises(ValueError):
        docs.add(column_of([b"c"]), np.array([1.0, 2.0]), False)
    with pytest.raises(IndexError):
        docs.scores(np.array([21], dtype=np.uint32))  # (the arena holds 21 bytes)
    ranked = docs.ranked()
    assert _ranked_texts(docs, ranked) == [b"bb", b"a"]
    with pytest.raises(RuntimeError):
        docs.add(column_of([b"c"]), np.array([1.0]), False)
    docs.places(ranked, ranked.copy())
    with pytest.raises(RuntimeError):
        docs.scores(ranked)

"""Property tests on random small collections (contract §2-4), against a deliberately slow,
literal implementation of the contract written here."""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpp_cli.populations import Populations
from rpp_cli.measures.preference import level_weights, pairwise

from .conftest import parse_lines, rpp

DOCS = ["a", "b", "c", "d10", "d2", "d9", "zz", "Z"]
QIDS = ["1", "10", "2"]
DISCOUNTS = {"rpp": lambda i: 1.0, "dcgrpp": lambda i: 1 / math.log2(i + 1),
             "invrpp": lambda i: 1 / i}


@st.composite
def collections(draw):
    """qrels {q: {d: g}} (>= 1 relevant somewhere) and 2-4 runs {q: [(d, score)]}."""
    qrels = {}
    for q in QIDS:
        judged = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=6))
        qrels[q] = {d: draw(st.integers(0, 3)) for d in judged}
    if not any(g > 0 for docs in qrels.values() for g in docs.values()):
        qrels["1"]["a"] = 1
    evaluated = [q for q in QIDS if any(g > 0 for g in qrels[q].values())]
    n_runs = draw(st.integers(2, 4))
    runs = []
    for _ in range(n_runs):
        run = {}
        for q in QIDS + ["77"]:
            docs = draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=7))
            run[q] = [(d, draw(st.sampled_from([0.5, 1.0, 1.5, 2.0, 3.25]))) for d in docs]
        if not any(run[q] for q in evaluated):
            run[evaluated[0]] = [("a", 1.0)]
        runs.append(run)
    return qrels, runs


def slow_rpp(qrels, runs, measure):
    """contract §2-4 taken literally, one query, pair and recall level at a time."""
    out = {}
    for q in QIDS:
        rel = {d: g for d, g in qrels[q].items() if g > 0}
        if not rel:
            continue
        union = set(rel) | {d for run in runs for d, _ in run[q]}  # §2: rankings, relevant
        n = len(union)
        ranks = []
        for run in runs:
            order = sorted(run[q], key=lambda x: (x[1], x[0].encode()), reverse=True)
            ranks.append({d: i + 1 for i, (d, _) in enumerate(order)})
        pops = [[d for d in rel if rel[d] >= lam] for lam in sorted(set(rel.values()))]
        total = sum(len(p) for p in pops)

        def f(rank, pop):
            got = sorted(rank[d] for d in pop if d in rank)
            return got + [n - len(pop) + i for i in range(len(got) + 1, len(pop) + 1)]

        for a in range(len(runs)):
            for b in range(len(runs)):
                value = 0.0
                for pop in pops:
                    fa, fb = f(ranks[a], pop), f(ranks[b], pop)
                    w = [DISCOUNTS[measure](i) for i in range(1, len(pop) + 1)]
                    s = sum(wi * np.sign(y - x) for wi, x, y in zip(w, fa, fb))
                    value += len(pop) / total * s / sum(w)
                out[(q, a, b)] = value
    return out


def slow_asl(qrels, runs):
    """Mean worst-case position of the relevant items, n = union of rankings and relevant
    items (contract §2)."""
    out = {}
    for q in QIDS:
        rel = [d for d, g in qrels[q].items() if g > 0]
        if not rel:
            continue
        n = len(set(rel) | {d for run in runs for d, _ in run[q]})
        for r, run in enumerate(runs):
            order = sorted(run[q], key=lambda x: (x[1], x[0].encode()), reverse=True)
            rank = {d: i + 1 for i, (d, _) in enumerate(order)}
            got = sorted(rank[d] for d in rel if d in rank)
            pos = got + [n - len(rel) + i for i in range(len(got) + 1, len(rel) + 1)]
            out[(q, r)] = sum(pos) / len(pos)
    return out


def write(tmp, qrels, runs, shuffle_seed=None):
    qlines = [f"{q} 0 {d} {g}\n" for q, docs in qrels.items() for d, g in docs.items()]
    run_lines = [[f"{q} Q0 {d} {i + 1} {s} sys{r}\n" for q, docs in run.items()
                  for i, (d, s) in enumerate(docs)] for r, run in enumerate(runs)]
    if shuffle_seed is not None:
        rnd = random.Random(shuffle_seed)
        rnd.shuffle(qlines)
        for lines in run_lines:
            rnd.shuffle(lines)
    (tmp / "qrels").write_text("".join(qlines))
    paths = []
    for r, lines in enumerate(run_lines):
        (tmp / f"sys{r}").write_text("".join(lines))  # named sys<r>, by the file name
        paths.append(tmp / f"sys{r}")
    return tmp / "qrels", paths


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@SETTINGS
@given(collections())
def test_matches_slow_reference(tmp_path, coll):
    qrels, runs = coll
    q, paths = write(tmp_path, qrels, runs)
    res = rpp("eval", "-q", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "-m", "asl",
              "--precision", "14", q, *paths)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    for measure in DISCOUNTS:
        want = slow_rpp(qrels, runs, measure)
        qids = sorted({k[0] for k in want})
        for (qid, a, b), value in want.items():
            if a != b:
                assert abs(got[(measure, qid, f"sys{a}", f"sys{b}")] - value) < 1e-12
        for a in range(len(runs)):
            for b in range(len(runs)):
                if a != b:
                    mean = sum(want[(qid, a, b)] for qid in qids) / len(qids)
                    assert abs(got[(measure, "all", f"sys{a}", f"sys{b}")] - mean) < 1e-12
            win = [sum(want[(qid, a, b)] for b in range(len(runs))) / (len(runs) - 1)
                   for qid in qids]
            assert abs(got[(f"{measure}_win", "all", f"sys{a}")] - sum(win) / len(win)) < 1e-12
    for (qid, r), value in slow_asl(qrels, runs).items():
        assert abs(got[("asl", qid, f"sys{r}")] - value) < 1e-9


@pytest.mark.slow
@SETTINGS
@given(collections(), st.integers(0, 10**6))
def test_invariant_to_line_order(tmp_path, coll, seed):
    qrels, runs = coll
    q, paths = write(tmp_path, qrels, runs)
    before = rpp("eval", "-q", "--precision", "14", q, *paths)
    q, paths = write(tmp_path, qrels, runs, shuffle_seed=seed)
    after = rpp("eval", "-q", "--precision", "14", q, *paths)
    assert before.code == after.code == 0
    assert before.out == after.out


@pytest.mark.slow
@SETTINGS
@given(collections())
def test_antisymmetric_bounded_and_zero_on_itself(tmp_path, coll):
    qrels, runs = coll
    runs = runs + [runs[0]]  # the same ranking under another name: RPP(a, a) = 0
    q, paths = write(tmp_path, qrels, runs)
    res = rpp("eval", "-q", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "--precision", "14",
              q, *paths)
    got = parse_lines(res.out)
    last = f"sys{len(runs) - 1}"
    for key, value in got.items():
        assert -1 - 1e-12 <= value <= 1 + 1e-12
        if len(key) == 4:
            assert got[(key[0], key[1], key[3], key[2])] == -value
            if {key[2], key[3]} == {"sys0", last}:
                assert value == 0


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(2, 5), st.integers(0, 2**32 - 1))
def test_kernel_antisymmetry_and_chunking(n_queries, n_runs, seed):
    """The vectorised kernel directly: exact antisymmetry, zero diagonal, and the same values
    whatever the chunk size (chunks never split a query's levels; at 8 bytes every query's
    pairs come one at a time), for weighted and uniform RPP and lexicographic preference."""
    import rpp_cli.measures.preference as pref
    from rpp_cli.measures.lexicographic import lexicographic

    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 6, n_queries * 2)
    seg_query = np.repeat(np.arange(n_queries), 2)
    member_seg = np.repeat(np.arange(len(sizes)), sizes)
    pops = Populations(np.arange(len(member_seg)), member_seg, seg_query)
    positions = np.sort(rng.integers(1, 8, (n_runs, len(member_seg))), axis=1)
    w = np.column_stack([level_weights(pops, "dcg"), level_weights(pops, "uniform")])
    uniform = np.array([False, True])

    def every() -> list[np.ndarray]:
        return [pairwise(positions, pops, w, n_queries, uniform),
                lexicographic(positions, pops, n_queries, "first", "sign"),
                lexicographic(positions, pops, n_queries, "last", "reciprocal")]

    full_all = every()
    old = pref._CHUNK_BYTES
    try:
        pref._CHUNK_BYTES = 8
        tiny_all = every()
    finally:
        pref._CHUNK_BYTES = old
    for full, tiny in zip(full_all, tiny_all):
        assert np.array_equal(full, tiny)
    full = full_all[0]
    assert np.array_equal(full, -full.transpose(0, 1, 3, 2))
    assert (np.abs(full) <= 1 + 1e-12).all()


@given(st.lists(st.lists(st.sampled_from([-1.0, 0.0, 0.5, 1.0, 2.0, 3.0, 1e9, float("nan")]),
                         max_size=12), min_size=1, max_size=6))
@pytest.mark.slow
@settings(max_examples=300, deadline=None)
def test_graded_populations_are_the_items_at_or_above_each_grade(grades):
    """Each query's segments are its distinct relevant grades λ in ascending order, and each
    holds exactly the query's items of grade >= λ (a grade of NaN, judged elsewhere only,
    never), as the literal definition makes them."""
    from types import SimpleNamespace

    from rpp_cli.populations import graded_populations

    q = np.repeat(np.arange(len(grades)), [len(x) for x in grades]).astype(np.int64)
    g = np.array([v for x in grades for v in x], dtype=np.float64)
    coll = SimpleNamespace(item_query=q, item_grade=g, relevant=g > 0, binary=False,
                           item_bounds=np.concatenate(([0], np.cumsum([len(x) for x in grades]))))
    pops = graded_populations(coll)
    got = [(int(pops.seg_query[s]), sorted(pops.member_item[pops.member_seg == s].tolist()))
           for s in range(len(pops.seg_query))]
    want = [(k, [int(i) for i in np.flatnonzero((q == k) & (g >= lam))])
            for k in range(len(grades)) for lam in sorted({v for v in grades[k] if v > 0})]
    assert got == want
    assert (np.diff(pops.member_seg) >= 0).all()


@given(st.lists(st.tuples(st.integers(0, 6), st.sampled_from([0.5, 1.0, 2.0, 3.0, 1e9])),
                max_size=60))
@settings(max_examples=300, deadline=None)
def test_distinct_pairs_is_numpy_unique_of_the_columns(rows):
    """graded_populations' (query, λ) pairs: the lexsort equals np.unique(axis=1) of the
    stacked columns, in the same order, for any order and repeats of the rows."""
    from rpp_cli.populations import distinct_pairs

    query = np.array([r[0] for r in rows], dtype=np.int64)
    grade = np.array([r[1] for r in rows], dtype=np.float64)
    got_query, got_grade = distinct_pairs(query, grade)
    want = np.unique(np.stack([query.astype(np.float64), grade]), axis=1)
    assert got_query.tolist() == want[0].astype(np.int64).tolist()
    assert got_grade.tolist() == want[1].tolist()


def test_one_large_query_comes_a_group_of_pairs_at_a_time():
    """A query with more levels than a block holds (graded populations: 1,000 grades are
    500,500 levels) comes in groups of pairs, each with all its levels: every pair once, its
    signs those of the positions, no block over the bound (one block of 780 pairs x 500,500
    levels was 3.7 GB)."""
    import rpp_cli.measures.preference as pref
    from rpp_cli.measures.preference import pair_blocks

    rng = np.random.default_rng(3)
    sizes = np.array([50, 150])  # one query, two populations: 200 levels
    member_seg = np.repeat(np.arange(2), sizes)
    pops = Populations(np.arange(200), member_seg, np.zeros(2, dtype=np.int64))
    positions = rng.integers(1, 40, (10, 200))
    old = pref._CHUNK_BYTES
    try:
        pref._CHUNK_BYTES = 8 * 200 * 5  # five pairs of 200 levels a block
        blocks = list(pair_blocks(positions, pops, 1))
    finally:
        pref._CHUNK_BYTES = old
    assert [len(b[3]) for b in blocks] == [5] * 9
    seen = []
    for q0, q1, lo, ia, ib, sign, bounds in blocks:
        assert (q0, q1, lo, bounds.tolist()) == (0, 1, 0, [0])
        for k, (a, b) in enumerate(zip(ia.tolist(), ib.tolist())):
            assert np.array_equal(sign[k], np.sign(positions[b] - positions[a]))
            seen.append((a, b))
    assert seen == [(a, b) for a in range(10) for b in range(a + 1, 10)]

"""lexiprecision, rrlexiprecision and lexirecall on rankings small enough to count by hand.

Every value below is worked out in the docstring or comment next to it from the worst-case
positions f_1 < ... < f_m of the relevant items (missed items at n - m + i).
"""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from rpp_cli.populations import worst_case_positions
from rpp_cli.measures.lexicographic import decisive_levels, lexicographic
from rpp_cli.measures.search_length import relevant_population

from ..conftest import PAPER, parse_lines, rpp

LEXI = ("lexiprecision", "rrlexiprecision", "lexirecall")


def evaluate(qrels, runs, *extra) -> dict[tuple, float]:
    args = [a for m in LEXI for a in ("-m", m)]
    res = rpp("eval", "-q", "--precision", "12", *args, *extra, qrels, *runs)
    assert res.code == 0, res.err
    return parse_lines(res.out)


def test_paper_worked_example():
    """X = 0 4 3 0 0 0 1 0 3, Y = 3 0 4 5 3 0 0 1 1; 6 relevant items; n = 12 (the distinct
    docnos of both rankings and the qrels).

    f(X) = 2 3 7 9 U U, f(Y) = 1 3 4 5 8 9. First difference at i = 1: Y (1) beats X (2), so
    sgnLP(X, Y) = -1 and rrLP(X, Y) = 1/2 - 1/1 = -1/2. From the bottom: i = 6, X missed it
    (n - 6 + 6 = 12) and Y has it at 9, so sgnLR(X, Y) = -1."""
    got = evaluate(PAPER / "qrels", [PAPER / "run.X", PAPER / "run.Y"], "--names-from", "tag")
    assert got[("lexiprecision", "q1", "X", "Y")] == -1
    assert got[("rrlexiprecision", "q1", "X", "Y")] == pytest.approx(-0.5, abs=1e-12)
    assert got[("rrlexiprecision", "q1", "Y", "X")] == pytest.approx(0.5, abs=1e-12)
    assert got[("lexirecall", "q1", "X", "Y")] == -1
    assert got[("lexirecall_win", "all", "Y")] == 1


def test_precision_and_recall_disagree(tiny):
    """q1: relevant r1, r2 (m = 2). a = r1 x1 x2 x3 finds one, at the top; b = x1 r2 r1 finds
    both, lower. n = |{r1, r2, x1, x2, x3}| = 5.
    f(a) = 1, n - 2 + 2 = 5; f(b) = 2, 3.
    sgnLP(a, b): i = 1, 1 < 2: +1; rrLP = 1/1 - 1/2 = 1/2.
    sgnLR(a, b): i = 2, 5 > 3: -1 (the user who wants both relevant items prefers b).

    q2: relevant s1, s2, s3 (m = 3). a = s1 y1 s2, b = s1 s2 y1; neither retrieves s3.
    n = |{s1, s2, s3, y1}| = 4. f(a) = 1 3 4, f(b) = 1 2 4.
    sgnLP(a, b): i = 1 ties, i = 2: 3 > 2: -1; rrLP = 1/3 - 1/2 = -1/6.
    sgnLR(a, b): i = 3 ties (both missed s3: 4 - 3 + 3 = 4), i = 2: -1."""
    qrels, runs = tiny([("q1", "r1", 1), ("q1", "r2", 1),
                        ("q2", "s1", 2), ("q2", "s2", 1), ("q2", "s3", 1)],
                       {"a": {"q1": ["r1", "x1", "x2", "x3"], "q2": ["s1", "y1", "s2"]},
                        "b": {"q1": ["x1", "r2", "r1"], "q2": ["s1", "s2", "y1"]}})
    got = evaluate(qrels, runs)
    assert got[("lexiprecision", "q1", "a", "b")] == 1
    assert got[("rrlexiprecision", "q1", "a", "b")] == pytest.approx(0.5, abs=1e-12)
    assert got[("lexirecall", "q1", "a", "b")] == -1
    assert got[("lexiprecision", "q2", "a", "b")] == -1
    assert got[("rrlexiprecision", "q2", "a", "b")] == pytest.approx(-1 / 6, abs=1e-12)
    assert got[("lexirecall", "q2", "a", "b")] == -1
    # all = mean over the two queries; with two runs the win rate is the pair's value
    assert got[("lexiprecision", "all", "a", "b")] == 0
    assert got[("rrlexiprecision", "all", "a", "b")] == pytest.approx((0.5 - 1 / 6) / 2)
    assert got[("lexirecall", "all", "b", "a")] == 1
    assert got[("rrlexiprecision_win", "all", "a")] == pytest.approx((0.5 - 1 / 6) / 2)


def test_missed_items_sit_at_the_bottom_of_the_corpus(tiny):
    """q1: relevant r1 (m = 1). a = x1 x2 misses it, b = r1. n = |{r1, x1, x2}| = 3, so
    f_1(a) = 3 - 1 + 1 = 3: rrLP(a, b) = 1/3 - 1/1 = -2/3 (an unranked item valued 0 would
    give -1). With --corpus-size 100: 1/100 - 1 = -0.99. Identical runs tie: 0."""
    qrels, runs = tiny([("q1", "r1", 1)],
                       {"a": {"q1": ["x1", "x2"]}, "b": {"q1": ["r1"]}, "c": {"q1": ["r1"]}})
    got = evaluate(qrels, runs)
    assert got[("rrlexiprecision", "q1", "a", "b")] == pytest.approx(-2 / 3, abs=1e-12)
    assert got[("lexiprecision", "q1", "b", "c")] == 0
    assert got[("rrlexiprecision", "q1", "b", "c")] == 0
    assert got[("lexirecall", "q1", "b", "c")] == 0
    got = evaluate(qrels, runs, "--corpus-size", "100")
    assert got[("rrlexiprecision", "q1", "a", "b")] == pytest.approx(-0.99, abs=1e-12)


def test_a_missed_item_can_tie_with_one_ranked_at_the_corpus_bottom(tiny):
    """q1: relevant r1, n = |{x, r1}| = 2. a = [x r1] ranks it at 2 = n - 1 + 1, where b = [x],
    which missed it, is given it: lexiprecision and lexirecall tie (0), and a note names q1;
    with --corpus-size 100 a wins (+1), and no note."""
    qrels, runs = tiny([("q1", "r1", 1)], {"a": {"q1": ["x", "r1"]}, "b": {"q1": ["x"]}})
    res = rpp("eval", "-q", "-m", "lexiprecision", "-m", "lexirecall", qrels, *runs)
    got = parse_lines(res.out)
    assert got[("lexiprecision", "q1", "a", "b")] == got[("lexirecall", "q1", "a", "b")] == 0
    assert ("lexiprecision/lexirecall: in 1 query (q1) a run ranks a relevant item at "
            "n - m + i") in res.err
    res = rpp("eval", "-q", "-m", "lexiprecision", "--corpus-size", "100", qrels, *runs)
    assert parse_lines(res.out)[("lexiprecision", "q1", "a", "b")] == 1
    assert "n - m + i" not in res.err


def test_relevance_level(tiny):
    """-l 2: only r2 (grade 2) is relevant. a = r1 r2, b = r2 r1: f(a) = 2, f(b) = 1, so
    sgnLP(a, b) = -1. At the default level (> 0) f(a) = f(b) = 1 2: a tie."""
    qrels, runs = tiny([("q1", "r1", 1), ("q1", "r2", 2)],
                       {"a": {"q1": ["r1", "r2"]}, "b": {"q1": ["r2", "r1"]}})
    assert evaluate(qrels, runs)[("lexiprecision", "q1", "a", "b")] == 0
    assert evaluate(qrels, runs, "-l", "2")[("lexiprecision", "q1", "a", "b")] == -1


def test_decisive_levels_by_hand():
    """Two queries of 3 and 2 levels; diff rows are pairs. Row 0: 0 5 -1 | 0 0 -> first
    differing level 1 in query 0, none in query 1; last differing: 2, none."""
    diff = np.array([[0, 5, -1, 0, 0], [2, 0, 0, 0, -3]])
    bounds = np.array([0, 3])
    at, decided = decisive_levels(diff, bounds, "first")
    assert decided.tolist() == [[True, False], [True, True]]
    assert at[decided].tolist() == [1, 0, 4]
    at, decided = decisive_levels(diff, bounds, "last")
    assert at[decided].tolist() == [2, 0, 4]


def test_transitive_within_a_query():
    """sgnLP and sgnLR order the runs of a query like a sort: if a >= b and b >= c then a >= c
    (checked on 8 random runs over 5 queries with coarse ties)."""
    rng = np.random.default_rng(7)
    n_q, n_items, n_runs = 5, 6, 8
    item_query = np.repeat(np.arange(n_q), n_items)
    ranks = rng.integers(0, 5, size=(n_runs, n_q * n_items))  # 0 = missed, many ties
    pops = relevant_population(item_query, np.ones(len(item_query), dtype=bool))
    pos = worst_case_positions(ranks, pops, np.full(n_q, 50))
    for direction in ("first", "last"):
        pref = lexicographic(pos, pops, n_q, direction, "sign")
        for q in range(n_q):
            for a, b, c in itertools.permutations(range(n_runs), 3):
                if pref[q, a, b] >= 0 and pref[q, b, c] >= 0:
                    assert pref[q, a, c] >= 0


def test_rr_sign_matches_sgn(tiny):
    """rrLP always has the sign of sgnLP (both decided at the same level)."""
    rng = np.random.default_rng(3)
    n_q, n_items, n_runs = 4, 5, 5
    item_query = np.repeat(np.arange(n_q), n_items)
    ranks = rng.integers(0, 8, size=(n_runs, n_q * n_items))
    pops = relevant_population(item_query, np.ones(len(item_query), dtype=bool))
    pos = worst_case_positions(ranks, pops, np.full(n_q, 40))
    sgn = lexicographic(pos, pops, n_q, "first", "sign")
    rr = lexicographic(pos, pops, n_q, "first", "reciprocal")
    assert (np.sign(rr) == sgn).all()
    assert (rr == -np.swapaxes(rr, 1, 2)).all()

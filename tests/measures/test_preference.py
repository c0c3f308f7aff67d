"""RPP, dcgRPP and invRPP on rankings small enough to count by hand (contract §4)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from rpp_cli.populations import Populations, positions_and_ties, worst_case_positions
from rpp_cli.measures.preference import level_weights, pairwise

from ..conftest import PAPER, parse_lines, rpp

LOG2_3 = math.log2(3)


def values(out: str, measure: str, qid: str = "all") -> dict[tuple[str, str], float]:
    return {k[2:]: v for k, v in parse_lines(out).items() if k[0] == measure and k[1] == qid}


def weighted(signs_by_population: list[list[int]], discount) -> float:
    """RPP from hand-listed signs: p(P) ∝ m_P, p(i|P) ∝ discount(i)."""
    total = sum(len(s) for s in signs_by_population)
    value = 0.0
    for signs in signs_by_population:
        w = [discount(i) for i in range(1, len(signs) + 1)]
        value += len(signs) / total * sum(wi * si for wi, si in zip(w, signs)) / sum(w)
    return value


UNIFORM = lambda i: 1.0  # noqa: E731
DCG = lambda i: 1 / math.log2(i + 1)  # noqa: E731
INV = lambda i: 1 / i  # noqa: E731


def test_paper_worked_example():
    """contract §4: X = 0 4 3 0 0 0 1 0 3, Y = 3 0 4 5 3 0 0 1 1 (grades in ranking order).

    Populations λ = 1, 3, 4, 5 with 6, 4, 2, 1 members. Positions (U = unretrieved):
      λ=1: X 2 3 7 9 U U   Y 1 3 4 5 8 9   signs for RPP(X, Y): - 0 - - - -
      λ=3: X 2 3 9 U       Y 1 3 4 5       - 0 - -
      λ=4: X 2 U           Y 3 4           + -   (the grade-4 user prefers X at i = 1)
      λ=5: X U             Y 4             -
    RPP(X, Y) = (6/13)(-5/6) + (4/13)(-3/4) + 0 + (1/13)(-1) = -9/13.
    """
    signs = [[-1, 0, -1, -1, -1, -1], [-1, 0, -1, -1], [1, -1], [-1]]
    res = rpp("eval", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "--precision", "12",
              "--names-from", "tag", PAPER / "qrels", PAPER / "run.X", PAPER / "run.Y")
    assert res.code == 0, res.err
    assert values(res.out, "rpp")[("X", "Y")] == pytest.approx(-9 / 13, abs=1e-12)
    assert weighted(signs, UNIFORM) == pytest.approx(-9 / 13)
    for measure, discount in (("dcgrpp", DCG), ("invrpp", INV)):
        got = values(res.out, measure)
        assert got[("X", "Y")] == pytest.approx(weighted(signs, discount), abs=1e-12)
        assert got[("Y", "X")] == pytest.approx(-weighted(signs, discount), abs=1e-12)
    # by hand: invRPP = (6/13)(-(1+1/3+1/4+1/5+1/6)/2.45) + (4/13)(-(1+1/3+1/4)/(25/12))
    #                   + (2/13)((1-1/2)/1.5) + (1/13)(-1)
    inv = (6 / 13 * -(1 + 1 / 3 + 1 / 4 + 1 / 5 + 1 / 6) / 2.45 + 4 / 13 * -(19 / 12) / (25 / 12)
           + 2 / 13 * (0.5 / 1.5) - 1 / 13)
    assert values(res.out, "invrpp")[("X", "Y")] == pytest.approx(inv, abs=1e-12)


def test_paper_example_positions():
    """f_i for λ = 1 and λ = 4 exactly as the contract states them (n = 12 items in the union)."""
    grades = np.array([5, 4, 3, 3, 1, 1])  # d5a d4a d3a d3b d1a d1b
    ranks = np.array([[0, 2, 3, 9, 7, 0],  # X
                      [4, 3, 1, 5, 8, 9]])  # Y
    lam1 = Populations(np.arange(6), np.zeros(6, dtype=np.int64), np.array([0]))
    lam4 = Populations(np.array([0, 1]), np.zeros(2, dtype=np.int64), np.array([0]))
    n = np.array([12])
    assert worst_case_positions(ranks, lam1, n).tolist() == [[2, 3, 7, 9, 11, 12],
                                                               [1, 3, 4, 5, 8, 9]]
    assert worst_case_positions(ranks, lam4, n).tolist() == [[2, 12], [3, 4]]
    assert grades[[0, 1]].min() >= 4


def test_binary_one_population(tiny):
    """Binary grades: A = [a x b], B = [x a c], relevant a b c.
    A: 1 3 U   B: 2 3 U   -> + 0 0: RPP = 1/3, dcgRPP = 1/(1+1/log2 3+1/2), invRPP = 6/11."""
    q, runs = tiny([("q", "a", 1), ("q", "b", 1), ("q", "c", 1), ("q", "x", 0)],
                   {"A": {"q": ["a", "x", "b"]}, "B": {"q": ["x", "a", "c"]}})
    res = rpp("eval", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "--precision", "12", q, *runs)
    assert values(res.out, "rpp")[("A", "B")] == pytest.approx(1 / 3, abs=1e-12)
    assert values(res.out, "dcgrpp")[("A", "B")] == pytest.approx(1 / (1 + 1 / LOG2_3 + 0.5),
                                                                  abs=1e-12)
    assert values(res.out, "invrpp")[("A", "B")] == pytest.approx(6 / 11, abs=1e-12)
    assert values(res.out, "rpp_win")[("A",)] == pytest.approx(1 / 3, abs=1e-12)


def test_graded_users_disagree(tiny):
    """a grade 2, b grade 1. A = [b a], B = [a b]. λ=1 {a, b}: A 1 2, B 1 2 (ties);
    λ=2 {a}: A 2, B 1 -> B. p(λ=1) = 2/3, p(λ=2) = 1/3: every measure gives -1/3."""
    q, runs = tiny([("q", "a", 2), ("q", "b", 1)], {"A": {"q": ["b", "a"]}, "B": {"q": ["a", "b"]}})
    res = rpp("eval", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "--precision", "12", q, *runs)
    for m in ("rpp", "dcgrpp", "invrpp"):
        assert values(res.out, m)[("A", "B")] == pytest.approx(-1 / 3, abs=1e-12)
        assert values(res.out, m)[("B", "A")] == pytest.approx(1 / 3, abs=1e-12)


def test_run_missing_a_query_and_unretrieved_on_both_sides(tiny):
    """n is the union of the rankings and the relevant items of the query (contract §2).
    q1: n = 4 {r1 x y z}; A = [x y r1]: f = 3; B = [z] misses it: f = 4 - 1 + 1 = 4. +1.
    q2: n = 2 {r2 n2}; A has no line (empty ranking): f = 2; B = [r2 n2]: f = 1. -1.
    q3: n = 4 {s1 s2 s3 n}; A = [s1]: 1 3 4; B = [n s2]: 2 3 4 -> + 0 0 = 1/3
    (the two unretrieved levels tie). all = (1 - 1 + 1/3) / 3 = 1/9."""
    qrels = [("q1", "r1", 1), ("q2", "r2", 1), ("q2", "n2", 0),
             ("q3", "s1", 1), ("q3", "s2", 1), ("q3", "s3", 1)]
    q, runs = tiny(qrels, {"A": {"q1": ["x", "y", "r1"], "q3": ["s1"]},
                           "B": {"q1": ["z"], "q2": ["r2", "n2"], "q3": ["n", "s2"]}})
    res = rpp("eval", "-q", "-m", "rpp", "-m", "invrpp", "--precision", "12", q, *runs)
    assert res.code == 0
    got = values(res.out, "rpp", "q1")[("A", "B")], values(res.out, "rpp", "q2")[("A", "B")]
    assert got == (pytest.approx(1.0), pytest.approx(-1.0))
    assert values(res.out, "rpp", "q3")[("A", "B")] == pytest.approx(1 / 3, abs=1e-12)
    assert values(res.out, "invrpp", "q3")[("A", "B")] == pytest.approx(1 / (11 / 6), abs=1e-12)
    assert values(res.out, "rpp")[("A", "B")] == pytest.approx(1 / 9, abs=1e-12)
    assert "trec_eval -c does: 1 of A (q2);" in res.err


def test_small_corpus_unretrieved_ties_with_retrieved_at_the_bottom(tiny):
    """contract §2 taken literally: q has one relevant item r and n = 2 {r, a}. A = [a] misses r,
    which lands at n - 1 + 1 = 2; B = [a r] has it at rank 2 too. The full rankings agree, and
    a note says that the corpus size decided it (pref_eval, or a larger corpus, prefers B)."""
    q, runs = tiny([("q", "r", 1)], {"A": {"q": ["a"]}, "B": {"q": ["a", "r"]}})
    res = rpp("eval", "-m", "rpp", "-m", "dcgrpp", q, *runs)
    assert values(res.out, "rpp")[("A", "B")] == 0
    assert ("rpp: note: rpp/dcgrpp: in 1 query (q) a run ranks a relevant item at n - m + i, "
            "the place the full-corpus ranking gives a run that missed it") in res.err
    res = rpp("eval", "-m", "rpp", "--corpus-size", "100", q, *runs)
    assert values(res.out, "rpp")[("A", "B")] == pytest.approx(-1.0)
    assert "n - m + i" not in res.err


def test_positions_and_ties_by_hand():
    """Query 0 (n = 5), population {p, q}: X = [p . . . q] retrieves q at 5 = n - 2 + 2, the
    place of a missed second member, which Y (q missed) and Z (both missed) are given: a tie
    at slot 2. Slot 1: Z's missed first member sits at 4, and no run retrieved one there: no
    tie. Query 1 (n = 4), one member s: X has it at 3 < 4 and Y misses it: no tie. The tied
    queries: query 0 alone."""
    ranks = np.array([[1, 5, 3],   # X: p, q, s
                      [2, 0, 0],   # Y
                      [0, 0, 1]])  # Z
    pops = Populations(np.array([0, 1, 2]), np.array([0, 0, 1]), np.array([0, 1]))
    positions, tied = positions_and_ties(ranks, pops, np.array([5, 4]))
    assert positions.tolist() == [[1, 5, 3], [2, 5, 4], [4, 5, 1]]
    assert positions.tolist() == worst_case_positions(ranks, pops, np.array([5, 4])).tolist()
    assert tied.tolist() == [0]


def test_ties_in_score_ordered_by_docno_descending(tiny):
    """Equal scores: docno descending (trec_eval). A scores r and z equally: z ranks first,
    so r is at 2; B puts r at 1 outright. B preferred: RPP(A, B) = -1."""
    q, runs = tiny([("q", "r", 1)], {"A": {"q": ["r", "z"]}, "B": {"q": ["r", "a"]}},
                   scores={"A": {"q": [1.0, 1.0]}, "B": {"q": [2.0, 1.0]}})
    res = rpp("eval", "-m", "rpp", q, *runs)
    assert values(res.out, "rpp")[("A", "B")] == pytest.approx(-1.0)


def test_weights_sum_to_one_per_query():
    """Σ_P p(P) Σ_i p(i|P) = 1 for every query and discount: RPP = 1 when a wins everywhere."""
    pops = Populations(np.arange(7), np.array([0, 0, 0, 1, 1, 2, 2]), np.array([0, 0, 1]))
    for discount in ("uniform", "dcg", "inverse"):
        w = level_weights(pops, discount)
        assert np.bincount(pops.seg_query[pops.member_seg], weights=w) == pytest.approx([1, 1])
    positions = np.array([[1, 2, 3, 1, 2, 1, 2], [4, 5, 6, 3, 4, 3, 4]])
    w = np.stack([level_weights(pops, d) for d in ("uniform", "dcg", "inverse")], axis=1)
    out = pairwise(positions, pops, w, 2)
    assert out[:, :, 0, 1] == pytest.approx(np.ones((3, 2)))
    assert out[:, :, 1, 0] == pytest.approx(-np.ones((3, 2)))
    assert (out[:, :, [0, 1], [0, 1]] == 0).all()


@pytest.mark.parametrize("m", [1, 2, 7, 21, 23, 29, 30])
def test_a_run_above_at_every_level_prefers_exactly_1(tmp_path, m):
    """RPP(a, b) = 1 when a places every relevant item above b (contract §4): invrpp's and
    dcgrpp's weights summed to 1.0000000000000002 or 0.9999999999999998 for some m."""
    docs = [f"clueweb12-{k:04d}wb-00-0000{k % 10}" for k in range(m)]
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"106_1 0 {d} 1\n" for d in docs))
    a, b = tmp_path / "a", tmp_path / "b"
    a.write_text("".join(f"106_1 Q0 {d} {i + 1} {100 - i} a\n" for i, d in enumerate(docs)))
    b.write_text("106_1 Q0 MARCO_D0 1 1 b\n")
    out = rpp("eval", "-q", "--precision", "17", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp",
              qrels, a, b).out
    for measure in ["rpp", "dcgrpp", "invrpp"]:
        for qid in ["106_1", "all"]:
            assert values(out, measure, qid) == {("a", "b"): 1.0, ("b", "a"): -1.0}


def test_queries_whose_preferences_cancel_average_to_exactly_0(tmp_path):
    """0.1, 0.2 and -0.3 over three queries (10 relevant items each) are a mean of exactly 0,
    not the 1.85e-17 their float sum gives; so are the win rates, and the t-test's p is 1."""
    qids = ["106_1", "q-\u03b17", "2031"]
    docs = [f"clueweb12-0000wb-00-0000{i}" for i in range(10)]
    qrels = tmp_path / "qrels"
    qrels.write_text("".join(f"{q} 0 {d} 1\n" for q in qids for d in docs))

    def run(path, tag, late):  # late[q]: the relevant item a non-relevant one goes above
        lines = []
        for q in qids:
            ranked = list(docs)
            if q in late:
                ranked.insert(late[q], "MARCO_D1")
            lines += [f"{q} Q0 {d} {i + 1} {100 - i} {tag}\n" for i, d in enumerate(ranked)]
        path.write_text("".join(lines))
        return path

    a = run(tmp_path / "a", "a", {"2031": 7})
    b = run(tmp_path / "b", "b", {"106_1": 9, "q-\u03b17": 8})
    out = rpp("eval", "-q", "--precision", "17", "-m", "rpp", qrels, a, b).out
    assert [values(out, "rpp", q)[("a", "b")] for q in qids] == [0.1, 0.2, -0.3]
    assert values(out, "rpp") == {("a", "b"): 0.0, ("b", "a"): 0.0}
    wins = {k[2]: v for k, v in parse_lines(out).items() if k[:2] == ("rpp_win", "all")}
    assert wins == {"a": 0.0, "b": 0.0}
    tested = parse_lines(rpp("compare", "--test", "ttest", "--precision", "17", "-m", "rpp",
                             qrels, a, b).out)
    assert tested[("rpp_p", "all", "a", "b")] == 1.0 and tested[("rpp", "all", "a", "b")] == 0

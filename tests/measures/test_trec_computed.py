"""The trec_eval measures rpp computes itself (rpp_cli/measures/trec_computed.py): bit for bit
against a literal Python transcription of trec_eval 10.0's C (m_iprec_at_recall.c,
m_11pt_avg.c, m_rbp.c, m_rbp_resid.c, m_unjudged.c, gain_init.c), loop for loop, on generated
rankings; and, under 9.0.8's rounding, against pytrec_eval, which runs 9.0.8's own C."""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.measures import pytrec_adapter, trec_computed
from rpp_cli.measures.trec_computed import NONPOOL, UNJUDGED, Rankings
from rpp_cli.measures.trec_names import TrecRequest

C_NAN = -math.nan  # x86's 0.0 / 0.0: the sign bit set


# ---- the transcription: one query, trec_eval's variables and loops as the C has them ----

def c_div(a: float, b: float) -> float:
    """C's double division (x86): 0/0 is the negative default NaN."""
    if b == 0:
        return C_NAN if a == 0 else math.copysign(math.inf, a)
    return a / b


def c_lround(x: float) -> int:
    """C99 lround, exactly: the nearest integer, halves away from zero."""
    exact = Fraction(x)
    whole = math.floor(abs(exact) + Fraction(1, 2))
    return -whole if exact < 0 else whole


def c_cutoff(share: float, num_rel: int, release: str) -> int:
    """``lround(share * num_rel)`` (10.0) or ``(long) (share * num_rel + 0.9)`` (9.0.8)."""
    x = share * float(num_rel)
    return c_lround(x) if release == "10.0" else int(x + 0.9)


def c_iprec(rel_list: list[int], num_rel: int, level: int, shares: list[float],
            release: str) -> tuple[list[float], float]:
    """te_calc_iprec_at_recall's values and te_calc_11ptavg's sum / n, one loop for both."""
    num_ret = len(rel_list)
    num_rel_ret = sum(1 for r in rel_list if r >= level)
    cutoffs = [c_cutoff(p, num_rel, release) for p in shares]
    values = [0.0] * len(shares)
    total = 0.0
    current_cut = len(shares) - 1
    while current_cut >= 0 and cutoffs[current_cut] > num_rel_ret:
        current_cut -= 1
    precis = c_div(float(num_rel_ret), float(num_ret))
    int_precis = precis
    rel_so_far = num_rel_ret
    i = num_ret
    while i > 0 and rel_so_far > 0:
        precis = float(rel_so_far) / float(i)
        if int_precis < precis:
            int_precis = precis
        if rel_list[i - 1] >= level:
            while current_cut >= 0 and rel_so_far == cutoffs[current_cut]:
                values[current_cut] = int_precis
                total += int_precis
                current_cut -= 1
            rel_so_far -= 1
        i -= 1
    while current_cut >= 0:
        values[current_cut] = int_precis
        total += int_precis
        current_cut -= 1
    return values, total / float(len(shares))


def c_valid_int(name: str) -> bool:
    """gain_init.c's valid_int."""
    body = name[1:] if name[:1] in "+-" else name
    return bool(body) and all(c in "0123456789" for c in body)


def c_rbp(rel_list: list[int], num_rel_levels: int, pairs: list[tuple[str, float]],
          p: float) -> float:
    """te_calc_rbp with setup_gains; min and max start as the widest bounds (the C leaves
    them unset: rpp reads what the code means)."""
    gains: list[list[float]] = []  # [rel_level, gain]
    for name, value in pairs:
        if c_valid_int(name):
            gains.append([int(name), value])
    for i in range(num_rel_levels):
        if not any(g[0] == i for g in gains):
            gains.append([i, float(i)])
    low, high = math.inf, -math.inf
    for g in gains:
        if g[1] < low:
            low = g[1]
        if g[1] > high:
            high = g[1]
    if low < 0 or high > 1:
        for g in gains:
            g[1] = c_div(g[1] - low, high - low)
    total, cur_p = 0.0, 1.0
    for rel in rel_list:
        gain = next((g[1] for g in gains if g[0] == rel), 0.0)
        if gain != 0:
            total += gain * cur_p
        cur_p = cur_p * p
    return (1.0 - p) * total


def c_rbp_resid(rel_list: list[int], p: float) -> float:
    """te_calc_rbp_resid."""
    unj_so_far, total, cur_p = 0, 0.0, 1.0
    for rel in rel_list:
        if rel < 0:
            unj_so_far += 1
            total += cur_p
        cur_p = cur_p * p
    return cur_p + (1 - p) * total if unj_so_far else 0.0


def c_unj(rel_list: list[int], cutoffs: list[int]) -> list[float]:
    """te_calc_unj (cutoffs ascending, as trec_eval sorts them)."""
    values = [0.0] * len(cutoffs)
    cutoff_index, unj_so_far = 0, 0
    for i, rel in enumerate(rel_list):
        if i == cutoffs[cutoff_index]:
            values[cutoff_index] = float(unj_so_far) / float(i)
            cutoff_index += 1
            if cutoff_index == len(cutoffs):
                break
        if rel in (NONPOOL, UNJUDGED):
            unj_so_far += 1
    while cutoff_index < len(cutoffs):
        values[cutoff_index] = float(unj_so_far) / float(cutoffs[cutoff_index])
        cutoff_index += 1
    return values


# ---- generated queries ----

# a query: its ranking as relevance codes, and the grades of judged documents it did not
# retrieve (negative: judged "in the pool, unjudged")
QUERY = st.tuples(st.lists(st.sampled_from([NONPOOL, UNJUDGED, 0, 0, 1, 1, 2, 3, 4]),
                           max_size=45),
                  st.lists(st.integers(-1, 4), max_size=30))
SHARE = st.one_of(st.sampled_from([i / 10 for i in range(11)] + [0.05, 0.15, 0.25, 0.33]),
                  st.floats(-0.3, 1.4, allow_nan=False))


def rankings_of(queries: list[tuple[list[int], list[int]]], level: int,
                judged_only: bool = False) -> Rankings:
    """The Rankings of generated queries: each retrieved judged document and each extra
    judgment is a judgment of its query."""
    bounds = np.cumsum([0] + [len(r) for r, _ in queries])
    rel = np.array([c for r, _ in queries for c in r], dtype=np.int64)
    judged_query, judged_grade = [], []
    for q, (ranking, extra) in enumerate(queries):
        for grade in [c if c >= 0 else -1 for c in ranking if c != NONPOOL] + extra:
            judged_query.append(q)
            judged_grade.append(grade)
    return Rankings.of(bounds, rel, np.array(judged_query, dtype=np.int64),
                       np.array(judged_grade, dtype=np.int64), level, judged_only)


def same_bits(a, b) -> bool:
    """Equal as doubles, bit for bit (the sign of a NaN and of a zero too)."""
    return np.asarray(a, dtype=np.float64).tobytes() == np.asarray(b, dtype=np.float64).tobytes()


def c_inputs(ranking: list[int], extra: list[int], level: int, judged_only: bool = False
             ) -> tuple[list[int], int, int]:
    """What form_res_rels hands a measure: the ranking (-J: judged documents only), num_rel
    at the level, num_rel_levels."""
    judged = [c if c >= 0 else -1 for c in ranking if c != NONPOOL] + extra
    shown = [c for c in ranking if c >= 0] if judged_only else ranking
    positive = [g for g in judged if g >= 0]
    return shown, sum(1 for g in judged if g >= level), (max(positive) + 1 if positive else 0)


@settings(max_examples=300, deadline=None)
@given(st.lists(QUERY, min_size=1, max_size=6), st.integers(1, 3),
       st.lists(SHARE, min_size=1, max_size=12), st.sampled_from(["10.0", "9.0.8"]),
       st.booleans())
@pytest.mark.slow
def test_interpolated_precision_is_the_c_loop(queries, level, shares, release, judged_only):
    """iprec_at_recall (shares sorted, as trec_eval sorts them) and 11pt_avg (shares in the
    given order, repeats and all) equal the C's loop bit for bit, in both releases' rounding."""
    rankings = rankings_of(queries, level, judged_only)
    ordered = sorted(set(shares))
    got_iprec = trec_computed.interpolated(rankings, ordered, release)
    got_11pt = trec_computed.eleven_point(trec_computed.interpolated(rankings, shares, release))
    for q, (ranking, extra) in enumerate(queries):
        shown, num_rel, _ = c_inputs(ranking, extra, level, judged_only)
        want, _ = c_iprec(shown, num_rel, level, ordered, release)
        assert same_bits(got_iprec[q], want), (q, shown, num_rel)
        _, want_11pt = c_iprec(shown, num_rel, level, shares, release)
        assert same_bits(got_11pt[q], want_11pt), (q, shown, num_rel)


PAIR = st.tuples(st.sampled_from(["p", "0", "1", "2", "3", "5", "-1", "-2"]),
                 st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.5, -1.0, 0.25]))


@settings(max_examples=300, deadline=None)
@given(st.lists(QUERY, min_size=1, max_size=6), st.integers(1, 3),
       st.lists(PAIR, max_size=4, unique_by=lambda pair: pair[0]),
       st.one_of(st.sampled_from([0.9, 0.5, 0.95, 0.0, 1.0]), st.floats(0.01, 0.99)),
       st.lists(st.integers(1, 60), min_size=1, max_size=4, unique=True))
@pytest.mark.slow
def test_rbp_rbp_resid_and_unj_are_the_c_loops(queries, level, pairs, p, cuts):
    """rbp (grade=gain pairs, p=P; the level plays no part), rbp_resid and unj equal the C's
    loops bit for bit."""
    rankings = rankings_of(queries, level)
    gains = {int(name): value for name, value in pairs if name != "p"}
    persistence = next((value for name, value in pairs if name == "p"), p)
    got_rbp = trec_computed.rank_biased(rankings, persistence, gains)
    got_resid = trec_computed.residual(rankings, persistence)
    got_unj = trec_computed.unjudged(rankings, sorted(cuts))
    for q, (ranking, extra) in enumerate(queries):
        _, _, levels = c_inputs(ranking, extra, level)
        c_pairs = [(name, value) for name, value in pairs if name != "p"]
        assert same_bits(got_rbp[q], c_rbp(ranking, levels, c_pairs, persistence)), q
        assert same_bits(got_resid[q], c_rbp_resid(ranking, persistence)), q
        assert same_bits(got_unj[q], c_unj(ranking, sorted(cuts))), q


def test_rbp_requests_read_their_pairs_as_trec_eval():
    """``rbp.1=0.5,2=2,p=0.8``: p from its pair (default 0.9), the other pairs gains."""
    rankings = rankings_of([([2, NONPOOL, 1, 0, UNJUDGED], [3])], 1)
    got = trec_computed.evaluate(rankings, [TrecRequest("rbp", "1=0.5,2=2,p=0.8"),
                                            TrecRequest("rbp_resid"), TrecRequest("unj")],
                                 "10.0")
    assert same_bits(got["rbp_1=0.5,2=2,p=0.8"],
                     [c_rbp([2, NONPOOL, 1, 0, UNJUDGED], 4, [("1", 0.5), ("2", 2.0)], 0.8)])
    assert same_bits(got["rbp_resid"], [c_rbp_resid([2, NONPOOL, 1, 0, UNJUDGED], 0.9)])
    assert same_bits(got["unj_5"], [0.4]) and same_bits(got["unj_20"], [0.1])


@pytest.mark.parametrize("share,num_rel,rounded,truncated", [
    (0.1, 5, 1, 1), (0.3, 5, 2, 2), (0.1, 2, 0, 1), (0.2, 7, 1, 2), (0.5, 3, 2, 2),
    (0.7, 5, 4, 4), (0.15, 10, 2, 2), (0.33, 4, 1, 2), (-0.2, 4, -1, 0), (0.0, 9, 0, 0),
])
def test_recall_cutoffs_round_as_each_release(share, num_rel, rounded, truncated):
    """10.0: lround(share R), halves away from zero; 9.0.8: (long) (share R + 0.9)."""
    cut = trec_computed.recall_cutoff
    assert cut(share, np.array([num_rel]), "10.0").tolist() == [rounded]
    assert cut(share, np.array([num_rel]), "9.0.8").tolist() == [truncated]
    assert c_cutoff(share, num_rel, "10.0") == rounded
    assert c_cutoff(share, num_rel, "9.0.8") == truncated


@settings(max_examples=150, deadline=None)
@given(st.lists(QUERY, min_size=1, max_size=5), st.integers(1, 3),
       st.lists(SHARE, min_size=1, max_size=8))
def test_9_0_8_rounding_gives_pytrec_evals_numbers(queries, level, shares):
    """With 9.0.8's rounding the same code gives what 9.0.8's own C (pytrec_eval) gives:
    iprec_at_recall and 11pt_avg on the same rankings (a query of an empty ranking or without
    judgments left out: pytrec_eval skips it)."""
    queries = [(r, e) for r, e in queries if r and (e or any(c != NONPOOL for c in r))]
    if not queries:
        return
    rankings = rankings_of(queries, level)
    ordered = sorted(set(shares))
    names = [f"iprec_at_recall_{x:3.2f}" for x in ordered]
    if len(set(names)) != len(names):  # two shares print alike: pytrec_eval keeps one
        return
    qrels, run = {}, {}
    for q, (ranking, extra) in enumerate(queries):
        docs = [f"d{k}" for k in range(len(ranking))]
        qrels[str(q)] = {d: (c if c >= 0 else -1) for d, c in zip(docs, ranking)
                         if c != NONPOOL}
        qrels[str(q)].update({f"e{k}": g for k, g in enumerate(extra)})
        run[str(q)] = {d: -(k + 1.0) for k, d in enumerate(docs)}
    spec = ",".join(map(repr, ordered))
    points = ",".join(map(repr, shares))
    want = pytrec_adapter.evaluate(qrels, run, [TrecRequest("iprec_at_recall", spec),
                                                TrecRequest("11pt_avg", points)],
                                   level, release="9.0.8")
    got = trec_computed.interpolated(rankings, ordered, "9.0.8")
    got_11pt = trec_computed.eleven_point(trec_computed.interpolated(rankings, shares, "9.0.8"))
    for q in range(len(queries)):
        for k, name in enumerate(names):
            assert same_bits(got[q, k], want[str(q)][name]), (q, name)
        assert same_bits(got_11pt[q], want[str(q)][f"11pt_avg_{points}"]), q

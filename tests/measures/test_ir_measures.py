"""ir_measures' spelling of trec_eval's measures: the same numbers, printed as typed."""
from __future__ import annotations

import numpy as np
import pytest

from ..conftest import DEMO, parse_lines, rpp

RUNS = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr"]


@pytest.mark.parametrize("alias, trec_name, printed", [
    ("nDCG@10", "ndcg_cut.10", "ndcg_cut_10"), ("P@5", "P.5", "P_5"), ("AP", "map", "map"),
    ("RR", "recip_rank", "recip_rank"), ("R@100", "recall.100", "recall_100"),
    ("nDCG", "ndcg", "ndcg"), ("AP@10", "map_cut.10", "map_cut_10"),
    ("NumRet", "num_ret", "num_ret"), ("Success@5", "success.5", "success_5"),
])
def test_alias_prints_the_trec_value_under_its_own_name(alias, trec_name, printed):
    a = parse_lines(rpp("eval", "-q", "--precision", "10", "-m", alias, DEMO / "qrels", *RUNS).out)
    t = parse_lines(rpp("eval", "-q", "--precision", "10", "-m", trec_name, DEMO / "qrels",
                        *RUNS).out)
    assert a and {k[1:]: v for k, v in a.items()} == {k[1:]: v for k, v in t.items()}
    assert {k[0] for k in a} == {alias} and {k[0] for k in t} == {printed}


def test_rel_level_is_pytrec_evals_relevance_level():
    """P(rel=2)@5: precision at 5 counting grade >= 2 as relevant, as pytrec_eval computes
    it with relevance_level=2 (the same as rpp eval -l 2 -m P.5)."""
    got = parse_lines(rpp("eval", "-q", "--precision", "10", "-m", "P(rel=2)@5",
                          DEMO / "qrels", *RUNS).out)
    want = parse_lines(rpp("eval", "-q", "--precision", "10", "-l", "2", "-m", "P.5",
                           DEMO / "qrels", *RUNS).out)
    assert {k[1:]: v for k, v in got.items()} == {k[1:]: v for k, v in want.items()}


def test_numret_with_a_level_counts_relevant_items_retrieved():
    """ir_measures' NumRet(rel=N) is trec_eval's num_rel_ret at level N (its NumRelRet is
    NumRet(rel=1)); NumRet alone is num_ret."""
    def values(measure: str, *options: str) -> dict:
        out = rpp("eval", "-q", *options, "-m", measure, DEMO / "qrels", *RUNS).out
        return {k[1:]: v for k, v in parse_lines(out).items()}

    assert values("NumRet(rel=2)") == values("num_rel_ret", "-l", "2") != values("num_ret")
    assert values("NumRet(rel=1)") == values("NumRelRet") == values("num_rel_ret")
    assert values("NumRet") == values("num_ret")


@pytest.mark.parametrize("name, message", [
    ("ndgc", "unknown measure 'ndgc' (did you mean ndcg, Rndcg?) (rpp measures lists them all)"),
    ("ndcg@10", "unknown measure 'ndcg@10' (did you mean nDCG@10, ndcg_cut.10, ndcg?) (rpp "
                "measures lists them all)"),
    ("NDCG@10", "unknown measure 'NDCG@10' (did you mean nDCG@10, ndcg_cut.10, ndcg?) (rpp "
                "measures lists them all)"),
    ("p@10", "unknown measure 'p@10' (did you mean P@10, P.10, P-IA@10?) (rpp measures lists "
             "them all)"),
    ("P10", "unknown measure 'P10' (did you mean P@10, P.10, P-IA@10?) (rpp measures lists "
            "them all)"),
    ("map@10", "unknown measure 'map@10' (did you mean AP@10, map_cut.10, map?) (rpp measures "
               "lists them all)"),
    ("ndcg_cut10", "unknown measure 'ndcg_cut10' (did you mean nDCG@10, ndcg_cut.10, "
                   "ndcg_cut?) (rpp measures lists them all)"),
    ("recall@100", "unknown measure 'recall@100' (did you mean R@100, recall.100, recall?) "
                   "(rpp measures lists them all)"),
    ("mrr@10", "unknown measure 'mrr@10' (did you mean RR@10, ERR@20, ERR-IA@10?) (rpp "
               "measures lists them all)"),
    ("MAP", "unknown measure 'MAP' (did you mean map, AP, MAP-IA?) (rpp measures lists them "
            "all)"),
    ("INST", "measure 'INST' is ir_measures' own and not in rpp: rpp computes trec_eval's "
             "measures and RR@k, Judged@k, ERR@k (rpp measures lists them)"),
    ("INST(T=1)@10", "measure 'INST(T=1)@10' is ir_measures' own and not in rpp: rpp computes "
                     "trec_eval's measures and RR@k, Judged@k, ERR@k (rpp measures lists them)"),
    ("RBP(p=0.8)", "measure 'RBP(p=0.8)': rpp's RBP is rbp.P (e.g. rbp.0.8), binary (grade > 0, "
                   "or >= -l) with its residual rbp_res.P; ir_measures' RBP (trectools) weighs "
                   "each item by its grade and averages the weights of tied scores"),
    ("RBP@10", "measure 'RBP@10': rpp's RBP is rbp.P (e.g. rbp.0.8), binary (grade > 0, or >= "
               "-l) with its residual rbp_res.P; ir_measures' RBP (trectools) weighs each item "
               "by its grade and averages the weights of tied scores"),
    ("alpha_nDCG(alpha=0.5)@20", "measure 'alpha_nDCG(alpha=0.5)@20': rpp's is alpha-nDCG@k "
                                 "(ndeval v4.5, alpha 0.5), with --subtopics"),
    ("runid", "measure 'runid' is text, not a number: rpp trec-eval prints it"),
    ("NumQ", "measure 'NumQ': ir_measures counts the queries the run has; rpp's num_q counts "
             "every query of the qrels, as trec_eval -c does (the queries its averages are "
             "over)"),
    ("NumRel@5", "measure 'NumRel@5': NumRel takes no cutoff in trec_eval"),
    ("ERR", "measure 'ERR' needs a cutoff, e.g. ERR@20"),
    ("ERR(rel=2)@20", "measure 'ERR(rel=2)@20': ERR takes no relevance level"),
    ("Judged(rel=2)@10", "measure 'Judged(rel=2)@10': Judged takes no relevance level"),
    ("RR@0", "measure 'RR@0': the cutoff must be a whole number from 1 to 2147483647"),
    ("Judged@2.5", "measure 'Judged@2.5': the cutoff must be a whole number from 1 to "
                   "2147483647"),
    ("RR@2147483648", "measure 'RR@2147483648': the cutoff must be a whole number from 1 to "
                      "2147483647"),
    ("RR(rel=0)@10", "measure 'RR(rel=0)@10': rel= takes a relevance level from 1 to "
                     "2147483647"),
    ("RR(rel=2147483648)@10", "measure 'RR(rel=2147483648)@10': rel= takes a relevance level "
                              "from 1 to 2147483647"),
])
def test_wrong_names_say_what_to_do(name, message):
    res = rpp("eval", "-m", name, DEMO / "qrels", *RUNS)
    assert res.code == 2 and res.err == f"rpp: {message}\n"


def test_rpp_measures_lists_both_spellings():
    lines = {line.split("\t")[0].strip(): line for line in rpp("measures").out.splitlines()}
    assert "ir_measures: nDCG," in lines["ndcg"]
    assert "ir_measures: nDCG@k," in lines["ndcg_cut"]
    assert "ir_measures: AP," in lines["map"] and "ir_measures: AP@k," in lines["map_cut"]


# One query, q1, judged a:2 b:0 c:0 d:3 (e unjudged); q2 judged x:1, missing from the run.
# The run ranks q1 e 3.0, then a b c tied at 2.0, then d 1.0:
#   contract §2 (trec_eval, gdeval): e c b a d   (ties by docno descending)
#   msmarco and judged providers:    e a b c d   (ties by docno ascending)
HAND_QRELS = [("q1", "a", 2), ("q1", "b", 0), ("q1", "c", 0), ("q1", "d", 3), ("q2", "x", 1)]
HAND_RUN = {"q1": ["e", "a", "b", "c", "d"]}
HAND_SCORES = {"q1": [3.0, 2.0, 2.0, 2.0, 1.0]}


@pytest.mark.parametrize("name, q1", [
    ("RR", 1 / 4),  # trec_eval's order: a is 4th
    ("RR@10", 1 / 2), ("RR@2", 1 / 2), ("RR@1", 0.0),  # docno ascending: a is 2nd
    ("RR(rel=3)@10", 1 / 5), ("RR(rel=3)@4", 0.0),  # d (grade 3) is 5th
    ("Judged@1", 0.0), ("Judged@3", 2 / 3),  # e a b: a and b judged
    ("Judged@10", 4 / 5), ("Judged", 4 / 5),  # 4 of the 5 ranked are judged: out of 5, not 10
    # gdeval: R = (2^g - 1) / 16 down e c b a d = 0 0 0 3/16 7/16;
    # ERR@4 = (3/16) / 4 = 3/64; ERR@20 = 3/64 + (7/16)(1 - 3/16) / 5 = 3/64 + 91/1280
    ("ERR@4", 3 / 64), ("ERR@20", 3 / 64 + 91 / 1280), ("ERR@3", 0.0),
])
def test_own_measures_by_hand(tiny, name, q1):
    qrels, runs = tiny(HAND_QRELS, {"sys": HAND_RUN}, {"sys": HAND_SCORES})
    got = parse_lines(rpp("eval", "-q", "--precision", "17", "-m", name, qrels, *runs).out)
    assert got == {(name, "q1", "sys"): q1, (name, "q2", "sys"): 0.0,  # q2: empty ranking
                   (name, "all", "sys"): q1 / 2}


def test_err_takes_the_integer_part_of_grades_up_to_4(tiny):
    """gdeval reads integer grades 0-4: 4.7 counts as 4 (R = 15/16); 5 is refused."""
    qrels, runs = tiny([("q1", "a", 4.7)], {"sys": {"q1": ["a"]}})
    got = parse_lines(rpp("eval", "-q", "--precision", "17", "-m", "ERR@20", qrels, *runs).out)
    assert got[("ERR@20", "q1", "sys")] == 15 / 16
    qrels, runs = tiny([("q1", "a", 1), ("q1", "b", 5)], {"sys": {"q1": ["a"]}})
    res = rpp("eval", "-m", "ERR@20", qrels, *runs)
    assert res.code == 2 and res.out == "" and res.err == (
        "rpp: ERR@k takes gdeval's grades 0-4; query q1 has an item of grade 5\n")


def test_docno_ascending_ranks_reverse_each_group_of_ties():
    """Rows ranked (score desc, docno desc) in two queries; tied groups rows 1-3 and 5-6 are
    read backwards: ranks 1 4 3 2 | 1 3 2 (query 1 starts at row 4)."""
    from rpp_cli.join import RunRows
    from rpp_cli.measures.ir_measures import docno_ascending_ranks

    qidx = np.array([0, 0, 0, 0, 1, 1, 1], dtype=np.int32)
    tied = np.array([False, False, True, True, False, False, True])
    rows = RunRows(qidx, np.arange(7), None, tied)
    assert docno_ascending_ranks(rows).tolist() == [1, 4, 3, 2, 1, 3, 2]
    assert docno_ascending_ranks(RunRows(qidx, np.arange(7), None)).tolist() == \
        [1, 2, 3, 4, 1, 2, 3]


def test_err_blocks_of_queries_give_the_same_doubles(monkeypatch):
    """ERR@k works on blocks of queries to bound memory: any block size, the same values."""
    from rpp_cli.measures import ir_measures

    rng = np.random.default_rng(7)
    depth = rng.integers(0, 30, size=50)
    query = np.repeat(np.arange(50), depth)
    rank = np.concatenate([np.arange(1, d + 1) for d in depth])
    grade = rng.integers(0, 5, size=len(rank)).astype(np.float64)
    whole = ir_measures.expected_reciprocal_rank(query, rank, grade, 50, 20)
    monkeypatch.setattr(ir_measures, "_GRID_CELLS", 45)  # blocks of 2 queries at width 20
    assert ir_measures.expected_reciprocal_rank(query, rank, grade, 50, 20).tolist() == \
        whole.tolist()
    assert whole[depth == 0].tolist() == [0.0] * int((depth == 0).sum())


def test_rpp_measures_lists_the_own_measures():
    lines = {line.split("\t")[0].strip(): line for line in rpp("measures").out.splitlines()}
    assert "MS MARCO's MRR@10" in lines["RR@10"] and "RR(rel=N)@k" in lines["RR@10"]
    assert "gdeval" in lines["ERR@20"] and "Judged@k" in lines["Judged@10"]


def test_level_and_max_docs(tiny):
    """-l L is RR@k's level unless (rel=N) is given; -M K keeps each run's top K in contract §2
    order (e c of e c b a d), which the providers then rank: Judged@10 = 1/2 (c judged, of 2),
    RR@10 = 0 (a is gone)."""
    qrels, runs = tiny(HAND_QRELS, {"sys": HAND_RUN}, {"sys": HAND_SCORES})
    level = parse_lines(rpp("eval", "-q", "-l", "3", "-m", "RR@10", qrels, *runs).out)
    assert level[("RR@10", "q1", "sys")] == 0.2  # d, grade 3, 5th
    cut = parse_lines(rpp("eval", "-q", "--precision", "17", "-M", "2", "-m", "Judged@10",
                          "-m", "RR@10", qrels, *runs).out)
    assert cut[("Judged@10", "q1", "sys")] == 0.5 and cut[("RR@10", "q1", "sys")] == 0.0

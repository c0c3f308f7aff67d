"""ir_measures' spelling of trec_eval's measures: the same numbers, printed as typed."""
from __future__ import annotations

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


@pytest.mark.parametrize("name, message", [
    ("ndgc", "unknown measure 'ndgc' (did you mean ndcg, Rndcg?) (rpp measures lists them all)"),
    ("RBP", "measure 'RBP' is ir_measures' own and not in rpp: rpp computes trec_eval's "
            "measures and RR@k, Judged@k, ERR@k (rpp measures lists them)"),
    ("runid", "measure 'runid' is text, not a number: rpp trec-eval prints it"),
    ("NumRel@5", "measure 'NumRel@5': NumRel takes no cutoff in trec_eval"),
    ("ERR", "measure 'ERR' needs a cutoff, e.g. ERR@20"),
    ("ERR(rel=2)@20", "measure 'ERR(rel=2)@20': ERR takes no relevance level"),
    ("Judged(rel=2)@10", "measure 'Judged(rel=2)@10': Judged takes no relevance level"),
    ("RR@0", "measure 'RR@0': the cutoff must be a positive integer"),
    ("Judged@2.5", "measure 'Judged@2.5': the cutoff must be a positive integer"),
])
def test_wrong_names_say_what_to_do(name, message):
    res = rpp("eval", "-m", name, DEMO / "qrels", *RUNS)
    assert res.code == 2 and res.err == f"rpp: {message}\n"


def test_rpp_measures_lists_both_spellings():
    lines = {line.split("\t")[0].strip(): line for line in rpp("measures").out.splitlines()}
    assert "ir_measures: nDCG," in lines["ndcg"]
    assert "ir_measures: nDCG@k," in lines["ndcg_cut"]
    assert "ir_measures: AP," in lines["map"] and "ir_measures: AP@k," in lines["map_cut"]

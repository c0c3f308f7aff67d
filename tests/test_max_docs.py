"""-M K: each run keeps its top K documents per query (trec_eval -M, pref_eval --topk)."""
from __future__ import annotations

import pytest

from .conftest import parse_lines, rpp


def test_truncation_by_hand(tiny):
    """q1: r1, r2 relevant; a = x1 r1 x2 r2. With -M 2, a keeps x1 r1: map = (1/2) / 2 = 0.25
    (r2 now missed), num_ret = 2; b = r2 keeps r2. asl with n = 4 items (x1 x2 r1 r2):
    a: f = 2, 4 - 2 + 2 = 4 -> 3; b: 1, 4 -> 2.5. Without -M, a's map is (1/2 + 2/4) / 2 = 0.5."""
    qrels, runs = tiny([("q1", "r1", 1), ("q1", "r2", 1)],
                       {"a": {"q1": ["x1", "r1", "x2", "r2"]}, "b": {"q1": ["r2"]}})
    res = rpp("eval", "-M", "2", "-m", "map", "-m", "num_ret", "-m", "asl", "--precision", "6",
              qrels, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    assert got[("map", "all", "a")] == 0.25
    assert got[("num_ret", "all", "a")] == 2
    assert got[("asl", "all", "a")] == 3
    assert got[("asl", "all", "b")] == 2.5
    full = parse_lines(rpp("eval", "-m", "map", qrels, *runs).out)
    assert full[("map", "all", "a")] == 0.5


def test_trec_measures_cut_in_trec_evals_order(tiny):
    """Scores 1.00000002 (dA) and 1.00000001 (dB) differ as doubles but tie as C floats, where
    trec_eval orders by docno descending: dB first. With -M 1, trec_eval's measures keep dB
    (relevant: map 1) while RPP's ranking keeps dA (contract §2 order; dB then missed)."""
    qrels, runs = tiny([("q1", "dB", 1), ("q1", "dC", 1)],
                       {"a": {"q1": ["dA", "dB"]}, "b": {"q1": ["dC", "dA"]}},
                       scores={"a": {"q1": [1.00000002, 1.00000001]}})
    res = rpp("eval", "-M", "1", "-q", "-m", "map", "-m", "rpp", "--precision", "6",
              qrels, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    trec = rpp("trec-eval", "-M", "1", "-q", "-m", "map", qrels, runs[0])
    assert trec.code == 0, trec.err
    assert [line.split() for line in trec.out.splitlines()][0] == ["map", "q1", "0.5000"]
    assert got[("map", "q1", "a")] == 0.5  # one of the two relevant items, at rank 1
    # RPP: a keeps dA only, b keeps dC (rank 1): b places its first relevant item higher
    assert got[("rpp", "q1", "b", "a")] > 0


@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_bad_values(tiny, value):
    qrels, runs = tiny([("q1", "r1", 1)], {"a": {"q1": ["r1"]}})
    res = rpp("eval", "-M", value, qrels, *runs)
    assert res.code == 2
    assert "Traceback" not in res.err


@pytest.mark.parametrize("command", ["compare", "meta", "check"])
def test_every_evaluating_command_takes_it(command):
    res = rpp(command, "--help")
    assert "-M, --max-docs K" in res.out

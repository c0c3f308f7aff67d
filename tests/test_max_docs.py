"""-M K: each run keeps its top K documents per query (trec_eval -M, pref_eval --topk)."""
from __future__ import annotations

import pytest

from .conftest import parse_lines, rpp


def test_truncation_by_hand(tiny):
    """q1: r1, r2 relevant; a = x1 r1 x2 r2. With -M 2, a keeps x1 r1: map = (1/2) / 2 = 0.25
    (r2 now missed), num_ret = 2; b = r2 keeps r2. asl with n = 3 items, the rankings as cut
    and the relevant items (x1 r1 r2; x2 was cut, contract §2): a: f = 2, 3 - 2 + 2 = 3 -> 2.5;
    b: 1, 3 -> 2. Without -M, a's map is (1/2 + 2/4) / 2 = 0.5."""
    qrels, runs = tiny([("q1", "r1", 1), ("q1", "r2", 1)],
                       {"a": {"q1": ["x1", "r1", "x2", "r2"]}, "b": {"q1": ["r2"]}})
    res = rpp("eval", "-M", "2", "-m", "map", "-m", "num_ret", "-m", "asl", "--precision", "6",
              qrels, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    assert got[("map", "all", "a")] == 0.25
    assert got[("num_ret", "all", "a")] == 2
    assert got[("asl", "all", "a")] == 2.5
    assert got[("asl", "all", "b")] == 2
    full = parse_lines(rpp("eval", "-m", "map", qrels, *runs).out)
    assert full[("map", "all", "a")] == 0.5


def test_trec_measures_cut_in_trec_evals_order(tiny):
    """Scores 1.00000002 (dA) and 1.00000001 (dB) differ as doubles but tie as C floats, where
    trec_eval 9.0.8 orders by docno descending: dB first (10.0 ranks doubles, as rpp). With
    -M 1, trec_eval's measures keep dB (relevant: map 1) while RPP's ranking keeps dA
    (contract §2 order; dB then missed)."""
    qrels, runs = tiny([("q1", "dB", 1), ("q1", "dC", 1)],
                       {"a": {"q1": ["dA", "dB"]}, "b": {"q1": ["dC", "dA"]}},
                       scores={"a": {"q1": [1.00000002, 1.00000001]}})
    res = rpp("eval", "--compat", "9.0.8", "-M", "1", "-q", "-m", "map", "-m", "rpp",
              "--precision", "6", qrels, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    trec = rpp("trec-eval", "--compat", "9.0.8", "-M", "1", "-q", "-m", "map", qrels, runs[0])
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
    """Its help names -M among the input options, which ``rpp help inputs`` describes."""
    res = rpp(command, "--help")
    assert "-M, --binary" in " ".join(res.out.split())
    assert "-M, --max-docs K" in rpp("help", "inputs").out


@pytest.mark.parametrize("seed", range(12))
def test_cut_by_M_equals_runs_cut_beforehand(tmp_path, seed: int) -> None:
    """On realistic collections, ``-M K`` prints what the same runs cut to their top K (§2
    order) print: the corpus size n is counted over the rankings as cut (contract §2)."""
    from .realistic import generate, write_collection
    from .reference import ranking

    coll = generate(seed)
    k = 1 + seed % 4
    qrels, runs = write_collection(coll, tmp_path / "full", "mixed")
    cut = []
    for tag, run in zip(coll.tags, coll.runs):
        path = tmp_path / tag
        scores = {q: dict(docs) for q, docs in run.items()}
        path.write_text("".join(f"{q} Q0 {d} {i + 1} {scores[q][d]!r} {tag}\n"
                                for q in run for i, d in enumerate(ranking(run, q)[:k])))
        cut.append(path)
    names = [x for t in coll.tags for x in ("--name", t)]
    args = ["eval", "-q", "--precision", "12", "-m", "rpp", "-m", "dcgrpp", "-m", "asl",
            "-m", "rrlexiprecision", *names]
    by_m = rpp(*args, "-M", str(k), qrels, *runs)
    before = rpp(*args, qrels, *cut)
    assert by_m.code == before.code == 0, (by_m.err, before.err)
    assert by_m.out == before.out

"""`rpp eval` output (contract §7): layout, order, options, and a stored regression snapshot."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from .conftest import DEMO, PAPER, ROOT, rpp, write_qrels, write_run

RUNS = sorted((DEMO / "runs").iterdir())
GOLDEN = ROOT / "tests" / "golden" / "eval_demo_q_p10.txt"


def test_line_layout_value_last():
    res = rpp("eval", DEMO / "qrels", *RUNS)
    assert res.code == 0
    for line in res.out.splitlines():
        fields = line.split("\t")
        assert len(fields[0]) == 22 and fields[0] == fields[0].rstrip().ljust(22)
        assert fields[1] == "all"
        assert re.fullmatch(r"-?\d+\.\d{4}", fields[-1])
        assert len(fields) == (5 if fields[0].strip() in ("rpp", "dcgrpp", "invrpp") else 4)
    measures = list(dict.fromkeys(line.split("\t")[0].strip() for line in res.out.splitlines()))
    assert measures == ["rpp", "rpp_win", "dcgrpp", "dcgrpp_win", "invrpp", "invrpp_win", "map",
                        "ndcg", "recip_rank", "P_10", "asl"]


def test_per_query_lines_first_in_trec_eval_query_order(tmp_path):
    q = write_qrels(tmp_path / "qrels", [("2", "a", 1), ("10", "a", 1), ("1", "a", 1)])
    r1 = write_run(tmp_path / "b", {"1": ["a"], "2": ["a"], "10": ["x", "a"]}, "zeta")
    r2 = write_run(tmp_path / "a", {"1": ["x", "a"], "2": ["a"], "10": ["a"]}, "alpha")
    res = rpp("eval", "-q", "-m", "rpp", "-m", "map", q, r1, r2)
    qids = [line.split("\t")[1] for line in res.out.splitlines()]
    assert qids == ["1"] * 6 + ["10"] * 6 + ["2"] * 6 + ["all"] * 6  # strcmp order, then all
    first = [line.split("\t")[2] for line in res.out.splitlines()[:6]]
    assert first == ["b", "a", "b", "a", "b", "a"]  # argument order; names: the file names


def test_no_summary_precision_and_stdout_only_results():
    res = rpp("eval", "-q", "-n", "-m", "map", "--precision", "10", PAPER / "qrels",
              PAPER / "run.X")
    assert res.out == "map                   \tq1\trun.X\t0.3399470899\n"  # named by its file
    assert res.err == ""  # -m map only: no preference asked, nothing to note


def test_one_run_gives_baselines_and_a_note():
    res = rpp("eval", PAPER / "qrels", PAPER / "run.X")
    assert res.code == 0
    assert "preferences need two runs" in res.err
    assert {line.split("\t")[0].strip() for line in res.out.splitlines()} == {
        "map", "ndcg", "recip_rank", "P_10", "asl"}


@pytest.mark.parametrize("measures,named", [(["rpp"], "rpp"), (["map", "st-rpp"], "st-rpp"),
                                            (["lexiprecision", "rpp"], "lexiprecision")])
def test_a_preference_asked_of_one_run_is_an_error(measures, named):
    """`rpp eval -m rpp QRELS ONE.run` printed nothing with exit 0 (compare, meta and levels
    exit 2): a measure named with -m is printed or refused, never dropped; only the default
    set leaves preferences out with a note (above)."""
    args = [a for m in measures for a in ("-m", m)]
    res = rpp("eval", *args, PAPER / "qrels", PAPER / "run.X")
    assert (res.code, res.out) == (2, "")
    assert res.err == f"rpp: measure '{named}' compares runs: it needs two or more runs " \
                      "(one given)\n"


def test_measures_lists_the_registry():
    res = rpp("measures")
    names = {line.split("\t")[0].strip() for line in res.out.splitlines()}
    assert {"rpp", "dcgrpp", "invrpp", "asl", "map", "ndcg_cut", "official"} <= names


@pytest.mark.slow
def test_python_dash_m_entry_point_and_exit_codes():
    ok = subprocess.run([sys.executable, "-m", "rpp_cli", "eval", "-m", "map",
                         str(PAPER / "qrels"), str(PAPER / "run.X")],
                        capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stdout.startswith("map")
    bad = subprocess.run([sys.executable, "-m", "rpp_cli", "eval", str(PAPER / "qrels"),
                          "/nonexistent"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr == "rpp: /nonexistent: no such file\n"


def test_regression_snapshot_of_the_fixture_collection():
    """Every printed value (-q, 10 decimals) must stay bit-identical across optimisations.
    Regenerate only for an intended change of numbers:
      rpp eval -q --precision 10 fixtures/demo/qrels fixtures/demo/runs/* > tests/golden/...
    (run from the repository root)."""
    import os
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        res = rpp("eval", "-q", "--precision", "10", "fixtures/demo/qrels",
                  *[f"fixtures/demo/runs/{p.name}" for p in RUNS])
    finally:
        os.chdir(cwd)
    assert res.out == GOLDEN.read_text()


@pytest.mark.parametrize("given", [["P.5", "P.10"], ["P_5", "P_10"], ["P.5", "P_10", "P.5"]])
def test_cutoffs_given_twice_are_merged(given):
    """Each measure asked is printed or refused: cutoffs of one measure given twice print
    together (trec_eval keeps the first list and drops the second: -m P.5 -m P.10 printed
    P_5 alone), with the values of the one list P.5,10."""
    args = [DEMO / "qrels", *RUNS[:2]]
    together = rpp("eval", "-m", "P.5,10", *args)
    res = rpp("eval", *[x for m in given for x in ("-m", m)], *args)
    assert res.code == 0 and res.out == together.out
    assert {line.split()[0] for line in res.out.splitlines()} == {"P_5", "P_10"}


P_WITH_7 = "P.5,7,10,15,20,30,100,200,500,1000"


@pytest.mark.parametrize("given,together", [
    (["P", "P.7"], [P_WITH_7]), (["P.7", "P"], [P_WITH_7]),
    (["official", "P.7"], ["num_q", "num_ret", "num_rel", "num_rel_ret", "map",
                           "gm_map", "Rprec", "bpref", "recip_rank", "iprec_at_recall",
                           P_WITH_7]),
    (["iprec_at_recall", "iprec_at_recall.0.33"],
     ["iprec_at_recall.0.0,0.1,0.2,0.3,0.33,0.4,0.5,0.6,0.7,0.8,0.9,1.0"])])
def test_defaults_and_cutoffs_given_both_print_together(given, together):
    """-m P -m P.7 printed P_7 alone (the defaults asked for by P were dropped without a
    word); now the defaults and the cutoff print together, as the one list would."""
    args = [DEMO / "qrels", *RUNS[:2]]
    res = rpp("eval", *[x for m in given for x in ("-m", m)], *args)
    want = rpp("eval", *[x for m in together for x in ("-m", m)], *args)
    assert res.code == want.code == 0 and res.out == want.out != ""


def test_a_cutoff_written_twice_another_way_prints_once():
    """-m P -m P.05: 05 is the default cutoff 5 (the merged list was refused as holding
    duplicate cutoffs, quoting a list nobody typed)."""
    args = [DEMO / "qrels", RUNS[0]]
    assert rpp("eval", "-m", "P", "-m", "P.05", *args).out == rpp("eval", "-m", "P", *args).out
    assert rpp("eval", "-m", "iprec_at_recall", "-m", "iprec_at_recall.0.10", *args).out == \
        rpp("eval", "-m", "iprec_at_recall", *args).out


@pytest.mark.parametrize("given", [["ndcg", "ndcg.1=3"], ["ndcg.1=3", "ndcg"]])
def test_a_measure_with_and_without_gains_is_refused(given):
    """ndcg and ndcg.1=3 cannot share one pass: -m ndcg -m ndcg.1=3 printed ndcg_1=3 alone;
    now it is one line and exit 2 (asked through a nickname, the gains win, as in trec_eval)."""
    res = rpp("eval", "-m", given[0], "-m", given[1], DEMO / "qrels", RUNS[0])
    assert (res.code, res.out) == (2, "")
    assert res.err == ("rpp: measure 'ndcg' is given twice with different parameters ('ndcg' "
                       "and 'ndcg.1=3'): give it once (trec_eval would keep one and drop the "
                       "other)\n")
    nick = rpp("eval", "-m", "all_trec", "-m", "ndcg.1=3", DEMO / "qrels", RUNS[0])
    assert nick.code == 0 and "ndcg_1=3 " in nick.out


def test_printed_form_of_a_float_cutoff_is_accepted():
    args = [DEMO / "qrels", RUNS[0]]
    assert rpp("eval", "-m", "iprec_at_recall_0.20", *args).out == \
        rpp("eval", "-m", "iprec_at_recall.0.20", *args).out != ""


@pytest.mark.parametrize("first,second", [("set_F.0.5", "set_F.1"), ("ndcg.1=3", "ndcg.2=9")])
def test_other_parameters_given_twice_are_refused(first, second):
    base = first.split(".")[0]
    res = rpp("eval", "-m", first, "-m", second, DEMO / "qrels", RUNS[0])
    assert (res.code, res.out) == (2, "")
    assert res.err == (f"rpp: measure '{base}' is given twice with different parameters "
                       f"('{first}' and '{second}'): give it once (trec_eval would keep the "
                       "first and drop the second)\n")


def test_trec_eval_drop_in_keeps_the_first_parameters():
    """rpp trec-eval is trec_eval: -m P.5 -m P.10 prints P_5 alone, as trec_eval 9.0.8."""
    res = rpp("trec-eval", "--compat", "9.0.8", "-m", "P.5", "-m", "P.10", DEMO / "qrels",
              RUNS[0])
    assert res.code == 0 and [line.split()[0] for line in res.out.splitlines()] == ["P_5"]

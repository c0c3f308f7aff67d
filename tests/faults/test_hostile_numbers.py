"""Hostile numbers in legal-looking input: huge grades, gain pairs with several runs,
parameters out of range. One-line errors, bounded cost, unchanged values."""
from __future__ import annotations

import dataclasses
import os
import re
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import parse_lines, rpp, write_qrels, write_run
from ..io.test_readers import one_error_line
from ..realistic import generate, write_collection

RANGE = r"\(grades are numbers from -2147483648 to 2147483647\)"
GAIN_MEASURES = ["ndcg", "ndcg_rel", "Rndcg", "G"]


def _collection(tmp_path: Path, top: int, style: str = "mixed", seed: int = 27,
                once: bool = False) -> tuple[Path, list[Path]]:
    """A realistic collection (grades -2..3) whose grade 3 is made ``top``, written in
    ``style``; every run file is named after its run's tag. ``once``: each docno judged
    once (trec_eval refuses a docno judged twice)."""
    coll = generate(seed)
    assert any(g == 3 for _, _, g in coll.judgments), "seed without a grade 3"
    judgments = [(q, d, g) for q, docs in coll.qrels.items() for d, g in docs.items()] \
        if once else coll.judgments
    big = dataclasses.replace(
        coll, judgments=[(q, d, top if g == 3 else g) for q, d, g in judgments],
        qrels={q: {d: top if g == 3 else g for d, g in docs.items()}
               for q, docs in coll.qrels.items()})
    qrels, runs = write_collection(big, tmp_path, style)
    named = [r.rename(r.with_name(tag)) for r, tag in zip(runs, coll.tags)]
    return qrels, named


def _limited(*args: str) -> subprocess.CompletedProcess:
    """``rpp ARGS`` in a child held to 2 GiB of address space and 120 s: a grade that costs
    by its size fails here instead of eating the machine."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    return subprocess.run([sys.executable, "-m", "rpp_cli", *map(str, args)],
                          capture_output=True, text=True, preexec_fn=limit, timeout=120, env=env)


# -- 20.1 grades ------------------------------------------------------------------------------

@pytest.mark.parametrize("grade", ["1e12", "2147483648", "9223372036854775808",
                                   "99999999999999999999", "-2147483649", "4294967296.5"])
def test_grades_out_of_range_are_one_line_errors(tmp_path, grade):
    """rpp's commands exit 2; the trec_eval drop-in exits 4, trec_eval's status when such a
    grade leaves it unable to calculate (it cannot allocate a table up to the grade)."""
    qrels, runs = _collection(tmp_path, 3, "plain")
    lines = qrels.read_text().count("\n")
    with open(qrels, "a") as f:
        f.write(f"106_1 0 MARCO_D7 {grade}\n")
    where = rf".*/qrels:{lines + 1}: grade '{grade}' is out of range {RANGE}"
    one_error_line(rpp("eval", qrels, *runs[:2]), where)
    one_error_line(rpp("compare", qrels, *runs[:2]), where)
    res = rpp("trec-eval", qrels, runs[0])
    assert (res.code, res.out) == (4, "")
    assert res.err.count("\n") == 1 and "is out of range" in res.err


def test_subtopic_grades_out_of_range(tmp_path):
    subtopics = tmp_path / "qrels.subtopics"
    subtopics.write_text("q1 1 d1 1\nq1 2 d2 2147483648\n")
    run = tmp_path / "r"
    run.write_text("q1 Q0 d1 1 2 r\nq1 Q0 d2 2 1 r\n")
    one_error_line(rpp("eval", "--subtopics", subtopics, run, run),
                   rf".*/qrels.subtopics:2: grade '2147483648' is out of range {RANGE}")


@pytest.mark.slow
@pytest.mark.parametrize("top", [300000, 2147483647])
def test_huge_grades_cost_their_count_not_their_size(tmp_path, top):
    """Grade 3 made 300000 or 2^31 - 1: within 2 GiB and 120 s (pytrec_eval took 25 s at
    300000 and segfaulted after 16.8 GB at 2^31 - 1), and the same numbers as grade 3 with
    its gain set to ``top``: measures that read only relevance are unchanged, gain measures
    equal their gain-pair form (trec_eval: the gain of a grade is the grade)."""
    small, runs = _collection(tmp_path / "small", 3, once=True)
    big, _ = _collection(tmp_path / "big", top, once=True)
    common = ["-q", "--precision", "10", "-m", "map", "-m", "P.5", "-m", "bpref", "-m", "rpp",
              "-m", "dcgrpp", "-m", "infAP", "-m", "recip_rank"]
    got = _limited("eval", *common, *[a for m in GAIN_MEASURES for a in ("-m", m)], big, *runs)
    assert got.returncode == 0, got.stderr
    want = _limited("eval", *common, *[a for m in GAIN_MEASURES for a in ("-m", f"{m}.3={top}")],
                    small, *runs)
    assert want.returncode == 0, want.stderr
    g, w = parse_lines(got.stdout), parse_lines(want.stdout)
    renamed = {(k[0].split("_3=")[0] if "_3=" in k[0] else k[0], *k[1:]): v for k, v in w.items()}
    assert g == renamed and len(g) > 100
    # the drop-in, per query, likewise
    for run in runs:
        te = _limited("trec-eval", "-c", "-q", "-m", "official", "-m", "ndcg", big, run)
        te_small = _limited("trec-eval", "-c", "-q", "-m", "official", "-m", f"ndcg.3={top}",
                            small, run)  # -c: trec_eval 10.0 stops at a query the run lacks
        assert te.returncode == te_small.returncode == 0, te.stderr + te_small.stderr
        assert te.stdout == te_small.stdout.replace(f"ndcg_3={top}".ljust(22), "ndcg".ljust(22))


def _refused_above_the_compact_levels(tmp_path: Path, top: int, refused: list[tuple[str, str]],
                                      accepted: str, accepted_small: str) -> None:
    """Each ``refused`` measure is one error line (its pattern) with a grade ``top`` above 255;
    ``accepted`` runs there, and ``accepted_small`` with grades up to 255."""
    qrels, runs = _collection(tmp_path, top, "plain")
    for name, pattern in refused:
        one_error_line(rpp("eval", "-m", name, qrels, *runs), pattern)
    assert rpp("eval", "-m", accepted, qrels, *runs).code == 0
    small, runs = _collection(tmp_path / "small", 255, "plain")
    assert rpp("eval", "-m", accepted_small, small, *runs).code == 0


def test_ndcg_cut_is_refused_above_the_compact_levels(tmp_path):
    """ndcg_cut takes the grade itself as its gain and has no gain pairs: with a grade above
    255 it would need a table up to the grade, so it is refused (ndcg with pairs is not)."""
    pattern = (r"measure 'ndcg_cut(\.10)?' takes each grade as its gain and the qrels have "
               r"grades above 255 \(up to 256\): use ndcg with level=gain pairs, or smaller "
               r"grades")
    _refused_above_the_compact_levels(
        tmp_path, 256, [(name, pattern) for name in ["ndcg_cut.10", "nDCG@10", "all_trec"]],
        "ndcg.256=3", "ndcg_cut.10")


def test_fractional_gains_are_refused_above_the_compact_levels(tmp_path):
    """trec_eval compares gains by their difference cast to an int: 1.5 and level 2's default
    gain 2 compare equal, and their order in its sort depends on every level up to the
    largest grade, which the compaction leaves out; trec_eval 9.0.8 printed ndcg 1.0005 where
    the compacted levels gave 0.9999. Whole gains sort the same either way."""
    refused = [(name, rf"measure '{re.escape(name)}': gain {re.escape(gain)} is not a whole "
                      r"number and the qrels have grades above 255 \(up to 1000\); trec_eval's "
                      r"order of such gains depends on every level up to the largest grade: "
                      r"use whole-number gains, or smaller grades")
               for name, gain in [("ndcg.1=1.5,2=0.9", "1.5"), ("G.3=0x1.8p0", "0x1.8p0"),
                                  ("ndcg_rel.3=1,257=-0.5", "-0.5")]]
    _refused_above_the_compact_levels(tmp_path, 1000, refused, "ndcg.1=2,2=5,1000=-3",
                                      "ndcg.1=1.5,2=0.9")


@pytest.mark.parametrize("written,part", [("0.99999999999999999", "0"),
                                          ("1.99999999999999999", "1"),
                                          ("-0.99999999999999999", "-0"),
                                          ("2.0000000000000000001", "2"),
                                          ("0x1.fffffffffffffffffp0", "1"),
                                          ("1.000000000000000", "1")])
def test_a_grade_keeps_its_integer_part_where_its_double_rounds_to_a_whole_number(
        tmp_path, written, part):
    """0.99999999999999999 is the double 1.0, but its integer part, which trec_eval's
    measures use (contract §1; trec_eval's atol gives 0), is 0: rpp keeps the grade just below
    1, so it is not relevant at -l 1 and trec_eval's measures see grade 0."""
    qrels, same = tmp_path / "q", tmp_path / "same"
    qrels.write_text(f"7 0 clueweb12-0000wb-00-00001 {written}\n7 0 d2 1\n7 0 d3 0\n")
    same.write_text(f"7 0 clueweb12-0000wb-00-00001 {part}\n7 0 d2 1\n7 0 d3 0\n")
    run = tmp_path / "r"
    run.write_text("7 Q0 d3 1 3 r\n7 Q0 clueweb12-0000wb-00-00001 2 2 r\n7 Q0 d2 3 1 r\n")
    args = ["-m", "num_rel", "-m", "map", "-m", "ndcg", "-m", "P.2", "--precision", "17"]
    got, want = rpp("eval", *args, qrels, run), rpp("eval", *args, same, run)
    assert got.code == want.code == 0 and got.out == want.out
    te = [rpp("trec-eval", "-q", "-m", "all_trec", q, run).out for q in (qrels, same)]
    assert te[0] == te[1]


@pytest.mark.parametrize("written", ["1e-400", "1e-324", "0x1p-1100", "000001e-999"])
def test_a_positive_grade_that_underflows_to_zero_stays_relevant(tmp_path, written):
    """``1e-400`` is the double 0.0, but the number written is above 0, so the document is
    relevant to RPP (contract §1: grade > 0), as ``1e-300`` is: it was silently not (one
    population fewer, asl 2 and 1 instead of 1.5 and 1.5); trec_eval's measures see grade 0
    either way. A zero written long (``0.00000``, ``-0e-999``) stays 0."""
    run_a, run_b = tmp_path / "A", tmp_path / "B"
    run_a.write_text("q1 Q0 doc-a 1 2 A\nq1 Q0 doc-b 2 1 A\n")
    run_b.write_text("q1 Q0 doc-b 1 2 B\nq1 Q0 doc-a 2 1 B\n")
    outs = {}
    for grade in (written, "1e-300", "0.00000", "-0e-999", "0"):
        qrels = tmp_path / f"qrels{len(outs)}"
        qrels.write_text(f"q1 0 doc-a {grade}\nq1 0 doc-b 1\n")
        res = rpp("eval", "-q", "-m", "rpp", "-m", "asl", "-m", "map", qrels, run_a, run_b)
        assert res.code == 0, res.err
        outs[grade] = res.out
    assert outs[written] == outs["1e-300"] != outs["0"]
    assert "-0.3333" in outs[written]
    assert outs["0.00000"] == outs["-0e-999"] == outs["0"]


@pytest.mark.slow
def test_grades_with_huge_exponents_are_decided_at_once(tmp_path):
    """``1e-100000000`` (relevant: the number written is above 0) and ``0e100000000`` (0)
    were decided by writing the number out as a fraction, 10^100000000: rpp spun at full
    CPU past 100 s (in a child here, so that a hang fails this test, not the run)."""
    run_a, run_b = tmp_path / "A", tmp_path / "B"
    run_a.write_text("q1 Q0 doc-a 1 2 A\nq1 Q0 doc-b 2 1 A\n")
    run_b.write_text("q1 Q0 doc-b 1 2 B\nq1 Q0 doc-a 2 1 B\n")
    for grade, value in (("1e-100000000", "-0.3333"), ("-1e-99999999999999999999", "-1.0000"),
                         ("0e100000000", "-1.0000"), ("0.0e-99999999999999999999", "-1.0000")):
        qrels = tmp_path / "qrels"
        qrels.write_text(f"q1 0 doc-a {grade}\nq1 0 doc-b 1\n")
        res = subprocess.run([sys.executable, "-m", "rpp_cli", "eval", "-Q", "-m", "rpp",
                              qrels, run_a, run_b], capture_output=True, text=True, timeout=60)
        assert res.returncode == 0 and res.stdout.splitlines()[0].split("\t")[-1] == value, grade


def test_fractional_grades_count_by_their_integer_part_in_trec_measures(tmp_path):
    """Grades 2.7 and 2 are one gain to trec_eval's measures (its atol), while RPP's
    populations keep 2.7 apart from 2 (contract §1)."""
    frac, whole = tmp_path / "frac", tmp_path / "whole"
    frac.write_text("q 0 a 2.7\nq 0 b 2\nq 0 c 0\n")
    whole.write_text("q 0 a 2\nq 0 b 2\nq 0 c 0\n")
    run = tmp_path / "r"
    run.write_text("q Q0 b 1 3 r\nq Q0 c 2 2 r\nq Q0 a 3 1 r\n")
    args = ["-m", "ndcg", "-m", "map", "--precision", "10"]
    assert rpp("eval", *args, frac, run).out == rpp("eval", *args, whole, run).out


# -- 20.2 gain pairs with several runs --------------------------------------------------------

def _subprocess(*args: str) -> subprocess.CompletedProcess:
    """``rpp ARGS`` in a child: a segfault fails this test, not the test run."""
    return subprocess.run([sys.executable, "-m", "rpp_cli", *map(str, args)],
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_gain_pairs_with_several_runs_every_command(tmp_path):
    """The README's ``ndcg.1=3,2=9`` exited 139 with two runs or more: each run now gets the
    value it gets alone, in eval, and compare, check and meta complete."""
    qrels, runs = _collection(tmp_path, 3)
    pairs = [f"{m}.1=3,2=9" for m in GAIN_MEASURES]
    m_args = [a for m in pairs for a in ("-m", m)]
    res = _subprocess("eval", "--precision", "10", *m_args, qrels, *runs)
    assert res.returncode == 0, res.stderr
    together = parse_lines(res.stdout)
    alone: dict = {}
    for run in runs:
        one = _subprocess("eval", "--precision", "10", *m_args, qrels, run)
        assert one.returncode == 0, one.stderr
        alone |= parse_lines(one.stdout)
    assert together == alone and len(together) == len(pairs) * len(runs)
    assert len(set(together.values())) > 1
    res = _subprocess("compare", *m_args, qrels, *runs)
    assert res.returncode == 0 and "ndcg_1=3,2=9" in res.stdout, res.stderr
    res = _subprocess("check", "-m", pairs[0], "--max-drop", f"{pairs[3]}=1", "--baseline",
                      runs[0], qrels, *runs[1:])
    assert res.returncode in (0, 1) and "G_1=3,2=9_drop" in res.stdout, res.stderr
    res = _subprocess("meta", "--analysis", "agreement", *m_args, qrels, *runs)
    assert res.returncode == 0 and "ndcg_rel_1=3,2=9" in res.stdout, res.stderr


# -- 20.3 parameters out of range -------------------------------------------------------------

BAD_PARAMETERS = [
    ("P.5,99999999999999999999", "cutoffs must be positive integers up to 2147483647"),
    ("P.2147483648", "cutoffs must be positive integers up to 2147483647"),
    ("ndcg_cut.10,3000000000", "cutoffs must be positive integers up to 2147483647"),
    ("success.4294967301", "cutoffs must be positive integers up to 2147483647"),
    ("iprec_at_recall.0.5,inf", "parameters must be finite numbers of magnitude at most "
                                "2147483647"),
    ("Rprec_mult.1e30", "parameters must be finite numbers of magnitude at most 2147483647"),
    ("ndcg.1=1e400", "parameters must be finite numbers"),
    ("G.1=nan", "parameters must be finite numbers"),
    ("ndcg.99999999999999999999=2", "levels must be grades, integers from -2147483648 to "
                                    "2147483647"),
    ("Rndcg.-2147483649=1", "levels must be grades, integers from -2147483648 to 2147483647"),
    ("utility.nan,1,1,1", "parameters must be finite numbers"),
    ("set_F.1e400", "parameters must be finite numbers"),
]
BAD_ALIASES = [
    ("P@99999999999999999999", "cutoffs must be positive integers up to 2147483647"),
    ("nDCG@3000000000", "cutoffs must be positive integers up to 2147483647"),
    ("P(rel=99999999999999999999)@5", "rel= takes a relevance level from 1 to 2147483647"),
    ("P(rel=0)@5", "rel= takes a relevance level from 1 to 2147483647"),
    ("rbp.0.99999999999999999999", r"the persistence must be a number in \(0, 1\)"),
    ("rbp.1e-400", r"the persistence must be a number in \(0, 1\)"),
]


@pytest.mark.parametrize("measure,message", BAD_PARAMETERS + BAD_ALIASES)
def test_parameters_out_of_range_before_any_work(measure, message):
    """rpp eval refuses them before reading a file (the files here do not exist)."""
    shown = measure.replace(".", r"\.").replace("(", r"\(").replace(")", r"\)")
    one_error_line(rpp("eval", "-m", measure, "no-qrels", "no-run"),
                   rf"measure '{shown}': {message}")


@pytest.mark.parametrize("measure,message", BAD_PARAMETERS + [("relstring.inf", "finite")])
def test_trec_eval_parameters_out_of_range(tmp_path, measure, message):
    """The drop-in reads both files first (as trec_eval does), then refuses with trec_eval's
    status for a measure it cannot initialise (2); trec_eval 9.0.8 itself misorders and
    saturates such cutoffs (P_9223372036854775807 before P_5) or prints nan."""
    qrels, runs = _collection(tmp_path, 3, "plain")
    res = rpp("trec-eval", "-m", measure, qrels, runs[0])
    assert (res.code, res.out) == (2, "") and res.err.count("\n") == 1
    assert message.split(" of")[0] in res.err


@pytest.mark.parametrize("measure", ["P.5,2147483647", "ndcg.2147483647=1,-2147483648=2",
                                     "iprec_at_recall.0.5,2147483647", "P@2147483647",
                                     "P(rel=2147483647)@5"])
def test_parameters_at_the_edges_are_accepted(tmp_path, measure):
    qrels, runs = _collection(tmp_path, 3, "plain")
    res = rpp("eval", "-m", measure, qrels, *runs)
    assert res.code == 0 and res.out, res.err


def test_a_grade_trec_eval_reads_otherwise_is_noted(tmp_path):
    """1e3 is the number 1000 (contract §1) where trec_eval's atol reads 1, and 0x2 is 2 where
    it reads 0: the measures then differ from trec_eval's own, so a note says so, naming the
    first such line; 2.9e0 (2 either way) and plain grades get none."""
    qrels = tmp_path / "qrels"
    qrels.write_text("106_1 0 clueweb12-0000wb-00-00001 2.9e0\n106_1 0 MARCO_D1 1\n"
                     "106_1 0 MARCO_D2 1e3\n106_1 0 MARCO_D3 0x2\n")
    run = tmp_path / "bm25"
    run.write_text("106_1 Q0 MARCO_D1 1 3 bm25\n106_1 Q0 MARCO_D2 2 2 bm25\n")
    res = rpp("eval", "-m", "map", qrels, run)
    assert res.code == 0
    assert (f"rpp: note: {qrels}:3: grade '1e3' is the number it writes, 1000 to trec_eval's "
            "measures here, where trec_eval itself reads 1 (its atol stops at the first byte "
            "that is not a digit); so does 1 more grade\n") in res.err
    dropin = rpp("trec-eval", "-m", "map", qrels, run)  # where trec_eval's numbers are expected
    assert dropin.code == 0 and f"rpp: note: {qrels}:3: grade '1e3'" in dropin.err
    qrels.write_text("106_1 0 clueweb12-0000wb-00-00001 2.9e0\n106_1 0 MARCO_D1 1\n")
    assert "atol" not in rpp("eval", "-m", "map", qrels, run).err


@pytest.mark.parametrize("measure,words", [
    ("ndcg_cut.10", "takes each grade as its gain and the qrels have grades above 255 (up to "
                    "1000)"),
    ("ndcg.1=1.5", "gain 1.5 is not a whole number and the qrels have grades above 255 (up to "
                   "1000)")])
def test_a_refusal_names_the_qrels_largest_grade_in_every_shard_layout(tmp_path, monkeypatch,
                                                                        measure, words):
    """Grades 300 (query 106_1) and 1000 (2031): one query a shard, the first shard's refusal
    said 'up to 300' (-j 2 and Dask too), where the qrels go up to 1000."""
    qrels = write_qrels(tmp_path / "q", [("106_1", "clueweb12-0000wb-00-00001", 300),
                                         ("106_1", "MARCO_D2", 0),
                                         ("2031", "clueweb12-0000wb-00-00003", 1000)])
    run = write_run(tmp_path / "r", {"106_1": ["clueweb12-0000wb-00-00001", "MARCO_D2"],
                                     "2031": ["clueweb12-0000wb-00-00003"]}, "r")
    errors = set()
    for shard in ["", "1"]:
        monkeypatch.setenv("RPP_SHARD_QUERIES", shard)
        res = rpp("eval", "-m", measure, qrels, run)
        assert res.code == 2
        errors.add(res.err)
    (error,) = errors
    assert words in error

"""`rpp check`: the CI regression gate's exit codes, verdicts and evidence."""
from __future__ import annotations

import json

import pytest
from scipy import stats as scipy_stats

from .conftest import DEMO, parse_lines, rpp

QRELS = DEMO / "qrels"
BEST = DEMO / "runs" / "monot5"
WORST = DEMO / "runs" / "bm25"


@pytest.fixture
def copy_of_best(tmp_path):
    """The baseline's ranking under another name: equal on every measure."""
    path = tmp_path / "monot5-copy"
    path.write_text(BEST.read_text().replace(" monot5\n", " monot5-copy\n"))
    return path


@pytest.fixture
def slightly_worse(tmp_path):
    """The baseline with one relevant top document sent to the bottom of its query: a real
    but (one query in 25) not significant loss."""
    relevant = {tuple(line.split()[::2][:2]) for line in QRELS.read_text().splitlines()
                if float(line.split()[3]) > 0}
    rows = [line.split() for line in BEST.read_text().splitlines()]
    top = next(i for i, r in enumerate(rows) if r[3] == "1" and (r[0], r[2]) in relevant)
    rows[top][4] = "-1000"
    path = tmp_path / "tweak"
    path.write_text("".join(" ".join(r[:5] + ["tweak"]) + "\n" for r in rows))
    return path


def verdicts(err: str) -> list[list[str]]:
    return [line.split("\t") for line in err.splitlines() if line.startswith(("PASS", "FAIL"))]


def test_worse_candidate_fails_with_exit_1():
    res = rpp("check", QRELS, "--baseline", BEST, WORST)
    assert res.code == 1
    (v,) = verdicts(res.err)
    assert v[:3] == ["FAIL", "bm25", "rpp"] and "significantly worse" in v[3]
    got = parse_lines(res.out)
    assert got[("rpp", "all", "bm25", "monot5")] < 0
    assert got[("rpp_p", "all", "bm25", "monot5")] < 0.05


def test_copy_of_baseline_and_better_candidate_pass(copy_of_best):
    res = rpp("check", QRELS, "--baseline", BEST, copy_of_best, "-m", "rpp", "-m", "map")
    assert res.code == 0
    assert [v[:3] for v in verdicts(res.err)] == [["PASS", "monot5-copy", "rpp"],
                                                  ["PASS", "monot5-copy", "map"]]
    got = parse_lines(res.out)
    assert got[("rpp", "all", "monot5-copy", "monot5")] == 0
    assert got[("rpp_p", "all", "monot5-copy", "monot5")] == 1
    better = rpp("check", QRELS, "--baseline", WORST, BEST)
    assert better.code == 0 and verdicts(better.err)[0][0] == "PASS"


def test_one_failing_candidate_fails_the_gate(copy_of_best):
    res = rpp("check", QRELS, "--baseline", BEST, copy_of_best, WORST)
    assert res.code == 1
    assert [v[0] for v in verdicts(res.err)] == ["PASS", "FAIL"]


def test_max_drop_gate(slightly_worse):
    base = ["check", QRELS, "--baseline", BEST, slightly_worse, "--test", "ttest"]
    res = rpp(*base)
    assert res.code == 0  # one swapped pair is no significant loss
    tight = rpp(*base, "--max-drop", "map=0")
    drop = parse_lines(tight.out)[("map_drop", "all", "tweak", "monot5")]
    assert drop > 0
    assert tight.code == 1
    assert verdicts(tight.err)[-1][:3] == ["FAIL", "tweak", "map"]
    loose = rpp(*base, "--max-drop", f"map={drop * 2}")
    assert loose.code == 0


def test_a_delta_of_minus_zero_is_shown_as_zero(slightly_worse):
    """``map=-0`` is a delta of 0 (a drop must be none), shown as ``0``, never ``-0``."""
    res = rpp("check", QRELS, "--baseline", BEST, slightly_worse, "--max-drop", "map=-0")
    assert res.code == 1 and "(allowed 0)" in res.err and "-0)" not in res.err, res.err


def test_lower_is_better_measures_gate_the_right_way():
    """asl: lower is better, so the worse run has a positive difference and fails."""
    res = rpp("check", QRELS, "--baseline", BEST, WORST, "-m", "asl", "--max-drop", "asl=1")
    assert res.code == 1
    got = parse_lines(res.out)
    assert got[("asl_diff", "all", "bm25", "monot5")] > 0
    assert got[("asl_drop", "all", "bm25", "monot5")] > 1
    assert [v[0] for v in verdicts(res.err)] == ["FAIL", "FAIL"]
    ok = rpp("check", QRELS, "--baseline", WORST, BEST, "-m", "asl", "--max-drop", "asl=1")
    assert ok.code == 0


def test_evidence_equals_rpp_eval_and_other_formats():
    res = rpp("check", QRELS, "--baseline", BEST, WORST, "--precision", "10")
    ev = parse_lines(rpp("eval", "-m", "rpp", "--precision", "10", QRELS, BEST, WORST).out)
    assert parse_lines(res.out)[("rpp", "all", "bm25", "monot5")] == ev[("rpp", "all", "bm25",
                                                                           "monot5")]
    rows = [json.loads(line) for line in
            rpp("check", QRELS, "--baseline", BEST, WORST, "--format", "jsonl").out.splitlines()]
    assert {(r["measure"], r["run"], r["other"], r["verdict"]) for r in rows} == {
        ("rpp", "bm25", "monot5", "FAIL"), ("rpp_p", "bm25", "monot5", "FAIL"),
        ("verdict", None, "monot5", "FAIL")} | {("input", str(p), None, None)
                                                for p in (QRELS, BEST, WORST)}


@pytest.mark.parametrize("args,message", [
    (["--max-drop", "map"], "--max-drop 'map': expected MEASURE=DELTA with a finite DELTA >= 0"),
    (["--max-drop", "map=-1"],
     "--max-drop 'map=-1': expected MEASURE=DELTA with a finite DELTA >= 0"),
    (["--max-drop", "map=inf"],  # a gate that could not fail
     "--max-drop 'map=inf': expected MEASURE=DELTA with a finite DELTA >= 0"),
    (["--max-drop", "map=nan"],
     "--max-drop 'map=nan': expected MEASURE=DELTA with a finite DELTA >= 0"),
    # Python's float() reads these (0_05 as 5: a gate 100 times looser than written)
    *[(["--max-drop", f"map={delta}"],
       f"--max-drop 'map={delta}': expected MEASURE=DELTA with a finite DELTA >= 0")
      for delta in ("0_05", "\u0660.\u0660\u0665", "\uff10.\uff10\uff15")],
    (["--max-drop", "rpp=0.1"],
     "--max-drop 'rpp': needs one per-run metric with per-query values that depend on the "
     "run (e.g. map, P.10)"),
    (["--max-drop", "gm_map=0.01"],
     "--max-drop 'gm_map': needs one per-run metric with per-query values that depend on the "
     "run (e.g. map, P.10)"),
    (["--max-drop", "num_rel=0"],
     "--max-drop 'num_rel': needs one per-run metric with per-query values that depend on the "
     "run (e.g. map, P.10)"),
    (["-m", "gm_map"], "measure 'gm_map' has no per-query values: a gate on it could not fail"),
    (["-m", "num_rel"], "measure 'num_rel' is counted from the qrels, the same for every run: "
                        "a gate on it could not fail"),
    *[(["-m", name], f"measure '{name}' is counted from the qrels, the same for every run: "
                     "a gate on it could not fail") for name in ("NumRel", "NumRel(rel=2)")],
    (["--max-drop", "NumRel=0"],
     "--max-drop 'NumRel': needs one per-run metric with per-query values that depend on the "
     "run (e.g. map, P.10)"),
    (["-m", "runid"], "measure 'runid' is text, not a number: rpp trec-eval prints it"),
    (["--alpha", "1.5"], "--alpha must be in (0, 1) (got 1.5)"),
    (["-m", "nosuch"], "unknown measure 'nosuch' (rpp measures lists them all)"),
])
def test_bad_usage_is_one_line_and_exit_2(args, message):
    res = rpp("check", QRELS, "--baseline", BEST, WORST, *args)
    assert res.code == 2
    assert res.err == f"rpp: {message}\n"


def test_baseline_given_as_candidate():
    res = rpp("check", QRELS, "--baseline", BEST, BEST)
    assert res.code == 2 and "the baseline is also given as a candidate" in res.err


@pytest.mark.parametrize("args,floor", [(["--permutations", "10"], "0.09091"),
                                        (["--test", "ttest", "--permutations", "10"], None)])
def test_a_gate_that_cannot_fail_does_not_pass(args, floor):
    """With 10 permutations no p-value goes below 1/11 > 0.05: the gate could not fail, so it
    is an error (exit 2), not a PASS. A t-test can (25 queries)."""
    res = rpp("check", QRELS, "--baseline", BEST, WORST, *args)
    if floor is None:
        assert res.code in (0, 1)
        return
    assert res.code == 2 and res.out == ""
    assert res.err.startswith("rpp: the significance gate could not fail: with 25 queries "
                              "that can tell runs apart (those with a relevant item) and 10 "
                              f"permutations the smallest p-value randomization can give is "
                              f"{floor}")


def _write(path, lines) -> str:
    path.write_text("".join(" ".join(map(str, line)) + "\n" for line in lines))
    return str(path)


QIDS = ["106_1", "q-\u03b17", "2031", "007"]


def test_values_equal_in_exact_arithmetic_are_no_regression(tmp_path):
    """bpref 5/9 both ways: (1 + 2/3)/3 for a run that ranks R0 N0 R1, (1 + 1/3 + 1/3)/3 for
    one that ranks R0 N0 N1 R1 R2; trec_eval's floats differ in the last bit on every query,
    which a t-test took for a significant loss of 1e-16 (FAIL, exit 1)."""
    qrels = _write(tmp_path / "qrels", [
        (q, 0, doc, grade) for k, q in enumerate(QIDS)
        for doc, grade in [(f"clueweb12-000{k}wb-00-0000{i}", 1) for i in range(3)]
        + [(f"MARCO_D{k}00{i}", 0) for i in range(4)]])
    a = _write(tmp_path / "runA", [
        (q, "Q0", doc, r + 1, 9 - r, "runA") for k, q in enumerate(QIDS)
        for r, doc in enumerate([f"clueweb12-000{k}wb-00-00000", f"MARCO_D{k}000",
                                 f"clueweb12-000{k}wb-00-00001", f"unjudged-{k}"])])
    b = _write(tmp_path / "runB", [
        (q, "Q0", doc, r + 1, 9.5 - r, "runB") for k, q in enumerate(QIDS)
        for r, doc in enumerate([f"clueweb12-000{k}wb-00-00000", f"MARCO_D{k}000",
                                 f"MARCO_D{k}001", f"clueweb12-000{k}wb-00-00001",
                                 f"clueweb12-000{k}wb-00-00002"])])
    per_query = rpp("eval", "-q", "-m", "bpref", "--precision", "17", qrels, a, b)
    values = {line.split("\t")[3] for line in per_query.out.splitlines()}
    assert len(values) == 2  # the case: 0.55555555555555558 and ...569, or the like
    res = rpp("check", "-m", "bpref", "--test", "ttest", qrels, "--baseline", b, a)
    assert res.code == 0, res.err
    assert verdicts(res.err) == [["PASS", "runA", "bpref",
                                  "effect +0.0000, p 1.0000 (ttest, alpha 0.05)"]]


def test_queries_without_a_relevant_item_do_not_open_a_gate(tmp_path):
    """20 queries, 5 with relevant items: trec_eval's map is 0 on the other 15 whatever is
    ranked, so the gate has 5 queries (p >= 2/32), not 20, and could not fail."""
    qids = [f"{100 + q}_1" for q in range(20)]
    qrels = _write(tmp_path / "qrels", [
        (q, 0, f"clueweb12-{k:04d}wb-{d:02d}", 1 if k < 5 and d < 3 else 0)
        for k, q in enumerate(qids) for d in range(10)])
    base = _write(tmp_path / "base", [
        (q, "Q0", f"clueweb12-{k:04d}wb-{d:02d}", d + 1, 10 - d, "base")
        for k, q in enumerate(qids) for d in range(10)])
    cand = _write(tmp_path / "cand", [
        (q, "Q0", f"clueweb12-{k:04d}wb-{d:02d}", 10 - d, d, "cand")
        for k, q in enumerate(qids) for d in range(10)])
    for measure in ["map", "P.5", "nDCG@10", "rpp"]:
        res = rpp("check", "-m", measure, qrels, "--baseline", base, cand)
        assert res.code == 2 and res.out == "", (measure, res.err)
        assert res.err.startswith("rpp: the significance gate could not fail: with 5 queries "
                                  "that can tell runs apart"), res.err
    res = rpp("check", "-m", "num_ret", qrels, "--baseline", base, cand)  # moves on all 20
    assert res.code == 0, res.err


def test_few_queries_leave_only_max_drop_to_decide(tmp_path):
    """4 queries: exact sign flips give p >= 2/16 > 0.05; with --max-drop that alone decides."""
    qrels = tmp_path / "q"
    qrels.write_text("".join(f"{q} 0 d{q} 1\n" for q in range(4)))
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.write_text("".join(f"{q} Q0 d{q} 1 2 good\n{q} Q0 x{q} 2 1 good\n" for q in range(4)))
    bad.write_text("".join(f"{q} Q0 x{q} 1 2 bad\n{q} Q0 d{q} 2 1 bad\n" for q in range(4)))
    res = rpp("check", qrels, "--baseline", good, bad)
    assert res.code == 2 and "smallest p-value randomization can give is 0.125" in res.err
    res = rpp("check", qrels, "--baseline", good, bad, "--max-drop", "map=0.01")
    assert res.code == 1  # map drops from 1 to 0.5
    assert "significance not tested" in res.err and "FAIL\tbad\tmap\tdrop +0.5000" in res.err


def test_markdown_verdicts_and_the_github_step_summary(tmp_path, monkeypatch):
    """--format markdown prints the verdicts as a table fit for a PR comment; with
    $GITHUB_STEP_SUMMARY set, the same summary is appended there (any format)."""
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = rpp("check", QRELS, "--baseline", BEST, WORST, "--max-drop", "map=0.01",
              "--format", "markdown")
    assert res.code == 1
    lines = res.out.splitlines()
    assert lines[0] == "### rpp check: FAIL (baseline monot5)"
    assert lines[2:4] == ["| candidate | gate | verdict | evidence |", "|---|---|---|---|"]
    assert lines[4].startswith("| bm25 | rpp | **FAIL** | effect -0.")
    assert lines[5].startswith("| bm25 | map | **FAIL** | drop +0.")
    assert summary.read_text() == "earlier step\n" + res.out + "\n"


@pytest.fixture
def binary_qrels(tmp_path):
    """The demo qrels with every relevant grade made 1 (binary judgments)."""
    path = tmp_path / "binary.qrels"
    path.write_text("".join(" ".join(f[:3] + ["1" if float(f[3]) > 0 else f[3]]) + "\n"
                            for f in (line.split() for line in QRELS.read_text().splitlines())))
    return path


@pytest.mark.parametrize("args,gate", [
    (["-m", "P(rel=2)@5"], "-m 'P(rel=2)@5'"),
    (["--max-drop", "P(rel=2)@5=0"], "--max-drop 'P(rel=2)@5'"),
    (["-m", "map", "--max-drop", "nDCG(rel=3)@10=0.01"], "--max-drop 'nDCG(rel=3)@10'"),
])
def test_a_gate_no_judgment_reaches_is_refused(binary_qrels, args, gate):
    """On binary qrels P(rel=2)@5 is 0 for every run and query: the gate PASSed bm25 against
    monot5, worse on every measure. Refused (exit 2), as `-l 2` is (no relevant item)."""
    res = rpp("check", binary_qrels, "--baseline", BEST, WORST, *args)
    assert (res.code, res.out) == (2, "")
    assert res.err == (f"rpp: {gate}: no judgment has a grade >= {gate.split('=')[1][0]} (the "
                       "largest is 1), so the measure is 0 for every run and the gate could "
                       "not fail\n")
    level = rpp("check", binary_qrels, "--baseline", BEST, WORST, "-l", "2")
    assert level.code == 2 and "no query has a relevant item at level 2" in level.err
    # a level the judgments reach gates as usual: bm25 fails
    reached = rpp("check", binary_qrels, "--baseline", BEST, WORST, "-m", "P(rel=1)@5",
                  "--max-drop", "P(rel=1)@5=0")
    assert reached.code == 1 and "FAIL\tbm25\tP(rel=1)@5" in reached.err


def test_eval_notes_a_measure_no_judgment_reaches(binary_qrels):
    """rpp eval still prints P(rel=2)@5 on binary qrels (as trec_eval would: zeros), with a
    note saying why every value is 0."""
    res = rpp("eval", "-m", "P(rel=2)@5", "-m", "P(rel=1)@5", binary_qrels, BEST, WORST)
    assert res.code == 0
    assert "rpp: note: measure 'P(rel=2)@5': no judgment has a grade >= 2 (the largest is 1), " \
        "so it is 0 for every run and query\n" in res.err
    assert "P(rel=1)@5'" not in res.err
    values = [line.split("\t") for line in res.out.splitlines()]
    assert {v[-1] for v in values if v[0].startswith("P(rel=2)@5")} == {"0.0000"}
    assert {v[-1] for v in values if v[0].startswith("P(rel=1)@5")} != {"0.0000"}


@pytest.mark.parametrize("measure", ["num_rel_ret", "num_ret", "map"])
def test_max_drop_reads_the_value_eval_prints(measure):
    """A --max-drop is on the measure's value as rpp eval prints it: the mean for map, the
    sum over queries for trec_eval's counts (a mean of num_rel_ret hid a drop of 20 as 1.2)."""
    printed = parse_lines(rpp("eval", "-m", measure, "--precision", "17", QRELS, BEST,
                              WORST).out)
    drop = printed[(measure, "all", BEST.name)] - printed[(measure, "all", WORST.name)]
    assert drop > 0
    fails = rpp("check", QRELS, "--baseline", BEST, WORST, "--max-drop",
                f"{measure}={drop * 0.99:.17g}", "-m", "map", "--test", "ttest")
    assert fails.code == 1, fails.err
    assert f"FAIL\t{WORST.name}\t{measure}\tdrop {drop:+.4f}" in fails.err
    evidence = parse_lines(rpp("check", QRELS, "--baseline", BEST, WORST, "--max-drop",
                               f"{measure}={drop * 1.01:.17g}", "-m", "map", "--test", "ttest",
                               "--precision", "17").out)
    assert evidence[(f"{measure}_drop", "all", WORST.name, BEST.name)] == pytest.approx(
        drop, rel=1e-15)


@pytest.mark.parametrize("kept,delta,verdict", [
    (7, "0.1", "PASS"),   # 0.8 - 0.7 is 0.10000000000000009 in floats: equal, passes
    (7, "0.09", "FAIL"),
    (6, "0.1", "FAIL"),
])
def test_a_drop_equal_to_the_delta_passes(tmp_path, kept, delta, verdict):
    """ci.md: a drop equal to the delta passes, whatever float rounding makes of it."""
    from .conftest import write_qrels, write_run

    docs = [f"clueweb12-{k:04d}" for k in range(20)]
    qrels = write_qrels(tmp_path / "qrels", [("q_1", d, 1) for d in docs[:10]])
    base = write_run(tmp_path / "base", {"q_1": docs[:8] + docs[10:12] + docs[8:10]})
    cand = write_run(tmp_path / "cand", {"q_1": docs[:kept] + docs[10:20 - kept]
                                         + docs[kept:10]})
    res = rpp("check", qrels, "--baseline", base, cand, "-m", "map", "--test", "ttest",
              "--max-drop", f"P.10={delta}")
    drop = (8 - kept) / 10
    assert f"{verdict}\tcand\tP_10\tdrop {drop:+.4f} (allowed {delta})" in res.err.splitlines()


def test_verdicts_follow_precision_and_effects_are_evals_means():
    """--precision sets the verdicts' decimals too (the markdown table and the stderr lines
    kept 4); a gate's effect is the mean rpp eval prints for the pair, to the last bit (compare
    and check summed the queries in another order than eval: ...272 against ...270)."""
    res = rpp("check", "--precision", "17", "-m", "rpp", "-m", "map", QRELS, "--baseline", BEST,
              WORST)
    (rpp_gate, map_gate) = verdicts(res.err)
    effect = rpp_gate[3].split(",")[0].removeprefix("effect ")
    assert len(effect.split(".")[1]) == 17
    evaluated = parse_lines(rpp("eval", "--precision", "17", "-m", "rpp", QRELS, WORST,
                                BEST).out)
    assert float(effect) == evaluated[("rpp", "all", WORST.name, BEST.name)]
    compared = parse_lines(rpp("compare", "--precision", "17", "-m", "rpp", QRELS, WORST,
                               BEST).out)
    assert compared[("rpp", "all", WORST.name, BEST.name)] == float(effect)
    md = rpp("check", "--precision", "0", "--format", "markdown", "-m", "map", QRELS,
             "--baseline", BEST, WORST)
    assert md.out.splitlines()[-1] == ("| bm25 | map | **FAIL** | effect -0, p 0.0001 "
                                       "(randomization, alpha 0.05): significantly worse |")


def test_a_baseline_given_twice_is_refused():
    """--baseline a --baseline b kept b without a word (click keeps the last): a gate checked
    against a run the user may not have meant."""
    res = rpp("check", QRELS, "--baseline", WORST, "--baseline", BEST, WORST)
    assert (res.code, res.out) == (2, "")
    assert res.err.startswith("rpp: check: Invalid value for '--baseline': given 2 times (")


def test_rndcg_counts_the_queries_with_a_relevant_item_at_the_level(tmp_path):
    """Rndcg's R counts the relevant items at -l: at -l 2 a query of grade-1 items scores 0
    for every ranking, so 4 queries of grade 2 among 12 give a gate that could not fail
    (2/2^4 = 0.125), not a PASS of p 0.125."""
    qids = [f"{300 + q}_1" for q in range(12)]
    qrels = _write(tmp_path / "q", [(q, 0, f"clueweb12-{k:04d}wb-00-00001", 2 if k < 4 else 1)
                                    for k, q in enumerate(qids)])
    base = _write(tmp_path / "base", [(q, "Q0", f"clueweb12-{k:04d}wb-00-00001", 1, 2, "base")
                                      for k, q in enumerate(qids)])
    cand = _write(tmp_path / "cand", [(q, "Q0", f"MARCO_D{k}", 1, 2, "cand")
                                      for k, q in enumerate(qids)])
    res = rpp("check", "-l", "2", "-m", "Rndcg", qrels, "--baseline", base, cand)
    assert res.code == 2 and "candidate 'cand' ranks no document judged" in res.err, res.err
    # judged, but below -l 2 where it is judged: only the 4 queries of grade 2 tell runs apart
    cand = _write(tmp_path / "cand", [(q, "Q0", f"clueweb12-{k:04d}wb-00-00001", 2, 1, "cand")
                                      for k, q in enumerate(qids) if k >= 4]
                  + [(q, "Q0", f"MARCO_D{k}", 1, 2, "cand") for k, q in enumerate(qids)])
    res = rpp("check", "-l", "2", "-m", "Rndcg", qrels, "--baseline", base, cand)
    assert res.code == 2 and "could not fail: with 4 queries" in res.err, res.err


def test_non_inferiority_verdicts_rows_and_formats(copy_of_best, slightly_worse):
    """--confidence: PASS only when the one-sided upper bound of the drop is below DELTA;
    the verdict line gives the drop, the bound and the query count; the bound is a row of
    its own (with the gate's verdict in jsonl); the significance gates are as without."""
    args = ["check", QRELS, "--baseline", BEST, copy_of_best, slightly_worse, WORST,
            "--max-drop", "map=0.02", "--confidence", "0.95", "-m", "map", "--test", "ttest"]
    res = rpp(*args)
    assert res.code == 1
    got = parse_lines(res.out)
    lines = {(v[1], v[3].split(",")[0]): v for v in verdicts(res.err)}
    for run, word in (("monot5-copy", "PASS"), ("tweak", "PASS"), ("bm25", "FAIL")):
        drop = got[("map_drop", "all", run, "monot5")]
        bound = got[("map_drop_bound", "all", run, "monot5")]
        assert drop <= bound and (bound < 0.02) == (word == "PASS")
        v = lines[run, f"drop {drop:+.4f}"]
        assert v[0] == word and v[2] == "map"
        assert f"95% upper bound {bound:+.4f} {'<' if word == 'PASS' else '>='} 0.02 " \
               "(one-sided t, 25 queries)" in v[3]
    assert got[("map_drop_bound", "all", "monot5-copy", "monot5")] == 0  # no spread: drop 0
    plain = rpp(*args[:-6], "-m", "map", "--test", "ttest")  # without --max-drop: as ever
    assert parse_lines(plain.out)[("map_p", "all", "bm25", "monot5")] == \
        got[("map_p", "all", "bm25", "monot5")]
    rows = [json.loads(line) for line in rpp(*args, "--format", "jsonl").out.splitlines()]
    assert {(r["measure"], r["run"], r["verdict"]) for r in rows if "drop" in r["measure"]} == {
        (m, run, word) for m in ("map_drop", "map_drop_bound")
        for run, word in (("monot5-copy", "PASS"), ("tweak", "PASS"), ("bm25", "FAIL"))}


def test_without_confidence_the_drop_gate_reads_the_drop_alone(slightly_worse):
    """No --confidence: no bound row, and the verdict compares the drop with DELTA (a drop
    well inside a DELTA passes whatever its spread)."""
    res = rpp("check", QRELS, "--baseline", BEST, slightly_worse, "--max-drop", "map=0.02")
    assert res.code == 0 and "map_drop_bound" not in res.out
    assert verdicts(res.err)[-1][3].startswith("drop +") and "allowed 0.02" in res.err


def test_non_inferiority_with_a_delta_of_zero_needs_a_better_candidate(copy_of_best):
    """DELTA 0: "not worse at all" is shown only by a bound below 0, so a copy of the
    baseline (bound 0) fails and a clearly better run passes."""
    res = rpp("check", QRELS, "--baseline", BEST, copy_of_best, "--max-drop", "map=0",
              "--confidence", "0.95", "-m", "map")
    assert res.code == 1 and "upper bound +0.0000 >= 0 " in res.err
    better = rpp("check", QRELS, "--baseline", WORST, BEST, "--max-drop", "map=0",
                 "--confidence", "0.95", "-m", "map")
    assert better.code == 0 and verdicts(better.err)[-1][0] == "PASS"


def test_non_inferiority_of_a_count_bounds_the_sum_it_prints():
    """num_rel_ret prints the sum over the queries, and so does its drop: the bound is the
    mean per-query drop's bound times the query count."""
    res = rpp("check", QRELS, "--baseline", BEST, WORST, "-m", "map", "--test", "ttest",
              "--max-drop", "num_rel_ret=5", "--max-drop", "map=0.01", "--confidence", "0.9",
              "--precision", "12")
    got = parse_lines(res.out)
    ev = parse_lines(rpp("eval", "-q", "-m", "num_rel_ret", "--precision", "12", QRELS, BEST,
                         WORST).out)
    drops = [ev[("num_rel_ret", q, "monot5")] - ev[("num_rel_ret", q, "bm25")]
             for (m, q, r) in ev if r == "monot5" and q != "all"]
    want = scipy_stats.ttest_1samp(drops, 0, alternative="less").confidence_interval(0.9).high
    assert got[("num_rel_ret_drop", "all", "bm25", "monot5")] == sum(drops)
    assert got[("num_rel_ret_drop_bound", "all", "bm25", "monot5")] == \
        pytest.approx(want * len(drops), abs=1e-9)


@pytest.mark.parametrize("args,message", [
    (["--confidence", "0.95"], "rpp: --confidence sets the level of the --max-drop gates' "
                               "bound: give --max-drop MEASURE=DELTA\n"),
    (["--max-drop", "map=0.01", "--confidence", "1"],
     "rpp: --confidence must be in (0, 1) (got 1)\n"),
    (["--max-drop", "map=0.01", "--confidence", "0"],
     "rpp: --confidence must be in (0, 1) (got 0)\n"),
])
def test_bad_confidence_is_one_line_and_exit_2(args, message):
    res = rpp("check", QRELS, "--baseline", BEST, WORST, *args)
    assert (res.code, res.out, res.err) == (2, "", message)


def test_a_non_inferiority_gate_on_one_query_cannot_pass_and_is_refused(tmp_path):
    """One query: the t bound has no degrees of freedom, no candidate could ever pass; the
    gate is refused (exit 2, one line), as a gate that could not fail is."""
    qrels = tmp_path / "q"
    qrels.write_text("106_1 0 d1 1\n106_1 0 d2 0\n")
    base, cand = tmp_path / "base", tmp_path / "cand"
    base.write_text("106_1 Q0 d1 1 2 base\n106_1 Q0 d2 2 1 base\n")
    cand.write_text("106_1 Q0 d2 1 2 cand\n106_1 Q0 d1 2 1 cand\n")
    res = rpp("check", qrels, "--baseline", base, cand, "--max-drop", "map=0.5",
              "--confidence", "0.95")
    assert (res.code, res.out) == (2, "")
    assert res.err == ("rpp: --max-drop 'map' with --confidence 0.95: 1 query, and the "
                       "one-sided t bound needs 2 or more, so the gate could not pass\n")
    plain = rpp("check", qrels, "--baseline", base, cand, "--max-drop", "map=0.5")
    assert plain.code == 0  # without --confidence: the drop, 0.5, is allowed


def test_non_inferiority_where_lower_is_better():
    """asl: the drop is candidate minus baseline, per query as in the mean, so the worse run's
    bound lies above its (positive) drop and the better run's below its negative one."""
    worse = rpp("check", QRELS, "--baseline", BEST, WORST, "-m", "map", "--test", "ttest",
                "--max-drop", "asl=1", "--confidence", "0.95")
    got = parse_lines(worse.out)
    drop = got[("asl_drop", "all", "bm25", "monot5")]
    assert worse.code == 1 and drop > 1 and got[("asl_drop_bound", "all", "bm25", "monot5")] > drop
    better = rpp("check", QRELS, "--baseline", WORST, BEST, "-m", "map", "--test", "ttest",
                 "--max-drop", "asl=1", "--confidence", "0.95")
    got = parse_lines(better.out)
    assert better.code == 0
    assert got[("asl_drop", "all", "monot5", "bm25")] < got[
        ("asl_drop_bound", "all", "monot5", "bm25")] < 1

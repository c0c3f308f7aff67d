"""``rpp compare``, ``rpp meta`` and ``rpp eval --orderings`` end to end on fixtures/demo."""
from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rpp_cli.cli import main

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
QRELS = str(DEMO / "qrels")
RUNS = sorted(str(p) for p in (DEMO / "runs").iterdir())
LINE = re.compile(r"^(\S+) *\t(\S+)\t(\S+)\t(?:(\S+)\t)?(-?\d+\.\d+|nan)$")
RANK_LINE = re.compile(r"^(\S+_rank) *\t(all)\t(\S+)\t()(\d+(?:\.5)?)$")  # 5 or 5.5


def rpp(*args: str) -> subprocess.CompletedProcess:
    """Run ``rpp ARGS`` in this process through the real entry point (exit code included)."""
    out, err = io.StringIO(), io.StringIO()
    argv, sys.argv = sys.argv, ["rpp", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code or 0
    finally:
        sys.argv = argv
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_bad_input_through_a_real_process():
    res = subprocess.run([sys.executable, "-m", "rpp_cli", "compare", QRELS, *RUNS, "--test",
                          "hsd", "--correction", "bonferroni"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == ("rpp: --test hsd already controls the error over all pairs; "
                          "use --correction none\n")


def parse(stdout: str) -> dict[tuple[str, str, str, str | None], float]:
    """{(measure, qid, run, other): value}; every line must have the contract §7 layout."""
    out = {}
    for line in stdout.splitlines():
        m = LINE.match(line) or RANK_LINE.match(line)
        assert m, line
        out[m.group(1), m.group(2), m.group(3), m.group(4) or None] = float(m.group(5))
    return out


@pytest.fixture(scope="module")
def ttest_out():
    res = rpp("compare", QRELS, *RUNS, "-m", "rpp", "-m", "map", "--test", "ttest",
              "--precision", "10")
    assert res.returncode == 0, res.stderr
    return parse(res.stdout)


def test_compare_effects_equal_eval(ttest_out):
    ev = parse(rpp("eval", QRELS, *RUNS, "-m", "rpp", "-m", "map", "--precision", "10").stdout)
    names = sorted({k[2] for k in ev})
    for a in names:
        for b in names:
            if a != b:
                assert ttest_out["rpp", "all", a, b] == pytest.approx(ev["rpp", "all", a, b],
                                                                      abs=2e-10)
                assert ttest_out["map_diff", "all", a, b] == pytest.approx(
                    ev["map", "all", a, None] - ev["map", "all", b, None], abs=2e-10)


def test_compare_ttest_equals_scipy_on_eval_per_query_values(ttest_out):
    ev = parse(rpp("eval", QRELS, *RUNS, "-m", "rpp", "-m", "map", "-q", "-n",
                   "--precision", "12").stdout)
    rpp_q, map_q = defaultdict(list), defaultdict(dict)
    for (measure, qid, run, other), value in ev.items():
        if measure == "rpp":
            rpp_q[run, other].append(value)
        elif measure == "map":
            map_q[run][qid] = value
    for (a, b), values in rpp_q.items():
        ref = scipy_stats.ttest_1samp(values, 0.0).pvalue
        assert ttest_out["rpp_p", "all", a, b] == pytest.approx(ref, abs=1e-9)
        qids = sorted(map_q[a])
        ref = scipy_stats.ttest_rel([map_q[a][q] for q in qids], [map_q[b][q] for q in qids])
        assert ttest_out["map_p", "all", a, b] == pytest.approx(ref.pvalue, abs=1e-9)
    assert len(rpp_q) == 30


def test_compare_randomization_seeded_and_corrections_ordered():
    common = ("compare", QRELS, *RUNS, "-m", "invrpp", "-m", "recip_rank", "--permutations",
              "2000", "--precision", "10")
    plain = rpp(*common)
    assert plain.returncode == 0
    assert plain.stdout == rpp(*common).stdout  # default seed fixed
    assert plain.stdout != rpp(*common, "--seed", "7").stdout
    raw = parse(plain.stdout)
    holm = parse(rpp(*common, "--correction", "holm").stdout)
    bonf = parse(rpp(*common, "--correction", "bonferroni").stdout)
    p_keys = [k for k in raw if k[0].endswith("_p")]
    assert len(p_keys) == 60
    for k in p_keys:
        assert raw[k] <= holm[k] + 1e-12 <= bonf[k] + 2e-12
        assert bonf[k] == pytest.approx(min(1.0, 15 * raw[k]), abs=1e-9)
        assert raw[k] >= 1 / 2001 - 1e-10  # (count + 1) / (B + 1): never below 1 / (B + 1)


def test_compare_hsd_runs():
    res = rpp("compare", QRELS, *RUNS, "-m", "rpp", "--test", "hsd", "--permutations", "300")
    out = parse(res.stdout)
    assert res.returncode == 0 and len(out) == 60
    assert all(0 < v <= 1 for k, v in out.items() if k[0] == "rpp_p")


def test_compare_human_view():
    res = rpp("compare", QRELS, *RUNS, "-m", "rpp", "-m", "P.10", "--view", "human",
              "--permutations", "500", "--correction", "holm")
    assert res.returncode == 0
    lines = res.stdout.splitlines()
    assert lines[0] == "* p < 0.05 (randomization, holm correction)"
    assert {"rpp", "rpp_p", "P_10_diff", "P_10_p"} <= set(lines)
    assert "*" in res.stdout and "\t" not in res.stdout


@pytest.mark.parametrize("args, message", [
    (("--test", "hsd", "--correction", "holm"), "rpp: --test hsd already controls the error "
                                                "over all pairs; use --correction none"),
    (("-m", "nosuch"), "rpp: unknown measure 'nosuch' (rpp measures lists them all)"),
    (("--alpha", "0"), "rpp: --alpha must be in (0, 1) (got 0)"),
])
def test_compare_bad_usage(args, message):
    res = rpp("compare", QRELS, *RUNS, *args)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == [message]


def test_compare_needs_two_runs():
    res = rpp("compare", QRELS, RUNS[0])
    assert res.returncode == 2 and res.stderr.splitlines() == ["rpp: compare needs at least "
                                                               "two runs"]


def test_eval_orderings():
    res = rpp("eval", QRELS, *RUNS, "-m", "rpp", "-m", "asl", "--orderings")
    out = parse(res.stdout)
    names = sorted({k[2] for k in out})
    for m in ("rpp_win_rank", "rpp_borda_rank", "rpp_mc4_rank", "asl_rank"):
        assert sorted(out[m, "all", n, None] for n in names) == list(range(1, 7))
    win = {n: out["rpp_win", "all", n, None] for n in names}
    assert [out["rpp_win_rank", "all", n, None] for n in sorted(names, key=win.get,
                                                                  reverse=True)] == \
        list(range(1, 7))
    asl = {n: out["asl", "all", n, None] for n in names}
    assert out["asl_rank", "all", min(asl, key=asl.get), None] == 1
    assert np.isclose(sum(out["rpp_mc4", "all", n, None] for n in names), 1, atol=1e-3)


def test_meta_cli_layout_and_names():
    res = rpp("meta", QRELS, *RUNS, "-m", "rpp", "-m", "ndcg", "--samples", "30",
              "--permutations", "100", "--query-counts", "5,20")
    assert res.returncode == 0, res.stderr
    out = parse(res.stdout)
    assert {k[0] for k in out} == {"power_ttest", "power_hsd", "ties", "agreement_tau",
                                   "agreement_sign", "agreement_r", "robust_queries_5",
                                   "robust_queries_20", "predictive_tau"}
    assert out["agreement_tau", "all", "rpp", "ndcg"] == out["agreement_tau", "all", "ndcg",
                                                              "rpp"]
    assert len([k for k in out if k[0] == "predictive_tau"]) == 4
    assert "rpp: note:" in res.stderr and "power_ttest" not in res.stderr  # results: stdout


def test_meta_human_view():
    res = rpp("meta", QRELS, *RUNS, "-m", "rpp", "-m", "map", "--analysis", "power,agreement",
              "--permutations", "100", "--view", "human")
    lines = res.stdout.splitlines()
    assert lines[0].split() == ["power_ttest", "power_hsd"]
    assert lines[1].split()[0] == "rpp" and "agreement_tau" in lines


@pytest.mark.parametrize("args, message", [
    (("--analysis", "power,bogus"),
     "unknown analysis 'bogus' (choose from power,ties,agreement,robustness,predictive,widths)"),
    (("--query-counts", "0"), "--query-counts: 0 is not a number of queries (1 or more)"),
    (("--query-counts", "3,99"), "--query-counts: 99 is not between 1 and 25 (the number of "
                                 "evaluated queries)"),
    (("--analysis", ""), "no analysis given (choose from power,ties,agreement,robustness,"
                         "predictive,widths)"),
    (("--analysis", ",,"), "no analysis given (choose from power,ties,agreement,robustness,"
                           "predictive,widths)"),
    (("--query-counts", "3,x"), "--query-counts: '3,x' is not a comma-separated list of int "
                                "values"),
    (("--top-fraction", "0"), "--top-fraction must be in (0, 1] (got 0)"),
    (("--judged-fractions", "0.5,1.5"), "--judged-fractions: 1.5 is not in (0, 1]"),
    (("--alpha", "1"), "--alpha must be in (0, 1) (got 1)"),
])
def test_meta_bad_usage(args, message):
    res = rpp("meta", QRELS, *RUNS, "-m", "map", *args)
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines()[-1] == "rpp: " + message
    assert len([x for x in res.stderr.splitlines() if not x.startswith("rpp: note:")]) == 1


def test_meta_without_per_query_values():
    res = rpp("meta", QRELS, *RUNS, "-m", "gm_map")
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr.splitlines() == ["rpp: no measure with per-query values to study"]


def test_paper_view_bold_best_and_significance_letters():
    """One row per run; the best value per measure in bold; after a value, the letters of the
    runs it beats significantly, exactly the pairs compare reports with p < alpha."""
    from .conftest import DEMO, parse_lines, rpp

    runs = [DEMO / "runs" / n for n in ("monot5", "colbert", "bm25")]
    args = ["-m", "map", "-m", "rpp", "--test", "ttest", "--correction", "holm",
            DEMO / "qrels", *runs]
    md = rpp("compare", "--view", "paper", "--format", "markdown", *args)
    assert md.code == 0
    lines = md.out.splitlines()
    assert lines[:2] == ["| | Run | map | rpp |", "|---|---|---:|---:|"]
    evidence = parse_lines(rpp("compare", "--precision", "10", *args).out)
    names = ["monot5", "colbert", "bm25"]
    for i, line in enumerate(lines[2:5]):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:2] == [f"({'abc'[i]})", names[i]]
        for cell, (m, effect) in zip(cells[2:], [("map", "map_diff"), ("rpp", "rpp")]):
            beaten = "".join("abc"[j] for j, other in enumerate(names) if other != names[i]
                             and evidence[(f"{m}_p", "all", names[i], other)] < 0.05
                             and evidence[(effect, "all", names[i], other)] > 0)
            assert cell.endswith(f"<sup>{beaten}</sup>" if beaten else cell[-1])
    assert lines[2].count("**") == 4  # monot5 is best on both
    assert "paired t-test, Holm correction, p < 0.05" in lines[-1]
    tex = rpp("compare", "--view", "paper", "--format", "latex", *args).out
    assert tex.startswith("\\begin{table}\n\\centering\n\\caption{Mean over 25 queries")
    assert "\\label{tab:rpp-compare}" in tex and "\\toprule" in tex and tex.endswith(
        "\\end{table}\n")
    assert "\\textbf{" in tex and "$^{\\mathrm{bc}}$" in tex
    bad = rpp("compare", "--view", "paper", *args)
    assert bad.code == 2 and bad.err == "rpp: --view paper needs --format latex or markdown\n"


def test_paper_view_letters_past_26_runs_are_one_run_each(tmp_path):
    """28 runs: the 27th and 28th are aa and bb, so a cell's letters are separated by commas
    (without them, 'aa' would be both {a, a...} and run 27); each letter names exactly the runs
    compare reports as significantly beaten."""
    from .conftest import parse_lines, rpp, write_qrels, write_run

    queries = [f"1{q:02d}_1" for q in range(30)]
    docs = [f"clueweb12-0{d:03d}wb-{d % 7:02d}-1{d:04d}" for d in range(40)]
    qrels = write_qrels(tmp_path / "qrels", [(q, docs[k], 1) for q in queries
                                             for k in range(0, 40, 4)])
    rng = np.random.default_rng(7)
    runs = []
    for i in range(28):  # run i pushes the relevant documents down by about i/2 places
        ranking = {}
        for q in queries:
            key = np.arange(40) + np.where(np.arange(40) % 4 == 0, i / 2, 0)
            ranking[q] = [docs[k] for k in np.argsort(key + rng.random(40) * 3)]
        runs.append(write_run(tmp_path / f"run{i:02d}", ranking))
    args = ["-m", "ndcg", "--test", "ttest", qrels, *runs]
    md = rpp("compare", "--view", "paper", "--format", "markdown", *args)
    assert md.code == 0, md.err
    rows = md.out.splitlines()[2:30]
    letters = ["abcdefghijklmnopqrstuvwxyz"[i % 26] * (i // 26 + 1) for i in range(28)]
    evidence = parse_lines(rpp("compare", "--precision", "10", *args).out)
    seen_comma = False
    for i, line in enumerate(rows):
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:2] == [f"({letters[i]})", f"run{i:02d}"]
        sup = re.search(r"<sup>(.*)</sup>$", cells[2])
        shown = sup.group(1).split(",") if sup else []
        seen_comma |= len(shown) > 1
        beaten = [letters[j] for j in range(28) if j != i
                  and evidence[("ndcg_p", "all", f"run{i:02d}", f"run{j:02d}")] < 0.05
                  and evidence[("ndcg_diff", "all", f"run{i:02d}", f"run{j:02d}")] > 0]
        assert shown == beaten
    assert seen_comma and "aa" in rows[0] and "bb" in rows[0]  # run00 beats runs 27 and 28


@pytest.mark.parametrize("command", ["compare", "meta"])
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "latex"])
def test_human_view_refuses_a_format_it_would_not_print(command, fmt):
    """--view human prints aligned tables whatever --format says: a --format other than trec
    beside it is an error, not dropped in silence."""
    res = rpp(command, "--view", "human", "--format", fmt, QRELS, *RUNS[:2])
    assert res.returncode == 2 and res.stdout == ""
    assert res.stderr == (f"rpp: --view human prints aligned tables of its own: --format {fmt} "
                          "is for --view trec\n")


def test_meta_has_no_paper_view():
    res = rpp("meta", "--view", "paper", "--format", "latex", QRELS, *RUNS[:2])
    assert res.returncode == 2 and res.stdout == ""
    assert "'paper' is not one of 'trec', 'human'" in res.stderr


@pytest.mark.parametrize("fmt", ["matrix", "markdown", "latex"])
def test_meta_tables_name_measures_not_runs(fmt):
    """meta's lines hold measures where eval's hold runs: its tables say so."""
    res = rpp("meta", "-Q", "--analysis", "power,agreement", "-m", "rpp", "-m", "map",
              "--permutations", "50", "--format", fmt, QRELS, *RUNS)
    assert res.returncode == 0, res.stderr
    assert "row measure vs column measure" in res.stdout and "per-measure values" in res.stdout
    assert " run" not in res.stdout.replace("\\_", "_")  # no table calls a measure a run


CI_ROWS = ("_ci_low", "_ci_high", "_d")


def per_query_pairs(measures: tuple[str, ...]) -> dict[tuple[str, str, str], np.ndarray]:
    """{(measure, a, b): per-query paired values} from rpp eval -q (12 decimals): RPP(a, b),
    or m(a) - m(b) over the queries the metric averages over."""
    ev = parse(rpp("eval", QRELS, *RUNS, *(a for m in measures for a in ("-m", m)), "-q", "-n",
                   "--precision", "12").stdout)
    pref, metric = defaultdict(dict), defaultdict(dict)
    for (measure, qid, run, other), value in ev.items():
        if measure.endswith("_win"):
            continue  # a preference measure's win rate: not a tested measure
        if other is None:
            metric[measure, run][qid] = value
        else:
            pref[measure, run, other][qid] = value
    out = {key: np.array([v[q] for q in sorted(v)]) for key, v in pref.items()}
    for (measure, a), va in metric.items():
        for (m2, b), vb in metric.items():
            if m2 == measure and a != b:
                out[measure, a, b] = np.array([va[q] - vb[q] for q in sorted(va)])
    return out


def test_default_output_has_no_interval_rows_and_ci_only_adds_rows():
    """Without --ci nothing changes (no interval or effect-size row); with it the same rows,
    plus M_ci_low, M_ci_high and M_d for every ordered pair, antisymmetric as the effect."""
    args = ("compare", QRELS, *RUNS[:4], "-m", "rpp", "-m", "map", "--permutations", "500")
    plain = parse(rpp(*args).stdout)
    assert not any(k[0].endswith(CI_ROWS) for k in plain)
    wide = parse(rpp(*args, "--ci", "0.9").stdout)
    assert {k: v for k, v in wide.items() if not k[0].endswith(CI_ROWS)} == plain
    extra = {k: v for k, v in wide.items() if k[0].endswith(CI_ROWS)}
    assert len(extra) == 2 * 3 * 12  # 2 measures x 3 rows x 12 ordered pairs
    for (measure, _, a, b), value in extra.items():
        mirror = measure.replace("_ci_low", "_ci_HIGH").replace("_ci_high", "_ci_low") \
            .replace("_ci_HIGH", "_ci_high")
        assert value == -wide[mirror, "all", b, a]


def test_compare_ci_and_effect_sizes_equal_scipy_on_eval_per_query_values():
    """--ci 0.9 (t): each pair's interval is scipy's ttest_1samp(...).confidence_interval on
    rpp eval's per-query values, M_d its t / sqrt(Q) times Hedges' J; the bootstrap
    intervals are scipy.stats.bootstrap's with default_rng(--seed) on the pair in name order
    (every digit in jsonl: tests/test_scipy_goldens.py)."""
    from scipy.special import loggamma

    got = parse(rpp("compare", QRELS, *RUNS, "-m", "rpp", "-m", "map", "--ci", "0.9",
                    "--test", "ttest", "--precision", "10").stdout)
    pairs = per_query_pairs(("rpp", "map"))
    for (measure, a, b), x in pairs.items():
        n = len(x)
        ref = scipy_stats.ttest_1samp(x, 0.0)
        ci = ref.confidence_interval(0.9)
        assert got[f"{measure}_ci_low", "all", a, b] == pytest.approx(ci.low, abs=2e-10)
        assert got[f"{measure}_ci_high", "all", a, b] == pytest.approx(ci.high, abs=2e-10)
        j = np.exp(loggamma((n - 1) / 2) - loggamma((n - 2) / 2)) / np.sqrt((n - 1) / 2)
        assert got[f"{measure}_d", "all", a, b] == pytest.approx(
            ref.statistic / np.sqrt(n) * j, abs=2e-10)
    assert len(pairs) == 60


@pytest.mark.parametrize("test", ["wilcoxon", "sign"])
@pytest.mark.parametrize("correction", ["none", "bh", "by"])
def test_rank_tests_and_fdr_corrections_equal_scipy(test, correction):
    got = parse(rpp("compare", QRELS, *RUNS, "-m", "rpp", "-m", "P.10", "--test", test,
                    "--correction", correction, "--precision", "12").stdout)
    pairs = per_query_pairs(("rpp", "P.10"))
    for measure in ("rpp", "P_10"):
        keys = [(measure, a, b) for (m, a, b) in pairs if m == measure and a < b]
        raw = []
        for key in keys:
            x = np.round(pairs[key], 10)  # P@10 differences of 12 decimals tie exactly
            if test == "wilcoxon":
                raw.append(scipy_stats.wilcoxon(x).pvalue if x.any() else 1.0)
            else:
                raw.append(scipy_stats.binomtest(int((x > 0).sum()), int((x != 0).sum()))
                           .pvalue)
        want = (raw if correction == "none" else
                scipy_stats.false_discovery_control(raw, method=correction))
        for (m, a, b), p in zip(keys, want):
            assert got[f"{m}_p", "all", a, b] == pytest.approx(p, abs=1e-10)
            assert got[f"{m}_p", "all", b, a] == got[f"{m}_p", "all", a, b]


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "matrix", "markdown", "latex"])
def test_every_format_prints_the_interval_rows(fmt):
    res = rpp("compare", "-Q", QRELS, *RUNS[:3], "-m", "map", "--ci", "0.95", "--interval",
              "percentile", "--resamples", "500", "--format", fmt)
    assert res.returncode == 0, res.stderr
    text = res.stdout.replace("\\_", "_")
    assert all(f"map{row}" in text for row in CI_ROWS)


def test_human_view_legend_names_the_interval():
    res = rpp("compare", QRELS, *RUNS[:3], "-m", "map", "--test", "ttest", "--ci", "0.9",
              "--interval", "bca", "--resamples", "300", "--view", "human")
    assert res.returncode == 0
    assert res.stdout.splitlines()[0] == ("* p < 0.05 (ttest); M_ci_low, M_ci_high: 90% "
                                          "bootstrap BCa interval; M_d: Hedges' g_z")
    assert "\nmap_ci_low\n" in res.stdout and "\nmap_d\n" in res.stdout


def test_paper_view_intervals_and_daggers():
    """--ci with --view paper: each value followed by its run's interval (t: scipy's on the
    run's per-query values; a preference measure's on its per-query win rates), or with
    --paper-ci dagger a dagger on each run whose pair interval with run (a) excludes 0; the
    caption says which."""
    runs = [RUNS[i] for i in (4, 2, 0)]  # monot5, colbert, bm25
    args = ("compare", "-Q", "--view", "paper", "--format", "markdown", "-m", "map", "-m",
            "rpp", "--test", "ttest", "--ci", "0.95", QRELS, *runs)
    md = rpp(*args)
    assert md.returncode == 0, md.stderr
    ev = parse(rpp("eval", QRELS, *runs, "-m", "map", "-m", "rpp", "-q", "-n",
                   "--precision", "12").stdout)
    for line, run in zip(md.stdout.splitlines()[2:5], ("monot5", "colbert", "bm25")):
        cells = [c.strip() for c in line.strip("|").split("|")][2:]
        for cell, measure in zip(cells, ("map", "rpp_win")):
            x = [v for (m, q, r, o), v in sorted(ev.items()) if m == measure and r == run]
            ci = scipy_stats.ttest_1samp(x, 0.0).confidence_interval(0.95)
            assert cell.endswith(f" \\[{ci.low:.4f}, {ci.high:.4f}\\]"), (cell, ci)
    assert md.stdout.rstrip().endswith("Brackets: the 95% t-interval of the mean over queries "
                                       "(for a preference measure, of the mean per-query win "
                                       "rate).")
    dag = rpp(*args, "--paper-ci", "dagger", "--format", "latex")
    assert dag.returncode == 0
    rows = parse(rpp("compare", QRELS, *runs, "-m", "map", "-m", "rpp", "--ci", "0.95",
                     "--test", "ttest", "--precision", "10").stdout)
    body = [line for line in dag.stdout.splitlines() if line.startswith("(")]
    for line, run in zip(body, ("monot5", "colbert", "bm25")):
        cells = line.split(" & ")[2:]
        for cell, measure in zip(cells, ("map", "rpp")):
            low = rows.get((f"{measure}_ci_low", "all", run, "monot5"), 0.0)
            high = rows.get((f"{measure}_ci_high", "all", run, "monot5"), 0.0)
            assert ("\\dagger" in cell) == (low > 0 or high < 0)
    assert sum("\\dagger" in line for line in body) >= 2
    assert "†: the 95\\% t-interval of the mean paired difference from run (a) excludes 0" \
        in dag.stdout


def test_paper_view_names_the_fdr_corrections_in_full():
    res = rpp("compare", "-Q", "--view", "paper", "--format", "markdown", "-m", "map",
              "--test", "wilcoxon", "--correction", "by", QRELS, *RUNS[:3])
    assert "(Wilcoxon signed-rank test, Benjamini-Yekutieli correction, p < 0.05)" in res.stdout


@pytest.mark.parametrize("args, message", [
    (("--interval", "bca"), "--interval needs --ci LEVEL (e.g. --ci 0.95)"),
    (("--ci", "1"), "--ci must be a confidence level in (0, 1) (got 1.0)"),
    (("--ci", "0.95", "--paper-ci", "dagger"), "--paper-ci needs --ci LEVEL and --view paper"),
    (("--paper-ci", "interval", "--view", "paper", "--format", "latex"),
     "--paper-ci needs --ci LEVEL and --view paper"),
    (("--ci", "0.95", "--resamples", "0"), None),
])
def test_interval_options_bad_usage(args, message):
    res = rpp("compare", QRELS, *RUNS[:2], *args)
    assert res.returncode == 2 and res.stdout == ""
    if message:
        assert res.stderr == f"rpp: {message}\n"
    else:
        assert "--resamples" in res.stderr

"""`rpp levels`: the worst-case positions behind RPP, by hand on tiny collections (contract
§2-4), equal to `rpp eval`'s RPP when summed back, labels, formats, the plot and bad usage."""
from __future__ import annotations

import json
import re
from collections import defaultdict

import pytest

from .conftest import DEMO, PAPER, parse_lines, rpp, write_qrels, write_run
from .io.test_readers import one_error_line
from .realistic import generate, write_collection
from .test_shell import RPP, shell
from .test_subtopics import write_subtopics

PAPER_ARGS = (PAPER / "qrels", PAPER / "run.X", PAPER / "run.Y")
BY_TAG = ("--names-from", "tag")  # the paper's runs are X and Y: their tags


def per_level(out: str) -> list[tuple]:
    """The ``levels`` lines as (qid, a, b, population, i, f_a, f_b, sign)."""
    rows = []
    for line in out.splitlines():
        fields = line.split("\t")
        if fields[0] == f"{'levels':<22}":
            qid, a, b, pop, *numbers = fields[1:]
            rows.append((qid, a, b, pop, *map(int, numbers)))
    return rows


def rpp_from_levels(out: str) -> dict[tuple[str, str, str], float]:
    """RPP(a, b) of each query summed back from the lines: Σ_P p(P) mean_i sign with
    p(P) = m_P / Σ m_P' (contract §4, uniform p(i | P)); also checks each line's own sign and
    that the levels of a population are 1..m_P in order."""
    signs: dict[tuple, dict[str, list[int]]] = defaultdict(dict)
    for qid, a, b, pop, i, fa, fb, sign in per_level(out):
        assert sign == (fb > fa) - (fb < fa)
        levels = signs[(qid, a, b)].setdefault(pop, [])
        assert i == len(levels) + 1
        levels.append(sign)
    out_rpp = {}
    for key, pops in signs.items():
        total = sum(len(s) for s in pops.values())
        out_rpp[key] = sum(len(s) / total * (sum(s) / len(s)) for s in pops.values())
    return out_rpp


def assert_rpp_matches_eval(measure: str, *args) -> None:
    """Per query, RPP(a, b) summed back from `rpp levels ARGS` equals `rpp eval -q -m
    MEASURE ARGS` to 1e-12, on the same queries."""
    levels = rpp("levels", *args)
    assert levels.code == 0, levels.err
    got = rpp_from_levels(levels.out)
    ev = rpp("eval", "-q", "-m", measure, "--precision", "17", *args)
    want = {key[1:]: v for key, v in parse_lines(ev.out).items()
            if key[0] == measure and key[1] != "all"}
    a, b = next(iter(got))[1:]
    want = {k: v for k, v in want.items() if k[1:] == (a, b)}
    assert set(got) == set(want)
    assert all(abs(got[k] - want[k]) <= 1e-12 for k in want), (got, want)


def test_the_papers_worked_example_by_hand():
    # fixtures/paper, contract §4: X = 0 4 3 0 0 0 1 0 3, Y = 3 0 4 5 3 0 0 1 1 (grades from the
    # top). Relevant: d5a (5), d4a (4), d3a d3b (3), d1a d1b (1); n = 12 distinct items (6 of
    # them relevant, n1..n6 not). Populations >=1, >=3, >=4, >=5 (m = 6, 4, 2, 1); the i-th
    # missed member of a population of m sits at n - m + i = 12 - m + i.
    #   >=1: X has d4a 2, d3a 3, d1a 7, d3b 9, misses d5a d1b -> 2 3 7 9 | 12-6+5=11, 12
    #        Y has d3a 1, d4a 3, d5a 4, d3b 5, d1a 8, d1b 9   -> 1 3 4 5 8 9
    #   >=3: X 2 3 9 | 12-4+4=12;  Y 1 3 4 5
    #   >=4: X 2 | 12-2+2=12;      Y 3 4       (one such item: X at 2 beats Y at 3)
    #   >=5: X | 12-1+1=12;        Y 4
    # contract §4: λ=1 f_1(X)=2, f_2(X)=3, f_3(X)=7, f_1(Y)=1; λ=4 f_1(X)=2, f_1(Y)=3.
    res = rpp("levels", *BY_TAG, *PAPER_ARGS)
    assert res.code == 0 and res.err == ""
    expected = [(">=1", 1, 2, 1), (">=1", 2, 3, 3), (">=1", 3, 7, 4), (">=1", 4, 9, 5),
                (">=1", 5, 11, 8), (">=1", 6, 12, 9),
                (">=3", 1, 2, 1), (">=3", 2, 3, 3), (">=3", 3, 9, 4), (">=3", 4, 12, 5),
                (">=4", 1, 2, 3), (">=4", 2, 12, 4),
                (">=5", 1, 12, 4)]
    signs = [-1, 0, -1, -1, -1, -1, -1, 0, -1, -1, 1, -1, -1]
    assert per_level(res.out) == [("q1", "X", "Y", p, i, fx, fy, s)
                                  for (p, i, fx, fy), s in zip(expected, signs)]
    # the exact text of one line: contract §7 layout, value (the sign) last
    assert res.out.splitlines()[0] == f"{'levels':<22}\tq1\tX\tY\t>=1\t1\t2\t1\t-1"
    # shares pooled over queries, (ahead, behind, tied) counts from the signs above:
    # >=1 (0, 5, 1), >=3 (0, 3, 1), >=4 (1, 1, 0), >=5 (0, 1, 0); all 13 levels (1, 10, 2)
    counts = {">=1": (0, 5, 1), ">=3": (0, 3, 1), ">=4": (1, 1, 0), ">=5": (0, 1, 0),
              None: (1, 10, 2)}
    assert res.out.splitlines()[13:] == [
        f"{measure:<22}\tall\tX\tY\t" + (f"{pop}\t" if pop else "") + f"{c[k] / sum(c):.4f}"
        for k, measure in enumerate(("levels_ahead", "levels_behind", "levels_tied"))
        for pop, c in counts.items()]
    # summed back: (6·(-5/6) + 4·(-3/4) + 2·0 + 1·(-1)) / 13 = -9/13, as rpp eval says
    assert rpp_from_levels(res.out) == {("q1", "X", "Y"): pytest.approx(-9 / 13, abs=1e-15)}
    assert_rpp_matches_eval("rpp", *PAPER_ARGS)


def test_level_and_run_order():
    # -l 4: populations >=4 and >=5 only, the same positions as above (n does not change)
    res = rpp("levels", "-l", "4", *PAPER_ARGS)
    assert [r[3:] for r in per_level(res.out)] == [(">=4", 1, 2, 3, 1), (">=4", 2, 12, 4, -1),
                                                   (">=5", 1, 12, 4, -1)]
    # swapping the runs swaps the position columns and negates every sign
    swapped = per_level(rpp("levels", PAPER_ARGS[0], *PAPER_ARGS[:0:-1]).out)
    assert swapped == [(q, b, a, p, i, fb, fa, -s)
                       for q, a, b, p, i, fa, fb, s in per_level(rpp("levels", *PAPER_ARGS).out)]


def test_realistic_ids_by_hand(tmp_path):
    # Query 106_1: relevant d (grade 2, 1 byte), LONG (2, 100 bytes), Zürich_Straße (1),
    # doc10 (1, retrieved by no run); 東京 judged 0. A = 東京 d n1 Zürich_Straße LONG,
    # B = LONG Zürich_Straße n2. n = 5 judged + n1 + n2 = 7.
    #   >=1 (m=4): A d 2, Zürich 4, LONG 5, misses doc10 -> 7-4+4 = 7:  2 4 5 7
    #              B LONG 1, Zürich 2, misses d, doc10 -> 7-4+3 = 6, 7: 1 2 6 7
    #   >=2 (m=2): A 2 5; B LONG 1, misses d -> 7-2+2 = 7:               1 7
    # Query 7: relevant doc1; A has no line for 7 (empty ranking), B = x doc1. n = 2:
    #   >=1 (m=1): A misses it -> 2-1+1 = 2; B 2: a tie.
    # Queries in byte order: 106_1 before 7.
    long = "msmarco_passage_" + "7" * 84
    assert len(long.encode()) == 100
    q = write_qrels(tmp_path / "qrels", [("106_1", "d", 2), ("106_1", long, 2),
                                         ("106_1", "Zürich_Straße", 1), ("106_1", "doc10", 1),
                                         ("106_1", "東京", 0), ("7", "doc1", 1)])
    a = write_run(tmp_path / "bm25.rm3", {"106_1": ["東京", "d", "n1", "Zürich_Straße", long]},
                  "a")
    b = write_run(tmp_path / "SPLADE++", {"106_1": [long, "Zürich_Straße", "n2"],
                                          "7": ["x", "doc1"]}, "b")
    res = rpp("levels", q, a, b)
    assert res.code == 0
    names = ("bm25.rm3", "SPLADE++")
    assert per_level(res.out) == [
        ("106_1", *names, ">=1", 1, 2, 1, -1), ("106_1", *names, ">=1", 2, 4, 2, -1),
        ("106_1", *names, ">=1", 3, 5, 6, 1), ("106_1", *names, ">=1", 4, 7, 7, 0),
        ("106_1", *names, ">=2", 1, 2, 1, -1), ("106_1", *names, ">=2", 2, 5, 7, 1),
        ("7", *names, ">=1", 1, 2, 2, 0)]
    # RPP(A, B) on 106_1 = 4/6 · (-1 - 1 + 1 + 0)/4 + 2/6 · 0 = -1/6; on 7, 0
    assert rpp_from_levels(res.out) == {("106_1", *names): pytest.approx(-1 / 6, abs=1e-15),
                                        ("7", *names): 0.0}
    assert "empty ranking" in res.err  # notes as in rpp eval
    assert_rpp_matches_eval("rpp", q, a, b)
    # input options as rpp eval's: names, a fixed corpus size (missed items sit lower)
    named = rpp("levels", "--name", "A", "--name", "B", "--corpus-size", "100", q, a, b)
    assert per_level(named.out)[3] == ("106_1", "A", "B", ">=1", 4, 100, 100, 0)
    assert per_level(named.out)[6] == ("7", "A", "B", ">=1", 1, 100, 2, -1)  # B now ahead


def test_graded_labels_keep_every_grade_apart(tmp_path):
    # grades 0.5, 1.0000001 and 1.0000002 (%g would print both as 1) and 2: one population
    # each, labels in increasing order, summary lines in the same order. n = 4; A = z y,
    # B = x w; a population of m puts its i-th missed member at 4 - m + i.
    #   >=0.5  (w x y z): A 1 2 | 3 4;  B 1 2 | 3 4          -> 0 0 0 0
    #   >=1.0000001 (x y z): A 1 2 | 4;  B 1 | 3 4          -> 0 1 0
    #   >=1.0000002 (y z): A 1 2;  B | 3 4                  -> 1 1
    #   >=2 (z): A 1;  B | 4                                -> 1
    # tied at 6 of the 10 levels
    q, (a, b) = write_qrels(tmp_path / "qrels", [("q", "w", 0.5), ("q", "x", 1.0000001),
                                                 ("q", "y", 1.0000002), ("q", "z", 2)]), [
        write_run(tmp_path / n, {"q": docs}, n) for n, docs in (("A", ["z", "y"]),
                                                                ("B", ["x", "w"]))]
    res = rpp("levels", q, a, b)
    assert [(r[3], r[-1]) for r in per_level(res.out)] == (
        [(">=0.5", 0)] * 4 + [(">=1.0000001", s) for s in (0, 1, 0)] +
        [(">=1.0000002", 1)] * 2 + [(">=2", 1)])
    summary = [line.split("\t")[4] for line in res.out.splitlines()
               if line.startswith("levels_tied")]
    assert summary == [">=0.5", ">=1.0000001", ">=1.0000002", ">=2", "0.6000"]


def test_subtopic_populations_and_labels(tmp_path):
    # q1: a b c relevant, n not; subtopics "10" = {a}, "2" = {b, c}, "b" = {c}: labelled in
    # ndeval's order (numbers by value, then other ids), the background "*" last. n = 4.
    # A = a n b, B = c b.
    #   "2"  (m=2): A b 3, misses c -> 4-2+2 = 4: 3 4;  B c 1, b 2: 1 2
    #   "10" (m=1): A 1;  B misses a -> 4
    #   "b"  (m=1): A misses c -> 4;  B 1
    #   "*"  (m=3): A a 1, b 3, misses c -> 4: 1 3 4;  B c 1, b 2, misses a -> 4: 1 2 4
    # ST-RPP(A, B) = (2·(-1) + 1·1 + 1·(-1) + 3·(-1/3)) / 7 = -3/7.
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 1),
                                         ("q1", "n", 0)])
    s = write_subtopics(tmp_path / "sub", [("q1", "10", "a", 1), ("q1", "2", "b", 1),
                                           ("q1", "2", "c", 1), ("q1", "b", "c", 1)])
    a = write_run(tmp_path / "A", {"q1": ["a", "n", "b"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["c", "b"]}, "B")
    res = rpp("levels", "--subtopics", s, q, a, b)
    assert res.code == 0
    assert [r[3:] for r in per_level(res.out)] == [
        ("2", 1, 3, 1, -1), ("2", 2, 4, 2, -1), ("10", 1, 1, 4, 1), ("b", 1, 4, 1, -1),
        ("*", 1, 1, 1, 0), ("*", 2, 3, 2, -1), ("*", 3, 4, 4, 0)]
    assert rpp_from_levels(res.out) == {("q1", "A", "B"): pytest.approx(-3 / 7, abs=1e-15)}
    assert_rpp_matches_eval("st-rpp", "--subtopics", s, q, a, b)
    summary = [line.split("\t") for line in res.out.splitlines() if line.startswith("levels_ahead")]
    assert [f[4:-1] for f in summary] == [["2"], ["10"], ["b"], ["*"], []]  # [] = every one
    assert float(summary[-1][-1]) == round(1 / 7, 4)  # A ahead at 1 of the 7 levels
    # QRELS omitted, as in rpp eval: the grade is the largest over the subtopics
    assert per_level(rpp("levels", "--subtopics", s, a, b).out) == per_level(res.out)


def test_subtopic_id_star_is_reserved(tmp_path):
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    s = write_subtopics(tmp_path / "sub", [("q1", "*", "a", 1)])
    a = write_run(tmp_path / "A", {"q1": ["a"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["b"]}, "B")
    one_error_line(rpp("levels", "--subtopics", s, q, a, b),
                   r".*sub: subtopic id '\*' is reserved for the background population .*")


RUNS = {name: DEMO / "runs" / name for name in ("monot5", "bm25", "dpr", "colbert", "splade")}


@pytest.mark.parametrize("args, measure", [
    ((DEMO / "qrels", RUNS["monot5"], RUNS["bm25"]), "rpp"),
    (("-l", "2", DEMO / "qrels", RUNS["bm25"], RUNS["dpr"]), "rpp"),
    (("--corpus-size", "5000", DEMO / "qrels", RUNS["colbert"], RUNS["splade"]), "rpp"),
    (("--subtopics", DEMO / "qrels.subtopics", DEMO / "qrels", RUNS["splade"], RUNS["monot5"]),
     "st-rpp"),
])
def test_summed_back_levels_are_rpp_on_the_demo(args, measure):
    assert_rpp_matches_eval(measure, *args)


@pytest.mark.parametrize("seed", [3, 11, 2022])
def test_summed_back_levels_are_rpp_on_realistic_collections(seed, tmp_path):
    """Docnos of 1-100 bytes, UTF-8, qids like 106_1, ugly files (realistic.py)."""
    qrels, runs = write_collection(generate(seed), tmp_path, "mixed", seed)
    assert_rpp_matches_eval("rpp", qrels, runs[0], runs[1])


def test_formats_carry_the_same_rows():
    trec = rpp("levels", "--precision", "6", *BY_TAG, *PAPER_ARGS).out.splitlines()
    jsonl = [json.loads(line) for line in rpp("levels", "--format", "jsonl", "--precision", "6",
                                              *BY_TAG, *PAPER_ARGS).out.splitlines()]
    csv_lines = rpp("levels", "--format", "csv", "--precision", "6", *BY_TAG,
                    *PAPER_ARGS).out.splitlines()
    header = "measure,qid,run,other,population,level,run_position,other_position,value"
    assert csv_lines[0] == header
    keys = header.split(",")
    assert all(list(row) == keys for row in jsonl)
    assert len(trec) == len(jsonl) == len(csv_lines) - 1 == 13 + 15
    for text, obj, csv_line in zip(trec, jsonl, csv_lines[1:]):
        fields = [f.strip() for f in text.split("\t")]
        shown = [obj[k] for k in keys if obj[k] is not None]
        assert [str(x) for x in shown[:-1]] == fields[:-1]
        assert float(fields[-1]) == obj["value"]
        assert csv_line.split(",") == ["" if obj[k] is None else str(obj[k]) if k != "value"
                                       else fields[-1] for k in keys]
    assert jsonl[0] == {"measure": "levels", "qid": "q1", "run": "X", "other": "Y",
                        "population": ">=1", "level": 1, "run_position": 2,
                        "other_position": 1, "value": -1}
    assert jsonl[-1]["value"] == 0.153846 and jsonl[-1]["population"] is None


def test_no_summary():
    full = rpp("levels", *PAPER_ARGS).out.splitlines()
    cut = rpp("levels", "-n", *PAPER_ARGS).out.splitlines()
    assert cut == full[:13] and all(line.startswith("levels ") for line in cut)


@pytest.mark.parametrize("args, pattern", [
    (PAPER_ARGS[:2], r"levels compares exactly two runs, RUN_A and RUN_B \(got 1\)"),
    ((*PAPER_ARGS, PAPER / "run.X"), r"levels compares exactly two runs, RUN_A and RUN_B "
                                     r"\(got 3\)"),
    (PAPER_ARGS[:1], r"missing RUN\.\.\. arguments"),
    ((), r"missing QRELS and RUN\.\.\. arguments"),
    # checked before any file is read: these files do not exist
    (("--plot", "out.gif", "no-qrels", "no-a", "no-b"),
     r"--plot: the file name must end in \.png, \.pdf or \.svg \(got 'out\.gif'\)"),
    (("--name", "A", *PAPER_ARGS), r".*--name.*"),
])
def test_bad_usage_is_one_line_and_exit_2(args, pattern):
    one_error_line(rpp("levels", *args), pattern)


@pytest.mark.slow
def test_plot_png_and_svg(tmp_path):
    png, svg = tmp_path / "levels.png", tmp_path / "levels.svg"
    args = (DEMO / "qrels", RUNS["monot5"], RUNS["bm25"])
    res = rpp("levels", "--plot", png, *args)
    assert res.code == 0
    assert res.out == rpp("levels", *args).out  # the text output is unchanged
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert rpp("levels", "--plot", svg, "-n", *BY_TAG, *PAPER_ARGS).code == 0
    text = svg.read_text()
    assert "<svg" in text and "X vs Y on query q1: position differences per recall level" in text


def drawn(monkeypatch) -> list:
    """The figures report.plot would save, kept instead of written."""
    from rpp_cli.report import plot

    figures: list = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: figures.append(fig) or [])
    return figures


def test_query_keeps_one_query_and_its_shares():
    """--query 205: exactly the lines of query 205 (byte-equal qid), and shares computed over
    its levels alone."""
    args = (DEMO / "qrels", RUNS["monot5"], RUNS["bm25"])
    every = per_level(rpp("levels", *args).out)
    res = rpp("levels", "--query", "205", *args)
    assert res.code == 0, res.err
    one = per_level(res.out)
    assert one == [row for row in every if row[0] == "205"] and one
    signs = [row[-1] for row in one]
    shares = {k[0]: v for k, v in parse_lines(res.out).items() if len(k) == 4}
    assert shares["levels_ahead"] == pytest.approx(signs.count(1) / len(signs), abs=1e-4)
    assert shares["levels_tied"] == pytest.approx(signs.count(0) / len(signs), abs=1e-4)


@pytest.mark.parametrize("query", ["nope", "20", "2050", " 205"])
def test_query_that_is_not_evaluated_is_one_line_and_exit_2(query):
    res = rpp("levels", "--query", query, DEMO / "qrels", RUNS["monot5"], RUNS["bm25"])
    one_error_line(res, rf"--query {re.escape(query)}: not one of the 25 evaluated queries .*")


def test_fig_4b_plots_each_populations_differences_by_level(monkeypatch, tmp_path):
    """One query (the paper's Fig. 4b): one line per population, x the recall levels 1..m_P,
    y f_i(B) − f_i(A) exactly as the text lines print them."""
    figures = drawn(monkeypatch)
    args = ("--query", "201", DEMO / "qrels", RUNS["monot5"], RUNS["bm25"])
    res = rpp("levels", "--plot", tmp_path / "f.png", *args)
    assert res.code == 0, res.err
    want: dict[str, tuple[list, list]] = {}
    for _, _, _, pop, i, fa, fb, _ in per_level(res.out):
        want.setdefault(pop, ([], []))[0].append(i)
        want[pop][1].append(fb - fa)
    (ax,) = figures[0].axes
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith("population ")]
    got = {ln.get_label()[len("population "):]: (ln.get_xdata().tolist(),
                                                 ln.get_ydata().tolist()) for ln in lines}
    assert got == want and list(got) == [">=1", ">=2", ">=3"]
    assert ax.get_title().startswith("monot5 vs bm25 on query 201")


def test_several_queries_plot_the_pooled_ecdf_named_as_such(monkeypatch, tmp_path):
    """Over every query the plot is the ECDF of the pooled differences, and its title says
    so and where Fig. 4b is."""
    figures = drawn(monkeypatch)
    args = (DEMO / "qrels", RUNS["monot5"], RUNS["bm25"])
    res = rpp("levels", "--plot", tmp_path / "f.png", *args)
    assert res.code == 0, res.err
    diffs = sorted(fb - fa for *_, fa, fb, _ in per_level(res.out))
    (ax,) = figures[0].axes
    x, y = ax.get_lines()[0].get_xdata(), ax.get_lines()[0].get_ydata()
    assert x[1:-1].tolist() == diffs  # the ends reach the axis edges
    assert y[1:-1].tolist() == pytest.approx([k / len(diffs) for k in range(1, len(diffs) + 1)])
    assert "pooled over 25 queries" in ax.get_title() and "--query" in ax.get_title()


def test_head_closes_the_pipe_quietly():
    cut = shell(f"{RPP} levels fixtures/demo/qrels fixtures/demo/runs/monot5 "
                "fixtures/demo/runs/bm25 --format jsonl | head -1")
    assert cut.returncode == 0 and json.loads(cut.stdout)["qid"] == "201"
    assert all(line.startswith("rpp: note: ") for line in cut.stderr.splitlines())



def test_large_integer_grades_label_as_integers(tmp_path):
    """Grades 1000000 and 1234567 label as ``>=1000000`` and ``>=1234567`` (``%g`` printed
    the first as ``>=1e+06``, repr the second as ``>=1234567.0``), 2147483647 as itself."""
    q, (a, b) = write_qrels(tmp_path / "qrels", [("q", "x", 1000000), ("q", "y", 1234567),
                                                 ("q", "z", 2147483647)]), [
        write_run(tmp_path / n, {"q": docs}, n) for n, docs in (("A", ["z", "y"]),
                                                                ("B", ["x", "y"]))]
    res = rpp("levels", q, a, b)
    assert res.code == 0, res.err
    labels = [line.split("\t")[4] for line in res.out.splitlines()
              if line.startswith("levels_tied")]
    assert labels == [">=1000000", ">=1234567", ">=2147483647", labels[-1]]


def test_a_query_given_twice_is_refused():
    """--query 201 --query 202 printed 202's levels alone (click keeps the last)."""
    from .conftest import DEMO, rpp

    runs = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr"]
    res = rpp("levels", DEMO / "qrels", *runs, "--query", "201", "--query", "202")
    assert (res.code, res.out) == (2, "")
    assert res.err == ("rpp: levels: Invalid value for '--query': given 2 times ('201', '202'): "
                       "give it once (see 'rpp levels --help')\n")

"""`rpp ndeval`: byte for byte the output of the real ndeval v4.5 (stored in tests/golden/ndeval,
see its README), except the documented NaN choice; its options and every bad input."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from rpp_cli.tasks import ndeval as ndeval_task
from rpp_cli.tasks.ndeval import NdevalOptions

from .conftest import DEMO, ROOT, rpp

GOLDEN = ROOT / "tests" / "golden" / "ndeval"
OPTIONS = {"default": [], "traditional": ["-traditional"], "c": ["-c"], "M5": ["-M", "5"],
           "M3": ["-M", "3"], "alpha0.3-beta0.8": ["-alpha", "0.3", "-beta", "0.8"],
           "alpha0-beta1": ["-alpha", "0", "-beta", "1"]}
DEMO_CASES = [(run, opt) for run in sorted(p.name for p in (DEMO / "runs").iterdir())
              for opt in ("default", "traditional")]
DEMO_CASES += [(run, opt) for run in ("bm25", "monot5")
               for opt in ("c", "M5", "alpha0.3-beta0.8")]
EDGE_CASES = {"default": NdevalOptions(), "traditional": NdevalOptions(traditional=True),
              "c": NdevalOptions(all_topics=True), "M3": NdevalOptions(max_docs=3),
              "alpha0.3-beta0.8": NdevalOptions(0.3, 0.8), "alpha0-beta1": NdevalOptions(0, 1)}


@pytest.mark.parametrize("run,opt", DEMO_CASES)
def test_demo_runs_byte_for_byte(run, opt):
    res = rpp("ndeval", *OPTIONS[opt], DEMO / "qrels.subtopics", DEMO / "runs" / run)
    assert res.code == 0
    assert res.out == (GOLDEN / f"demo.{run}.{opt}.csv").read_text()


@pytest.mark.parametrize("opt", EDGE_CASES)
def test_edge_collection_byte_for_byte_but_nan(opt):
    """ndeval read edge.clean.qrels (spam -> 0, subtopic-0 line dropped); rpp reads the raw
    edge.qrels. A -nan topic cell is 0 in rpp; a -nan amean cell is the mean of rpp's rows
    (test_nan_amean_uses_the_unrounded_zeroes)."""
    res = rpp("ndeval", *OPTIONS[opt], GOLDEN / "edge.qrels", GOLDEN / "edge.run")
    assert res.code == 0
    expected = (GOLDEN / f"edge.{opt}.csv").read_text().splitlines()
    got = res.out.splitlines()
    assert len(got) == len(expected) and got[0] == expected[0]
    for mine, ref in zip(got[1:-1], expected[1:-1]):
        assert mine == ref.replace("-nan", "0.000000")
    table = ndeval_task.run(str(GOLDEN / "edge.qrels"), str(GOLDEN / "edge.run"),
                            EDGE_CASES[opt]).results
    for name, mine, ref in zip(got[0].split(","), got[-1].split(","), expected[-1].split(",")):
        assert mine == (ref if ref != "-nan" else "%.6f" % table.value(name, "all", "edgeRun"))
    nan_cells = sum(line.count("-nan") for line in expected[1:-1])
    assert f"nNRBP is 0/0 for {nan_cells} topic" in res.err


@pytest.mark.parametrize("opt", ["default", "c", "alpha0-beta1"])
def test_nan_amean_uses_the_unrounded_zeroes(opt):
    res = ndeval_task.run(str(GOLDEN / "edge.qrels"), str(GOLDEN / "edge.run"),
                          EDGE_CASES[opt]).results
    per_topic = [res.value("nNRBP", t, "edgeRun") for t in ("1", "2", "3", "4", "7")]
    assert per_topic[1] == 0.0 and per_topic[4] == 0.0  # no relevant subtopic; not judged
    n_topics = 5 if opt == "c" else 4  # qrels topics 1-5; run topics 1-4 and 7
    assert res.value("nNRBP", "all", "edgeRun") == sum(per_topic) / n_topics


def test_notes_say_where_rpp_reads_differently():
    res = rpp("ndeval", GOLDEN / "edge.qrels", GOLDEN / "edge.run")
    assert res.err.splitlines() == [
        f"rpp: note: {GOLDEN / 'edge.qrels'}: 2 negative grades read as non-relevant "
        "(ndeval rejects them)",
        f"rpp: note: {GOLDEN / 'edge.qrels'}: subtopic 0 is no subtopic (ndeval counts it as "
        "one): 1 relevant judgment not used",
        "rpp: note: nNRBP is 0/0 for 1 topic (no relevant subtopic, or ideal NRBP 0): ndeval "
        "prints -nan, rpp prints 0",
        "rpp: note: 1 topic of the run not in the qrels: printed as zeros and left out of "
        "amean, as ndeval does"]


def test_options_in_ndeval_order_and_clusters():
    ref = (GOLDEN / "demo.bm25.c.csv").read_text()
    assert rpp("ndeval", "-ca", DEMO / "qrels.subtopics", DEMO / "runs" / "bm25").out == ref
    res = rpp("ndeval", "-M", "5", "-alpha", "0.5", DEMO / "qrels.subtopics",
              DEMO / "runs" / "bm25")
    assert res.out == (GOLDEN / "demo.bm25.M5.csv").read_text()


def test_untagged_run_is_refused_as_ndeval_refuses_it(tmp_path):
    """ndeval needs 6 fields ("syntax error in run file", exit 1)."""
    (tmp_path / "q").write_text("1 1 a 1\n")
    (tmp_path / "myrun").write_text("1 Q0 a 1 2.0 t\n1 Q0 b 2 1.0\n")
    one_error_line(rpp("ndeval", tmp_path / "q", tmp_path / "myrun"),
                   r"rpp: .*/myrun:2: expected 6 fields, the last the run tag \(ndeval's syntax\)")


def test_runid_is_the_tag_as_in_ndeval(tmp_path):
    """The drop-in keeps ndeval's runid, the run's tag, whatever the file is called."""
    (tmp_path / "q").write_text("1 1 a 1\n")
    (tmp_path / "myrun.gz").write_text("1 Q0 a 1 2.0 T5-P\n")
    res = rpp("ndeval", tmp_path / "q", tmp_path / "myrun.gz")
    assert [line.split(",")[0] for line in res.out.splitlines()] == ["runid", "T5-P", "T5-P"]


# ---------------------------------------------------------------- bad input
def one_error_line(res, pattern: str) -> None:
    """ndeval's exit status for every error is 1 (its error()), and so is rpp ndeval's."""
    assert res.code == 1, (res.code, res.out, res.err)
    assert res.out == ""
    errors = [line for line in res.err.splitlines() if not line.startswith("rpp: note:")]
    assert len(errors) == 1 and "Traceback" not in res.err, res.err
    assert re.fullmatch(pattern, errors[0]), errors[0]


@pytest.fixture
def files(tmp_path):
    def make(qrels: str, run: str):
        (tmp_path / "q").write_text(qrels)
        (tmp_path / "r").write_text(run)
        return tmp_path / "q", tmp_path / "r"
    return make


def test_qrels_topic_must_be_a_number(files):
    q, r = files("1 1 a 1\nwt-2 1 b 1\n", "1 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", q, r),
                   r"rpp: .*/q:2: topic 'wt-2' is not a number \(ndeval's topics are numbers\)")


def test_qrels_topics_with_the_same_number(files):
    q, r = files("7 1 a 1\n007 1 b 1\n", "7 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", q, r), r"rpp: .*/q:2: topics '7' and '007' are the same number")


def test_run_topic_must_be_a_number(files):
    q, r = files("1 1 a 1\n", "1 Q0 a 1 1 t\nabc Q0 b 1 1 t\n")
    one_error_line(rpp("ndeval", q, r), r"rpp: .*/r:2: topic 'abc' is not a number or "
                                        r"prefix-number such as wt12-151 \(ndeval's topics\)")


def test_rank_must_be_a_natural_number(files):
    q, r = files("1 1 a 1\n", "1 Q0 a 1 1 t\n1 Q0 b 1.5 1 t\n")
    one_error_line(rpp("ndeval", q, r), r"rpp: .*/r:2: rank '1.5' is not a natural number up "
                                        r"to 1000009 \(ndeval's syntax\)")
    # ndeval reads the rank before -traditional reorders by score
    one_error_line(rpp("ndeval", "-traditional", q, r), r"rpp: .*/r:2: rank '1.5' .*")


def test_repeated_rank(files):
    q, r = files("1 1 a 1\n", "1 Q0 a 3 1 t\n1 Q0 b 2 1 t\n1 Q0 c 3 1 t\n")
    one_error_line(rpp("ndeval", q, r),
                   r"rpp: .*/r:3: rank 3 repeated in topic 1 \(first at line 1\)")
    assert rpp("ndeval", "-traditional", q, r).code == 0  # ranks renumbered


def test_repeated_docno_unless_cut_by_M(files):
    q, r = files("1 1 a 1\n", "1 Q0 a 1 1 t\n1 Q0 b 2 1 t\nwt-1 Q0 a 3 1 t\n")
    one_error_line(rpp("ndeval", q, r),
                   r"rpp: .*/r:3: docno a repeated in topic 1 \(first at line 1\)")
    assert rpp("ndeval", "-M", "2", q, r).code == 0


def test_run_sharing_no_topic(files):
    q, r = files("1 1 a 1\n", "2 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", "-c", q, r), r"rpp: .*/r: shares no topic with the qrels .*")


def test_bad_qrels_lines(files):
    q, r = files("1 1 a 1\n1 1 b\n", "1 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", q, r), r"rpp: .*/q:2: expected 4 fields \(subtopic qrels: .*")
    q, r = files("1 1 a x\n", "1 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", q, r), r"rpp: .*/q:1: grade 'x' is not a finite number")


@pytest.mark.parametrize("opts", [["-alpha", "2"], ["-beta", "-0.1"], ["-M", "0"],
                                  ["-x"]])
def test_bad_options_are_usage_errors(files, opts):
    q, r = files("1 1 a 1\n", "1 Q0 a 1 1 t\n")
    res = rpp("ndeval", *opts, q, r)
    assert res.code == 1 and res.out == "" and "Traceback" not in res.err  # ndeval: exit 1


# ------------------------------------------------ what ndeval itself accepts and rejects
MALFORMED = GOLDEN / "malformed"


def _malformed_cases() -> list[tuple[str, str, int]]:
    lines = (MALFORMED / "CASES").read_text().splitlines()
    return [(n, o, int(rc)) for n, o, rc in (line.split("\t") for line in lines
                                             if line and not line.startswith("#"))]


@pytest.mark.parametrize("name,opt,status", _malformed_cases(),
                         ids=[f"{n}{o}" for n, o, _ in _malformed_cases()])
def test_malformed_runs_exit_as_ndeval_exits(name: str, opt: str, status: int) -> None:
    """Each run of tests/golden/malformed as the real ndeval took it: refused with exit 1
    (one error line, nothing on stdout), or accepted with the same output byte for byte."""
    res = rpp("ndeval", *opt.split(), MALFORMED / "qrels", MALFORMED / f"{name}.run")
    assert res.code == status, (res.code, res.err)
    if status:
        errors = [line for line in res.err.splitlines() if not line.startswith("rpp: note:")]
        assert res.out == "" and len(errors) == 1 and errors[0].startswith("rpp: "), res.err
    else:
        assert res.out == (MALFORMED / f"{name}{opt}.csv").read_text()


def test_malformed_cases_cover_the_issue() -> None:
    """A rank of 1.5 (issue 17.7), with and without -traditional, is among the cases."""
    cases = {(n, o): rc for n, o, rc in _malformed_cases()}
    assert cases[("rank_float", "")] == cases[("rank_float", "-traditional")] == 1
    assert "1.5" in (MALFORMED / "rank_float.run").read_text()


@pytest.mark.parametrize("opts,golden", [((), "twins.default.csv"),
                                         (("-c", "-traditional"), "twins.c-traditional.csv")])
def test_subtopics_01_and_1_are_one_subtopic_as_in_ndeval(opts, golden) -> None:
    """twins.qrels writes subtopics 1/01, 2/002, 3/03 and 10/010/0010: ndeval reads them as
    numbers (one subtopic each) and so does rpp ndeval, byte for byte."""
    res = rpp("ndeval", *opts, GOLDEN / "twins.qrels", GOLDEN / "twins.run")
    assert res.code == 0, res.err
    assert res.out == (GOLDEN / golden).read_text()


def test_subtopic_twins_hand_worked(files) -> None:
    """Topic 1: subtopics '1' (doc a) and '01' (doc b) are one subtopic {a, b}. The run ranks
    a, b: strec@5 = 1 (its one subtopic found); MAP-IA = (1/1 + 2/2) / 2 = 1. Read as two
    subtopics, MAP-IA would be (1 + 1/2) / 2 = 0.75."""
    q, r = files("1 1 a 1\n1 01 b 1\n", "1 Q0 a 1 2 t\n1 Q0 b 2 1 t\n")
    res = rpp("ndeval", q, r)
    header, row = res.out.splitlines()[:2]
    values = dict(zip(header.split(","), row.split(",")))
    assert values["MAP-IA"] == "1.000000" and values["strec@5"] == "1.000000"


@pytest.mark.parametrize("qrels,pattern", [
    ("1 x a 1\n", r"rpp: .*/q:1: subtopic 'x' is not a natural number up to 1000009 .*"),
    ("1 1 a 1.5\n", r"rpp: .*/q:1: grade '1.5' is not a natural number up to 1000009 .*"),
    *[(f"1 1 a 1\n1 2 b -2\n1 1 c {grade}\n",
       rf"rpp: .*/q:3: grade '{re.escape(grade)}' is not a natural number up to 1000009 "
       r"\(ndeval's syntax\)")
      for grade in ("+1", "1.0", "1e0", "0x1", "-0", "1000010", "2147483647", "-2.5",
                    "-1e0")],
    ("1 1 a 1\n1 1000010 b 1\n", r"rpp: .*/q:2: subtopic '1000010' is not a natural .*"),
    ("1000010 1 a 1\n", r"rpp: .*/q:1: topic '1000010' is not a number .*"),
])
def test_qrels_ndeval_refuses(files, qrels: str, pattern: str) -> None:
    """Subtopics and grades ndeval reads as natural numbers ("syntax error in qrel file",
    exit 1); rpp ndeval refuses them alike (negative grades stay a noted difference)."""
    q, r = files(qrels, "1 Q0 a 1 1 t\n")
    one_error_line(rpp("ndeval", q, r), pattern)


def test_rpp_eval_notes_subtopic_ids_that_are_one_number() -> None:
    """rpp's own measures read subtopic ids as tokens (contract §1): '01' and '1' stay two
    subtopics there, and a note says ndeval would merge them: 1/01, 2/002, 10/010, 10/0010
    (3/03: subtopic 3 has no relevant item) make 4 pairs."""
    res = rpp("eval", "-m", "st-rpp", "--subtopics", GOLDEN / "twins.qrels",
              GOLDEN / "twins.run", GOLDEN / "twins.run", "--name", "a", "--name", "b")
    assert res.code == 0, res.err
    assert ("4 pairs of subtopic ids are one number (query 151: '1' and '01'): distinct "
            "subtopics here, one to ndeval (rpp ndeval merges them)") in res.err


@pytest.mark.slow
@pytest.mark.parametrize("tag", [b"t\xe9", "a\u3000b".encode(), "a\u200bb".encode(),
                                 "a\u00a0b".encode(), "run,1".encode()])
def test_runid_is_the_tag_as_it_is(tmp_path, tag: bytes) -> None:
    """ndeval prints the run's tag, whatever its bytes (a Latin-1 byte, a wide or zero-width
    space): so does rpp ndeval, as rpp trec-eval does (CSV-quoted where a comma needs it);
    rpp's run names (contract §1) are for its own outputs."""
    (tmp_path / "q").write_bytes(b"1 1 a 1\n1 2 b 1\n")
    (tmp_path / "r").write_bytes(b"1 Q0 b 1 2 " + tag + b"\n1 Q0 a 2 1 " + tag + b"\n")
    res = subprocess.run([sys.executable, "-m", "rpp_cli", "ndeval", tmp_path / "q",
                          tmp_path / "r"], capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr
    runid = b'"run,1"' if b"," in tag else tag
    rows = res.stdout.splitlines()[1:]
    assert [row.split(b",1,")[0] if b"amean" not in row else row.split(b",amean,")[0]
            for row in rows] == [runid, runid]

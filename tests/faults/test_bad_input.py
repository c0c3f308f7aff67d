"""Ambiguous or absurd input is refused with one line and exit 2 (trec-eval: its own codes),
never a traceback or numbers that look valid."""
from __future__ import annotations

import pytest

from ..conftest import PAPER, rpp, write_qrels, write_run
from ..io.test_readers import one_error_line


def test_query_id_all_is_reserved(tmp_path):
    """`all` would make a per-query line indistinguishable from the summary."""
    q = write_qrels(tmp_path / "q", [("all", "d1", 1), ("7", "d1", 1)])
    r = write_run(tmp_path / "r", {"all": ["d1"], "7": ["d1"]}, "r")
    s = write_run(tmp_path / "s", {"7": ["d1"]}, "s")
    one_error_line(rpp("eval", q, r, s), r".*/q: query id 'all' is reserved for the summary lines")


@pytest.mark.parametrize("command,code", [("trec-eval", 2), ("ndeval", 1)])
def test_stdin_twice(command, code):
    """rpp ndeval exits 1 on every error, as ndeval's error() does."""
    res = rpp(command, "-", "-", stdin="1 0 d1 1\n")
    assert res.code == code and res.err == "rpp: -: standard input can be read only once\n"


def test_ad_hoc_qrels_are_not_subtopic_qrels(tmp_path):
    """Every subtopic field 0: ndeval's measures would all print 0 with exit 0."""
    adhoc = PAPER / "qrels"
    one_error_line(rpp("eval", "--subtopics", adhoc, adhoc, PAPER / "run.X", PAPER / "run.Y"),
                   r".*/qrels: no subtopics: every line's subtopic is 0 or Q0 .*")
    one_error_line(rpp("ndeval", adhoc, PAPER / "run.X"),
                   r".*/qrels: no subtopics: every line's subtopic is 0 or Q0 .*", code=1)


@pytest.mark.parametrize("args", [
    ["eval", "--corpus-size", "100000000000000000000"],
    ["eval", "--corpus-size", "1e20"],
    ["eval", "-j", "0"],
    ["compare", "--permutations", "99999999999999999999"],
])
def test_absurd_numbers_are_usage_errors(args):
    res = rpp(*args, PAPER / "qrels", PAPER / "run.X", PAPER / "run.Y")
    assert res.code == 2 and "Traceback" not in res.err and "Invalid value" in res.err


@pytest.mark.parametrize("args,line,code", [
    (["eval"], "rpp: eval: Missing argument '[QRELS]' (usage: rpp eval [OPTIONS] [QRELS] "
               "RUN...)", 2),
    (["eval", "-l", "abc", "q", "r"], "rpp: eval: Invalid value for '-l' / '--level': 'abc' is "
                                      "not a number in ASCII digits (see 'rpp eval --help')", 2),
    (["eval", "q", "r", "-m"], "rpp: eval: Option '-m' requires an argument (see 'rpp eval "
                               "--help')", 2),
    (["check", "q", "r"], "rpp: check: Missing option '--baseline' (usage: rpp check [OPTIONS] "
                          "QRELS CANDIDATE...)", 2),
    (["meta", "--frobnicate", "q", "r"], "rpp: meta: No such option '--frobnicate'. Did you mean "
                                         "'--format'? (see 'rpp "
                                         "meta --help')", 2),
    (["--frobnicate"], "rpp: No such option '--frobnicate' (see 'rpp --help')", 2),
    (["trec-eval", "-Z", "q", "r"], "rpp: trec-eval: No such option '-Z' (see 'rpp trec-eval "
                                    "--help')", 1),
    (["ndeval", "q"], "rpp: ndeval: Missing argument 'RUN' (usage: rpp ndeval [OPTIONS] QRELS "
                      "RUN)", 1),
])
def test_usage_errors_are_one_line(args, line, code):
    """A usage error is one line like every other error (click's own is four: Usage, Try,
    a blank line, Error), naming the command and where to look; the drop-ins exit 1."""
    res = rpp(*args)
    assert (res.code, res.out, res.err) == (code, "", line + "\n")


def test_bare_rpp_still_prints_the_help():
    res = rpp()
    assert res.code == 2 and "Commands:" in res.out + res.err


@pytest.mark.parametrize("option", ["-l", "-M", "-N"])
def test_trec_eval_numbers_are_bounded(option):
    res = rpp("trec-eval", option, "99999999999999999999", PAPER / "qrels", PAPER / "run.X")
    assert res.code in (1, 2) and "Invalid value" in res.err and "Traceback" not in res.err


def test_ndeval_traditional_still_reads_the_rank(tmp_path):
    """ndeval rejects a rank that is not a number even with -traditional (score order)."""
    run = tmp_path / "r"
    run.write_text("1 Q0 d1 first 2.0 t\n")
    one_error_line(rpp("ndeval", "-traditional", PAPER.parent / "demo" / "qrels.subtopics", run),
                   r".*/r:1: rank 'first' is not a natural number up to 1000009 \(ndeval's "
                   r"syntax\)", code=1)


def test_a_run_that_retrieved_nothing_judged_is_flagged(tmp_path):
    """Document qrels with a passage run print map 0 for it: say why."""
    q = write_qrels(tmp_path / "q", [("1", "d1", 1), ("2", "d2", 1)])
    a = write_run(tmp_path / "a", {"1": ["d1"], "2": ["d2"]}, "a")
    c = write_run(tmp_path / "c", {"1": ["p1#0", "p1#1"], "2": ["p2#0"]}, "c")
    res = rpp("eval", "-m", "map", q, a, c)
    assert res.code == 0
    assert ("rpp: note: nothing retrieved is judged, so the run scores 0: c; check that the "
            "runs and the qrels use the same document ids (documents or passages?)\n"
            in res.err)


def test_a_run_mostly_unjudged_at_10_gets_a_note(tmp_path):
    q = write_qrels(tmp_path / "q", [("1", "d1", 1), ("1", "d2", 0)])
    a = write_run(tmp_path / "a", {"1": ["d1", "d2"]}, "a")  # 2 of 2 judged
    b = write_run(tmp_path / "b", {"1": ["d1", "x1", "x2", "x3"]}, "b")  # 1 of 4
    res = rpp("eval", "-m", "map", q, a, b)
    assert ("rpp: note: under half of the top 10 judged (mean over queries): b 25.0%; unjudged "
            "documents count as non-relevant, so these scores are likely too low: read "
            "-m Judged@10 (per query with -q), -m bpref (which ignores unjudged documents), or "
            "cut the rankings to the judged depth with -M\n" in res.err)
    assert res.err.count("under half") == 1  # a, 100% judged, is not named


def test_repeated_judgments_are_noted_with_the_likely_cause(tmp_path):
    """Subtopic qrels given as QRELS (--subtopics forgotten) judge an item once per subtopic:
    each pair keeps its largest grade (contract §1), which trec_eval refuses, so a note says
    how many lines repeat a pair; qrels without repeats get none."""
    subtopic = tmp_path / "qrels.subtopics"
    subtopic.write_text("106_1 1 clueweb12-0000wb-00-00001 1\n106_1 2 clueweb12-0000wb-00-00001 0\n"
                        "106_1 3 clueweb12-0000wb-00-00001 2\n106_1 1 MARCO_D12 1\n")
    run = write_run(tmp_path / "bm25", {"106_1": ["clueweb12-0000wb-00-00001", "MARCO_D12"]})
    res = rpp("eval", "-m", "map", subtopic, run)
    assert res.code == 0
    assert (f"rpp: note: {subtopic}: 2 lines judge a (query, docno) pair judged on an earlier "
            "line: each pair keeps its largest grade (trec_eval refuses such qrels); subtopic "
            "qrels (qid subtopic docno grade) go with --subtopics\n") in res.err
    plain = write_qrels(tmp_path / "qrels", [("106_1", "clueweb12-0000wb-00-00001", 2),
                                             ("106_1", "MARCO_D12", 1)])
    assert "earlier line" not in rpp("eval", "-m", "map", plain, run).err


def test_a_level_is_named_as_given(tmp_path):
    """-l 1.0000001 above the only grade 1: the message said 'at level 1' (:g's 6 digits),
    a level the file does have."""
    q = write_qrels(tmp_path / "q", [("106_1", "clueweb12-0000wb-00-00001", 1),
                                     ("106_1", "MARCO_D1", 0)])
    a = write_run(tmp_path / "a", {"106_1": ["clueweb12-0000wb-00-00001"]}, "a")
    b = write_run(tmp_path / "b", {"106_1": ["MARCO_D1"]}, "b")
    one_error_line(rpp("eval", "-m", "rpp", "-l", "1.0000001", q, a, b),
                   r".*/q: no query has a relevant item at level 1\.0000001")
    one_error_line(rpp("eval", "-m", "rpp", "-l", "2", q, a, b),
                   r".*/q: no query has a relevant item at level 2")


@pytest.mark.parametrize("args,code", [
    (["trec-eval", "-M", "1_0", "-m", "num_ret"], 1), (["trec-eval", "-M", "\u0665"], 1),
    (["trec-eval", "-N", "\u0665", "-m", "utility.1,-1,0,1"], 1),
    (["trec-eval", "-l", "\u0661"], 1),
    (["eval", "--precision", "\u0664"], 2), (["eval", "-l", "1_0"], 2),
    (["eval", "--corpus-size", "1_000"], 2)])
def test_numbers_in_options_are_ascii(args, code):
    """Python's int() and float() take 1_0 and Arabic-Indic digits; trec_eval's atol reads -M 1_0
    as 1 and -M ٥ as 0, and rpp trec-eval printed 80 where trec_eval prints 8: every numeric
    option now takes ASCII digits only, one line and the usage status otherwise."""
    files = [PAPER / "qrels", PAPER / "run.X"] if args[0] == "trec-eval" else \
        [PAPER / "qrels", PAPER / "run.X", PAPER / "run.Y"]
    res = rpp(*args, *files)
    assert (res.code, res.out) == (code, "") and len(res.err.splitlines()) == 1
    assert "in ASCII digits" in res.err


def test_qrels_without_a_relevant_item_note_names_a_level_only_when_given(tmp_path):
    """The note said 'at that level' with no -l given."""
    q = write_qrels(tmp_path / "q", [("106_1", "clueweb12-0000wb-00-00001", 0)])
    r = write_run(tmp_path / "r", {"106_1": ["clueweb12-0000wb-00-00001"]}, "r")
    res = rpp("eval", "-m", "map", q, r)
    assert res.code == 0 and (f"rpp: note: {q}: no query has a relevant item: the measures of "
                              "relevance (map, P, recall, ...) are 0") in res.err
    leveled = rpp("eval", "-m", "map", "-l", "2", write_qrels(tmp_path / "q2", [
        ("106_1", "clueweb12-0000wb-00-00001", 1)]), r)
    assert "no query has a relevant item at level 2: the measures of relevance at that " \
           "level" in leveled.err

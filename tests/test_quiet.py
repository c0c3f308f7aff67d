"""``-Q, --quiet`` (on rpp and on each command): no notes and no progress bars on stderr;
errors and rpp check's verdicts stay; stdout is unchanged. And the notes that stay say what
to do."""
from __future__ import annotations

import io

import pytest

from rpp_cli import progress as progress_module
from rpp_cli.progress import progress, show_bars

from .conftest import DEMO, ROOT, rpp, write_qrels, write_run

RUNS = DEMO / "runs"
EDGE = ROOT / "tests" / "golden" / "ndeval"
COMMANDS = {  # each prints notes on the demo (bm25 is mostly unjudged and misses 2 queries)
    "eval": ("eval", "-m", "map", DEMO / "qrels", RUNS / "bm25", RUNS / "dpr"),
    "compare": ("compare", "-m", "map", "--test", "ttest", DEMO / "qrels", RUNS / "bm25",
                RUNS / "dpr"),
    "check": ("check", "-m", "map", "--test", "ttest", DEMO / "qrels", "--baseline",
              RUNS / "monot5", RUNS / "bm25"),
    "meta": ("meta", "--analysis", "agreement", "-m", "map", "-m", "rpp", DEMO / "qrels",
             RUNS / "bm25", RUNS / "dpr", RUNS / "monot5"),
    "levels": ("levels", "-n", DEMO / "qrels", RUNS / "bm25", RUNS / "dpr"),
    "ndeval": ("ndeval", EDGE / "edge.qrels", EDGE / "edge.run"),
}


def notes(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("rpp: note: ")]


@pytest.mark.parametrize("command", COMMANDS)
def test_quiet_silences_notes_only(command):
    """The same stdout and exit status; stderr loses the notes and keeps everything else
    (check's verdict lines), with -Q after the command or before it."""
    args = COMMANDS[command]
    loud = rpp(*args)
    assert notes(loud.err), "the case must print notes for the test to mean anything"
    for quiet in (rpp(args[0], "-Q", *args[1:]), rpp("--quiet", *args)):
        assert (quiet.code, quiet.out) == (loud.code, loud.out)
        assert quiet.err.splitlines() == [line for line in loud.err.splitlines()
                                          if not line.startswith("rpp: note: ")]
    if command == "check":  # bm25 fails the gate: the verdict stays
        assert quiet.code == 1 and quiet.err.startswith("FAIL\tbm25\tmap\t")


def test_errors_stay(tmp_path):
    for args in (("-Q", "eval"), ("eval", "-Q")):
        res = rpp(*args, DEMO / "qrels", tmp_path / "nope")
        assert (res.code, res.out) == (2, "")
        assert res.err == f"rpp: {tmp_path / 'nope'}: no such file\n"


def test_quiet_lasts_one_command():
    """In one process (a notebook, the test suite), a quiet command leaves the next one
    loud: its notes and its progress bars."""
    assert notes(rpp("-Q", *COMMANDS["eval"]).err) == []
    assert progress_module._shown is False
    assert notes(rpp(*COMMANDS["eval"]).err) != []
    assert progress_module._shown is True
    assert notes(rpp("eval", "-Q", *COMMANDS["eval"][1:]).err) == []
    assert notes(rpp(*COMMANDS["eval"]).err) != []


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_quiet_draws_no_progress_bar():
    term = FakeTerminal()
    show_bars(False)
    try:
        assert list(progress(range(5), "reading runs", delay=0, stream=term)) == [0, 1, 2, 3, 4]
    finally:
        show_bars(True)
    assert term.getvalue() == ""
    assert list(progress(range(5), "reading runs", delay=0, stream=term)) == [0, 1, 2, 3, 4]
    assert "100%" in term.getvalue()  # the same call draws one when bars are shown


# ------------------------------------------------------------ notes say what to do
def test_notes_that_read_like_problems_say_what_to_do():
    """bm25 on the demo: 40% of its top 10 judged, queries 210 and 220 missing."""
    assert notes(rpp(*COMMANDS["eval"]).err) == [
        "rpp: note: under half of the top 10 judged (mean over queries): bm25 40.4%; unjudged "
        "documents count as non-relevant, so these scores are likely too low: read "
        "-m Judged@10 (per query with -q), -m bpref (which ignores unjudged documents), or "
        "cut the rankings to the judged depth with -M",
        "rpp: note: judged queries not in the run, scored as empty rankings as trec_eval -c "
        "does: 2 of bm25 (210, 220); if they should not count, leave them out of the qrels"]


def test_one_run_and_untestable_measures_say_what_to_do(tmp_path):
    q = write_qrels(tmp_path / "q", [("1", "a", 1), ("2", "b", 1)])
    a = write_run(tmp_path / "a", {"1": ["a"], "2": ["x", "b"]}, "a")
    b = write_run(tmp_path / "b", {"1": ["x", "a"], "2": ["b"]}, "b")
    assert notes(rpp("eval", q, a).err) == [  # the default measures: preferences left out
        "rpp: note: preferences need two runs: only per-run measures computed (give two or "
        "more RUN files for them)"]
    assert notes(rpp("compare", "-m", "gm_map", "-m", "map", q, a, b).err) == [
        "rpp: note: gm_map: no per-query values (an aggregate only), so not tested; leave it "
        "out of -m"]

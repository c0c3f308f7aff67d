"""Shell use: pipes (stdin, a closed stdout), help texts, `rpp measures`, progress on stderr."""
from __future__ import annotations

import gzip
import io
import os
import pty
import re
import shlex
import subprocess
import sys

import click
import pytest

from rpp_cli import __version__
from rpp_cli.cli import cli
from rpp_cli.errors import EXIT_CLOSED_PIPE
from rpp_cli.measures import METRIC, REGISTRY, Measure
from rpp_cli.options import input_params
from rpp_cli.progress import progress

from .conftest import DEMO, PAPER, ROOT, rpp

RUNS = sorted((DEMO / "runs").iterdir())
RPP = f"{shlex.quote(sys.executable)} -m rpp_cli"
DEMO_ARGV = ["eval", "-q", "--precision", "16", str(DEMO / "qrels"), *map(str, RUNS)]
DEMO_ARGS = shlex.join(DEMO_ARGV)


def shell(command: str, **kwargs) -> subprocess.CompletedProcess:
    """``command`` in bash with pipefail, from the repository root."""
    return subprocess.run(["bash", "-c", "set -o pipefail; " + command], cwd=ROOT,
                          capture_output=True, text=True, **kwargs)


def only_notes(stderr: str) -> bool:
    return all(line.startswith("rpp: note: ") for line in stderr.splitlines())


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["trec", "jsonl", "csv", "matrix"])
def test_head_closes_the_pipe_quietly(fmt):
    """More output than a pipe holds (64 KiB), reader gone after one line: exit 0 (the
    command's own status), nothing on stderr but the notes."""
    full = rpp(*DEMO_ARGV, "--format", fmt)
    assert len(full.out) > 100_000
    cut = shell(f"{RPP} {DEMO_ARGS} --format {fmt} | head -1")
    assert (cut.returncode, cut.stdout) == (0, full.out.splitlines(keepends=True)[0])
    assert only_notes(cut.stderr) and cut.stderr == full.err


CLOSED_STDOUT = """
import os, sys
read_end, write_end = os.pipe()
os.close(read_end)
os.dup2(write_end, 1)
from rpp_cli.cli import main
sys.argv = ["rpp", *sys.argv[1:]]
main()
"""


@pytest.mark.slow
@pytest.mark.parametrize("args, code", [
    (["eval", "-m", "map", "fixtures/paper/qrels", "fixtures/paper/run.X"], 0),
    (["measures"], EXIT_CLOSED_PIPE),
    (["--help"], EXIT_CLOSED_PIPE),
    (["eval", "--help"], EXIT_CLOSED_PIPE),
])
def test_stdout_already_closed(args, code):
    """Results lost to a closed pipe leave the command's status alone (a gate still fails or
    passes); any other output cut short exits 141 as SIGPIPE would; never a traceback."""
    res = subprocess.run([sys.executable, "-c", CLOSED_STDOUT, *args], cwd=ROOT,
                         capture_output=True, text=True)
    assert (res.returncode, res.stderr) == (code, "")


def test_notes_come_before_results_on_one_stream():
    """stdout is flushed as it is written: with 2>&1 the notes precede every result line."""
    res = shell(f"{RPP} eval -m map fixtures/demo/qrels fixtures/demo/runs/* 2>&1")
    lines = res.stdout.splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("rpp: note: ")]
    assert notes == list(range(len(notes))) and 0 < len(notes) < len(lines)


def test_run_and_qrels_from_stdin():
    """A run read from stdin is named ``-`` (contract §1), or by its tag with --names-from."""
    expected = rpp("eval", "-m", "rpp", "-m", "map", DEMO / "qrels", RUNS[0], RUNS[1])
    run = RUNS[0].read_bytes()
    for data in (run, gzip.compress(run)):
        got = rpp("eval", "-m", "rpp", "-m", "map", DEMO / "qrels", "-", RUNS[1], stdin=data)
        assert got.code == 0
        assert got.out == expected.out.replace(f"\t{RUNS[0].name}\t", "\t-\t")
        assert got.err == expected.err.replace(f" {RUNS[0].name} ", " - ")  # in the notes
        got = rpp("eval", "--names-from", "tag", "-m", "rpp", "-m", "map", DEMO / "qrels", "-",
                  RUNS[1], stdin=data)
        assert (got.code, got.out, got.err) == (0, expected.out, expected.err)
    qrels = (DEMO / "qrels").read_text()
    got = rpp("eval", "-m", "rpp", "-m", "map", "-", RUNS[0], RUNS[1], stdin=qrels)
    assert (got.code, got.out) == (0, expected.out)
    piped = shell(f"cat {RUNS[0]} | {RPP} eval --names-from tag -m rpp -m map "
                  f"fixtures/demo/qrels - {RUNS[1]}")
    assert (piped.returncode, piped.stdout) == (0, expected.out)


def commands() -> list[tuple[list[str], click.Command]]:
    return [([], cli)] + [([name], cmd) for name, cmd in cli.commands.items()]


@pytest.mark.parametrize("path, command", commands(), ids=["rpp", *cli.commands])
def test_help_lists_every_option_with_its_default(path, command):
    res = rpp(*path, "--help")
    assert res.code == 0
    context = click.Context(cli, **cli.context_settings)  # as `rpp ... --help` builds it
    if command is not cli:
        context = click.Context(command, parent=context)
    text = " ".join(res.out.split())  # undo click's line wrapping
    inputs = " ".join(rpp("help", "inputs").out.split())  # the shared input options, in full
    shared = {p.name for p in input_params()}
    for param in command.params:
        if not isinstance(param, click.Option):
            continue
        elsewhere = param.hidden and param.name in shared
        if elsewhere:  # named in the help's "Input options" line, described by rpp help inputs
            assert any(re.search(rf"{re.escape(o)}[,) ]", text) for o in param.opts), param.opts
            param.hidden = False
            shown = param.get_help_record(context)
            param.hidden = True
        elif param.hidden:  # ndeval's -a, accepted and ignored
            continue
        else:
            shown = param.get_help_record(context)
        for opt in param.opts + param.secondary_opts:
            assert opt in (inputs if elsewhere else text), (path, opt)
        if param.is_flag or param.name in ("help", "version"):
            continue
        record = " ".join(shown[1].split())
        assert record in (inputs if elsewhere else text)  # the help and "[default: ...]"
        assert "default" in record.lower(), (path, param.name)  # shown, or said in words
    if isinstance(command, click.Group):
        for name in command.commands:
            assert name in res.out


def test_version_names_what_a_bug_report_needs():
    import platform
    from importlib.metadata import version

    import numpy

    assert rpp("--version").out == (
        f"rpp {__version__} (python {platform.python_version()}, numpy {numpy.__version__}, "
        f"pytrec_eval {version('pytrec-eval-terrier')})\n")


def test_measures_lists_every_registry_entry_with_kind_and_parameters():
    lines = rpp("measures").out.splitlines()
    assert len(lines) == len(REGISTRY)
    rows = {line.split("\t")[0]: line.split("\t")[1:] for line in lines}  # no padding
    assert list(rows) == list(REGISTRY)
    assert all(len(r) == 3 and r[2] for r in rows.values())
    assert rows["rpp"][:2] == ["preference", "preference"]
    assert rows["asl"][:2] == ["metric", "search_length"]
    assert rows["P"] == ["metric", "trec", "trec_eval: precision at cutoffs; parameters: "
                         "P.k1,k2,... (default 5,10,15,20,30,100,200,500,1000); "
                         "ir_measures: P@k, (rel=N) for a level"]
    assert rows["official"][0] == "set"
    assert "runid" not in rows and "relstring" not in rows  # text, not numbers


def test_measures_reads_the_registry(monkeypatch):
    fake = Measure("zz_test", METRIC, "nowhere", "a measure only this test knows",
                   parameters="none")
    monkeypatch.setitem(REGISTRY, fake.name, fake)
    assert rpp("measures").out.splitlines()[-1] == (
        "zz_test\tmetric\tnowhere\ta measure only this test knows; parameters: none")


@pytest.mark.slow
def test_every_listed_measure_is_accepted_by_eval():
    for name, m in REGISTRY.items():
        if m.family == "diversity" or m.options.get("populations") == "subtopic":
            args = ["--subtopics", DEMO / "qrels.subtopics", DEMO / "qrels",
                    DEMO / "runs/monot5", DEMO / "runs/bm25"]
        elif name.startswith("ERR@"):  # gdeval's grades are 0-4; the paper's qrels have a 5
            args = [DEMO / "qrels", DEMO / "runs/monot5", DEMO / "runs/bm25"]
        else:
            args = [PAPER / "qrels", PAPER / "run.X", PAPER / "run.Y"]
        res = rpp("eval", "-m", name, *args)
        assert res.code == 0 and res.out, name


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_draws_a_bar_on_a_terminal_after_the_delay():
    term = FakeTerminal()
    assert list(progress(range(5), "reading runs", delay=0, stream=term)) == [0, 1, 2, 3, 4]
    assert "reading runs" in term.getvalue() and "100%" in term.getvalue()


def test_progress_ends_at_100_when_a_zip_asks_no_further():
    """rpp meta zips its jobs with their values: zip stops at the last job without asking the
    values again, so a bar counting on the next request stopped at 85-93 %."""
    term = FakeTerminal()
    jobs = list(range(7))
    for _ in zip(jobs, progress(iter(range(7)), "rpp meta", length=7, delay=0, stream=term)):
        pass
    assert "100%" in term.getvalue()


@pytest.mark.parametrize("stream, delay", [(io.StringIO(), 0), (FakeTerminal(), 60)])
def test_progress_is_silent_off_a_terminal_or_for_quick_work(stream, delay):
    assert list(progress(["a", "b"], "x", delay=delay, stream=stream)) == ["a", "b"]
    assert stream.getvalue() == ""


def test_quick_eval_with_a_terminal_on_stderr_prints_notes_only():
    """Real pty on stderr: the demo takes well under the delay, so no bar is drawn."""
    leader, follower = pty.openpty()
    try:
        proc = subprocess.run([sys.executable, "-m", "rpp_cli", *DEMO_ARGV], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=follower)
        os.close(follower)
        seen = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the pty is closed and drained
                break
            if not chunk:
                break
            seen += chunk
    finally:
        os.close(leader)
    assert proc.returncode == 0
    assert only_notes(seen.decode().replace("\r\n", "\n"))

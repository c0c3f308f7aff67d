"""Faults of the files around a command: one stream named twice, an output that is an input, a
FIFO nobody reads, subtopic qrels of another collection, a plot's temporary file under a
signal. Each ends as the contract says: one line, its status, nothing lost or left behind."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from ..conftest import DEMO, ctrl_c_as_from_a_terminal

RPP = [sys.executable, "-m", "rpp_cli"]
QRELS = str(DEMO / "qrels")
SUBTOPICS = str(DEMO / "qrels.subtopics")
BM25, DPR = str(DEMO / "runs" / "bm25"), str(DEMO / "runs" / "dpr")


def _run(args: list[str], stdin=None, env: dict | None = None, timeout: float = 60,
         **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(RPP + args, stdin=stdin, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout,
                          env={**os.environ, **(env or {})}, **kwargs)


def _one_error(res: subprocess.CompletedProcess, status: int = 2) -> str:
    """The one stderr line of a refused command (no notes: -Q or none due), with its status
    and nothing on stdout."""
    lines = res.stderr.decode().splitlines()
    assert res.returncode == status, res.stderr.decode()
    assert len(lines) == 1 and lines[0].startswith("rpp: "), lines
    assert res.stdout == b""
    return lines[0]


def _piped(data: bytes) -> subprocess.Popen:
    """A process writing ``data`` to a pipe a line at a time, as ``awk '{print; fflush()}'``
    does: readers that share it each get part."""
    return subprocess.Popen([sys.executable, "-c",
                             "import sys\nfor line in sys.stdin.buffer:\n"
                             "    sys.stdout.buffer.write(line); sys.stdout.flush()"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)


@pytest.mark.parametrize("second", ["/dev/stdin", "/dev/fd/0"])
def test_one_pipe_named_twice_is_refused(second):
    """``/dev/stdin /dev/stdin`` (or ``/dev/fd/0``) is one pipe: refused as ``- -`` is, never
    split between two runs with exit 0."""
    feeder = _piped(Path(BM25).read_bytes())
    feeder.stdin.close()
    res = _run(["eval", "-Q", "-m", "map", "--name", "a", "--name", "b", QRELS, "/dev/stdin",
                second], stdin=feeder.stdout)
    feeder.wait(30)
    line = _one_error(res)
    assert line.startswith(f"rpp: {second}: ")
    assert ("named twice" if second == "/dev/stdin" else "the same stream as '/dev/stdin'") \
        in line and "can be read only once" in line


@pytest.mark.slow
def test_qrels_and_run_on_one_pipe_are_refused_by_the_drop_ins():
    """trec-eval and ndeval read QRELS and RUN: one pipe named as both is refused (their
    status for a file they cannot use: 2 and 1)."""
    for command, status in (("trec-eval", 2), ("ndeval", 1)):
        with subprocess.Popen(["cat", BM25], stdout=subprocess.PIPE) as cat:
            res = _run([command, "/dev/stdin", "/dev/fd/0"], stdin=cat.stdout)
            cat.stdout.close()
        assert "the same stream as '/dev/stdin'" in _one_error(res, status)


@pytest.mark.slow
def test_a_fifo_named_twice_is_refused(tmp_path):
    fifo = tmp_path / "run.fifo"
    os.mkfifo(fifo)
    res = _run(["eval", "-Q", "-m", "map", QRELS, str(fifo), str(fifo)], timeout=30)
    assert "named twice: a stream can be read only once" in _one_error(res)


@pytest.mark.slow
def test_a_regular_file_named_twice_is_read_twice(tmp_path):
    """A file can be read again from its start: the same numbers for both names."""
    res = _run(["eval", "-Q", "-m", "map", "--name", "a", "--name", "b", QRELS, BM25, BM25])
    values = [line.split("\t")[-1] for line in res.stdout.decode().splitlines()]
    assert res.returncode == 0 and len(values) == 2 and values[0] == values[1]


def _inputs(tmp_path: Path) -> tuple[Path, Path, Path]:
    (tmp_path / "runs").mkdir()
    qrels = Path(shutil.copy(QRELS, tmp_path / "qrels"))
    return qrels, Path(shutil.copy(BM25, tmp_path / "runs")), \
        Path(shutil.copy(DPR, tmp_path / "runs"))


def _untouched(paths: list[Path], before: list[bytes]) -> None:
    assert [p.read_bytes() for p in paths] == before
    assert not [p for p in paths[0].parent.rglob(".*.part")]


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "levels", "meta"])
@pytest.mark.parametrize("which", ["qrels", "run", "link to the run", "hard link to qrels"])
def test_a_plot_that_is_an_input_is_refused(tmp_path, command, which):
    qrels, bm25, dpr = _inputs(tmp_path)
    target = {"qrels": qrels, "run": bm25}.get(which)
    if which == "link to the run":
        target = tmp_path / "plot.png"
        target.symlink_to(bm25)
    elif which == "hard link to qrels":
        target = tmp_path / "plot.svg"
        os.link(qrels, target)
    before = [p.read_bytes() for p in (qrels, bm25, dpr)]
    extra = ["--analysis", "power", "--permutations", "10"] if command == "meta" else []
    res = _run([command, "-Q", *extra, "--plot", str(target), str(qrels), str(bm25), str(dpr)])
    line = _one_error(res)
    assert "cannot write the plot: it is the input" in line
    _untouched([qrels, bm25, dpr], before)


@pytest.mark.slow
def test_a_step_summary_that_is_an_input_is_refused(tmp_path):
    qrels, bm25, dpr = _inputs(tmp_path)
    before = [p.read_bytes() for p in (qrels, bm25, dpr)]
    for summary in (qrels, dpr):
        res = _run(["check", "--baseline", str(bm25), str(qrels), str(dpr)],
                   env={"GITHUB_STEP_SUMMARY": str(summary)})
        assert "cannot write $GITHUB_STEP_SUMMARY: it is the input" in _one_error(res)
    _untouched([qrels, bm25, dpr], before)


@pytest.mark.slow
def test_stdout_appended_to_an_input_is_refused(tmp_path):
    """``rpp eval qrels run >> run``: refused before a byte is read or written, as cat(1)
    refuses ``cat f >> f``."""
    qrels, bm25, dpr = _inputs(tmp_path)
    before = [p.read_bytes() for p in (qrels, bm25, dpr)]
    for command in (["eval", "-m", "map", str(qrels), str(bm25), str(dpr)],
                    ["trec-eval", str(qrels), str(bm25)]):
        with open(bm25, "ab") as out:
            res = subprocess.run(RPP + command, stdout=out, stderr=subprocess.PIPE, timeout=60)
        assert res.returncode == 2 and res.stderr.decode().count("\n") == 1
        assert "standard output is the input" in res.stderr.decode()
    _untouched([qrels, bm25, dpr], before)


@pytest.mark.slow
def test_a_plot_to_dev_null_and_an_unrelated_stdout_file_work(tmp_path):
    out = tmp_path / "out.txt"
    with open(out, "wb") as sink:
        res = subprocess.run(RPP + ["eval", "-Q", "-m", "map", QRELS, BM25], stdout=sink,
                             stderr=subprocess.PIPE, timeout=60)
    assert res.returncode == 0 and out.read_text().startswith("map")


def _elapsed(fn) -> tuple[object, float]:
    start = time.monotonic()
    return fn(), time.monotonic() - start


@pytest.mark.slow
@pytest.mark.parametrize("output", ["plot", "summary"])
def test_a_fifo_no_process_reads_is_an_error_within_seconds(tmp_path, output):
    """A FIFO without a reader as --plot or $GITHUB_STEP_SUMMARY: one line, status 2, before
    any work (check's PASS never printed), not a wait without end."""
    fifo = tmp_path / ("plot.png" if output == "plot" else "summary.md")
    os.mkfifo(fifo)
    if output == "plot":
        args, env = ["eval", "-Q", "--plot", str(fifo), QRELS, BM25, DPR], None
    else:
        args, env = ["check", "-Q", "--baseline", BM25, QRELS, DPR], \
            {"GITHUB_STEP_SUMMARY": str(fifo)}
    res, took = _elapsed(lambda: _run(args, env=env, timeout=60))
    assert "a FIFO that no process reads" in _one_error(res)
    assert took < 20


def test_a_fifo_with_a_reader_gets_the_summary_whole(tmp_path):
    """The FIFO is opened once, before the work, and kept: a probe that opened and closed it
    would have ended its reader's input before the summary came."""
    fifo = tmp_path / "summary.md"
    os.mkfifo(fifo)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    res = _run(["check", "-Q", "--baseline", BM25, QRELS, DPR],
               env={"GITHUB_STEP_SUMMARY": str(fifo)})
    reader.join(30)
    assert res.returncode in (0, 1), res.stderr
    assert got and b"| " in got[0] and got[0].endswith(b"\n")


@pytest.mark.slow
def test_subtopics_of_another_collection_are_refused(tmp_path):
    """Subtopic qrels that judge none of the evaluated queries: every diversity measure would
    be 0 and every p-value 1."""
    other = tmp_path / "subtopics"
    other.write_text("".join(f"9{line}" for line in open(SUBTOPICS)))
    for command in ("eval", "compare", "meta"):
        res = _run([command, "-Q", "--subtopics", str(other), QRELS, BM25, DPR])
        line = _one_error(res)
        assert line.startswith(f"rpp: {other}: shares no evaluated query with the qrels")


@pytest.mark.slow
def test_subtopics_judging_some_queries_get_a_note(tmp_path):
    half = tmp_path / "subtopics"
    lines = open(SUBTOPICS).readlines()
    half.write_text("".join(line for line in lines if int(line.split()[0]) % 2 == 0))
    res = _run(["eval", "-m", "alpha-nDCG@20", "--subtopics", str(half), QRELS, BM25, DPR])
    assert res.returncode == 0
    notes = [n for n in res.stderr.decode().splitlines() if "evaluated queries have no line" in n]
    assert len(notes) == 1 and "(201, 203, 205, 207, 209 ...)" in notes[0]
    assert "ndeval's measures score them 0" in notes[0]


_WRITE_AND_WAIT = """
import os, sys, time
from rpp_cli.report import files
with files.replaced_whole(sys.argv[1], "the plot") as out:
    out.write(b"half")
    out.flush()
    print("writing", flush=True)
    if sys.argv[2] == "end":
        from rpp_cli.cli import _end
        _end(None, 130)
    time.sleep(60)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, "end"])
def test_no_temporary_file_outlives_a_signal(tmp_path, how):
    """A plot being written when a signal ends rpp (or Ctrl-C's immediate exit on a local
    Dask cluster, ``_end``): no ``.NAME.<hex>.part`` is left beside the target, and the
    status is the signal's (SIGINT: Python's KeyboardInterrupt, which unwinds, then dies of
    the signal)."""
    target = tmp_path / "plot.png"
    child = subprocess.Popen([sys.executable, "-c", _WRITE_AND_WAIT, str(target),
                              "end" if how == "end" else "wait"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             preexec_fn=ctrl_c_as_from_a_terminal)
    assert child.stdout.readline() == b"writing\n"
    if how != "end":
        child.send_signal(how)
    status = child.wait(30)
    assert list(tmp_path.iterdir()) == []
    assert status == (130 if how == "end" else -how)


@pytest.mark.slow
@pytest.mark.parametrize("command, status", [("eval", 0), ("trec-eval", 141)])
def test_a_reader_gone_before_the_first_line(command, status):
    """``| true``: the report writers keep the command's status, the drop-ins exit 141 as
    trec_eval does (docs/formats.md says which is which)."""
    args = [QRELS, BM25, DPR] if command == "eval" else [QRELS, BM25]
    res = subprocess.run(f"{' '.join(RPP)} {command} -q {' '.join(args)} 2>/dev/null | true;"
                         " exit ${PIPESTATUS[0]}", shell=True, executable="/bin/bash",
                         timeout=60)
    assert res.returncode == status

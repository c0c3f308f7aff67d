"""Never lie, never hang: output that cannot be written is an error, signals end rpp with the
conventional status and no traceback, and a run that never arrives cannot hang it on exit.
Each case runs rpp in a small subprocess, as an operator would."""
from __future__ import annotations

import gzip
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..conftest import DEMO, PAPER, ctrl_c_as_from_a_terminal

RPP = [sys.executable, "-m", "rpp_cli"]
RUNS = [str(p) for p in sorted((DEMO / "runs").iterdir())]


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(RPP + args, capture_output=kwargs.pop("capture", True), text=True,
                          timeout=60, **kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["trec", "jsonl", "csv", "matrix"])
def test_full_disk_is_an_error_not_a_success(fmt):
    """> /dev/full: every write fails with ENOSPC; rpp must say so and exit 2."""
    with open("/dev/full", "w") as full:
        res = subprocess.run(RPP + ["eval", "-q", "--format", fmt, str(DEMO / "qrels"), *RUNS],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "rpp: cannot write output: No space left on device"
    assert "Traceback" not in res.stderr


@pytest.mark.slow
@pytest.mark.parametrize("args", [
    ["trec-eval", "-q", str(DEMO / "qrels"), RUNS[0]],
    ["ndeval", str(DEMO / "qrels.subtopics"), RUNS[0]],
    ["check", str(DEMO / "qrels"), "--baseline", RUNS[0], RUNS[1], "--format", "jsonl"],
    ["measures"],
])
def test_full_disk_in_every_command(args):
    with open("/dev/full", "w") as full:
        res = subprocess.run(RPP + args, stdout=full, stderr=subprocess.PIPE, text=True,
                             timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[-1] == "rpp: cannot write output: No space left on device"


QRELS = str(DEMO / "qrels")
PARTIAL_WRITE_CASES = {
    **{f"eval {fmt}": ["eval", "-q", "--format", fmt, QRELS, *RUNS[:3]]
       for fmt in ("trec", "jsonl", "csv", "matrix", "markdown", "latex")},
    "compare human": ["compare", "--view", "human", "--permutations", "50", QRELS, *RUNS[:3]],
    "levels": ["levels", QRELS, *RUNS[:2]],
    "meta jsonl": ["meta", "--format", "jsonl", "--analysis", "power,agreement",
                   "--permutations", "20", QRELS, *RUNS[:3]],
    "measures": ["measures"],
    "trec-eval": ["trec-eval", "-q", QRELS, RUNS[0]],
    "ndeval": ["ndeval", str(DEMO / "qrels.subtopics"), RUNS[0]],
    "help": ["eval", "--help"],
}


@pytest.mark.slow
@pytest.mark.parametrize("unbuffered", [True, False], ids=["unbuffered", "buffered"])
@pytest.mark.parametrize("case", PARTIAL_WRITE_CASES)
def test_output_cut_short_is_an_error(tmp_path, case, unbuffered):
    """A file-size limit of 1 KiB: the write that crosses it takes part of its bytes, the
    next fails (EFBIG). Under ``python -u`` or PYTHONUNBUFFERED stdout's binary layer is a raw
    file, whose text layer dropped the rest of a part-taken write without a word (exit 0 with
    1 KiB of output); whatever the buffering, that is an error."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    out = tmp_path / "out"
    with open(out, "wb") as sink:
        res = subprocess.run(RPP + PARTIAL_WRITE_CASES[case], stdout=sink,
                             stderr=subprocess.PIPE, text=True, timeout=60, env=env,
                             preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                                   (1024, 1024)))
    assert out.stat().st_size == 1024  # the output is larger: the limit cut it
    assert res.returncode == 2, res.stderr
    assert res.stderr.splitlines()[-1] == "rpp: cannot write output: File too large"


@pytest.mark.slow
def test_unbuffered_output_is_whole_and_the_same():
    """PYTHONUNBUFFERED changes no byte of the output."""
    args = PARTIAL_WRITE_CASES["eval jsonl"]
    outs = [subprocess.run(RPP + args, capture_output=True, timeout=60, check=True,
                           env={**os.environ, "PYTHONUNBUFFERED": flag}).stdout
            for flag in ("1", "")]
    assert outs[0] == outs[1] and len(outs[0]) > 90_000


@pytest.mark.slow
def test_full_disk_for_small_output_too():
    """Output small enough to sit in the buffer until exit is checked when it is flushed."""
    with open("/dev/full", "w") as full:
        res = subprocess.run(RPP + ["eval", "-m", "map", str(PAPER / "qrels"),
                                    str(PAPER / "run.X")],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    assert (res.returncode, res.stderr) == (2, "rpp: cannot write output: No space left on "
                                                "device\n")


def test_closed_stdout_is_an_error():
    res = subprocess.run(RPP + ["eval", "-m", "map", str(PAPER / "qrels"), str(PAPER / "run.X")],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                         timeout=60, pass_fds=(), preexec_fn=lambda: os.close(1))
    assert res.returncode == 2
    assert res.stderr == "rpp: cannot write output: standard output is closed\n"


def test_closed_stdin_is_one_line():
    res = subprocess.run(RPP + ["eval", "-", str(PAPER / "run.X")], capture_output=True,
                         text=True, timeout=60, preexec_fn=lambda: os.close(0))
    assert (res.returncode, res.stderr) == (2, "rpp: -: standard input is closed\n")


def _waiting_rpp(tmp_path: Path) -> tuple[subprocess.Popen, int]:
    """rpp reading a run from a FIFO nobody writes to: it waits (in a worker thread) until
    signalled. Returns the process and the FIFO's write end (kept open by the test)."""
    fifo = tmp_path / "never"
    os.mkfifo(fifo)
    proc = subprocess.Popen(RPP + ["eval", "-j", "2", str(DEMO / "qrels"), RUNS[0], str(fifo)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=ctrl_c_as_from_a_terminal)
    writer = os.open(fifo, os.O_WRONLY)  # blocks until rpp opened it for reading
    time.sleep(0.5)
    return proc, writer


def _signalled(tmp_path: Path, signum: int) -> tuple[int, str, str]:
    """Status, stdout and stderr of a waiting rpp sent ``signum``."""
    proc, writer = _waiting_rpp(tmp_path)
    try:
        proc.send_signal(signum)
        out, err = proc.communicate(timeout=20)
    finally:
        os.close(writer)
    return proc.returncode, out, err


@pytest.mark.slow
def test_ctrl_c_exits_130_without_traceback(tmp_path):
    assert _signalled(tmp_path, signal.SIGINT) == (130, "", "")


@pytest.mark.slow
@pytest.mark.parametrize("stdout", ["open", "closed"])
def test_ctrl_c_in_a_finalizer_still_ends_rpp_with_130(stdout):
    """Python runs a signal handler wherever the main thread is; inside a finalizer
    (``__del__``, a weakref callback, the interpreter's exit) the handler's exception is
    printed as "ignored" and the program runs on. rpp ends there too, with 130, also once
    its stdout is closed (as at its end)."""
    script = f"""if True:
        import os, signal, sys
        from rpp_cli.cli import handle_ctrl_c

        handle_ctrl_c()
        if {stdout == "closed"}:
            sys.stdout.close()

        class Finalized:
            def __del__(self):
                os.kill(os.getpid(), signal.SIGINT)
                sum(range(1000))  # the handler runs here, inside __del__

        Finalized()
        print("ran on")
        """
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, preexec_fn=ctrl_c_as_from_a_terminal)
    assert (res.returncode, res.stdout, res.stderr) == (130, "", "")


def test_the_entry_point_loads_nothing_before_ctrl_c_is_safe():
    """Until the CLI's handler is in place, Ctrl-C ends rpp as SIGINT's default does (no
    traceback from a module half loaded): the entry module resets it before numpy, click or
    any of rpp's modules load, and both ways of starting rpp go through it."""
    script = """if True:
        import signal, sys
        import rpp_cli.__main__
        from importlib.metadata import entry_points

        loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "click")
                        or m.startswith("rpp_cli."))
        (rpp,) = entry_points(group="console_scripts", name="rpp")
        print(loaded, signal.getsignal(signal.SIGINT) is signal.SIG_DFL, rpp.value)
        """
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60, preexec_fn=ctrl_c_as_from_a_terminal)
    assert res.stdout == "['rpp_cli.__main__'] True rpp_cli.__main__:run\n", res.stderr


@pytest.mark.slow
def test_sigterm_ends_rpp_with_its_signal(tmp_path):
    code, _, err = _signalled(tmp_path, signal.SIGTERM)
    assert code == -signal.SIGTERM  # the shell shows 143
    assert "Traceback" not in err


@pytest.mark.slow
def test_no_child_process_is_started(tmp_path):
    """Runs are read by threads: nothing can be orphaned or leave rpp waiting."""
    proc, writer = _waiting_rpp(tmp_path)
    try:
        children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children").read_text().split()
        assert children == []
    finally:
        proc.kill()
        proc.communicate(timeout=20)
        os.close(writer)


def test_threads_read_at_most_the_in_flight_budget(tmp_path, monkeypatch):
    """Several runs are read at once only while the largest files fit the budget together."""
    from rpp_cli.io import budget

    monkeypatch.setattr(budget, "in_flight_bytes", lambda: 1000)
    small, big = tmp_path / "small", tmp_path / "big"
    small.write_bytes(b"x" * 100)
    big.write_bytes(b"x" * 600)
    assert budget.threads_for([str(small)] * 3, 4) == 4  # 4 x 100 <= 1000
    assert budget.threads_for([str(small), str(big)], 4) == 1  # 2 x 600 > 1000
    assert budget.threads_for(["-", str(small)], 4) == 1  # stdin is read on its own
    packed = tmp_path / "packed"
    packed.write_bytes(gzip.compress(b"1 Q0 d 1 1 r\n" * 20)[:150].ljust(150, b"\0"))
    assert budget.text_size(str(packed)) == 1500  # gzipped: 10 x its 150 bytes
    assert budget.threads_for([str(small), str(packed)], 4) == 1  # 2 x 1500 > 1000


def test_in_flight_budget_is_a_16th_of_memory_with_a_floor(monkeypatch):
    """The bytes of runs read at once: a 16th of physical memory, never under the floor."""
    from rpp_cli.io import budget

    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 32 << 18}  # 32 GiB
    monkeypatch.setattr(budget.os, "sysconf", lambda name: pages[name])
    assert budget.in_flight_bytes() == 2 << 30
    pages["SC_PHYS_PAGES"] = 1 << 18  # 1 GiB: the floor
    assert budget.in_flight_bytes() == budget.IN_FLIGHT_FLOOR == 384 << 20


@pytest.mark.slow
def test_qrels_from_a_pipe_with_subtopics_is_read_once(tmp_path):
    """With --subtopics, QRELS may be omitted, so the first file is looked at before its turn:
    a pipe (``<(cat qrels)``) must still be read once, not found empty the second time."""
    fifo = tmp_path / "qrels.pipe"
    os.mkfifo(fifo)
    proc = subprocess.Popen(RPP + ["eval", "-m", "map", "--subtopics",
                                   str(DEMO / "qrels.subtopics"), str(fifo), RUNS[0], RUNS[1]],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    with open(fifo, "wb") as pipe:
        pipe.write((DEMO / "qrels").read_bytes())
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    plain = _run(["eval", "-m", "map", "--subtopics", str(DEMO / "qrels.subtopics"),
                  str(DEMO / "qrels"), RUNS[0], RUNS[1]])
    assert out == plain.stdout


def _main_with_eval_raising(monkeypatch, capsys, error) -> tuple[list[int], str]:
    """rpp's main() with ``rpp eval`` replaced by a function that calls ``error()``: the exit
    codes passed to os._exit, and stderr."""
    from rpp_cli import cli as cli_module
    from rpp_cli.tasks import eval as eval_task

    monkeypatch.setattr(eval_task, "run", lambda *args, **kwargs: error())
    monkeypatch.setattr(sys, "argv", ["rpp", "eval", str(PAPER / "qrels"), str(PAPER / "run.X")])
    exits: list[int] = []
    monkeypatch.setattr(os, "_exit", lambda code: exits.append(code) or (_ for _ in ()).throw(
        SystemExit(code)))
    with pytest.raises(SystemExit):
        cli_module.main()
    return exits, capsys.readouterr().err


def test_a_bug_is_never_a_success_nor_a_failed_check(monkeypatch, capsys):
    """An unexpected exception exits 70 (EX_SOFTWARE) with its traceback, not 0 or 1."""
    def broken():
        raise ZeroDivisionError("a bug")

    exits, err = _main_with_eval_raising(monkeypatch, capsys, broken)
    assert exits == [70] and "ZeroDivisionError: a bug" in err
    assert err.rstrip().endswith("rpp: internal error: this is a bug; please report it with the "
                                 "lines above and the output of rpp --version")


def test_running_out_of_memory_is_one_line_and_status_2(monkeypatch, capsys):
    """A MemoryError (ulimit -v, a container's limit) is the machine's limit, not a bug:
    one line, status 2, no traceback (it was the internal error's traceback and 70)."""
    import numpy as np

    exits, err = _main_with_eval_raising(
        monkeypatch, capsys, lambda: np.empty(1 << 62, dtype=np.uint8))  # _ArrayMemoryError
    assert exits == [2] and "Traceback" not in err
    assert err.startswith("rpp: out of memory: the input needs more than this process may use")
    assert len(err.splitlines()) == 1

"""Faults around --dask: an address that is not a scheduler's (an HTTP server such as the
dashboard, a server that speaks first), a scheduler without workers or that loses its last
one mid-run, a descriptor limit too small for local:N, Ctrl-C on a local cluster. Each ends
as the contract says: one line, its status, within seconds, no process nor file left."""
from __future__ import annotations

import array
import fcntl
import http.server
import json
import os
import re
import resource
import signal
import socket
import subprocess
import sys
import termios
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

import pytest

from ..conftest import DEMO, children_of, ctrl_c_as_from_a_terminal, rpp

pytestmark = pytest.mark.slow

RPP = [sys.executable, "-m", "rpp_cli", "eval", "-Q"]
FILES = [str(DEMO / "qrels"), str(DEMO / "runs" / "bm25"), str(DEMO / "runs" / "dpr")]
TIMEOUT = "1"  # RPP_DASK_TIMEOUT of every test: no test waits out the default 10 s
F_SETPIPE_SZ = 1031  # Linux: a pipe of one page, that rpp's -q lines fill


class Ended:
    """How a child rpp ended: status, stderr, seconds, and what it left behind."""

    def __init__(self, proc: subprocess.Popen, out: bytes, err: bytes, seconds: float,
                 tmp: Path) -> None:
        self.code, self.out, self.err, self.seconds = proc.returncode, out, err.decode(), seconds
        self.left = _session(proc.pid)
        self.files = sorted(p.name for p in tmp.iterdir())

    def one_line(self, status: int) -> str:
        """The one ``rpp: `` line of a command that failed with ``status``, and nothing of it
        left (no process of its session, nothing in its TMPDIR)."""
        lines = self.err.splitlines()
        assert self.code == status, self.err
        assert len(lines) == 1 and lines[0].startswith("rpp: "), self.err
        assert "out of memory" not in self.err and self.out == b""
        self.clean()
        return lines[0]

    def clean(self) -> None:
        assert self.left == [] and self.files == [], (self.left, self.files)


def _session(sid: int) -> list[int]:
    """Live processes of session ``sid`` (rpp's: it is started as a session leader), waited
    for a moment (the kernel ends forks that outlive their parent)."""
    deadline = time.monotonic() + 3
    while True:
        left = []
        for entry in os.listdir("/proc"):
            try:
                with open(f"/proc/{entry}/stat", "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if entry.isdigit() and int(fields[3]) == sid and fields[0] != b"Z":
                left.append(int(entry))
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def _start(tmp: Path, *args: str, env: dict[str, str] | None = None,
           nofile: tuple[int, int] | None = None, **popen) -> subprocess.Popen:
    """``rpp eval -Q ARGS`` on the demo runs, in a session of its own, with TMPDIR an empty
    folder and ``nofile`` its RLIMIT_NOFILE (soft, hard), set in the child only."""
    tmp.mkdir()

    def limits() -> None:
        ctrl_c_as_from_a_terminal()
        if nofile is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, nofile)

    return subprocess.Popen([*RPP, *args, *FILES], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=limits, start_new_session=True,
                            env={**os.environ, "RPP_DASK_TIMEOUT": TIMEOUT, "TMPDIR": str(tmp),
                                 **(env or {})}, **popen)


def _run(tmp: Path, *args: str, **kwargs) -> Ended:
    """``_start`` waited for (30 s at most: the bounds tested are far below)."""
    start = time.monotonic()
    proc = _start(tmp, *args, **kwargs)
    out, err = _wait(proc)
    return Ended(proc, out, err, time.monotonic() - start, tmp)


def _wait(proc: subprocess.Popen) -> tuple[bytes, bytes]:
    """What ``proc`` wrote, once it ended; one that runs past 30 s is killed with its session
    (a test that fails leaves no process either)."""
    try:
        return proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise


@contextmanager
def _server(serve: Callable[[socket.socket], None]) -> Iterator[str]:
    """A server on a free port of 127.0.0.1 that runs ``serve`` on each connection (a thread
    each); its address."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except (TimeoutError, OSError):
                continue
            threading.Thread(target=serve, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join()
        listener.close()


def _banner(conn: socket.socket) -> None:
    """Speak first, as SSH does, then wait for the client to go."""
    with conn:
        conn.sendall(b"SSH-2.0-OpenSSH_9.2\r\n")
        while conn.recv(4096):
            pass


@contextmanager
def _http() -> Iterator[str]:
    """An HTTP server (as Dask's dashboard is) on a free port: it waits for a request line."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             http.server.BaseHTTPRequestHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"tcp://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def scheduler(tmp_path_factory) -> Iterator[str]:
    """A Dask scheduler of its own (no dashboard on 8787), with no worker; its address."""
    where = tmp_path_factory.mktemp("scheduler")
    info = where / "scheduler.json"
    proc = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_scheduler",
                             "--host", "127.0.0.1", "--port", "0", "--dashboard-address",
                             "127.0.0.1:0", "--scheduler-file", str(info)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "TMPDIR": str(where)})
    try:
        deadline = time.monotonic() + 60
        while not (info.exists() and info.read_text().strip()):
            assert proc.poll() is None and time.monotonic() < deadline, "no scheduler"
            time.sleep(0.05)
        yield json.loads(info.read_text())["address"]
    finally:
        proc.kill()
        proc.wait()


def test_an_http_server_is_not_a_scheduler_and_says_so_within_the_timeout(tmp_path):
    """The dashboard's port instead of the scheduler's: rpp waited past 300 s for an answer
    to Dask's handshake. Now the whole connection has a deadline (here --dask-timeout)."""
    with _http() as address:
        ended = _run(tmp_path / "tmp", "--dask", address, "--dask-timeout", "1",
                     env={"RPP_DASK_TIMEOUT": "600"})
    assert ended.one_line(2) == (f"rpp: --dask {address}: no Dask scheduler answered there "
                                 "within 1 s: is it the scheduler's address (port 8786 by "
                                 "default), not its dashboard's (8787)?")
    assert ended.seconds < 15


def test_a_server_that_speaks_first_is_not_a_scheduler_nor_out_of_memory(tmp_path):
    """An SSH banner's first 8 bytes read as a frame length were "rpp: out of memory"."""
    with _server(_banner) as address:
        ended = _run(tmp_path / "tmp", env={"RPP_DASK": address})
    assert ended.one_line(2) == (f"rpp: RPP_DASK={address}: not a Dask scheduler (what "
                                 "answered there does not speak Dask's protocol)")
    assert ended.seconds < 15


def test_a_scheduler_without_workers_is_a_setup_error(tmp_path, scheduler):
    """It waited forever without a word."""
    ended = _run(tmp_path / "tmp", "--dask", scheduler)
    assert ended.one_line(2) == (f"rpp: --dask {scheduler}: the scheduler has no workers "
                                 f"(waited {TIMEOUT} s)")
    assert ended.seconds < 15


def test_a_cluster_whose_last_worker_dies_mid_run_ends_with_3(tmp_path, scheduler):
    """Its only worker is stopped, given shards, then killed: rpp waited forever. Now it ends
    within the timeout of the last worker's leaving (and a poll), naming what happened."""
    from distributed import Client

    worker = subprocess.Popen([sys.executable, "-m", "distributed.cli.dask_worker", scheduler,
                               "--nthreads", "1", "--no-nanny", "--dashboard-address",
                               "127.0.0.1:0"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL,
                              env={**os.environ, "TMPDIR": str(tmp_path)})
    try:
        with Client(scheduler, timeout=30) as client:
            client.wait_for_workers(1, timeout=60)
            os.kill(worker.pid, signal.SIGSTOP)
            proc = _start(tmp_path / "tmp", "--dask", scheduler,
                          env={"RPP_SHARD_QUERIES": "1"})
            deadline = time.monotonic() + 30
            while not any(client.processing().values()):  # rpp's shards, on the worker
                assert proc.poll() is None and time.monotonic() < deadline, "no shard seen"
                time.sleep(0.05)
            worker.kill()
            killed = time.monotonic()
            out, err = _wait(proc)
    finally:
        worker.kill()
        worker.wait()
    ended = Ended(proc, out, err, time.monotonic() - killed, tmp_path / "tmp")
    assert re.fullmatch(rf"rpp: --dask {scheduler}: every Dask worker left the scheduler while "
                        rf"shard \d+ of \d+ was outstanding, and none joined within {TIMEOUT} s",
                        ended.one_line(3))
    assert ended.seconds < 10


def test_a_descriptor_limit_too_small_for_local_n_is_one_line(tmp_path):
    """``ulimit -n 40``: an endless loop on EMFILE (below 18: writing 224 MB of tracebacks),
    or "Nanny failed to start" (exit 3). Now refused before any fork, naming what N needs."""
    ended = _run(tmp_path / "tmp", "--dask", "local:2", nofile=(40, 40))
    assert re.fullmatch(r"rpp: --dask local:2: 2 local workers need (\d+) open files \(\d+ "
                        r"open now \+ \d+ \+ \d+ a worker\), more than the limit of 40 "
                        r"\(ulimit -n\): local:1 fits, or raise it", ended.one_line(2))
    assert ended.seconds < 15


def test_a_soft_descriptor_limit_is_raised_and_nothing_is_left_in_tmpdir(tmp_path):
    """A soft limit of 17 under a larger hard one: raised for the cluster, which runs; and
    Dask's scratch folders (dask-scratch-space, its locks) were left in $TMPDIR."""
    ended = _run(tmp_path / "tmp", "--dask", "local:2", nofile=(17, 4096))
    assert ended.code == 0 and ended.err == "", ended.err
    assert ended.out == subprocess.run([*RPP, "-j", "1", *FILES], capture_output=True,
                                       check=True).stdout
    ended.clean()


def test_ctrl_c_on_a_local_cluster_leaves_nothing_in_tmpdir(tmp_path):
    """Ctrl-C ends rpp at once (os._exit, no close of the cluster): its scratch folder went
    with it only when rpp removed it there. rpp is stopped while its writers fill a pipe
    of one page."""
    start = time.monotonic()
    proc = _start(tmp_path / "tmp", "-q", "--dask", "local:2", env={"RPP_SHARD_QUERIES": "1"})
    fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, 4096)
    queued = array.array("i", [0])
    while not queued[0]:  # lines in the pipe: the cluster runs, its forks write
        assert proc.poll() is None and time.monotonic() - start < 60, "no line written"
        time.sleep(0.05)
        fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, queued)
    assert list((tmp_path / "tmp").iterdir())  # the cluster's scratch folder, while it runs
    proc.send_signal(signal.SIGINT)
    interrupted = time.monotonic()
    proc.stdout.close()
    err = proc.stderr.read()
    proc.wait(timeout=30)
    ended = Ended(proc, b"", err, time.monotonic() - interrupted, tmp_path / "tmp")
    assert (ended.code, ended.err) == (130, "")
    assert ended.seconds < 10
    ended.clean()


@pytest.mark.parametrize("option,env,said", [
    (("--dask-timeout", "0"), {}, "0<x<=86400"),
    (("--dask-timeout", "1_0"), {}, "'1_0' is not a number in ASCII digits"),
    (("--dask-timeout", "nan"), {}, "nan is not a finite number"),
    ((), {"RPP_DASK_TIMEOUT": "ten"}, "RPP_DASK_TIMEOUT='ten': expected a number of seconds "
                                      "above 0, at most 86400"),
    ((), {"RPP_DASK_TIMEOUT": "\u0661"}, "RPP_DASK_TIMEOUT='\u0661': expected")])
def test_a_bad_dask_timeout_is_one_line(monkeypatch, option, env, said):
    """The timeout is checked before any connection (in-process: nothing is reached)."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    res = rpp("eval", "--dask", "tcp://127.0.0.1:9", *option, *FILES)
    assert res.code == 2 and res.out == "" and res.err.count("\n") == 1, res.err
    assert res.err.startswith("rpp: ") and said in res.err, res.err


ABANDONED = """
import os, shutil, sys, time
from rpp_cli import engine

with engine.session(1, dask="local:2", timeout=5) as eng:
    assert list(eng.imap(abs, [-1, -2])) == [1, 2]
    engine.abandon()
    print(eng.scratch, flush=True)
    time.sleep(60)  # (ended by the test)
"""


def test_an_abandoned_local_cluster_restarts_no_worker_and_leaves_no_folder(tmp_path):
    """What Ctrl-C does to a local cluster, step by step: once abandoned (its close is
    skipped), its nannies restart none of the workers it killed, so no fork of rpp outlives
    it nor writes a worker's folder after the cluster's own was removed (a nanny restarts
    its worker within a second of its death: 3 s are waited)."""
    (tmp_path / "tmp").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", ABANDONED], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "TMPDIR": str(tmp_path / "tmp")})
    try:
        scratch = proc.stdout.readline().strip()
        assert scratch, proc.stderr.read() if proc.poll() is not None else "no folder named"
        time.sleep(3)
        assert (children_of(proc.pid), os.path.exists(scratch)) == ([], False)
        assert list((tmp_path / "tmp").iterdir()) == []
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()

"""Out of memory under an address-space limit (``ulimit -v``, RLIMIT_AS): one line
``rpp: out of memory: ...`` and status 2 wherever it strikes (loading numpy and OpenBLAS, a
thread or a worker process that cannot start, the work, a library's exit(), a thread's error,
interpreter exit), or the command's own output and status; ``rpp check`` exits 1 only with a
FAIL verdict on stderr (contract §8).

The limits are measured here, not written down: where Python, the modules and the work stop
fitting moves with the machine, Python, numpy and OpenBLAS.
"""
from __future__ import annotations

import compileall
import os
import resource
import subprocess
import sys
from functools import lru_cache
from typing import Callable

import pytest

from tests.conftest import DEMO, ROOT

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True, scope="module")
def _bytecode_written() -> None:
    """Every child loads rpp_cli from bytecode, as an installed package does: a module whose
    .pyc is missing or stale is compiled in the child, which costs address space, so the
    limits measured here would move with whichever test happened to write it first."""
    assert compileall.compile_dir(str(ROOT / "rpp_cli"), quiet=1)

MB = 1 << 20
CEILING = 2048 * MB  # a limit every command on the demo data fits in
QRELS = str(DEMO / "qrels")
RUNS = [str(DEMO / "runs" / name) for name in ("bm25", "colbert", "splade")]
BLAS_ENV = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
COMMANDS = {  # name -> arguments; "check-fail" fails its gate (status 1, a FAIL verdict)
    "eval": ["eval", "-j", "2", QRELS, *RUNS],
    "check": ["check", QRELS, "--baseline", RUNS[0], *RUNS[1:]],
    "check-fail": ["check", QRELS, "--baseline", RUNS[2], RUNS[0]],
}
OUT_OF_MEMORY = "rpp: out of memory: "
STARTING = "rpp: out of memory: loading its modules"


def _env(**extra: str) -> dict[str, str]:
    """The environment with no BLAS thread setting (rpp's own default applies) and ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in BLAS_ENV}
    env.update(extra)
    return env


def _limited(argv: list[str], limit: int, env: dict[str, str] | None = None,
             stack: int | None = None) -> subprocess.CompletedProcess:
    """``argv`` in a child whose address space is held to ``limit`` bytes (and whose stack
    limit, the size glibc gives each new thread's stack, is ``stack``)."""
    def hold() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        if stack is not None:
            resource.setrlimit(resource.RLIMIT_STACK,
                               (stack, resource.getrlimit(resource.RLIMIT_STACK)[1]))

    try:
        return subprocess.run(argv, capture_output=True, preexec_fn=hold, timeout=120,
                              env=env if env is not None else _env())
    except OSError as err:  # too little even to start the program
        return subprocess.CompletedProcess(argv, 127, b"", str(err).encode())


def _rpp(args: list[str], limit: int, **kwargs) -> subprocess.CompletedProcess:
    """``rpp ARGS`` through its real entry point under ``limit``."""
    return _limited([sys.executable, "-m", "rpp_cli", *args], limit, **kwargs)


@lru_cache(maxsize=None)
def _reference(name: str) -> subprocess.CompletedProcess:
    """The command's outcome with room to spare."""
    return _rpp(COMMANDS[name], CEILING)


def _lowest(fits: Callable[[int], bool], low: int, high: int, step: int = 4 * MB
            ) -> tuple[int, int]:
    """Bisection of [low, high] (to ``step``) for the lowest limit at which ``fits``: the
    highest limit seen not to fit (or ``low``) and the lowest seen to fit (``high`` must)."""
    assert fits(high), f"nothing fits in {high // MB} MB"
    while high - low > step:
        middle = (low + high) // 2
        if fits(middle):
            high = middle
        else:
            low = middle
    return low, high


@lru_cache(maxsize=None)
def _floor() -> int:
    """The lowest limit at which rpp's entry point can run at all: below it Python itself
    cannot start or load rpp_cli/__main__.py, and its own message and status are the last
    word (contract §8)."""
    probe = [sys.executable, "-c", "import ctypes, importlib.util, rpp_cli.__main__"]
    return _lowest(lambda limit: _limited(probe, limit).returncode == 0, 0, 256 * MB, MB)[1]


@lru_cache(maxsize=None)
def _loading() -> tuple[int, int]:
    """The highest limit seen at which rpp cannot load its modules, and the lowest at which
    it can (``rpp --help`` works)."""
    return _lowest(lambda limit: _rpp(["--help"], limit).returncode == 0, _floor(), CEILING)


def _between(low: int, high: int, points: int) -> list[int]:
    """About ``points`` limits, at least 2 MB apart, from ``low`` to ``high`` included."""
    step = max(2 * MB, (high - low) // max(1, points - 1))
    return sorted({*range(low, high, step), high})


def _out_of_memory(res: subprocess.CompletedProcess, name: str | None = None) -> str:
    """Assert status 2 and ``rpp: out of memory: ...`` as the last stderr line, the only
    one of its kind, after nothing but notes the command prints anyway; the line."""
    err = res.stderr.decode(errors="replace")
    lines = err.splitlines()
    assert res.returncode == 2, (res.returncode, err[-2000:])
    assert lines and lines[-1].startswith(OUT_OF_MEMORY), err[-2000:]
    assert sum(line.startswith(OUT_OF_MEMORY) for line in lines) == 1, err[-2000:]
    notes = _reference(name).stderr.decode().splitlines() if name else []
    assert all(line in notes for line in lines[:-1]), err[-2000:]
    return lines[-1]


def _fits_or_out_of_memory(res: subprocess.CompletedProcess, name: str) -> str:
    """The command's own outcome (status, stdout and stderr as with room to spare) or out of
    memory as :func:`_out_of_memory` says; which, "ok" or the line. A check never ends with
    status 1 but with its FAIL verdict."""
    ref = _reference(name)
    if res.returncode == 1 and name.startswith("check"):
        assert any(line.startswith("FAIL\t") for line in res.stderr.decode().splitlines()), \
            res.stderr.decode()[-2000:]
    if res.returncode == ref.returncode and res.stdout == ref.stdout:
        assert res.stderr == ref.stderr
        return "ok"
    return _out_of_memory(res, name)


def test_out_of_memory_while_the_modules_load_is_one_line():
    """From the lowest limit rpp's entry point runs at to the one it loads at, ``--help`` and
    ``check`` say ``rpp: out of memory: loading its modules ...`` and exit 2: whether Python
    raises MemoryError, a C extension cannot be mapped (ImportError), the parser fails
    (SyntaxError) or OpenBLAS gives up (exit(1) after its own line, which is not shown)."""
    short, loaded = _loading()
    for limit in _between(_floor() + 2 * MB, short, 6):
        for args in (["--help"], COMMANDS["check"]):
            res = _rpp(args, limit)
            assert _out_of_memory(res).startswith(STARTING), (limit // MB, args)
            assert res.stdout == b""
    assert _rpp(["--help"], loaded).stdout.startswith(b"Usage: rpp")


def test_openblas_giving_up_as_numpy_loads_is_one_line():
    """Where OpenBLAS cannot map its buffer as numpy loads it prints "OpenBLAS error: Memory
    allocation still failed" and calls exit(1), a failed check's status: rpp exits 2 with its
    one line instead. The limit is found with rpp's modules loaded bare (no entry point)."""
    bare = [sys.executable, "-c", "import rpp_cli.cli"]
    env = _env(OPENBLAS_NUM_THREADS="1")  # what rpp sets under a limit
    found = next((limit for limit in range(_loading()[0], _floor(), -3 * MB)
                  if b"OpenBLAS" in _limited(bare, limit, env).stderr), None)
    assert found is not None, ("no limit where OpenBLAS gives up as numpy loads: numpy's "
                               "wheels bundle OpenBLAS, which this test is about")
    for limit in (found, found - 3 * MB):
        res = _rpp(COMMANDS["check-fail"], limit)
        assert _out_of_memory(res).startswith(STARTING), limit // MB
        assert b"OpenBLAS" not in res.stderr


def test_under_a_limit_rpp_starts_no_thread_of_its_own():
    """A stack limit above the address-space limit: every new thread's stack (glibc sizes it
    by the stack limit) fails to map. Under a limit rpp starts no thread of its own (a thread
    whose start fails for want of memory would hang CPython's Thread.start), so ``eval -j 2``
    prints exactly what it prints with room to spare; its worker processes still run."""
    res = _rpp(COMMANDS["eval"], CEILING, stack=2 * CEILING)
    ref = _reference("eval")
    assert (res.returncode, res.stdout, res.stderr) == (ref.returncode, ref.stdout, ref.stderr)


def test_openblas_threads_that_cannot_start_are_out_of_memory():
    """The same stack limit with OPENBLAS_NUM_THREADS=2: OpenBLAS's own threads cannot start
    (it prints "pthread_create failed" and raises SIGINT, status 130); rpp ends as out of
    memory, 2, without OpenBLAS's line."""
    res = _rpp(COMMANDS["eval"], CEILING, env=_env(OPENBLAS_NUM_THREADS="2"),
               stack=2 * CEILING)
    assert _out_of_memory(res, "eval")
    assert b"OpenBLAS" not in res.stderr


def test_out_of_memory_in_the_work_is_one_line_and_check_fails_only_with_a_verdict():
    """Between the limit rpp loads at and the one each command fits in, every outcome is the
    command's own or out of memory (2, one line): never a traceback, an internal error (70),
    a library's status, nor a check's 1 without its verdict. The work itself runs out in
    some of them (the line of a too large input, not of loading)."""
    seen = set()
    loaded = _loading()[1]
    for name in ("eval", "check-fail"):
        ref = _reference(name)
        short, fits = _lowest(
            lambda limit: _rpp(COMMANDS[name], limit).returncode == ref.returncode,
            loaded, CEILING // 2, 8 * MB)
        for limit in [*_between(loaded, short, 4), fits]:
            seen.add(_fits_or_out_of_memory(_rpp(COMMANDS[name], limit), name).split(";")[0])
    assert any(line.startswith(OUT_OF_MEMORY) and not line.startswith(STARTING)
               for line in seen), seen


def _injected(code: str, args: list[str], limit: int = CEILING, **env: str
              ) -> subprocess.CompletedProcess:
    """``rpp ARGS`` through its entry point in a child that first runs ``code`` (a fault to
    inject: rpp's modules may be loaded and patched there)."""
    script = f"import sys\nsys.argv[0] = 'rpp'\n{code}\nfrom rpp_cli.__main__ import run\nrun()\n"
    return _limited([sys.executable, "-c", script, *args], limit, _env(**env))


IN_THE_COMMAND = """
import click
invoke = click.Context.invoke
def faulty(self, *args, **kwargs):
    if self.parent is not None:  # the command's own callback, rpp's modules loaded
        fault()
    return invoke(self, *args, **kwargs)
click.Context.invoke = faulty
"""  # fault() runs as the command starts, whatever module does its work


def test_a_library_exit_when_memory_is_short_is_out_of_memory():
    """A C library that calls exit(1) mid-command while memory is short (as OpenBLAS does
    for a buffer it cannot map) ends rpp with its out-of-memory line and 2, not the
    library's 1, which from ``rpp check`` reads as a failed gate."""
    code = """
import ctypes, resource
def fault():
    with open("/proc/self/statm") as statm:
        size = int(statm.read().split()[0]) * resource.getpagesize()
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    resource.setrlimit(resource.RLIMIT_AS, (size + (8 << 20), hard))
    ctypes.CDLL(None).exit(1)
""" + IN_THE_COMMAND
    res = _injected(code, COMMANDS["check"])
    assert not _out_of_memory(res).startswith(STARTING)
    assert not any(line.startswith(("PASS", "FAIL")) for line in res.stderr.decode().split("\n"))


def test_a_library_exit_with_memory_to_spare_is_an_internal_error():
    """The same exit(1) with memory to spare is not out of memory: an internal error, 70,
    never the 1 of a failed check."""
    code = "import ctypes\ndef fault():\n    ctypes.CDLL(None).exit(1)\n" + IN_THE_COMMAND
    res = _injected(code, COMMANDS["check"])
    assert res.returncode == 70, res.stderr.decode()[-2000:]
    assert res.stderr.decode().splitlines()[-1].startswith("rpp: internal error")


_SHORT_AS_THE_COMMAND_STARTS = """
import resource
def fault():
    limit, counted = {"as": (resource.RLIMIT_AS, "VmSize"),
                      "data": (resource.RLIMIT_DATA, "VmData")}[KIND]
    with open("/proc/self/status") as status:
        used = next(int(l.split()[1]) for l in status if l.startswith(counted + ":")) * 1024
    resource.setrlimit(limit, (used + EXTRA, resource.getrlimit(limit)[1]))
""" + IN_THE_COMMAND


@pytest.mark.parametrize("kind", ["as", "data"])
def test_scipys_openblas_without_room_for_its_buffer_is_out_of_memory(kind):
    """scipy's wheel bundles an OpenBLAS of its own whose constructor, as scipy.special loads
    (a check's statistics), asks for its 32 MB buffer by mmap, then malloc, and, given
    neither, asks again forever (0.3.30: no "giving up", no exit): a ``ulimit -v`` (or ``-d``)
    with room for the library and not for its buffer had ``rpp check`` spin at full CPU until
    killed. The limit is set as the command starts, some MB above what is used then, with the
    user's own malloc setting (so no free heap takes the malloc): every outcome ends, the
    command's own or out of memory."""
    for extra in range(8 * MB, 88 * MB, 8 * MB):
        code = _SHORT_AS_THE_COMMAND_STARTS.replace("KIND", repr(kind)).replace(
            "EXTRA", str(extra))
        res = _injected(code, COMMANDS["check-fail"], MALLOC_TOP_PAD_="131072")
        _fits_or_out_of_memory(res, "check-fail")


_LOADING_STUCK = """
import threading
import rpp_cli.__main__ as entry
entry.LOADING_SECONDS = 1
class Stuck:
    def find_spec(self, name, path=None, target=None):
        if name == "rpp_cli.cli":  # as an import lock left held waits: for ever
            lock = threading.Lock()
            lock.acquire()
            lock.acquire()
sys.meta_path.insert(0, Stuck())
"""


def test_loading_stuck_under_a_limit_is_out_of_memory():
    """CPython 3.11's import lock, left held where a MemoryError struck inside importlib, has
    the next import wait for ever (``rpp --help`` about 81 MB above what Python used at
    start hung so): under a limit, loading that has not ended after LOADING_SECONDS is out
    of memory's loading line, status 2. The wait is made here by an import that never ends."""
    res = _injected(_LOADING_STUCK, ["--help"])
    assert (res.returncode, res.stdout) == (2, b""), res.stderr
    assert _out_of_memory(res).startswith(STARTING)


def test_out_of_memory_as_a_worker_starts_is_rpps_one_line():
    """Out of memory as a forked worker sets itself up (loading ctypes for its parent-death
    signal can fail under a limit) is the one line and status 2, not a worker that runs the
    command on beside rpp (tests/test_engine.py has the engine's side)."""
    short = "import rpp_cli.engine.processes as p\ndef short(parent):\n" \
            "    raise MemoryError('no room to start')\np._die_with = short\n"
    res = _injected(short, COMMANDS["eval"][:1] + ["-q"] + COMMANDS["eval"][1:],
                    RPP_SHARD_QUERIES="3")
    _out_of_memory(res, "eval")
    assert res.stdout == b""


def test_a_worker_process_that_cannot_start_is_out_of_memory():
    """fork() failing (EAGAIN, as BlockingIOError; ENOMEM) for ``-j 2``'s worker processes is
    out of memory, not "cannot write output"."""
    code = """
import errno, os
def fork():
    raise BlockingIOError(errno.EAGAIN, os.strerror(errno.EAGAIN))
os.fork = fork
"""
    res = _injected(code, COMMANDS["eval"], RPP_SHARD_QUERIES="3")
    assert _out_of_memory(res, "eval")


def test_memory_error_in_a_thread_and_at_exit_is_out_of_memory():
    """A MemoryError that no caller can receive, in a thread of its own or in a function run
    at interpreter exit, ends rpp with the one line and 2 (it was printed as "ignored" and
    the command exited 0)."""
    in_thread = """
import threading
def fault():
    def fail():
        raise MemoryError()
    thread = threading.Thread(target=fail)
    thread.start()
    thread.join()
""" + IN_THE_COMMAND
    at_exit = "import atexit\ndef fail():\n    raise MemoryError()\natexit.register(fail)\n"
    for code in (in_thread, at_exit):
        res = _injected(code, COMMANDS["check"])
        assert _out_of_memory(res, "check")


_EXTENSIONS_AFTER_THREADS = """
import os, runpy, sys, threading, importlib.machinery as machinery
load, start, started = machinery.ExtensionFileLoader.create_module, threading.Thread.start, []
def noted(self, spec):
    if started or len(os.listdir("/proc/self/task")) > 1:
        sys.__stderr__.write(f"loaded after a thread started: {spec.name}\\n")
    return load(self, spec)
def starting(self):
    started.append(self.name)
    return start(self)
machinery.ExtensionFileLoader.create_module = noted
threading.Thread.start = starting
sys.argv = ["rpp", *sys.argv[1:]]
runpy.run_module("rpp_cli", run_name="__main__")
"""


@pytest.mark.parametrize("name", ["eval", "check", "check-fail", "compare", "meta", "levels",
                                  "subtopics"])
def test_c_libraries_load_before_rpp_starts_a_thread(name):
    """A thread that first touches a C library loaded after it started gets its thread-local
    storage then, and glibc ends the process (127, "cannot allocate memory for thread-local
    data") if memory is short: every C extension rpp's work needs (pytrec_eval's C++, numpy's
    random, scipy's special functions) is loaded before rpp starts a thread, whether or not
    that thread still runs when the library loads (OpenBLAS held to one, as under a limit)."""
    more = {"compare": ["compare", "-j", "2", "--test", "wilcoxon", QRELS, *RUNS],
            "meta": ["meta", "-j", "2", "--samples", "20", QRELS, *RUNS],
            "levels": ["levels", "-j", "2", QRELS, *RUNS[:2]],
            "subtopics": ["eval", "-j", "2", "--subtopics", str(DEMO / "qrels.subtopics"),
                          QRELS, *RUNS]}
    args = more.get(name) or [*COMMANDS[name][:1], "-j", "2", *COMMANDS[name][1:]]
    res = subprocess.run([sys.executable, "-c", _EXTENSIONS_AFTER_THREADS, *args],
                         capture_output=True, timeout=120, env=_env(OPENBLAS_NUM_THREADS="1"))
    assert res.returncode in (0, 1), res.stderr.decode()[-2000:]
    assert b"loaded after a thread started" not in res.stderr, res.stderr.decode()


_BLAS_BUFFER = """
import sys
import numpy  # noqa: F401 (what numpy itself maps is not the buffer)
import rpp_cli.__main__ as entry
def mapped() -> int:
    with open("/proc/self/status") as status:
        return next(int(l.split()[1]) for l in status if l.startswith("VmSize")) * 1024
entry._memory = entry._load_memory()
entry._one_blas_thread()
entry._load_cli(sys.argv[1] == "limited")
before = mapped()
square = numpy.ones((2, 2))
square @ square
print(mapped() - before)
"""


def test_openblas_maps_its_buffer_while_rpp_loads_under_a_limit():
    """Under a limit the CLI has OpenBLAS map its 32 MB work buffer while it loads (fd 2 held
    back): a first matrix product late in a command, near its peak, that cannot map it has
    OpenBLAS print "Memory allocation still failed ... giving up" before rpp's own line. After
    loading, a product maps nothing more; loaded without a limit, the first product maps it."""
    def grown(how: str) -> int:
        res = _limited([sys.executable, "-c", _BLAS_BUFFER, how], CEILING,
                       env=_env(OPENBLAS_NUM_THREADS="1"))
        assert res.returncode == 0, res.stderr.decode()[-2000:]
        return int(res.stdout)
    assert grown("limited") < MB
    assert grown("free") >= 16 * MB

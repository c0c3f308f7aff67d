"""How shards of work run: one interface, ``imap(fn, shards)``, results in shard order.

A shard's function is pure (arrays in, arrays or text out), so the same code runs inline, on
threads, in forked worker processes or on a Dask cluster, and the bytes out do not depend on
which. ``shards`` is any sequence; a :class:`Lazy` one builds shard i only when it is taken,
so a forked worker builds its own shards from the data it inherited (nothing is pickled on
the way in) and the parent never holds every shard at once (local engines; the Dask engine
builds and sends every shard when it submits them).

One engine serves a whole command: :func:`session` sets it up from ``-j`` and ``--dask`` (or
``RPP_DASK``; ``--dask-timeout`` or ``RPP_DASK_TIMEOUT`` bound its waits), :func:`current` hands
it to the code that shards work. ``RPP_SHARD_QUERIES`` forces the queries per shard (tests use
it to prove that the shard size changes no byte).
"""
from __future__ import annotations

import errno
import functools
import math
import os
import pickle
import signal
import sys
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe, wait
from typing import Callable, ContextManager, Iterator, Protocol, Sequence, TypeVar

import numpy as np

from ..errors import ASCII_DECIMAL, EXIT_WORKER_DIED, InputError
from ..progress import progress
from .threads import default_jobs, map_ordered

T = TypeVar("T")
U = TypeVar("U")

SHARD_ENV = "RPP_SHARD_QUERIES"  # force the queries per shard (tests, experiments)
DASK_ENV = "RPP_DASK"  # default of --dask (CI: run every command on a cluster)
DASK_TIMEOUT_ENV = "RPP_DASK_TIMEOUT"  # default of --dask-timeout
MAX_DASK_TIMEOUT = 86_400  # s: --dask-timeout's largest value (a day)
SHARDS_PER_WORKER = 4  # more shards than workers: an uneven shard does not idle the others
MIN_SHARD_WORK = 20_000  # rows (or level pairs) a shard should have: below, a fork costs more
MAX_SHARD_WORK = 1 << 20  # rows (or levels) a shard should not pass: a shard's Python objects
# (pytrec_eval is given dicts of its rows) are then tens of MB, whatever the collection


class WorkerDied(InputError):
    """A worker process (or Dask worker) died while it held a shard: never a hang."""

    def __init__(self, message: str) -> None:
        super().__init__(message, exit_code=EXIT_WORKER_DIED)


class Engine(Protocol):
    """Runs a pure function over shards; ``workers`` is how many run at once."""

    workers: int

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` of every shard, yielded in shard order."""


class Lazy(Sequence):
    """``size`` shards built on demand by ``build(i)`` (in the worker that runs shard i)."""

    def __init__(self, size: int, build: Callable[[int], object]) -> None:
        self.size, self.build = size, build

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, i):  # type: ignore[override]
        if not 0 <= i < self.size:
            raise IndexError(i)
        return self.build(i)


class Inline:
    """Every shard in the calling thread, one after the other (``-j 1``)."""

    workers = 1

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` in order, in this thread."""
        made = (fn(shards[i]) for i in range(len(shards)))
        return progress(made, label, length=len(shards)) if label else made


@dataclass
class Threads:
    """Shards on a pool of threads: for work that releases the GIL (the C kernel)."""

    workers: int

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` on ``workers`` threads; the lowest failing shard's error is raised."""
        return iter(map_ordered(lambda i: fn(shards[i]), len(shards), self.workers, label))


@dataclass
class Processes:
    """Shards in forked worker processes: each inherits everything read so far (forked at
    every ``imap``, after reading), takes shard indexes over a pipe and sends results back.

    A worker that dies (SIGKILL, out of memory) closes its pipe: the parent sees it at once
    and raises :class:`WorkerDied` naming its pid, shard and signal. Workers ignore SIGINT
    and are killed when the parent stops for any reason (Ctrl-C included); they end with
    ``os._exit``, so nothing the parent buffered is written twice.
    """

    workers: int

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` in up to ``workers`` processes, yielded in shard order; at most
        2 x workers results wait for an earlier shard (bounded memory)."""
        n = len(shards)
        if self.workers < 2 or n < 2:
            return Inline().imap(fn, shards, label)
        out = self._run(fn, shards, min(self.workers, n))
        return progress(out, label, length=n) if label else out

    def write_ordered(self, fn: Callable[[T], bytes], shards: Sequence[T], fd: int,
                      label: str | None = None) -> None:
        """Write ``fn(shard)`` of every shard to ``fd``, in shard order, from the workers
        themselves: a worker that has made its bytes writes them when the parent says it is
        their turn, so the output never passes through the parent (one writer at a time,
        each write whole). A failed write (a reader gone, a full disk) is raised here as the
        worker met it; a worker that dies is WorkerDied."""
        n = len(shards)
        if self.workers < 2 or n < 2:
            for data in Inline().imap(fn, shards, label):
                write_all(functools.partial(os.write, fd), data)
            return
        done = self._run(fn, shards, min(self.workers, n), fd)
        for _ in progress(done, label, length=n) if label else done:
            pass

    def _run(self, fn: Callable[[T], U], shards: Sequence[T], n_workers: int,
             fd: int | None = None) -> Iterator[U]:
        """Fork the workers and yield the results in shard order; with ``fd``, each worker
        writes its result there when it is the next to be written, and None is yielded."""
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # a forked child must not inherit unwritten output
        n = len(shards)
        done: dict[int, U] = {}
        # parent's end -> (pid, shard, whether it is writing that shard)
        busy: dict[Connection, tuple[int, int, bool]] = {}
        idle: list[tuple[Connection, int]] = []
        pids: list[int] = []
        failed: dict[int, BaseException] = {}
        following, given = 0, 0  # next shard to yield, next shard to hand out

        ready: dict[int, tuple[Connection, int]] = {}  # made, not yet written (fd only)
        writing = False  # a worker is writing shard ``following`` (fd only)

        def hand_out() -> None:
            nonlocal given, writing
            while idle and given < min(n, following + 2 * n_workers) and not failed:
                conn, pid = idle.pop()
                _send(conn, pid, given, n)
                busy[conn] = (pid, given, False)
                given += 1
            if fd is not None and not writing and following in ready and not failed:
                conn, pid = ready.pop(following)
                _send(conn, pid, following, n, turn=True)  # write shard ``following`` now
                busy[conn] = (pid, following, True)
                writing = True

        try:
            for _ in range(n_workers):
                pid, conn = _fork_worker(fn, shards, [c for c, _ in idle], fd)
                pids.append(pid)
                idle.append((conn, pid))
            hand_out()
            while busy:
                for conn in wait(list(busy)):
                    pid, shard, turn = busy.pop(conn)
                    i, ok, payload = _receive(conn, pid, shard, n, turn)
                    if not ok:
                        failed[i] = payload
                    elif fd is None:
                        done[i] = payload
                    elif payload == _WRITTEN:
                        done[i], writing = None, False
                    else:  # made: its worker holds it (neither idle nor busy) until its turn
                        ready[i] = (conn, pid)
                        continue
                    idle.append((conn, pid))
                while following in done and not failed:
                    yield done.pop(following)
                    following += 1
                hand_out()
            if failed:
                raise failed[min(failed)]
        finally:
            for conn in [*busy, *(c for c, _ in idle), *(c for c, _ in ready.values())]:
                conn.close()  # a worker waiting for a shard reads EOF and exits
            for pid in pids:
                _reap(pid)


_MADE, _WRITTEN = "made", "written"  # a sink worker's replies: its shard made, then written


def write_all(write: Callable[[memoryview], int | None], data: bytes) -> None:
    """Every byte of ``data`` through ``write`` (``os.write`` on a descriptor, or a file's
    write: under ``python -u`` stdout's buffer is a raw file), which may take part of them; a
    non-blocking one with no room is an error, not a spin."""
    view = memoryview(data)
    while view:
        taken = write(view)
        if taken is None:
            raise BlockingIOError(errno.EAGAIN, "output would block")
        view = view[taken:]


def _fork_worker(fn: Callable, shards: Sequence, siblings: list[Connection],
                 fd: int | None = None) -> tuple[int, Connection]:
    """Fork one worker serving shard indexes over a pipe; its pid and the parent's end. The
    worker closes the parent's ends of its ``siblings``' pipes, so each pipe has one reader.
    With ``fd`` it is a sink worker: it says when a shard is made, keeps its bytes, and
    writes them to ``fd`` when the parent sends ``-1 - shard`` (its turn)."""
    parent, child = Pipe()
    me = os.getpid()
    # Ctrl-C waits until the fork is done: arriving during the fork's at-fork hooks (logging
    # registers some), its exception would be "ignored" there and the command run on.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pid = os.fork()
    except BaseException as err:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        if isinstance(err, OSError) and err.errno in (errno.EAGAIN, errno.ENOMEM):
            raise MemoryError(f"cannot start a worker process: {err.strerror}") from err
        raise
    if pid == 0:  # the worker: never returns
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for conn in (parent, *siblings):
            conn.close()
        _die_with(me)
        _ENGINE[:] = [Inline()]  # work a shard itself shards runs here, inline
        status = 0
        made: dict[int, bytes] = {}  # a sink worker's shards, made and not yet written
        try:
            while True:
                i = child.recv()
                if i is None:
                    break
                try:
                    if i < 0:  # a sink worker's turn to write shard -1 - i
                        i = -1 - i
                        write_all(functools.partial(os.write, fd), made.pop(i))
                        reply = (i, True, _WRITTEN)
                    elif fd is None:
                        reply = (i, True, fn(shards[i]))
                    else:
                        made[i] = fn(shards[i])
                        reply = (i, True, _MADE)
                except BaseException as err:  # noqa: BLE001 - the parent re-raises it
                    reply = (i, False, _portable(err))
                child.send(reply)
        except (EOFError, OSError):  # the parent has gone
            status = 1
        finally:
            os._exit(status)
    signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C held back is raised now
    child.close()
    return pid, parent


def _die_with(parent: int) -> None:
    """Linux: have the kernel kill this worker when its parent dies (SIGTERM, SIGKILL of
    rpp), so no worker outlives the command; elsewhere the closed pipe ends it later."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _portable(err: BaseException) -> BaseException:
    """``err`` if it survives pickling, else a RuntimeError with its text."""
    try:
        pickle.loads(pickle.dumps(err))
        return err
    except Exception:  # noqa: BLE001 - any pickling failure
        return RuntimeError(f"{type(err).__name__}: {err}")


def _send(conn: Connection, pid: int, shard: int, n: int, turn: bool = False) -> None:
    """Give a worker its next shard (``turn``: tell it to write the shard it made); its death
    (the pipe closed) is WorkerDied, naming it."""
    try:
        conn.send(-1 - shard if turn else shard)
    except OSError:  # BrokenPipeError: the worker died since its last reply
        raise _died(pid, shard, n) from None


def _receive(conn: Connection, pid: int, shard: int, n: int, writing: bool = False
             ) -> tuple[int, bool, object]:
    """A worker's reply; its death (the pipe closed first) is WorkerDied, naming it
    (``writing``: it had its turn to write ``shard``)."""
    try:
        return conn.recv()
    except (EOFError, OSError):
        raise _died(pid, shard, n, writing) from None


def _died(pid: int, shard: int, n: int, writing: bool = False) -> WorkerDied:
    """The error for worker ``pid``, dead while it held (or was being given) ``shard``, or
    while it wrote it: then part of it may be out, its last line cut short."""
    _, status = os.waitpid(pid, 0)
    if writing:
        return WorkerDied(f"worker process {pid} died ({_status_text(status)}) while writing "
                          f"shard {shard + 1} of {n}: the output stops within that shard's "
                          "lines, its last line may be cut short")
    return WorkerDied(f"worker process {pid} died ({_status_text(status)}) while working "
                      f"on shard {shard + 1} of {n}; nothing was written for it")


def _status_text(status: int) -> str:
    """``killed by signal 9 (SIGKILL)`` or ``exit status N`` from a waitpid status."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = "?"
        return f"killed by signal {sig} ({name})"
    return f"exit status {os.WEXITSTATUS(status)}"


def _reap(pid: int) -> None:
    """Kill a worker if it still runs and collect it (no zombie, no orphan)."""
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass


# --- shard sizes ---------------------------------------------------------------------------

def forced_shard_size() -> int | None:
    """Queries per shard from ``RPP_SHARD_QUERIES`` (None: not set); a bad value is an error."""
    text = os.environ.get(SHARD_ENV)
    if not text:
        return None
    if not (text.isascii() and text.isdigit()) or int(text) < 1:  # not ² nor ١
        raise InputError(f"{SHARD_ENV}='{text}': expected a positive number of queries")
    return int(text)


def query_shards(weights: np.ndarray, workers: int,
                 max_work: float | None = MAX_SHARD_WORK) -> np.ndarray:
    """Boundaries (S + 1,) of contiguous query shards: ``RPP_SHARD_QUERIES`` queries each if
    set; else about SHARDS_PER_WORKER shards per worker of equal total ``weight`` (work per
    query: rows, level pairs), each of at least MIN_SHARD_WORK (one shard for small work), and
    more where that leaves more than ``max_work`` to a shard (None: work whose memory does not
    grow with the shard's)."""
    n = len(weights)
    size = forced_shard_size()
    if size is not None:
        return np.unique(np.append(np.arange(0, n, size), n))
    total = np.cumsum(weights, dtype=np.float64)
    count = min(n, SHARDS_PER_WORKER * workers, int(total[-1] // MIN_SHARD_WORK) if n else 0)
    if workers < 2:
        count = 1
    if max_work is not None:
        count = min(n, max(count, -int(-total[-1] // max_work) if n else 0))
    if count < 2:
        return np.array([0, n])
    cuts = np.searchsorted(total, total[-1] * np.arange(1, count) / count, side="right")
    return np.unique(np.concatenate(([0], cuts, [n])))


# --- the engine of this command ------------------------------------------------------------

_ENGINE: list[Engine] = []  # the active engine (a stack of one; empty: Inline)


def current() -> Engine:
    """The engine of the command being run (Inline outside :func:`session`)."""
    return _ENGINE[-1] if _ENGINE else Inline()


def writers() -> Engine:
    """The engine that formats the command's output and writes it: forked workers of this
    machine that write their shards to stdout themselves, as many as the command's (``-j N``,
    or a local Dask cluster's size); inline otherwise (on threads, formatting would hold the
    GIL by turns, and a remote cluster's workers would send the text over the network)."""
    engine = current()
    here = isinstance(engine, Processes) or getattr(engine, "on_this_machine", False)
    return Processes(engine.workers) if here and hasattr(os, "fork") else Inline()


def local_engine(jobs: int) -> Engine:
    """``-j N``: forked processes where the platform forks, threads elsewhere; inline for 1."""
    if jobs < 2:
        return Inline()
    return Processes(jobs) if hasattr(os, "fork") else Threads(jobs)


def dask_timeout() -> float | None:
    """Seconds from ``RPP_DASK_TIMEOUT`` (None: not set); a bad value is an error, as the
    option's would be."""
    text = os.environ.get(DASK_TIMEOUT_ENV)
    if not text:
        return None
    value = float(text) if ASCII_DECIMAL.fullmatch(text) else math.nan
    if not 0 < value <= MAX_DASK_TIMEOUT:  # NaN and inf fail too
        raise InputError(f"{DASK_TIMEOUT_ENV}='{text}': expected a number of seconds above 0, "
                         f"at most {MAX_DASK_TIMEOUT:g}")
    return value


@contextmanager
def session(jobs: int, dask: str | None = None,
            timeout: float | None = None) -> Iterator[Engine]:
    """The engine for one command: Dask at ``dask`` (or ``$RPP_DASK``), else local with
    ``jobs`` workers; a cluster it started is closed at the end. ``timeout`` (default
    ``$RPP_DASK_TIMEOUT``, else 10): seconds Dask may take to connect and show a worker."""
    address = dask if dask is not None else os.environ.get(DASK_ENV) or None
    if address is None:
        context: ContextManager[Engine] = nullcontext(local_engine(jobs))
    else:
        from .dask import DEFAULT_TIMEOUT, connect

        if timeout is None:
            timeout = dask_timeout() or DEFAULT_TIMEOUT
        context = connect(address, f"--dask {address}" if dask is not None
                          else f"{DASK_ENV}={address}", timeout)
    with context as engine:
        _ENGINE.append(engine)
        try:
            yield engine
        finally:
            _ENGINE.pop()


def abandon() -> None:
    """Undo what the engine left on disk (a local cluster's temporary folder), for an exit
    that skips its close: Ctrl-C's, once the workers are killed."""
    for engine in _ENGINE:
        getattr(engine, "abandon", lambda: None)()

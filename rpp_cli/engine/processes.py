"""Shards in forked worker processes (``-j N`` where the platform forks).

Each imap forks its workers, which inherit everything read so far, take shard indexes over a
pipe and send results back (or write them to stdout themselves, in order). The ``-j N``
workers are slots shared by the imaps of the command: imaps may run side by side in threads
(the measure families of ``rpp eval``), and one that starts while another holds every slot
waits for the first slot given back. An imap gives a slot back as soon as it has no shard
left to hand out, so the next one's first shards run beside the other's last.
"""
from __future__ import annotations

import errno
import functools
import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, Pipe, wait
from typing import Callable, Iterator, Sequence, TypeVar

from . import base
from .base import Inline, WorkerDied
from ..memory import release_free_memory
from ..progress import progress

T = TypeVar("T")
U = TypeVar("U")

POLL = 0.02  # s between looks for a free slot while an imap has fewer workers than it may
_FORKS = threading.RLock()  # one fork at a time: no child inherits a pipe being set up
# (reentrant: a generator finalized while this thread forks may close its pipes)
_PARENT_ENDS: set[Connection] = set()  # the parent's end of every live worker's pipe (every
# imap, every thread): a new worker closes them all, so each pipe has one reader
_DEPTH = threading.local()  # imaps running in each thread: an inner one takes no slot


@dataclass
class Processes:
    """Shards in forked worker processes: each inherits everything read so far (forked at
    every ``imap``, after reading), takes shard indexes over a pipe and sends results back.

    A worker that dies (SIGKILL, out of memory) closes its pipe: the parent sees it at once
    and raises :class:`WorkerDied` naming its pid, shard and signal. Workers ignore SIGINT
    and are killed when the parent stops for any reason (Ctrl-C included); they end with
    ``os._exit``, so nothing the parent buffered is written twice. At most ``workers`` run
    at once over every imap of this engine, whatever the threads that call them.
    """

    workers: int
    slots: threading.Semaphore = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        """The engine's slots: one per worker, shared by its imaps."""
        self.slots = threading.Semaphore(self.workers)

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` in up to ``workers`` processes, yielded in shard order; at most
        2 x workers results wait for an earlier shard (bounded memory)."""
        n = len(shards)
        if self.workers < 2 or n < 2:
            out = Inline().imap(fn, shards)
        else:
            out = self._run(fn, shards, min(self.workers, n))
        return _one_bar(out, label, n) if label else out

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
        writes its result there when it is the next to be written, and None is yielded.
        Workers are forked as slots allow (the first waits for one), and end as soon as no
        shard is left to hand out, giving their slots back."""
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # a forked child must not inherit unwritten output
        release_free_memory()  # the heap's free pages: each worker would count them again
        n = len(shards)
        done: dict[int, U] = {}
        # parent's end -> (pid, shard, whether it is writing that shard)
        busy: dict[Connection, tuple[int, int, bool]] = {}
        idle: list[tuple[Connection, int]] = []
        pids: list[int] = []  # this imap's live workers
        failed: dict[int, BaseException] = {}
        following, given = 0, 0  # next shard to yield, next shard to hand out
        ready: dict[int, tuple[Connection, int]] = {}  # made, not yet written (fd only)
        writing = False  # a worker is writing shard ``following`` (fd only)
        running = _DEPTH.__dict__.setdefault("running", [0])  # this thread's imaps
        outer = running[0] == 0  # an imap inside another's loop takes no slot: no deadlock
        held = 0  # slots this imap holds

        def grow() -> None:
            """Fork workers while this imap may have more and a slot is free."""
            nonlocal held
            while len(pids) < n_workers and given < n and not failed:
                if outer:
                    if not self.slots.acquire(blocking=not pids):
                        return
                    held += 1
                pid, conn = _fork_worker(fn, shards, fd)
                pids.append(pid)
                idle.append((conn, pid))

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

        def retire() -> None:
            """End the idle workers once no shard is left to hand out."""
            nonlocal held
            while idle and given >= n:  # nothing left to hand out: end it, give its slot back
                conn, pid = idle.pop()
                _close(conn)
                _reap(pid)
                pids.remove(pid)
                if outer:
                    self.slots.release()
                    held -= 1

        running[0] += 1
        try:
            grow()
            hand_out()
            while busy:
                short = outer and len(pids) < n_workers and given < n
                for conn in wait(list(busy), POLL if short else None):
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
                grow()
                hand_out()
                retire()
            if failed:
                raise failed[min(failed)]
        finally:
            running[0] -= 1  # (the counter of the thread that started it, whoever ends it)
            for conn in [*busy, *(c for c, _ in idle), *(c for c, _ in ready.values())]:
                _close(conn)  # a worker waiting for a shard reads EOF and exits
            for pid in pids:
                _reap(pid)
            if held:
                self.slots.release(held)


_MADE, _WRITTEN = "made", "written"  # a sink worker's replies: its shard made, then written
_BAR = threading.Lock()  # held by the imap whose progress bar the terminal shows


def _one_bar(items: Iterator[U], label: str, n: int) -> Iterator[U]:
    """``items`` with a progress bar under ``label`` (:func:`~rpp_cli.progress.progress`),
    unless an imap side by side draws one: the terminal shows one bar at a time."""
    if not _BAR.acquire(blocking=False):
        yield from items
        return
    try:
        yield from progress(items, label, length=n)
    finally:
        _BAR.release()


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


def _close(conn: Connection) -> None:
    """Close the parent's end of a worker's pipe (the worker reads EOF)."""
    with _FORKS:
        _PARENT_ENDS.discard(conn)
    conn.close()


def _fork_worker(fn: Callable, shards: Sequence, fd: int | None = None
                 ) -> tuple[int, Connection]:
    """Fork one worker serving shard indexes over a pipe; its pid and the parent's end. The
    worker closes the parent's end of every other worker's pipe (of any imap, any thread),
    so each pipe has one reader. With ``fd`` it is a sink worker: it says when a shard is
    made, keeps its bytes, and writes them to ``fd`` when the parent sends ``-1 - shard``
    (its turn)."""
    me = os.getpid()
    with _FORKS:
        parent, child = Pipe()
        # Ctrl-C waits until the fork is done: arriving during the fork's at-fork hooks
        # (logging registers some), its exception would be "ignored" there and the command
        # run on.
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            pid = os.fork()
        except BaseException as err:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            parent.close()
            child.close()
            if isinstance(err, OSError) and err.errno in (errno.EAGAIN, errno.ENOMEM):
                raise MemoryError(f"cannot start a worker process: {err.strerror}") from err
            raise
        if pid == 0:  # the worker: never returns
            _serve(fn, shards, fd, child, [parent, *_PARENT_ENDS], mask, me)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C held back is raised now
        child.close()
        _PARENT_ENDS.add(parent)
    return pid, parent


def _serve(fn: Callable, shards: Sequence, fd: int | None, child: Connection,
           others: list[Connection], mask, parent: int) -> None:
    """A worker's life: shard indexes in, results (or a sink worker's writes) out, until
    the parent closes its end; ends with ``os._exit``, whatever is raised, so that a worker
    never returns into the parent's code. An error of its set-up (out of memory, mostly) is
    the reply to its first shard."""
    status = 0
    made: dict[int, bytes] = {}  # a sink worker's shards, made and not yet written
    try:
        broken: BaseException | None = None
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            for conn in others:
                conn.close()
            _die_with(parent)
            base._ENGINE[:] = [Inline()]  # work a shard itself shards runs here, inline
        except BaseException as err:  # noqa: BLE001 - the parent raises it for a shard
            broken = err
        while True:
            i = child.recv()
            if i is None:
                break
            try:
                if broken is not None:
                    raise broken
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

"""Shards on a Dask cluster (``--dask ADDRESS``, ``--dask local[:N]``; extra ``rpp-cli[dask]``).

Each shard travels as the bytes of ``(fn, shard)`` (cloudpickle: closures and numpy arrays),
so workers need rpp installed, nothing else: no path has to be readable on them. Results come
back in shard order. A worker that dies while it holds a shard ends the command with
:class:`~rpp_cli.engine.WorkerDied` naming it: the LocalCluster rpp starts lets no task be
retried after a death; on your own cluster the scheduler's ``allowed-failures`` decides how
often Dask re-runs a dead worker's shards elsewhere before it gives up.

Nothing waits without end (``--dask-timeout``, ``RPP_DASK_TIMEOUT``): connecting to a
scheduler (the TCP connection, Dask's handshake, its first reply) and its first worker must
come within the timeout, and a cluster left without workers while shards are outstanding
ends the command when none has joined within it.

``local[:N]`` starts its cluster before the runs are read: where the platform forks, its
worker processes are forks of rpp (Dask's ``multiprocessing-method: fork``), which have Dask,
numpy and rpp loaded already, instead of fresh interpreters that load them all. Forked
before reading, they share little with rpp: forked after it, they would keep alive every page
rpp frees or rewrites later (bench/LOG.md has the measurements).
"""
from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import re
import shutil
import signal
import tempfile
import time
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..errors import InputError
from ..progress import progress
from . import WorkerDied

INSTALL = "pip install 'dask[distributed]'"
DEFAULT_TIMEOUT = 10.0  # s: --dask-timeout's default
POLL = 0.5  # s between looks at the cluster's workers while a shard is outstanding
_LOCAL = re.compile(r"local(?::([0-9]+))?")
_LOCAL_LIKE = re.compile(r"local(:.*)?")  # local:-1, local:four: not a host's address
MAX_LOCAL_WORKERS = 256  # as -j: local:99999999 forked workers until memory ran out
# Descriptors a LocalCluster of N workers needs: those open before it, plus FDS_BASE, plus
# FDS_PER_WORKER each. Each fork inherits the parent's descriptors, so the last worker holds
# about as many as the parent. local:N started every time from a limit of 21 + 10.5 N on (3
# of them open before); a few below, Dask looped on EMFILE without end: hence a margin.
FDS_BASE, FDS_PER_WORKER = 24, 11
_QUIET = ("distributed", "tornado", "asyncio")  # loggers of a local cluster's machinery


def _require() -> None:
    """One line saying how to install Dask when it is missing (found, not imported)."""
    if any(importlib.util.find_spec(name) is None for name in ("cloudpickle", "distributed")):
        raise InputError(f"--dask needs dask.distributed: {INSTALL}")


def _imported() -> tuple[Any, Any]:
    """The dask and distributed modules; an install that is found but broken is the same
    one-line error as a missing one."""
    try:
        import dask
        import distributed
    except ImportError as err:
        raise InputError(f"--dask needs dask.distributed: {INSTALL} ({err})") from None
    return dask, distributed


@dataclass
class DaskEngine:
    """Shards as tasks of a ``distributed.Client``; ``workers`` is the cluster's size. A
    cluster with no worker for ``timeout`` s while a shard is outstanding is WorkerDied
    (``named``: how the message names the cluster)."""

    client: Any  # a distributed.Client
    workers: int
    on_this_machine: bool = False  # a LocalCluster: the output is written by local forks
    named: str = "--dask"
    timeout: float = DEFAULT_TIMEOUT
    scratch: str | None = None  # a LocalCluster's private temporary folder

    def imap(self, fn: Callable, shards: Sequence, label: str | None = None) -> Iterator:
        """``fn(shard)`` of every shard on the cluster, yielded in shard order. The shards'
        bytes travel inside the tasks, so that a task lost with its worker is a KilledWorker
        (scattered data would be lost with it); Dask's warning about large graphs is
        silenced: rpp's shards are large by design."""
        import cloudpickle

        payloads = [cloudpickle.dumps((fn, shards[i])) for i in range(len(shards))]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Sending large graph")
            futures = self.client.map(_call, payloads, pure=False)
        del payloads
        out = self._gather(futures)
        return progress(out, label, length=len(futures)) if label else out

    def abandon(self) -> None:
        """End a local cluster at once, for an exit that skips its close (Ctrl-C's): its
        nannies restart no worker from here on (they would fork new ones, which write their
        folders into the removed one and outlive rpp), every child of rpp is killed, and the
        cluster's temporary folder is removed."""
        if self.scratch is None:
            return
        from distributed.core import Status

        for nanny in getattr(self.client.cluster, "workers", {}).values():
            nanny.status = Status.closing  # a closing nanny restarts no worker that ends
        _kill_children()
        shutil.rmtree(self.scratch, ignore_errors=True)

    def _gather(self, futures: list) -> Iterator:
        from distributed.scheduler import KilledWorker

        try:
            for i, future in enumerate(futures):
                try:
                    yield self._result(future, i, len(futures))
                except KilledWorker as err:
                    where = re.search(r"\w+://\S*:\d+", str(err))
                    raise WorkerDied(f"Dask worker {where.group() if where else '?'} died "
                                     f"while working on shard {i + 1} "
                                     f"of {len(futures)}") from None
        finally:
            self.client.cancel(futures)

    def _result(self, future: Any, i: int, n: int) -> Any:
        """``future``'s result, waited for while the cluster has workers: none for
        ``timeout`` s (every worker gone, none joined) is WorkerDied, as is a scheduler that
        stops answering."""
        from distributed import wait

        empty_since: float | None = None
        while not future.done():
            try:
                wait([future], timeout=POLL)
                break
            except (TimeoutError, asyncio.TimeoutError):  # one class from Python 3.11 on
                pass
            try:
                workers = len(self.client.nthreads())
            except (OSError, TimeoutError, asyncio.TimeoutError) as err:
                raise WorkerDied(f"{self.named}: the scheduler stopped answering while shard "
                                 f"{i + 1} of {n} was outstanding ({_reason(err)})") from None
            now = time.monotonic()
            if workers:
                empty_since = None
            elif empty_since is None:
                empty_since = now
            elif now - empty_since >= self.timeout:
                raise WorkerDied(f"{self.named}: every Dask worker left the scheduler while "
                                 f"shard {i + 1} of {n} was outstanding, and none joined "
                                 f"within {self.timeout:g} s")
        return future.result()


def _call(payload: bytes):
    """Run one shard on a worker: ``fn(shard)`` from the bytes the client sent. Work that the
    shard itself shards runs inline there (a forked worker inherited rpp's engine, whose
    client it must not use)."""
    import cloudpickle

    from . import _ENGINE, Inline

    _ENGINE[:] = [Inline()]
    fn, shard = cloudpickle.loads(payload)
    return fn(shard)


def _reason(err: BaseException) -> str:
    """``Type: text`` of ``err``, and of the deepest error that caused it when there is one:
    the reason that a wrapper ("Nanny failed to start.") leaves out."""
    root, seen = err, {id(err)}
    while True:
        cause = root.__cause__ or (None if root.__suppress_context__ else root.__context__)
        if cause is None or id(cause) in seen:
            break
        root = cause
        seen.add(id(root))
    return ": ".join(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__
                     for e in dict.fromkeys([err, root]))


def _quiet(stack: ExitStack, names: Sequence[str]) -> None:
    """Silence these loggers (and their children) until ``stack`` closes: Dask's errors are
    rpp's one-line messages, never a flood of tracebacks on stderr."""
    for name in names:
        logger = logging.getLogger(name)
        stack.callback(logger.setLevel, logger.level)
        logger.setLevel(logging.CRITICAL + 1)


def _open_descriptors() -> int:
    """How many descriptors this process has open (Linux, macOS: /dev/fd, less the one that
    lists it; 3 elsewhere)."""
    try:
        return len(os.listdir("/dev/fd")) - 1
    except OSError:
        return 3


def _descriptors(n: int, stack: ExitStack, named: str) -> None:
    """Make room for a LocalCluster of ``n`` workers under RLIMIT_NOFILE: the soft limit is
    raised toward the hard one when that is enough (and put back when ``stack`` closes), else
    one line: below it, Dask's start failed, or looped on EMFILE without end."""
    try:
        import resource
    except ImportError:  # no such limit (Windows)
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    now = _open_descriptors()
    need = now + FDS_BASE + FDS_PER_WORKER * n
    if soft == resource.RLIM_INFINITY or soft >= need:
        return
    try:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise ValueError("hard limit")
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))
    except (ValueError, OSError):  # or the system's own maximum is lower (macOS)
        top = soft if hard == resource.RLIM_INFINITY else hard
        fit = (top - now - FDS_BASE) // FDS_PER_WORKER
        hint = f"local:{fit} fits, or raise it" if fit >= 1 else "raise it"
        workers = f"{n} local workers need" if n > 1 else "1 local worker needs"
        raise InputError(f"{named}: {workers} {need} open files ({now} open now + {FDS_BASE} "
                         f"+ {FDS_PER_WORKER} a worker), more than the limit of {top} "
                         f"(ulimit -n): {hint}") from None
    stack.callback(resource.setrlimit, resource.RLIMIT_NOFILE, (soft, hard))


def _kill_children() -> None:
    """SIGKILL every child process of rpp (Linux's /proc; elsewhere none are found) and reap
    them, so that none outlives an exit that skips the cluster's close, not even as a zombie."""
    me = str(os.getpid())
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    killed = []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as stat:
                fields = stat.read().rsplit(b")", 1)[1].split()
            if fields[1].decode() == me:  # the parent's pid
                os.kill(int(entry), signal.SIGKILL)
                killed.append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    for pid in killed:
        try:
            os.waitpid(pid, 0)
        except OSError:  # reaped already (a thread of rpp's waited for it)
            pass


def _scratch(dask: Any, stack: ExitStack) -> str:
    """A private temporary folder for the cluster's workers (Dask's ``dask-scratch-space``
    with its lock files), removed when ``stack`` closes (Ctrl-C: DaskEngine.abandon)."""
    path = tempfile.mkdtemp(prefix="rpp-dask-")
    stack.callback(shutil.rmtree, path, ignore_errors=True)
    stack.enter_context(dask.config.set({"temporary-directory": path}))
    return path


def _start_local(modules: tuple[Any, Any], n: int, stack: ExitStack, named: str) -> Any:
    """A client of a new LocalCluster of ``n`` worker processes, closed by ``stack``: forks of
    rpp where the platform forks (spawned interpreters elsewhere), started with SIGINT blocked
    so that they never take Ctrl-C, which is rpp's to handle (as ``-j``'s workers ignore it;
    they end when rpp does). A dead worker is an error at once (no silent re-run), and so is
    a cluster that does not start (with the reason Dask gives); Dask's own warnings (a busy
    dashboard port, large payloads) and its logs (a heartbeat that meets the scheduler
    closing, a loop that meets EMFILE) stay out of rpp's stderr."""
    dask, distributed = modules
    _descriptors(n, stack, named)
    _quiet(stack, _QUIET)  # a worker's death is our one-line error, not a log
    stack.enter_context(dask.config.set({  # for the session: a restarted worker forks too
        "distributed.scheduler.allowed-failures": 0,
        "distributed.worker.multiprocessing-method": "fork" if hasattr(os, "fork") else "spawn"}))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})  # the cluster's threads,
    try:  # and the workers they fork, inherit it
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cluster = stack.enter_context(distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.CRITICAL))
            return stack.enter_context(distributed.Client(cluster, direct_to_workers=True))
    except Exception as err:  # noqa: BLE001 - whatever stopped it, one line
        raise WorkerDied(f"{named}: the local cluster did not start ({_reason(err)})") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C held back is raised now


def _hello(address: str, named: str, timeout: float) -> None:
    """Connect to ``address`` and exchange Dask's handshake once, within ``timeout`` s, on a
    loop of this thread: ``distributed.Client`` bounds the TCP connection but not the
    handshake (an HTTP server, the dashboard, never answers it) and allocates whatever length
    a server's first 8 bytes say (an SSH banner's: MemoryError)."""
    from distributed.comm import connect as handshake
    from distributed.comm.core import CommClosedError, FatalCommClosedError
    from distributed.security import Security

    args = Security().get_connection_args("client")

    async def hello() -> None:
        comm = await handshake(address, timeout=timeout, **args)
        await comm.close()

    loop = asyncio.new_event_loop()
    try:  # a moment after the TCP connection's own deadline: a silent server fails this one,
        # one that cannot be reached the TCP connection's
        loop.run_until_complete(asyncio.wait_for(hello(), timeout + 0.25))
    except (TimeoutError, asyncio.TimeoutError):  # before OSError, TimeoutError's base
        raise InputError(f"{named}: no Dask scheduler answered there within {timeout:g} s: "
                         "is it the scheduler's address (port 8786 by default), not its "
                         "dashboard's (8787)?") from None
    except FatalCommClosedError as err:
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    except CommClosedError:
        raise InputError(f"{named}: not a Dask scheduler (it closed the connection during "
                         "Dask's handshake)") from None
    except (OSError, TypeError) as err:  # TypeError: tls:// with no security configuration
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    except Exception:  # noqa: BLE001 - MemoryError included: not Dask's protocol
        raise InputError(f"{named}: not a Dask scheduler (what answered there does not speak "
                         "Dask's protocol)") from None
    finally:
        loop.close()


def _connect_remote(distributed: Any, address: str, named: str,
                    timeout: float) -> tuple[Any, int]:
    """A client of the scheduler at ``address`` and its number of workers, at least one, all
    within ``timeout`` s; anything else is one line and status 2."""
    from distributed.comm import parse_address, registry

    deadline = time.monotonic() + timeout
    try:
        registry.get_backend(parse_address(address)[0])
    except ValueError as err:
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    _hello(address, named, timeout)
    try:
        client = distributed.Client(address, timeout=max(deadline - time.monotonic(), 0.1))
    except MemoryError:
        raise InputError(f"{named}: not a Dask scheduler (what answered there does not speak "
                         "Dask's protocol)") from None
    except (OSError, TimeoutError, asyncio.TimeoutError, ValueError, TypeError) as err:
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    try:
        client.wait_for_workers(1, timeout=max(deadline - time.monotonic(), 0.1))
        workers = len(client.nthreads())
    except (TimeoutError, asyncio.TimeoutError):  # before OSError, TimeoutError's base
        _close(client)
        raise InputError(f"{named}: the scheduler has no workers (waited {timeout:g} s)"
                         ) from None
    except OSError as err:
        _close(client)
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    return client, max(1, workers)


def _close(client: Any) -> None:
    """Close ``client``; a scheduler slow to answer or gone by then changes nothing (the
    command's output and status are decided)."""
    try:
        client.close()
    except (OSError, TimeoutError, asyncio.TimeoutError):
        pass


@contextmanager
def connect(address: str, named: str | None = None,
            timeout: float = DEFAULT_TIMEOUT) -> Iterator[DaskEngine]:
    """A client of the scheduler at ``address``, or of a LocalCluster of processes that
    ``local[:N]`` starts (N workers, default one per core) and closes at the end. ``named``:
    how messages name the address (``--dask ADDRESS``, or ``RPP_DASK=ADDRESS``); ``timeout``:
    seconds to connect and see a worker, and that a cluster may have none mid-run."""
    named = named or f"--dask {address}"
    _require()
    local = _LOCAL.fullmatch(address)
    if local is None and _LOCAL_LIKE.fullmatch(address):
        raise InputError(f"{named}: expected local or local:N, N workers from 1 to "
                         f"{MAX_LOCAL_WORKERS}")
    if local:
        n = int(local.group(1) or min(os.cpu_count() or 1, MAX_LOCAL_WORKERS))
        if not 1 <= n <= MAX_LOCAL_WORKERS:
            raise InputError(f"{named}: needs from 1 to {MAX_LOCAL_WORKERS} workers")
        modules = _imported()
        with ExitStack() as stack:
            scratch = _scratch(modules[0], stack)
            yield DaskEngine(_start_local(modules, n, stack, named), n, on_this_machine=True,
                             named=named, timeout=timeout, scratch=scratch)
        return
    _, distributed = _imported()
    client, workers = _connect_remote(distributed, address, named, timeout)
    try:
        yield DaskEngine(client, workers, named=named, timeout=timeout)
    finally:
        _close(client)

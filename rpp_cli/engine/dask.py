"""Shards on a Dask cluster (``--dask ADDRESS``, ``--dask local[:N]``; extra ``rpp-cli[dask]``).

Each shard travels as the bytes of ``(fn, shard)`` (cloudpickle: closures and numpy arrays),
so workers need rpp installed, nothing else: no path has to be readable on them. Results come
back in shard order. A worker that dies while it holds a shard ends the command with
:class:`~rpp_cli.engine.WorkerDied` naming it: the LocalCluster rpp starts lets no task be
retried after a death; on your own cluster the scheduler's ``allowed-failures`` decides how
often Dask re-runs a dead worker's shards elsewhere before it gives up.

``local[:N]`` starts its cluster before the runs are read: where the platform forks, its
worker processes are forks of rpp (Dask's ``multiprocessing-method: fork``), which have Dask,
numpy and rpp loaded already, instead of fresh interpreters that load them all (about 0.3
CPU-s each: on two cores, L took 3.6 s against 3.1 s). Forked before reading, they share
little with rpp: forked after it, they kept alive every page rpp freed or rewrote later (tall:
a tree of 1.64-1.70 GB against 1.40-1.45 GB), in the same time.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import re
import signal
import warnings
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..errors import InputError
from ..progress import progress
from . import WorkerDied

INSTALL = "pip install 'rpp-cli[dask]'"
CONNECT_TIMEOUT = "20s"
_LOCAL = re.compile(r"local(?::([0-9]+))?")
_LOCAL_LIKE = re.compile(r"local(:.*)?")  # local:-1, local:four: not a host's address
MAX_LOCAL_WORKERS = 256  # as -j: local:99999999 forked workers until memory ran out


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
    """Shards as tasks of a ``distributed.Client``; ``workers`` is the cluster's size."""

    client: Any  # a distributed.Client
    workers: int
    on_this_machine: bool = False  # a LocalCluster: the output is written by local forks

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

    def _gather(self, futures: list) -> Iterator:
        from distributed.scheduler import KilledWorker

        try:
            for future in futures:
                try:
                    yield future.result()
                except KilledWorker as err:
                    where = re.search(r"\w+://\S*:\d+", str(err))
                    raise WorkerDied(f"Dask worker {where.group() if where else '?'} died "
                                     f"while working on shard {futures.index(future) + 1} "
                                     f"of {len(futures)}") from None
        finally:
            self.client.cancel(futures)


def _call(payload: bytes):
    """Run one shard on a worker: ``fn(shard)`` from the bytes the client sent. Work that the
    shard itself shards runs inline there (a forked worker inherited rpp's engine, whose
    client it must not use)."""
    import cloudpickle

    from . import _ENGINE, Inline

    _ENGINE[:] = [Inline()]
    fn, shard = cloudpickle.loads(payload)
    return fn(shard)


def _start_local(modules: tuple[Any, Any], n: int, stack: ExitStack, named: str) -> Any:
    """A client of a new LocalCluster of ``n`` worker processes, closed by ``stack``: forks of
    rpp where the platform forks (spawned interpreters elsewhere), started with SIGINT blocked
    so that they never take Ctrl-C, which is rpp's to handle (as ``-j``'s workers ignore it;
    they end when rpp does). A dead worker is an error at once (no silent re-run), and so is
    a cluster that does not start (a worker killed while it starts); Dask's own warnings (a
    busy dashboard port, large payloads) and its workers' logs (a heartbeat that meets the
    scheduler closing) stay out of rpp's stderr."""
    dask, distributed = modules
    quiet = logging.getLogger("distributed")
    stack.callback(quiet.setLevel, quiet.level)
    quiet.setLevel(logging.CRITICAL)  # a worker's death is our one-line error, not a log
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
        raise WorkerDied(f"{named}: the local cluster did not start "
                         f"({type(err).__name__}: {err})") from None
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a Ctrl-C held back is raised now


@contextmanager
def connect(address: str, named: str | None = None) -> Iterator[DaskEngine]:
    """A client of the scheduler at ``address``, or of a LocalCluster of processes that
    ``local[:N]`` starts (N workers, default one per core) and closes at the end. ``named``:
    how messages name the address (``--dask ADDRESS``, or ``RPP_DASK=ADDRESS``)."""
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
        with ExitStack() as stack:
            yield DaskEngine(_start_local(_imported(), n, stack, named), n,
                             on_this_machine=True)
        return
    _, distributed = _imported()
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError, TypeError) as err:  # TypeError: tls:// with
        # no security configuration (distributed wants an ssl_context)
        raise InputError(f"{named}: cannot reach the scheduler ({err})") from None
    with client:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        yield DaskEngine(client, workers)

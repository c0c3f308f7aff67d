"""Shards on a Dask cluster (``--dask ADDRESS``, ``--dask local[:N]``; extra ``rpp-cli[dask]``).

Each shard travels as the bytes of ``(fn, shard)`` (cloudpickle: closures and numpy arrays),
so workers need rpp installed, nothing else: no path has to be readable on them. Results come
back in shard order. A worker that dies while it holds a shard ends the command with
:class:`~rpp_cli.engine.WorkerDied` naming it: the LocalCluster rpp starts lets no task be
retried after a death; on your own cluster the scheduler's ``allowed-failures`` decides how
often Dask re-runs a dead worker's shards elsewhere before it gives up.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import re
import warnings
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Sequence

from ..errors import InputError
from ..progress import progress
from . import WorkerDied

INSTALL = "pip install 'rpp-cli[dask]'"
CONNECT_TIMEOUT = "20s"
_LOCAL = re.compile(r"local(?::(\d+))?")


def _require() -> None:
    """One line saying how to install Dask when it is missing (found, not imported: a local
    cluster imports it while the runs are read)."""
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
    """Shards as tasks of a ``distributed.Client``; ``workers`` is the cluster's size. The
    client may still be starting (a Future of it: a LocalCluster starts while the runs are
    read); the first shards wait for it."""

    starting: Any  # a distributed.Client, or a concurrent.futures.Future of one
    workers: int

    @property
    def client(self) -> Any:
        if isinstance(self.starting, Future):
            self.starting = self.starting.result()
        return self.starting

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
    """Run one shard on a worker: ``fn(shard)`` from the bytes the client sent."""
    import cloudpickle

    fn, shard = cloudpickle.loads(payload)
    return fn(shard)


@contextmanager
def connect(address: str) -> Iterator[DaskEngine]:
    """A client of the scheduler at ``address``, or of a LocalCluster of processes that
    ``local[:N]`` starts (N workers, default one per core) and closes at the end."""
    _require()
    local = _LOCAL.fullmatch(address)
    if local:
        n = int(local.group(1) or os.cpu_count() or 1)
        if n < 1:
            raise InputError(f"--dask {address}: needs at least one worker")
        quiet = logging.getLogger("distributed")
        level = quiet.level
        quiet.setLevel(logging.CRITICAL)  # a worker's death is our one-line error, not a log

        def start() -> Any:
            """A client of a new cluster (``client.cluster``); a dead worker is an error at
            once (no silent re-run), and Dask's own warnings (a busy dashboard port, large
            payloads) and its workers' logs (a heartbeat that meets the scheduler closing)
            stay out of rpp's stderr."""
            dask, distributed = _imported()
            with dask.config.set({"distributed.scheduler.allowed-failures": 0}), \
                    warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cluster = distributed.LocalCluster(
                    n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None,
                    silence_logs=logging.CRITICAL)
                return distributed.Client(cluster)

        with ThreadPoolExecutor(1, thread_name_prefix="rpp-dask") as pool:
            started = pool.submit(start)  # while the runs are read
            try:
                yield DaskEngine(started, n)
            finally:
                client = started.result()
                client.close()
                client.cluster.close()
                quiet.setLevel(level)
        return
    _, distributed = _imported()
    try:
        client = distributed.Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as err:
        raise InputError(f"--dask {address}: cannot reach the scheduler ({err})") from None
    with client:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        yield DaskEngine(client, workers)

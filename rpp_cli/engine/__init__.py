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

import math
import os
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from typing import Callable, ContextManager, Iterator, Sequence, TypeVar

import numpy as np

from ..errors import ASCII_DECIMAL, InputError
# the engines and what their users import from here (base.py, processes.py)
from .base import _ENGINE, Engine, Inline, Lazy, WorkerDied, current  # noqa: F401
from .processes import Processes, _send, write_all  # noqa: F401
from .threads import default_jobs, map_ordered  # noqa: F401

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
LAST_SHARD = 0.25  # the last shard's work as a share of the first's, with several workers:
# shards shrink toward the end, so the last ones, which run while workers run out of shards
# (or another step's wait for them), are short


@dataclass
class Threads:
    """Shards on a pool of threads: for work that releases the GIL (the C kernel)."""

    workers: int

    def imap(self, fn: Callable[[T], U], shards: Sequence[T],
             label: str | None = None) -> Iterator[U]:
        """``fn(shard)`` on ``workers`` threads; the lowest failing shard's error is raised."""
        return iter(map_ordered(lambda i: fn(shards[i]), len(shards), self.workers, label))


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
                 max_work: float | None = MAX_SHARD_WORK, shrink: bool = False,
                 held: np.ndarray | None = None) -> np.ndarray:
    """Boundaries (S + 1,) of contiguous query shards: ``RPP_SHARD_QUERIES`` queries each if
    set; else about SHARDS_PER_WORKER shards per worker of equal total ``weight`` (work per
    query: rows, level pairs), each of at least MIN_SHARD_WORK (one shard for small work), and
    more where that leaves more than ``max_work`` of ``held`` to a shard (what a shard holds at
    once, per query; default: its ``weights``; ``max_work`` None: work whose memory does not
    grow with the shard's). ``shrink``: with several workers, shards that shrink toward the
    end instead (:func:`shard_shares`), each of one query or more, for work whose results
    are taken as they come (output written in order wants equal shards: a worker that made
    a later, smaller shard first would wait for its turn)."""
    n = len(weights)
    size = forced_shard_size()
    if size is not None:
        return np.unique(np.append(np.arange(0, n, size), n))
    total = np.cumsum(weights, dtype=np.float64)
    held_total = float(np.sum(held if held is not None else weights, dtype=np.float64))
    count = min(n, SHARDS_PER_WORKER * workers, int(total[-1] // MIN_SHARD_WORK) if n else 0)
    if workers < 2:
        count = 1
    if max_work is not None:
        count = min(n, max(count, -int(-held_total // max_work) if n else 0))
    if count < 2:
        return np.array([0, n])
    if workers < 2 or not shrink:
        cuts = np.searchsorted(total, total[-1] * np.arange(1, count) / count, side="right")
        return np.unique(np.concatenate(([0], cuts, [n])))
    shares = shard_shares(count)
    while max_work is not None and count < n and shares[0] * held_total > max_work:
        count += 1  # the first (largest) shard within the cap
        shares = shard_shares(count)
    cuts = np.searchsorted(total, total[-1] * np.cumsum(shares)[:-1], side="right")
    # one query or more a shard: cut k at k + 1 or later, and no later than n - (count - 1 - k)
    at_least = np.maximum.accumulate(np.maximum(cuts - np.arange(count - 1), 1))
    cuts = np.minimum(at_least, n - count + 1) + np.arange(count - 1)
    return np.concatenate(([0], cuts, [n]))


def shard_shares(count: int) -> np.ndarray:
    """The share of the work of each of ``count`` shards: falling geometrically from the
    first to the last, which has LAST_SHARD of the first's. With equal shards, workers that
    run out of shards wait for up to a whole shard; these end within a short one."""
    ratio = LAST_SHARD ** (1.0 / (count - 1))
    shares = ratio ** np.arange(count, dtype=np.float64)
    return shares / shares.sum()


# --- the engine of this command ------------------------------------------------------------

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
    """End what the engines started on this machine (a local cluster: its workers and its
    temporary folder), for an exit that skips their close: Ctrl-C's."""
    for engine in _ENGINE:
        getattr(engine, "abandon", lambda: None)()

"""Per-run work in parallel processes (``--jobs``): forked workers share the parent's memory."""
from __future__ import annotations

import multiprocessing
import os
from typing import Callable

from .progress import progress

_SHARED: tuple = ()


def default_jobs() -> int:
    """Worker processes when the user does not say: one per core, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


def map_runs(fn: Callable, n_runs: int, jobs: int, shared: tuple,
             label: str | None = None) -> list:
    """``[fn(r, *shared) for r in range(n_runs)]``, in ``jobs`` forked processes when > 1
    (progress on a terminal under ``label``).

    ``shared`` reaches the workers through fork, never pickled; only results travel back.
    An exception in a worker (e.g. InputError) is raised here.
    """
    global _SHARED
    jobs = min(jobs, n_runs)
    show = (lambda items: progress(items, label, length=n_runs)) if label else iter
    if jobs <= 1 or "fork" not in multiprocessing.get_all_start_methods():
        return [fn(r, *shared) for r in show(range(n_runs))]
    _SHARED = (fn, shared)
    try:
        with multiprocessing.get_context("fork").Pool(jobs, _single_threaded) as pool:
            return list(show(pool.imap(_call, range(n_runs), chunksize=1)))
    finally:
        _SHARED = ()


def _single_threaded() -> None:
    """Workers share the cores already: one thread each for pyarrow's parsers."""
    import pyarrow

    pyarrow.set_cpu_count(1)


def _call(r: int):
    fn, shared = _SHARED
    return fn(r, *shared)

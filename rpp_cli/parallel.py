"""Per-run work on a pool of threads (``--jobs``).

The data core's kernel releases the GIL, so threads use every core without the costs and
failure modes of processes: nothing is pickled, and no worker can die and leave the parent
waiting. Workers are daemon threads, so Ctrl-C or an error ends the process at once.
"""
from __future__ import annotations

import os
import queue
import threading
from typing import Callable, TypeVar

from .progress import progress

T = TypeVar("T")


def default_jobs() -> int:
    """Threads when the user does not say: one per core, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


class Budget:
    """Bytes of input in flight: a thread waits before reading a file that would take the
    total over ``limit`` (one file is always let through). Reading and joining a run needs
    about four times its size for a moment, so this bounds the memory of several threads."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._cond = threading.Condition()

    def take(self, size: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self.used == 0 or self.used + size <= self.limit)
            self.used += size

    def give(self, size: int) -> None:
        with self._cond:
            self.used -= size
            self._cond.notify_all()


IN_FLIGHT_BYTES = 384 << 20  # run files read at once by the threads, at most (one always)


def file_size(path: str) -> int:
    """Size of a file on disk (0 for stdin or anything that is not a regular file)."""
    try:
        return os.path.getsize(path) if path != "-" and os.path.isfile(path) else 0
    except OSError:
        return 0


def map_runs(fn: Callable[[int], T], n_runs: int, jobs: int, label: str | None = None
             ) -> list[T]:
    """``[fn(r) for r in range(n_runs)]`` on ``jobs`` threads (progress on a terminal under
    ``label``). If calls fail, the exception of the lowest ``r`` is raised, whatever the
    timing: runs are started in order, and none is started after a failure."""
    jobs = max(1, min(jobs, n_runs))
    if jobs == 1:
        show = progress(range(n_runs), label) if label else range(n_runs)
        return [fn(r) for r in show]
    results: list = [None] * n_runs
    failed: dict[int, BaseException] = {}
    done: queue.Queue[int] = queue.Queue()
    order = iter(range(n_runs))
    lock = threading.Lock()
    stop = threading.Event()

    def work() -> None:
        while not stop.is_set():
            with lock:
                r = next(order, None)
            if r is None:
                return
            try:
                results[r] = fn(r)
            except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
                failed[r] = err
                stop.set()
            finally:
                done.put(r)

    threads = [threading.Thread(target=work, daemon=True, name=f"rpp-run-{k}")
               for k in range(jobs)]
    for thread in threads:
        thread.start()

    def finished():
        while any(t.is_alive() for t in threads) or not done.empty():
            try:
                yield done.get(timeout=0.1)
            except queue.Empty:
                continue

    for _ in progress(finished(), label, length=n_runs) if label else finished():
        pass
    if failed:
        raise failed[min(failed)]
    return results

"""Threads: how work runs side by side inside one process, for the C kernel's loops, which
release the GIL (reading, splitting and coding runs), and for the measure families of a
command, which wait on worker processes side by side. Every pool of threads in rpp is one of
these; shards of queries go through the engine's ``imap`` (``rpp_cli.engine``).

Nothing is pickled and no thread can die and leave the caller waiting: an error in any piece
of work is raised in the caller's thread, the lowest piece's first. Workers are daemon
threads, so Ctrl-C or an error ends the process at once.
"""
from __future__ import annotations

import contextvars
import os
import queue
import threading
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Callable, Iterator, TypeVar

from ..progress import progress

T = TypeVar("T")
U = TypeVar("U")

_INLINE = [False]  # no thread is started (see :func:`inline_only`)


def inline_only() -> None:
    """From now on every way below runs its work in the calling thread, in order. The CLI
    calls it under an address-space limit (``ulimit -v``): CPython's ``Thread.start`` waits for
    the new thread to say it started, and one whose start fails for want of memory never does,
    so the process would hang."""
    _INLINE[0] = True


def default_jobs() -> int:
    """Workers when the user does not say: one per core, at most 4."""
    return max(1, min(os.cpu_count() or 1, 4))


def map_ordered(fn: Callable[[int], T], n_runs: int, jobs: int, label: str | None = None
             ) -> list[T]:
    """``[fn(r) for r in range(n_runs)]`` on ``jobs`` threads (progress on a terminal under
    ``label``). If calls fail, the exception of the lowest ``r`` is raised, whatever the
    timing: runs are started in order, and none is started after a failure."""
    jobs = 1 if _INLINE[0] else max(1, min(jobs, n_runs))
    if jobs == 1:
        made = (fn(r) for r in range(n_runs))
        return list(progress(made, label, length=n_runs) if label else made)
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


def pipelined(items: Iterator[T], fn: Callable[[T], U], threads: int) -> Iterator[U]:
    """``fn`` of each item, in order, on ``threads`` threads; at most ``threads`` items wait
    or run while the next is made (``items`` is advanced in the calling thread)."""
    if _INLINE[0]:
        yield from map(fn, items)
        return
    with ThreadPoolExecutor(threads, thread_name_prefix="rpp-join") as pool:
        waiting: deque[Future[U]] = deque()
        try:
            for item in items:
                if len(waiting) >= threads:
                    yield waiting.popleft().result()
                waiting.append(pool.submit(fn, item))
            while waiting:
                yield waiting.popleft().result()
        finally:
            for future in waiting:  # an error: what has not started is not started
                future.cancel()


def run_all(calls: list[Callable[[], None]], name: str) -> None:
    """Run every call of ``calls`` side by side (one thread each, named ``name``) and wait for
    all; the first failing call's error (in list order) is raised."""
    if _INLINE[0]:
        for call in calls:
            call()
        return
    with ThreadPoolExecutor(len(calls), thread_name_prefix=name) as pool:
        for done in [pool.submit(call) for call in calls]:
            done.result()


def side_by_side(calls: list[Callable[[], None]], name: str) -> None:
    """Run every call of ``calls`` at once, one daemon thread each (named ``name``, in a copy
    of the caller's context: its context variables, the trec_eval release in force among
    them), and wait for all; then the first failing call's error (in list order) is raised.
    The waits can be interrupted (Ctrl-C is never held up by a call still running), and a
    call left running then never keeps the process alive. Where no thread can be started,
    the calls left run in this thread, one after the other."""
    if _INLINE[0]:
        for call in calls:
            call()
        return
    failed: dict[int, BaseException] = {}
    contexts = [contextvars.copy_context() for _ in calls]

    def run(k: int) -> None:
        """Call k in its context; its error kept for the caller."""
        try:
            contexts[k].run(calls[k])
        except BaseException as err:  # noqa: BLE001 - re-raised in the caller's thread
            failed[k] = err

    started: list[threading.Thread] = []
    for k in range(len(calls)):
        thread = threading.Thread(target=run, args=(k,), daemon=True, name=f"{name}-{k}")
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (ulimit -v, -u): the rest here, in turn
            for rest in range(k, len(calls)):
                run(rest)
            break
        started.append(thread)
    for thread in started:
        thread.join()
    if failed:
        raise failed[min(failed)]


def pool(threads: int, name: str) -> "ThreadPoolExecutor | _InlinePool":
    """A pool of ``threads`` threads named ``name``, for work submitted ahead of its use (a
    window split while the one before is coded); closed by ``with``. With no thread
    (``threads`` 0), each call runs as it is submitted, in the caller's thread."""
    if _INLINE[0] or threads < 1:
        return _InlinePool()
    return ThreadPoolExecutor(threads, thread_name_prefix=name)


def runs_beside(executor: "ThreadPoolExecutor | _InlinePool") -> bool:
    """Whether a :func:`pool`'s calls run beside the caller (not as they are submitted)."""
    return not isinstance(executor, _InlinePool)


class _InlinePool:
    """:func:`pool` where no thread may start: each submitted call runs at once, its result
    or error kept in its future."""

    def __enter__(self) -> "_InlinePool":
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def submit(self, fn: Callable[..., T], *args, **kwargs) -> Future:
        """``fn(*args, **kwargs)`` now, as a done future."""
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as err:  # noqa: BLE001 - raised by result(), as a pool's is
            future.set_exception(err)
        return future

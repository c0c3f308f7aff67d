"""Threads over runs (map_runs) and a producer thread ahead of its consumer (ahead)."""
from __future__ import annotations

import threading
import time

import pytest

from rpp_cli.parallel import ahead, map_runs


def test_ahead_yields_every_item_in_order():
    assert list(ahead(iter(range(1000)), depth=3)) == list(range(1000))
    assert list(ahead([], depth=1)) == []


def test_ahead_produces_in_another_thread_and_stays_within_depth():
    """The producer runs beside the consumer but never more than depth + 1 items ahead."""
    produced, seen = [], []

    def source():
        for i in range(20):
            produced.append((i, threading.current_thread().name))
            yield i

    for item in ahead(source(), depth=2):
        time.sleep(0.005)
        seen.append((item, len(produced)))
    assert all(name == "rpp-ahead" for _, name in produced)
    assert all(count <= item + 1 + 2 + 1 for item, count in seen)  # depth + the one in hand
    assert any(count > item + 1 for item, count in seen)  # and it did run ahead


def test_ahead_raises_the_producers_error_where_its_item_would_come():
    def source():
        yield 1
        yield 2
        raise ValueError("line 3 is bad")

    got = []
    with pytest.raises(ValueError, match="line 3 is bad"):
        for item in ahead(source()):
            got.append(item)
    assert got == [1, 2]


def test_a_consumer_that_stops_early_stops_and_closes_the_producer():
    closed = threading.Event()

    def source():
        try:
            for i in range(10**9):
                yield i
        finally:
            closed.set()

    items = ahead(source(), depth=2)
    assert next(items) == 0
    items.close()  # the consumer stops (an error in its loop, or a break)
    assert closed.wait(5)


def test_map_runs_raises_the_lowest_failing_run():
    def fn(r: int) -> int:
        if r >= 4:
            raise KeyError(r)
        return r * 2

    assert map_runs(lambda r: r * 2, 9, 3) == [r * 2 for r in range(9)]
    with pytest.raises(KeyError) as err:
        map_runs(fn, 12, 3)
    assert err.value.args == (4,)

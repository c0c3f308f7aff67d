"""The engine's threads: work side by side in one process, errors raised in order."""
from __future__ import annotations

import pytest

from rpp_cli.engine.threads import map_ordered, pipelined


def test_map_ordered_raises_the_lowest_failing_run():
    def fn(r: int) -> int:
        if r >= 4:
            raise KeyError(r)
        return r * 2

    assert map_ordered(lambda r: r * 2, 9, 3) == [r * 2 for r in range(9)]
    with pytest.raises(KeyError) as err:
        map_ordered(fn, 12, 3)
    assert err.value.args == (4,)


def test_pieces_on_a_pool_come_back_in_order_and_few_at_a_time():
    """pipelined: fn of every item in item order; at most ``threads`` items taken ahead of
    the one handed back; an error is raised in order, and what had not started never runs."""
    import threading
    import time

    taken, started, lock = [], [], threading.Lock()

    def items():
        for i in range(40):
            taken.append(i)
            yield i

    def slow(i: int) -> int:
        with lock:
            started.append(i)
        time.sleep(0.002 * (i % 3))  # pieces finish out of order
        return i * i

    out = []
    for value in pipelined(items(), slow, 3):
        out.append(value)
        assert len(taken) <= len(out) + 3  # what waits or runs, beside the one in hand
    assert out == [i * i for i in range(40)]

    def failing(i: int) -> int:
        if i == 5:
            raise MemoryError("piece 5")
        time.sleep(0.01)
        return i

    got, started = [], []
    with pytest.raises(MemoryError, match="piece 5"):
        for value in pipelined(iter(range(100)),
                               lambda i: (started.append(i), failing(i))[1], 2):
            got.append(value)
    assert got == [0, 1, 2, 3, 4] and max(started) < 10

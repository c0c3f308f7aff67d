"""Threads over runs (map_runs)."""
from __future__ import annotations

import pytest

from rpp_cli.parallel import map_runs


def test_map_runs_raises_the_lowest_failing_run():
    def fn(r: int) -> int:
        if r >= 4:
            raise KeyError(r)
        return r * 2

    assert map_runs(lambda r: r * 2, 9, 3) == [r * 2 for r in range(9)]
    with pytest.raises(KeyError) as err:
        map_runs(fn, 12, 3)
    assert err.value.args == (4,)

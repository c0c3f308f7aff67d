#!/usr/bin/env python3
"""The speed-up this machine gives a perfectly parallel CPU job, the ceiling of rpp's ``-j``:
``COPIES`` copies of one fixed job (numpy sorts, distinct values, arithmetic, and a Python
loop, as rpp's work mixes them), each in a process of its own, run at once.

    python bench/ceiling.py COPIES

bench/run.py times 1 copy and ``-j`` copies beside ``rpp -j 1`` and ``rpp -j N``: ``N`` times
the one copy's time over the N copies' time is what N cores give work that shares nothing.
A VM's cores may give less than N (shared caches and memory bandwidth, a hypervisor that
runs other guests' work on the same physical cores).
"""
from __future__ import annotations

import multiprocessing
import sys

import numpy as np


def job(_: int = 0) -> int:
    """About 4 s of one core of the 2-core bench VM: numpy and the interpreter, half each."""
    values = np.random.default_rng(36).integers(0, 1 << 40, 2_000_000)
    kept = 0
    for _ in range(6):
        kept += int(np.sort(values)[-1] & 1) + len(np.unique(values[:500_000]))
        kept += int((values * 3 + 1).sum() & 1)
    for i in range(15_000_000):
        kept ^= i
    return kept


def main() -> None:
    copies = int(sys.argv[1])
    with multiprocessing.get_context("fork").Pool(copies) as pool:
        results = pool.map(job, range(copies))
    assert len(set(results)) == 1  # the same work in every copy


if __name__ == "__main__":
    main()

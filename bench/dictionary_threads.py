#!/usr/bin/env python3
"""How rpp's dictionary (StrMap.intern) scales with threads coding at once.

T threads each code the same rows (runs that list their queries in the same order, as a
collection's runs do) into one shared dictionary, with and without the repeat stamps that
runs' batches write, staggered (each thread starts at another query), or into a dictionary
each. Prints the wall time per row: constant while cores are free and nothing is shared.

    PYTHONPATH=. python bench/dictionary_threads.py

Measured on a lent 16-core machine (bench/LOG.md, "Back on a 16-core machine").
"""
from __future__ import annotations

import threading
import time

import numpy as np

from rpp_cli.core import Dictionary, column_of

SHAPES = {"tall-like 20000x100": (20000, 100, 120), "L-like 250x1000": (250, 1000, 1500)}
VARIANTS = ("shared+stamps", "shared", "shared+stamps staggered", "separate+stamps")


def collection(rng: np.random.Generator, queries: int, depth: int, pool: int):
    """Keys (a query per row) and docnos: ``depth`` of each query's ``pool`` docnos."""
    names = [b"clueweb12-%04dwb-%02d-%05d" % tuple(rng.integers(0, (2000, 99, 99999)))
             for _ in range(6000)]
    keys, docs = [], []
    for q in range(queries):
        own = rng.choice(len(names), pool, replace=False)
        keys.append(np.full(depth, q))
        docs += [names[i] for i in own[rng.permutation(pool)[:depth]]]
    return np.concatenate(keys).astype(np.int64), column_of(docs)


def timed(maps: list[Dictionary], keys: np.ndarray, col, stamps: bool, shift: int) -> float:
    """Wall ns per row while every map codes all rows, one thread a map."""
    n = len(keys)
    outs = [np.empty(n, np.int64) for _ in maps]
    reps = [np.empty(n, np.uint8) for _ in maps]
    barrier = threading.Barrier(len(maps) + 1)

    def work(t: int) -> None:
        lo = (t * shift) % n if shift else 0
        barrier.wait()
        for a, b in ((lo, n), (0, lo)):
            if b > a:
                args = (col.data, col.starts[a:b], col.lens[a:b], keys[a:b], outs[t][a:b])
                if stamps:
                    maps[t]._map.intern(*args, reps[t][a:b], 1000 + t)
                else:
                    maps[t]._map.intern(*args)
    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(maps))]
    for thread in threads:
        thread.start()
    barrier.wait()
    start = time.perf_counter()
    for thread in threads:
        thread.join()
    return (time.perf_counter() - start) / n * 1e9


def main() -> None:
    rng = np.random.default_rng(1)
    for name, (queries, depth, pool) in SHAPES.items():
        keys, col = collection(rng, queries, depth, pool)
        print(name, len(keys), "rows", flush=True)
        for n_threads in (1, 2, 4, 8, 16):
            best = {}
            for variant in VARIANTS:
                times = []
                for _ in range(3):
                    if variant.startswith("separate"):
                        maps = [Dictionary(queries) for _ in range(n_threads)]
                        for d in maps:
                            d.add(col, keys)
                    else:
                        shared = Dictionary(queries)
                        shared.add(col, keys)
                        maps = [shared] * n_threads
                    shift = len(keys) // n_threads if "staggered" in variant else 0
                    times.append(timed(maps, keys, col, "stamps" in variant, shift))
                best[variant] = min(times)
            print(f"  T={n_threads:2d} " + "  ".join(f"{k}: {v:5.0f}" for k, v in best.items()),
                  "ns/row", flush=True)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The Python API on dicts and DataFrames against the same collection on files (issue 35:
in-memory input within 1.5x of the file path).

Reads a collection (``COLLECTION/qrels`` and ``COLLECTION/runs/*``, as
fixtures/make_collection.py writes it) into pytrec_eval / ranx dicts and ir_measures
DataFrames (untimed), then times ``rpp_cli.evaluate`` on the files, on the dicts and on the
DataFrames, interleaved (files, dicts, frames, files, ...) so that every ratio comes from one
machine state; prints each one's median wall and CPU time and the ratios of the medians, and
checks that the three give the same records (exit 1 if not).

    python fixtures/make_collection.py --out /tmp/c40 --runs 40 --queries 250 --depth 1000 \\
        --docnos mixed
    PYTHONPATH=. python bench/api_dicts.py /tmp/c40 --repeat 5

Measured 2026-12-02 on the shared 2-core VM while other sessions' benchmarks ran (load 4-7
throughout: a wall time swings 2x from one repeat to the next, so the CPU time, this process
and its workers, is the steadier figure), make_collection.py --docnos mixed, default
measures, median of interleaved repeats:

    before (e143998: every in-memory text made in the caller's thread before any reading,
    scores as hexadecimal floats), load 5-7:
        40 runs, 3 repeats: files 15.66 s; dicts 19.55 s (1.25x, CPU 1.49x); DataFrames
            23.31 s (1.49x, CPU 1.57x)
        10 runs, 5 repeats: files 3.14 s; dicts 4.78 s (1.52x, CPU 1.50x); DataFrames
            4.81 s (1.53x, CPU 1.47x)
    after (each text made by the reader that reads it, in its thread, so that making one
    run's text overlaps reading another's; scores as short decimals where one is exact),
    load 4-5:
        40 runs, 3 repeats: files 14.02 s; dicts 14.54 s (1.04x, CPU 1.35x); DataFrames
            15.20 s (1.08x, CPU 1.35x)
        10 runs, 5 repeats: files 1.93 s; dicts 2.84 s (1.47x, CPU 1.40x); DataFrames
            2.80 s (1.45x, CPU 1.36x)
    before and after in one process (the code before as a renamed copy), calls rotated,
    load 5-6, CPU to files: 10 runs (7 repeats) dicts 1.39x -> 1.21x, DataFrames 1.33x ->
    1.26x; 40 runs (3 repeats) dicts 1.41x -> 1.35x, DataFrames 1.42x -> 1.31x
    one 40-run call on dicts, its peak memory above the dicts' 1.37 GB: 831 MB -> 393 MB
    (the texts of the runs being read are held, not all 40)
    idle VM, 2026-12-02 09:26, commit 93fdf81 (the reader's lazy texts; rows placed around
        their texts by a boolean mask): 40 runs, 3 repeats: files 4.64 s; dicts 7.39 s
        (1.59x, CPU 1.42x); DataFrames 6.52 s (1.41x, CPU 1.30x); 10 runs, 5 repeats: files
        1.08 s; dicts 1.64 s (1.52x, CPU 1.41x); DataFrames 1.58 s (1.47x, CPU 1.35x)
    idle VM, 09:30, each text and its row's block copied in place by the kernel's extend
        (no mask, no copy without separators): 40 runs: files 4.40 s; dicts 6.13 s (1.39x,
        CPU 1.26x); DataFrames 5.67 s (1.29x, CPU 1.16x); 10 runs: files 1.19 s; dicts
        1.60 s (1.34x, CPU 1.24x); DataFrames 1.65 s (1.38x, CPU 1.29x)
    after, again, load 1.6-3.9 (one other job): 40 runs, 3 repeats: files 8.51 s; dicts
        10.86 s (1.28x, CPU 1.26x); DataFrames 10.64 s (1.25x, CPU 1.24x); 10 runs, 5
        repeats: files 2.11 s; dicts 2.94 s (1.39x, CPU 1.39x); DataFrames 2.96 s (1.40x,
        CPU 1.36x)

On the idle VM before (commit 0cf7768), where the files' reading threads had both cores and
the dicts' text was made in one thread first: 40 runs dicts 1.61x (CPU 1.34x), DataFrames
1.59x; 10 runs 1.77x (CPU 1.50x), 1.71x. The idle figures after are yet to be taken. What is
left is the text itself (about 200 ns a row: joining and encoding the docnos, the numpy bytes
around them), made while other runs are read.
"""
from __future__ import annotations

import argparse
import gc
import os
import resource
import statistics
import sys
import time


def read_nested(path: str, value: int, kind: type) -> dict:
    """``{qid: {docno: value field}}`` of a whitespace-separated file."""
    out: dict = {}
    with open(path, encoding="utf-8", errors="surrogateescape") as lines:
        for line in lines:
            fields = line.split()
            out.setdefault(fields[0], {})[fields[2]] = kind(fields[value])
    return out


def frame(nested: dict, column: str):
    """ir_measures' DataFrame (query_id, doc_id, ``column``) of a nested dict."""
    import pandas as pd

    rows = [(q, d, x) for q, docs in nested.items() for d, x in docs.items()]
    return pd.DataFrame(rows, columns=["query_id", "doc_id", column])


def cpu_seconds() -> float:
    """CPU seconds of this process and its finished children (the measures' workers)."""
    return sum(getattr(resource.getrusage(who), field) for who in
               (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)
               for field in ("ru_utime", "ru_stime"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("collection")
    parser.add_argument("--runs", type=int, default=None, help="the first N runs (by name)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("-m", "--measure", action="append", default=None)
    parser.add_argument("--no-frames", action="store_true", help="dicts and files only")
    args = parser.parse_args()

    import rpp_cli

    names = sorted(os.listdir(os.path.join(args.collection, "runs")))[:args.runs]
    paths = [os.path.join(args.collection, "runs", n) for n in names]
    qrels_path = os.path.join(args.collection, "qrels")
    qrels = read_nested(qrels_path, 3, int)
    runs = {n: read_nested(p, 4, float) for n, p in zip(names, paths)}
    inputs = {"files": (qrels_path, paths), "dicts": (qrels, runs)}
    if not args.no_frames:
        inputs["frames"] = (frame(qrels, "relevance"),
                            {n: frame(r, "score") for n, r in runs.items()})
    rows = sum(map(len, (docs for run in runs.values() for docs in run.values())))
    print(f"{len(names)} runs, {len(qrels)} queries, {rows:,} run rows")
    times: dict[str, list[float]] = {k: [] for k in inputs}
    cpu: dict[str, list[float]] = {k: [] for k in inputs}
    records: dict[str, list] = {}
    for _ in range(args.repeat):
        for kind, (q, r) in inputs.items():
            gc.collect()
            start, used = time.perf_counter(), cpu_seconds()
            got = rpp_cli.evaluate(q, r, args.measure, names=names, notes=[])
            times[kind].append(time.perf_counter() - start)
            cpu[kind].append(cpu_seconds() - used)
            records.setdefault(kind, got.records())
            del got
    base, base_cpu = statistics.median(times["files"]), statistics.median(cpu["files"])
    for kind, spent in times.items():
        median, median_cpu = statistics.median(spent), statistics.median(cpu[kind])
        print(f"{kind:7s} median {median:7.2f} s ({median / base:.2f}x files), CPU "
              f"{median_cpu:7.2f} s ({median_cpu / base_cpu:.2f}x)  "
              f"runs: {', '.join(f'{t:.2f}' for t in spent)}")
    same = all(rec == records["files"] for rec in records.values())
    print("same records:", same)
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()

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

Measured on the idle 2-core VM (2026-12-02, commit 0cf7768), where the files' reading threads
have both cores to themselves and the dicts' text is made in one thread, before its reading:

    40 runs, 3 repeats: files 5.64 s; dicts 9.06 s (1.61x, CPU 1.34x); DataFrames 8.97 s
        (1.59x, CPU 1.33x)
    10 runs, 5 repeats: files 1.25 s; dicts 2.21 s (1.77x, CPU 1.50x); DataFrames 2.13 s
        (1.71x, CPU 1.47x)

Measured earlier on the shared 2-core VM while other work ran (load 4-6), median of interleaved
repeats, default measures, collections from make_collection.py --docnos mixed (wall time;
CPU time, this process and its workers, beside it):

    40 runs x 250 queries x 1000 docnos (10M run rows), 3 repeats:
        files 13.45 s; dicts 16.36 s (1.22x, CPU 1.42x); DataFrames 19.89 s (1.48x, CPU 1.42x)
    10 runs (2.5M rows), 5 repeats:
        files 4.54 s; dicts 6.44 s (1.42x, CPU 1.53x); DataFrames 6.94 s (1.53x, CPU 1.44x)
    3 runs, 7 repeats: dicts 1.24x (CPU 1.44x), DataFrames 1.22x (CPU 1.21x)
    the demo (6 runs x 25 queries): 0.9-1.0x

The code before (a string per row, repr of each score) beside it, interleaved in one process
(/tmp A/B, files / now / before): 40 runs 18.04 / 22.21 / 31.29 s (1.23x / 1.73x); 10 runs
3.66 / 4.96 / 7.62 s (1.35x / 2.08x). What is left is the dicts' own text (about 300 ns a
row: joining and encoding the docnos, the numpy bytes around them) and the reader's strtod of
the hexadecimal scores (about 75 ns a row more than a short decimal).
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

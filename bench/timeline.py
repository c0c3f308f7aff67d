#!/usr/bin/env python3
"""Where ``rpp eval``'s reading spends its wall time: each call of its steps timed in-process.

    PYTHONPATH=. python bench/timeline.py COLLECTION EVENTS.json [rpp eval options, e.g. -j 16]

COLLECTION holds ``qrels`` and ``runs/`` (bench/'s generated collections). The steps (reading
the qrels, encoding, each run's reading and joining, the stream's iteration between batches,
splitting, coding, ...) are wrapped; each call is noted as (step, thread, start, end), written
to EVENTS.json, and summed on stderr: calls, total, first start and last end of each step, and
each run's thread's span. A diagnostic, not a benchmark: the wrapping costs a little per call.
"""
from __future__ import annotations

import collections
import glob
import importlib
import json
import sys
import threading
import time

T0 = time.perf_counter()
EVENTS: list[tuple[str, str, float, float]] = []


def wrap(owner, name: str, label: str | None = None) -> None:
    """Note every call of ``owner.name``."""
    fn = getattr(owner, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            EVENTS.append((label or name, threading.current_thread().name, start - T0,
                           time.perf_counter() - T0))
    setattr(owner, name, timed)


def wrap_stream(runs) -> None:
    """Note the time a RunStream takes to hand on each batch (its own reading)."""
    iterate = runs.RunStream.__iter__

    def timed(self):
        batches, thread = iterate(self), threading.current_thread().name
        while True:
            start = time.perf_counter()
            try:
                batch = next(batches)
            except StopIteration:
                EVENTS.append(("produce", thread, start - T0, time.perf_counter() - T0))
                return
            EVENTS.append(("produce", thread, start - T0, time.perf_counter() - T0))
            yield batch
    runs.RunStream.__iter__ = timed


def summary(end: float) -> None:
    by_step = collections.defaultdict(list)
    for step, thread, start, stop in EVENTS:
        by_step[step].append((thread, start, stop))
    print(f"end {end:.2f}", file=sys.stderr)
    for step, calls in sorted(by_step.items(), key=lambda kv: min(c[1] for c in kv[1])):
        print(f"{step:14s} calls {len(calls):5d} sum {sum(b - a for _, a, b in calls):7.2f} "
              f"first {min(a for _, a, _ in calls):6.2f} last-end {max(b for *_, b in calls):6.2f}"
              f" threads {len({t for t, _, _ in calls})}", file=sys.stderr)
    for thread in sorted({t for _, t, _, _ in EVENTS if t.startswith("rpp-run")}):
        own = [(s, a, b) for s, t, a, b in EVENTS if t == thread]
        spans = " ".join(f"[{a:.2f}-{b:.2f}]" for s, a, b in own if s == "load_run")
        print(thread, "load_run", spans,
              "produce", round(sum(b - a for s, a, b in own if s == "produce"), 2),
              "join(own)", round(sum(b - a for s, a, b in own if s == "_join_batch"), 2),
              file=sys.stderr)


def main() -> None:
    from rpp_cli import cli
    pipeline, collection, join, core, table, runs = (
        importlib.import_module(f"rpp_cli.{m}")
        for m in ("pipeline", "collection", "join", "core", "core.table", "io.runs"))
    for step in ("load", "read_qrels", "encode", "measure"):
        wrap(pipeline, step)
    for step in ("load_run", "corpus_sizes", "_place_items", "_items"):
        wrap(collection, step)
    wrap(join, "_join_batch")
    wrap(join, "_lay_out")
    wrap(table, "_split_one")
    wrap(core.Dictionary, "add_batch")
    wrap(core.Dictionary, "find")
    wrap(collection, "release_free_memory", "trim")
    wrap(join, "release_free_memory", "trim")
    wrap_stream(runs)
    where, out = sys.argv[1], sys.argv[2]
    sys.argv = ["rpp", "eval", "-Q", *sys.argv[3:], where + "/qrels",
                *sorted(glob.glob(where + "/runs/*"))]
    try:
        cli.main()
    except SystemExit:
        pass
    end = time.perf_counter() - T0
    with open(out, "w") as f:
        json.dump(EVENTS, f)
    summary(end)


if __name__ == "__main__":
    main()

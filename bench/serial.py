#!/usr/bin/env python3
"""The serial part of an ``rpp`` command: the wall time during which at most one core works,
as a share of its ``-j 1`` time, and the steps it falls in.

    .venv/bin/python bench/serial.py COLLECTION [--jobs 2] [--repeat 3] [-- eval -q ...]

After ``--``: the rpp command and its options, before the files (default: ``eval``).

COLLECTION holds ``qrels`` and ``runs/`` (bench/'s generated collections, e.g.
bench/data/L-deep-...). The command runs on them at ``-j 1`` and at ``-j N``, in turns,
``--repeat`` times, each in a child process of this script that runs rpp as its script does,
with its steps wrapped (each call of a step noted with its thread, start and end).
Meanwhile this script samples the CPU time of the child's threads and of its worker
processes every ``--interval`` ms from outside (``/proc/PID/task/TID/schedstat``: nanoseconds
on a CPU, and ``stat``: whether it is runnable), so no GIL delays a sample. An interval that
ends with at most one thread runnable is serial (``--by runnable``, the default: other work
on the machine slows the threads but leaves them runnable), or one during which they used
fewer than ``--cores`` cores (``--by cpu``: exact on an idle machine). Its time goes to the
step that one thread was in (the innermost wrapped call), else to the latest begun of every
thread's (``startup`` before rpp's ``main``, ``exit`` after it). Besides its wall time, the
CPU time used in serial intervals is summed, as a share of the ``-j 1`` run's CPU time:
what load on the machine inflates least (a busy machine slows every step, and the wall-time
share with it). ``--rpp-path`` runs another copy of rpp_cli (a commit to compare with).

Amdahl: a serial share s of the ``-j 1`` time gives a 2-core speed-up of 1 / (s + (1 - s) / 2):
1.85x needs s <= 8 %. A diagnostic, not a benchmark: the wrapping costs a little per call, the
sampling about 3 % of a core, and other work on the machine makes intervals look serial.
"""
from __future__ import annotations

import argparse
import bisect
import collections
import functools
import glob
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
RPP_PATH_ENV = "RPP_SERIAL_PATH"  # the folder whose rpp_cli the child runs
sys.path.insert(0, str(HERE))
sys.path.insert(0, os.environ.get(RPP_PATH_ENV) or str(HERE.parent))

START_ENV = "RPP_SERIAL_START"  # the parent's perf_counter when it started the child
PIDS_ENV = "RPP_SERIAL_PIDS"  # the descriptor the child writes its workers' pids to
SAVING = "(serial.py saving)"  # the child's own step after rpp's: left out of every figure


# ---------------------------------------------------------------------------- the child

class Recorder:
    """Wraps functions so that each call is noted as (step, thread name, start, end, thread
    id) in ``events``, times from ``t0`` (the thread id: the kernel's, as /proc shows it)."""

    def __init__(self, events: list, t0: float) -> None:
        self.events, self.t0 = events, t0

    def note(self, step: str, start: float) -> None:
        """One call of ``step`` that began at ``start`` and ends now."""
        self.events.append((step, threading.current_thread().name, start - self.t0,
                            time.perf_counter() - self.t0, threading.get_native_id()))

    def wrap(self, owner, name: str, step: str | None = None) -> None:
        """Note every call of ``owner.name`` (a module's function, a class's method, or a
        dict's entry when ``owner`` is a dict)."""
        fn = owner[name] if isinstance(owner, dict) else getattr(owner, name)

        @functools.wraps(fn)
        def timed(*args, **kwargs):
            """The call, noted."""
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.note(step or name, start)
        if isinstance(owner, dict):
            owner[name] = timed
        else:
            setattr(owner, name, timed)

    def wrap_iter(self, owner, name: str, step: str) -> None:
        """Note the time each item of the iterator ``owner.name(self, fn, ...)`` returns takes
        to come, as ``step: what`` (what: the name of the function it maps)."""
        method = getattr(owner, name)

        def timed(engine, fn, *args, **kwargs):
            """The items, each one's wait noted."""
            items = iter(method(engine, fn, *args, **kwargs))
            what = f"{step}: {getattr(getattr(fn, 'func', fn), '__name__', '?')}"
            while True:
                start = time.perf_counter()
                try:
                    item = next(items)
                except StopIteration:
                    self.note(what, start)
                    return
                self.note(what, start)
                yield item
        setattr(owner, name, timed)


def instrument(events: list, t0: float) -> None:
    """Wrap the steps of reading, measuring and writing (their calls go to ``events``), and
    have every forked worker's pid written to the parent's pipe."""
    rec = Recorder(events, t0)
    mods = {m: importlib.import_module(f"rpp_cli.{m}") for m in (
        "pipeline", "collection", "engine", "results", "measures", "measures.trec",
        "measures.preference", "report.trec", "commands.eval")}
    steps = {"pipeline": ("load", "read_qrels", "encode", "measure", "query_set_note"),
             "collection": ("corpus_sizes", "_run_notes", "encode_subtopics", "_items"),
             "measures.trec": ("trec_shards", "evaluate_passes", "aggregate", "add_metric",
                               "_complete_num_rel", "negative_only"),
             "measures.preference": ("level_weights", "sharded_pairwise"),
             "report.trec": ("_shard_bounds", "_names"),
             "commands.eval": ("print_notes",)}
    for mod, names in steps.items():
        for name in names:
            if hasattr(mods[mod], name):  # (a step another version lacks is left out)
                rec.wrap(mods[mod], name, f"{mod.split('.')[-1]}.{name}")
    rec.wrap(mods["collection"], "map_ordered", "read+join runs (threads)")
    rec.wrap(mods["collection"], "release_free_memory", "trim")
    rec.wrap(mods["commands.eval"], "write_report", "write output")
    rec.wrap(mods["pipeline"].Context, "add_preference", "add_preference")
    rec.wrap(mods["pipeline"].Context, "add_metric", "add_metric")
    rec.wrap(mods["results"].Results, "key_counts", "Results.key_counts")
    engine = mods["engine"]
    rec.wrap(engine.Processes, "write_ordered", "workers write")
    rec.wrap_iter(engine.Processes, "_run", "wait for workers")
    rec.wrap_iter(engine.Inline, "imap", "shards inline")
    forks = sys.modules[engine.Processes.__module__]  # where _fork_worker is called from
    fork = forks._fork_worker
    pids = int(os.environ.get(PIDS_ENV, "-1"))

    def forked(*args, **kwargs):
        """The fork, noted, and the worker's pid written to the parent's pipe."""
        start = time.perf_counter()
        pid, conn = fork(*args, **kwargs)
        if pids >= 0:
            os.write(pids, b"%d\n" % pid)
        rec.note("fork", start)
        return pid, conn
    forks._fork_worker = forked
    for fam in list(mods["measures"].FAMILIES):
        rec.wrap(mods["measures"].FAMILIES, fam, f"family {fam}")
    for scheme in list(mods["measures.preference"].POPULATIONS):
        rec.wrap(mods["measures.preference"].POPULATIONS, scheme, f"populations {scheme}")


def child(out: str, argv: list[str]) -> None:
    """Run ``rpp ARGV`` in this process as the ``rpp`` script does, with its steps wrapped;
    events and times to ``out``, on the parent's clock (perf_counter is CLOCK_MONOTONIC, one
    clock for every process)."""
    t0 = float(os.environ.get(START_ENV, time.perf_counter()))
    events: list = []
    instrument(events, t0)
    from rpp_cli import __main__ as entry

    sys.argv = ["rpp", *argv]
    start = time.perf_counter() - t0
    events.append(("startup", "MainThread", 0.0, start, os.getpid()))  # rpp's modules
    exit_with = entry._exit

    def save_then_exit(status: int) -> None:
        """Note the events, then end as rpp ends (``os._exit``: no Python finalization)."""
        end = time.perf_counter() - t0
        events.append(("rpp main", "MainThread", start, end, os.getpid()))
        text = json.dumps(events)
        saved = time.perf_counter() - t0
        with open(out, "w") as f:
            f.write(f'{{"end": {end!r}, "saved": {saved!r}, "code": {status}, '
                    f'"events": {text}}}')
        exit_with(status)
    entry._exit = save_then_exit
    entry.run()


# ---------------------------------------------------------------------------- the parent

def tasks(pid: int) -> dict[str, tuple[int, bool]]:
    """Every thread of ``pid``: its CPU nanoseconds so far and whether it is runnable
    ({"pid/tid": (ns, running)}; a process gone: {})."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as f:
                ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                stat = f.read()
            out[f"{pid}/{tid}"] = (ns, stat[stat.rindex(b")") + 2:][:1] == b"R")
        except (OSError, ValueError, IndexError):
            pass
    return out


def sample(argv: list[str], interval: float, rpp_path: str) -> dict:
    """Run the child on ``argv`` and sample its threads (and its workers') every ``interval``
    s: (time, cores used since the previous sample, the "pid/tid" of the threads runnable
    now) triples, the wall time and the child's events."""
    read_pids, write_pids = os.pipe()
    os.set_blocking(read_pids, False)
    with tempfile.NamedTemporaryFile(suffix=".json") as out:
        start = time.perf_counter()
        env = {**os.environ, START_ENV: repr(start), PIDS_ENV: str(write_pids),
               RPP_PATH_ENV: rpp_path}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed rpp runs: byte-code cached
        proc = subprocess.Popen([sys.executable, __file__, "--child", out.name, *argv],
                                stdout=subprocess.DEVNULL, env=env, pass_fds=(write_pids,))
        os.close(write_pids)
        workers: list[int] = []
        buffered = b""
        samples: list[tuple[float, float, list[str]]] = []
        last_t, last = start, {}
        while True:
            done = proc.poll() is not None
            try:
                buffered += os.read(read_pids, 4096)
            except BlockingIOError:
                pass
            *whole, buffered = buffered.split(b"\n")
            workers.extend(int(p) for p in whole if p)
            now = {}
            for pid in (proc.pid, *workers):
                now.update(tasks(pid))
            t = time.perf_counter()
            used = sum(ns - last[k][0] for k, (ns, _) in now.items() if k in last)
            samples.append((t - start, used / 1e9 / max(t - last_t, 1e-9),
                            [k for k, (_, running) in now.items() if running]))
            last_t, last = t, now
            if done:
                break
            time.sleep(interval)
        wall = time.perf_counter() - start
        os.close(read_pids)
        result = json.loads(Path(out.name).read_text()) if proc.returncode == 0 else None
    if result is None:
        raise SystemExit(f"rpp {' '.join(argv)}: exit status {proc.returncode}")
    # the child's own work after rpp's (its notes made into text) is neither rpp's nor serial
    saving = result["saved"] - result["end"]
    result["events"].append((SAVING, "MainThread", result["end"], result["saved"], proc.pid))
    return {"wall": wall - saving, "process_wall": wall, "samples": samples, "pid": proc.pid,
            **result}


def innermost(events: list, end: float, tid: int | None = None
              ) -> list[tuple[float, float, str | None]]:
    """The time line of thread ``tid`` (None: of every thread at once) cut into (start, end,
    step) pieces, each named by the innermost wrapped call running then (the latest started):
    None where none runs in a thread; for every thread at once, ``exit`` after the last call,
    up to the process's ``end``."""
    mine = sorted((e for e in events if tid is None or e[4] == tid), key=lambda e: (e[2], -e[3]))
    cuts = sorted({0.0, end, *(e[2] for e in mine), *(e[3] for e in mine)})
    pieces, active, k = [], [], 0
    for a, b in zip(cuts, cuts[1:]):
        while k < len(mine) and mine[k][2] <= a:
            active.append(mine[k])
            k += 1
        active = [e for e in active if e[3] > a]
        none = None if tid is not None else "exit" if k == len(mine) else "(between steps)"
        pieces.append((a, b, active[-1][0] if active else none))
    return pieces


def serial_steps(run: dict, cores: float, by: str, cpu: bool = False) -> dict[str, float]:
    """Seconds of serial wall time per step: intervals during which fewer than ``cores``
    cores were busy (``by`` "cpu"), or that end with at most one thread runnable ("runnable":
    what other work on the machine does not change). ``cpu``: the CPU seconds used in them
    instead (what they would take on an idle machine: the figure load does not inflate).
    An interval's step is the innermost call of the one thread of rpp's process runnable
    then, where it is in one; else the latest begun of every thread's (the one waiting on
    the worker that is busy, say)."""
    lines = {None: innermost(run["events"], run["process_wall"])}
    out: dict[str, float] = collections.defaultdict(float)
    prev = 0.0
    for t, rate, runnable in run["samples"]:
        if (rate < cores) if by == "cpu" else (len(runnable) <= 1):
            ours = [int(k.split("/")[1]) for k in runnable
                    if int(k.split("/")[0]) == run["pid"]]
            tid = ours[0] if len(ours) == 1 else None
            if tid not in lines:
                lines[tid] = innermost(run["events"], run["process_wall"], tid)
            spread = _overlaps(lines[tid], prev, t)
            if tid is not None and any(step is None for step, _ in spread):
                spread = _overlaps(lines[None], prev, t)  # a thread of no wrapped call
            for step, seconds in spread:
                out[step] += seconds * (rate if cpu else 1.0)
        prev = t
    out.pop(SAVING, None)
    return out


def _overlaps(pieces: list[tuple[float, float, str | None]], a: float, b: float
              ) -> list[tuple[str | None, float]]:
    """(step, seconds) of the pieces that overlap the interval (a, b]."""
    k = bisect.bisect_right(pieces, a, key=lambda p: p[1])
    out = []
    while k < len(pieces) and pieces[k][0] < b:
        lo, hi, step = pieces[k]
        if min(hi, b) > max(lo, a):
            out.append((step, min(hi, b) - max(lo, a)))
        k += 1
    return out


def cpu_seconds(run: dict) -> float:
    """CPU seconds the command used (its threads and workers, as sampled)."""
    prev, total = 0.0, 0.0
    for t, rate, _ in run["samples"]:
        total += (t - prev) * rate
        prev = t
    return total


def step_totals(run: dict) -> dict[str, float]:
    """Wall seconds of each step, the innermost call's (exclusive; the latest begun of
    every thread's)."""
    out: dict[str, float] = collections.defaultdict(float)
    for a, b, step in innermost(run["events"], run["process_wall"]):
        out[step] += b - a
    out.pop(SAVING, None)
    return out


def main() -> None:
    """The child's part (``--child``), or the runs, their samples and the report."""
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    parser.add_argument("collection", help="a folder with qrels and runs/")
    parser.add_argument("--jobs", type=int, default=2, help="-j of the parallel run (2)")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each (default 3)")
    parser.add_argument("--interval", type=float, default=5.0, help="ms between samples (5)")
    parser.add_argument("--cores", type=float, default=1.2,
                        help="fewer cores busy than this is serial (default 1.2)")
    parser.add_argument("--by", choices=("runnable", "cpu"), default="runnable",
                        help="an interval is serial when it ends with at most one of rpp's "
                             "threads runnable (default: what other work on the machine does "
                             "not change), or when fewer than --cores cores were busy in it")
    parser.add_argument("--rpp-path", action="append",
                        help="the folder whose rpp_cli runs (default: this checkout's); "
                             "repeat it to compare copies (another commit's), in turns")
    parser.add_argument("--json", help="write every run's samples and events here")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    args = parser.parse_args(argv[:cut])
    args.command = argv[cut + 1:] or ["eval"]  # the rpp command and options before the files
    paths = args.rpp_path or [str(HERE.parent)]
    files = [str(Path(args.collection) / "qrels"),
             *sorted(glob.glob(str(Path(args.collection) / "runs" / "*")))]
    runs: dict[str, dict[int, list[dict]]] = {p: {1: [], args.jobs: []} for p in paths}
    for i in range(args.repeat):
        for path in paths:
            for jobs in (1, args.jobs):
                run = sample([*args.command, "-j", str(jobs), *files], args.interval / 1000,
                             path)
                run["serial"] = serial_steps(run, args.cores, args.by)
                run["serial_cpu"] = serial_steps(run, args.cores, args.by, cpu=True)
                run["cpu"] = cpu_seconds(run)
                runs[path][jobs].append(run)
                print(f"{path}: run {i + 1} -j {jobs}: {run['wall']:.2f} s ({run['cpu']:.2f} s "
                      f"CPU), serial {sum(run['serial'].values()):.2f} s "
                      f"({sum(run['serial_cpu'].values()):.2f} s CPU)", file=sys.stderr,
                      flush=True)
    for path in paths:
        report(runs[path], args, path)
    if args.json:
        Path(args.json).write_text(json.dumps(
            {path: {str(j): r for j, r in by_jobs.items()} for path, by_jobs in runs.items()}))


def median(runs: list[dict], value) -> float:
    """The median of ``value(run)`` over ``runs``."""
    return statistics.median(value(r) for r in runs)


def report(runs: dict[int, list[dict]], args: argparse.Namespace, path: str) -> None:
    """The medians of one copy of rpp: walls, speed-up, serial share of -j 1's time and its
    steps."""
    one, many = runs[1], runs[args.jobs]
    j1, jn = median(one, lambda r: r["wall"]), median(many, lambda r: r["wall"])
    cpu1 = median(one, lambda r: r["cpu"])
    serial = median(many, lambda r: sum(r["serial"].values()))
    work = median(many, lambda r: sum(r["serial_cpu"].values()))
    how = ("at most one thread runnable" if args.by == "runnable"
           else f"< {args.cores:g} cores busy")
    print(f"rpp {' '.join(args.command)} on {args.collection} ({path}): medians of "
          f"{args.repeat}")
    print(f"  -j 1 {j1:.2f} s ({cpu1:.2f} s CPU), -j {args.jobs} {jn:.2f} s: speed-up "
          f"{j1 / jn:.2f}x")
    print(f"  serial at -j {args.jobs} ({how}): {serial:.2f} s = {serial / j1:.1%} of -j 1's "
          f"wall; the CPU it used: {work:.2f} s = {work / cpu1:.1%} of -j 1's CPU "
          f"(Amdahl, 2 cores: {1 / (work / cpu1 + (1 - work / cpu1) / 2):.2f}x)")
    steps = sorted({s for r in many for s in r["serial"]},
                   key=lambda s: -median(many, lambda r: r["serial_cpu"].get(s, 0.0)))
    print(f"  {'step (innermost call)':<40} {'serial s':>8} {'CPU s':>6} "
          f"{'% -j1 CPU':>9} {'wall -jN':>8} {'wall -j1':>8}")
    for step in steps:
        wall = median(many, lambda r: r["serial"].get(step, 0.0))
        used = median(many, lambda r: r["serial_cpu"].get(step, 0.0))
        if max(wall, used) < 0.005:
            continue
        wall_n = median(many, lambda r: step_totals(r).get(step, 0.0))
        wall_1 = median(one, lambda r: step_totals(r).get(step, 0.0))
        print(f"  {step[:40]:<40} {wall:8.2f} {used:6.2f} {used / cpu1:9.1%} {wall_n:8.2f} "
              f"{wall_1:8.2f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""`make bench`: time whole `rpp` processes on generated collections, beside baselines.

Every scenario runs `--repeat` times; the table shows the median wall time, the peak RSS
and, where a baseline runs on the same input in the same invocation, the ratio (so results
survive a noisy machine). Results go to bench/results.json.

Baselines: bench/naive.py (plain-Python parsing + pytrec_eval, the usual script) always;
the paper authors' reference code (diazf/pref_eval) when --pref-eval points at its
pref_eval.py (it is never part of this repository).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "fixtures"))
from make_collection import generate  # noqa: E402

COLLECTIONS = {  # name: (runs, queries, depth, judged pool per query)
    "L": (40, 250, 1000, 1500),
    "wide": (200, 50, 100, 400),
    "tall": (5, 50_000, 100, 120),
}


@dataclass
class Scenario:
    name: str
    collection: str
    args: list[str]
    target_seconds: float
    target_rss_mb: float | None = None
    naive_ratio: float | None = None  # must be <= this x naive time
    pref_eval_speedup: float | None = None  # must be >= this x faster than pref_eval
    notes: list[str] = field(default_factory=list)


SCENARIOS = [
    Scenario("L", "L", ["eval", "-q"], 8.0, 2048, naive_ratio=0.7),
    Scenario("L-pref", "L", ["eval", "-m", "rpp", "-m", "dcgrpp", "-m", "invrpp"], 4.0,
             pref_eval_speedup=15.0),
    Scenario("wide", "wide", ["eval"], 10.0),
    Scenario("tall", "tall", ["eval"], 15.0),
    Scenario("hsd", "L", ["compare", "--test", "hsd", "--permutations", "1000"], 15.0),
]


def collection(name: str) -> tuple[Path, list[Path]]:
    """The generated collection (cached in bench/data/<name>)."""
    runs, queries, depth, pool = COLLECTIONS[name]
    out = HERE / "data" / f"{name}-{runs}x{queries}x{depth}-p{pool}"
    if not (out / "done").exists():
        print(f"generating {out.name} ...", file=sys.stderr, flush=True)
        generate(str(out), runs, queries, depth, pool)
        (out / "done").write_text("")
    return out / "qrels", sorted((out / "runs").iterdir())


def timed(cmd: list[str]) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MB) and exit status of one process; stdout discarded."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.stderr.close()
    return wall, usage.ru_maxrss / 1024, os.waitstatus_to_exitcode(status)


def median_run(cmd: list[str], repeat: int) -> dict:
    walls, rss = [], []
    for _ in range(repeat):
        wall, peak, code = timed(cmd)
        if code != 0:
            raise SystemExit(f"failed ({code}): {' '.join(cmd)}")
        walls.append(wall)
        rss.append(peak)
    return {"seconds": statistics.median(walls), "all_seconds": walls, "peak_rss_mb": max(rss)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(s.name for s in SCENARIOS))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--pref-eval", default=os.environ.get("PREF_EVAL"),
                        help="path to diazf/pref_eval's pref_eval.py (optional)")
    parser.add_argument("--rpp", default=str(Path(sys.executable).parent / "rpp"))
    parser.add_argument("--no-profile", action="store_true",
                        help="do not profile the scenarios that miss their target")
    args = parser.parse_args()
    wanted = args.scenarios.split(",")
    report = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
              "scenarios": {}}
    for sc in SCENARIOS:
        if sc.name not in wanted:
            continue
        qrels, runs = collection(sc.collection)
        cmd = [args.rpp, *sc.args, str(qrels), *map(str, runs)]
        row = median_run(cmd, args.repeat)
        row.update(target_seconds=sc.target_seconds, command=" ".join(sc.args))
        ok = row["seconds"] <= sc.target_seconds
        if sc.target_rss_mb:
            row["target_rss_mb"] = sc.target_rss_mb
            ok &= row["peak_rss_mb"] <= sc.target_rss_mb
        if sc.naive_ratio:
            naive = median_run([sys.executable, str(HERE / "naive.py"), str(qrels),
                                *map(str, runs)], args.repeat)
            row["naive_seconds"] = naive["seconds"]
            row["ratio_to_naive"] = row["seconds"] / naive["seconds"]
            row["target_ratio_to_naive"] = sc.naive_ratio
            ok &= row["ratio_to_naive"] <= sc.naive_ratio
        if sc.pref_eval_speedup and args.pref_eval:
            ref = median_run([sys.executable, args.pref_eval, "-R", str(qrels), "-m", "rpp",
                              "-m", "dcgrpp", "-m", "invrpp", *map(str, runs)], 1)
            row["pref_eval_seconds"] = ref["seconds"]
            row["speedup_vs_pref_eval"] = ref["seconds"] / row["seconds"]
            row["target_speedup"] = sc.pref_eval_speedup
            ok &= row["speedup_vs_pref_eval"] >= sc.pref_eval_speedup
        row["met"] = bool(ok)
        report["scenarios"][sc.name] = row
        print(format_row(sc.name, row), flush=True)
        if not ok and not args.no_profile:
            row["profile"] = profile([*sc.args, "-j", "1", str(qrels), *map(str, runs)])
            print(row["profile"], flush=True)
    (HERE / "results.json").write_text(json.dumps(report, indent=2) + "\n")
    print(f"wrote {HERE / 'results.json'}")


def profile(args: list[str], top: int = 15) -> str:
    """Where the time goes: cProfile of one single-process run, the costliest functions."""
    out = subprocess.run([sys.executable, "-m", "cProfile", "-s", "tottime", "-m", "rpp_cli",
                          *args], capture_output=True, text=True).stdout
    start = out.find("   Ordered by")
    lines = [line for line in out[start:].splitlines() if line.strip()][:top + 2]
    return "\n".join("    " + line[:110] for line in lines)


def format_row(name: str, row: dict) -> str:
    parts = [f"{name:<8}", f"{row['seconds']:7.2f} s (target {row['target_seconds']:g})",
             f"{row['peak_rss_mb']:7.0f} MB"]
    if "ratio_to_naive" in row:
        parts.append(f"naive {row['naive_seconds']:.2f} s, ratio {row['ratio_to_naive']:.2f} "
                     f"(target <= {row['target_ratio_to_naive']})")
    if "speedup_vs_pref_eval" in row:
        parts.append(f"pref_eval {row['pref_eval_seconds']:.1f} s, "
                     f"{row['speedup_vs_pref_eval']:.1f}x (target >= {row['target_speedup']})")
    parts.append("met" if row["met"] else "MISSED")
    return "  ".join(parts)


if __name__ == "__main__":
    main()

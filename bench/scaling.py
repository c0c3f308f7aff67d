#!/usr/bin/env python3
"""Scaling of rpp with cores, and on a Dask LocalCluster: one invocation, one table.

Lines (each timed ``--repeat`` times, median shown; every line names its command):

- L ``eval -q`` (defaults; 40 runs x 250 queries x depth 1000) beside naive.py, at -j 1 2 4 8 16
  (up to the cores present);
- L preferences only (``-m rpp -m dcgrpp -m invrpp -q``) at the same -j;
- tall ``eval`` (5 runs x 50,000 queries x depth 100) beside naive.py, -j 1 and -j all;
- 160 runs x 250 queries x 1000, preferences ``-q`` (L's 40 run files, each listed 4 times
  under other names: the same work as 160 distinct runs), -j all;
- MS MARCO scale: 6,980 queries x depth 1000 x 20 runs (5 generated runs, each 4 times),
  ``eval`` (defaults), -j all;
- Dask: L ``eval -q`` on ``--dask local:N`` beside ``-j N``;
- meta: ``--analysis power`` with 10,000 HSD permutations at 2 and 4 workers (-j and Dask).

The machine (cores, CPU model, memory, Python) heads the table and the JSON. Collections are
generated in parallel (bench/data/, cached). ``--budget`` seconds in all: lines that would
start after it are reported as skipped. ``--small`` runs a reduced version (fewer queries:
for a 2-core machine or a dry run). Memory: peak of rpp's process tree (see bench/run.py).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from run import GENERATOR, HERE, PREF_MEASURES, timed, warm  # bench/run.py's harness

SIZES = {  # name: (runs generated, queries, depth, pool, copies of each run)
    "L": (40, 250, 1000, 1500, 1),
    "tall": (5, 50_000, 100, 120, 1),
    "160": (40, 250, 1000, 1500, 4),
    "marco": (5, 6980, 1000, 1200, 4),
}
SOURCE = {"L eval -q": "L", "L preferences -q": "L", "tall eval": "tall",  # line: collection
          "160 runs preferences -q": "160", "marco 20 runs eval": "marco",
          "L eval -q (Dask)": "L", "L meta power 10k": "L"}
SMALL = {"L": (40, 50, 1000, 1500, 1), "tall": (5, 5000, 100, 120, 1),
         "160": (40, 50, 1000, 1500, 4), "marco": (5, 700, 1000, 1200, 4)}


def machine() -> dict:
    """Cores this process may use, CPU model, memory, Python: which machine each number is from."""
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((ln.split(":", 1)[1].strip() for ln in f if ln.startswith("model name")),
                         "?")
    except OSError:
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cores": cores, "cpu": model, "memory_gib": round(mem, 1),
            "python": platform.python_version(), "platform": platform.platform()}


def generate(name: str, size: tuple, data: Path) -> tuple[str, list[str]]:
    """The collection ``name`` (cached): qrels and run paths, copies as symlinks."""
    runs, queries, depth, pool, copies = size
    base = "L" if name == "160" else name
    out = data / f"{base}-{runs}x{queries}x{depth}-p{pool}"
    if not (out / "done").exists():
        subprocess.run([sys.executable, str(GENERATOR), "--out", str(out), "--runs", str(runs),
                        "--queries", str(queries), "--depth", str(depth), "--pool", str(pool),
                        "--docnos", "mixed"], check=True, stdout=subprocess.DEVNULL)
        (out / "done").write_text("")
    files = sorted(str(p) for p in (out / "runs").iterdir())
    if copies > 1:  # the same files under other names: distinct run names, the same work
        linked = out / f"x{copies}"
        linked.mkdir(exist_ok=True)
        paths = []
        for k in range(copies):
            for f in files:
                link = linked / f"{Path(f).name}.{k}"
                if not link.exists():
                    link.symlink_to(f)
                paths.append(str(link))
        files = paths
    return str(out / "qrels"), files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true", help="reduced collections")
    parser.add_argument("--repeat", type=int, default=1, help="runs per line (median)")
    parser.add_argument("--budget", type=float, default=450.0, help="seconds for everything")
    parser.add_argument("--only", action="append", help="line names to run (default: all)")
    parser.add_argument("--skip", action="append", default=[],
                        help="'LINE|LABEL' entries not to run, e.g. 'tall eval|naive.py'")
    parser.add_argument("--rpp", default=str(Path(sys.executable).parent / "rpp"))
    parser.add_argument("--data", default=str(HERE / "data"))
    parser.add_argument("--output", default=str(HERE / "scaling.json"))
    args = parser.parse_args()
    start = time.monotonic()
    info = machine()
    cores = info["cores"]
    ladder = [j for j in (1, 2, 4, 8, 16) if j <= cores] or [1]
    top = ladder[-1]
    sizes = SMALL if args.small else SIZES
    data = Path(args.data)
    data.mkdir(parents=True, exist_ok=True)
    print(f"machine: {info}\ngenerating collections ...", file=sys.stderr, flush=True)
    # only the collections of the lines asked for; "160" reads L's files (linked 4 times), so L
    # is generated first, in its own pass, and two threads never write one folder
    needed = {SOURCE[line] for line in SOURCE if not args.only or line in args.only}
    first = sorted((needed - {"160"}) | ({"L"} if "160" in needed else set()))
    with ThreadPoolExecutor(max(1, len(first))) as pool:
        colls = dict(zip(first, pool.map(lambda n: generate(n, sizes[n], data), first)))
    if "160" in needed:
        colls["160"] = generate("160", sizes["160"], data)
    generated = time.monotonic() - start
    rpp, naive = [args.rpp], [sys.executable, str(HERE / "naive.py")]
    env = {**os.environ, "PYTHONUTF8": "1"}
    power = ["meta", "--analysis", "power", "--permutations", "10000"]
    lines: list[tuple[str, str, list[str]]] = []  # (line, label, argv before the files)
    # most wanted first: lines that would start after --budget are skipped
    lines.append(("L eval -q", "naive.py", naive))
    lines += [("L eval -q", f"-j {j}", [*rpp, "eval", "-q", "-j", str(j)]) for j in ladder]
    lines += [("L preferences -q", f"-j {j}", [*rpp, "eval", "-q", *PREF_MEASURES, "-j", str(j)])
              for j in ladder]
    lines += [("tall eval", "-j 1", [*rpp, "eval", "-j", "1"]),
              ("tall eval", f"-j {top}", [*rpp, "eval", "-j", str(top)]),
              ("160 runs preferences -q", f"-j {top}",
               [*rpp, "eval", "-q", *PREF_MEASURES, "-j", str(top)]),
              ("L eval -q (Dask)", f"-j {top}", [*rpp, "eval", "-q", "-j", str(top)]),
              ("L eval -q (Dask)", f"--dask local:{top}",
               [*rpp, "eval", "-q", "--dask", f"local:{top}"])]
    for w in (2, 4):
        if w <= cores:
            lines += [("L meta power 10k", f"-j {w}", [*rpp, *power, "-j", str(w)]),
                      ("L meta power 10k", f"--dask local:{w}",
                       [*rpp, *power, "--dask", f"local:{w}"])]
    lines += [("tall eval", "naive.py", naive),
              ("marco 20 runs eval", f"-j {top}", [*rpp, "eval", "-j", str(top)])]
    rows: list[dict] = []

    def report() -> dict:
        return {"machine": info, "small": args.small, "generate_seconds": round(generated, 1),
                "total_seconds": round(time.monotonic() - start, 1), "rows": rows}

    def save(rep: dict) -> None:
        Path(args.output).write_text(json.dumps(rep, indent=1))

    for line, label, argv in lines:
        if (args.only and line not in args.only) or f"{line}|{label}" in args.skip:
            continue
        qrels, runs = colls[SOURCE[line]]
        files = [qrels, *runs]
        if time.monotonic() - start > args.budget:
            rows.append({"line": line, "label": label, "skipped": "out of time"})
            continue
        results = []
        for _ in range(args.repeat):
            warm(sorted(set(files)))
            left = max(10.0, args.budget - (time.monotonic() - start))
            results.append(timed([*argv, *files], timeout=left, env=env))
            print(f"  {line:<24} {label:<16} {results[-1]['seconds']:.2f} s "
                  f"{results[-1]['peak_mb']:.0f} MB (exit {results[-1]['code']})",
                  file=sys.stderr, flush=True)
        ok = [r for r in results if r["code"] == 0 and not r["timed_out"]]
        rows.append({"line": line, "label": label, "command": " ".join(argv[len(rpp) - 1:]),
                     "seconds": statistics.median(r["seconds"] for r in ok) if ok else None,
                     "all_seconds": [round(r["seconds"], 3) for r in results],
                     "peak_mb": max((r["peak_mb"] for r in ok), default=None),
                     "error": None if ok else results[-1]["stderr"][-300:]
                     or f"exit {results[-1]['code']}"})
        save(report())  # after every line: a run stopped from outside keeps what it measured
    print(table(report()))


def table(report: dict) -> str:
    """The report as a markdown table, the machine first; speedups against each line's first
    rpp entry (-j 1 where it was run)."""
    m = report["machine"]
    out = [f"Machine: {m['cores']} cores, {m['cpu']}, {m['memory_gib']} GiB, Python "
           f"{m['python']}" + (" (--small collections)" if report["small"] else ""), "",
           "| line | command | seconds | vs first rpp | peak MB |", "|---|---|---|---|---|"]
    first: dict[str, float] = {}
    for row in report["rows"]:
        t = row.get("seconds")
        if t is not None and row["label"] != "naive.py":
            first.setdefault(row["line"], t)
        base = first.get(row["line"])
        speed = f"{base / t:.2f}x" if t and base and row["label"] != "naive.py" else ""
        shown = (f"{t:.2f}" if t is not None else
                 f"skipped ({row['skipped']})" if "skipped" in row else f"failed: {row['error']}")
        peak = f"{row['peak_mb']:.0f}" if row.get("peak_mb") else ""
        out.append(f"| {row['line']} | {row['label']} | {shown} | {speed} | {peak} |")
    out.append(f"\nGeneration {report['generate_seconds']} s; total {report['total_seconds']} s.")
    return "\n".join(out)


if __name__ == "__main__":
    main()

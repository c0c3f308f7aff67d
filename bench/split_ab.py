#!/usr/bin/env python3
"""A/B timing of the tokenizer (``_kernel.split``): the kernel of a git revision against the
working tree's, built alike, on the same generated run files, interleaved, best of N.

    .venv/bin/python bench/split_ab.py --base main --rows 2000000 --repeat 15
    .venv/bin/python bench/split_ab.py --base main --rows 200000 --instructions

Two files of ``--rows`` run lines each: ASCII docnos (``msmarco_passage_NN_N``) and docnos
heavy in UTF-8 (``Zürich_Straße_東京_N``, 10 of about 29 bytes non-ASCII): the tokenizer looks at
every byte >= 0x80 (contract §1: C1, separators and bidi controls are refused), so the second
file is its worst case. Prints the best time of each build per file and their ratio; with
``--instructions``, the instructions one split executes (valgrind's callgrind, collecting in
``split`` only): deterministic, so it compares builds on a machine too loaded to time them.
"""
from __future__ import annotations

import argparse
import importlib.util
import random
import re
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
FLAGS = ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Wno-missing-field-initializers",
         "-shared", "-fPIC"]  # setup.py's, plus what a shared object needs


def build(source: str, out: Path) -> None:
    """Compile ``source`` (C text of _kernel.c) to the shared object ``out``."""
    c_file = out.with_suffix(".c")
    c_file.write_text(source)
    subprocess.run(["cc", *FLAGS, f"-I{sysconfig.get_paths()['include']}", str(c_file), "-o",
                    str(out), "-lm", "-lpthread"], check=True)


def load(path: Path):
    """Import the kernel built at ``path``."""
    spec = importlib.util.spec_from_file_location("_kernel", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_file(rows: int, docno, rng: random.Random) -> bytes:
    """``rows`` run lines ``qid Q0 docno rank score tag``."""
    return "".join(f"{rng.randint(1, 300)} Q0 {docno(i)} {i} {rng.random():.6f} bm25.rm3\n"
                   for i in range(rows)).encode()


def instructions(so: Path, data: Path) -> int:
    """Instructions executed inside ``split`` for one split of ``data`` by the build ``so``."""
    with tempfile.NamedTemporaryFile() as out:
        subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out.name}",
                        "--toggle-collect=split", sys.executable, __file__, "--split", str(so),
                        str(data)], check=True, capture_output=True)
        return int(re.search(rb"^summary: (\d+)", Path(out.name).read_bytes(), re.M)[1])


def best_time(kernel, data: bytes) -> float:
    """One split of ``data`` (fields 0, 2, 4 kept, as runs are read), in seconds."""
    cap = data.count(b"\n") + 1
    want = np.array([0, 2, 4], dtype=np.int32)
    nfields = np.empty(cap, np.int32)
    starts, lens = np.empty(cap * 3, np.int64), np.empty(cap * 3, np.int32)
    start = time.perf_counter()
    _, err, _, _, _ = kernel.split(data, want, 4096, nfields, starts, lens)
    elapsed = time.perf_counter() - start
    assert err == 0
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default="main", help="git revision to compare against")
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--instructions", action="store_true",
                        help="count instructions under callgrind instead of timing")
    parser.add_argument("--split", nargs=2, metavar=("SO", "DATA"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.split:  # one split, for callgrind
        best_time(load(Path(args.split[0])), Path(args.split[1]).read_bytes())
        return
    base_source = subprocess.run(["git", "show", f"{args.base}:rpp_cli/core/_kernel.c"],
                                 cwd=ROOT, check=True, capture_output=True, text=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        builds = {args.base: Path(tmp) / "base.so", "working tree": Path(tmp) / "tree.so"}
        build(base_source, builds[args.base])
        build((ROOT / "rpp_cli/core/_kernel.c").read_text(), builds["working tree"])
        kernels = {name: load(path) for name, path in builds.items()}
        rng = random.Random(1)
        files = {
            "ASCII docnos": run_file(args.rows, lambda i: f"msmarco_passage_{i % 70:02d}_"
                                     f"{rng.randint(0, 10 ** 9)}", rng),
            "UTF-8 docnos": run_file(args.rows, lambda i: f"Zürich_Straße_東京_"
                                     f"{rng.randint(0, 10 ** 6)}", rng),
        }
        for label, data in files.items():
            if args.instructions:
                path = Path(tmp) / "data"
                path.write_bytes(data)
                count = {name: instructions(so, path) for name, so in builds.items()}
                base, tree = count[args.base], count["working tree"]
                print(f"{label} ({len(data) / 1e6:.1f} MB): {args.base} {base:,} instructions, "
                      f"working tree {tree:,}, ratio {tree / base:.3f}")
                continue
            times: dict[str, list[float]] = {name: [] for name in kernels}
            for _ in range(args.repeat):
                for name, kernel in kernels.items():
                    times[name].append(best_time(kernel, data))
            best = {name: min(t) for name, t in times.items()}
            base, tree = best[args.base], best["working tree"]
            print(f"{label} ({len(data) / 1e6:.0f} MB): {args.base} {base * 1e3:.1f} ms, "
                  f"working tree {tree * 1e3:.1f} ms, ratio {tree / base:.3f}")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Fingerprints of rpp's output: every command x format x view on the fixtures and a generated
collection, as ``md5(stdout) md5(stderr) status  command`` lines, so that a change meant to
move no byte (a refactoring) shows that it moved none.

    python bench/outputs.py > before.txt; ...; python bench/outputs.py > after.txt
    diff before.txt after.txt

Run from the repository root with the venv's python. The generated collection (200 queries,
8 runs, mixed docnos) is written to a temporary folder; every randomized command is seeded.
Paths are printed relative to the root or to the temporary folder ("$GEN"), so tables from
two checkouts compare.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("trec", "jsonl", "csv", "matrix", "markdown", "latex")


def invocations(gen: str) -> list[list[str]]:
    """Every command line fingerprinted; ``gen``: the generated collection's folder."""
    demo, mixed, paper = "fixtures/demo", "fixtures/mixed", "fixtures/paper"
    d_runs = [f"{demo}/runs/{r}" for r in ("bm25", "bm25.rm3", "colbert", "dpr", "monot5",
                                            "splade")]
    m_runs = [f"{mixed}/runs/{r}" for r in "abc"]
    g_runs = sorted(str(p) for p in Path(gen, "runs").iterdir())
    sub = f"{demo}/qrels.subtopics"
    out: list[list[str]] = []
    for qrels, runs in ((f"{demo}/qrels", d_runs), (f"{mixed}/qrels", m_runs),
                        (f"{paper}/qrels", [f"{paper}/run.X", f"{paper}/run.Y"]),
                        (f"{gen}/qrels", g_runs)):
        for fmt in FORMATS:
            out.append(["eval", "-q", "--orderings", "--format", fmt, qrels, *runs])
            out.append(["compare", "--format", fmt, "--permutations", "200", qrels, *runs[:3]])
        for fmt in ("trec", "jsonl", "csv", "markdown"):
            out.append(["check", "--format", fmt, "--permutations", "200", "--baseline",
                        runs[0], "--max-drop", "map=0.01", qrels, *runs[1:3]])
        for fmt in ("trec", "jsonl", "csv"):
            out.append(["levels", "--format", fmt, qrels, *runs[:2]])
        out.append(["eval", "-q", "-m", "all_trec", "-m", "rpp", "-m", "asl", "-m", "RR@10",
                    "-m", "Judged@10", "-m", "ERR@20", "-m", "rbp.0.8", qrels, *runs])
        out.append(["eval", "-q", "-l", "2", "-M", "5", "--precision", "10", qrels, *runs])
        out.append(["compare", "--view", "human", "--test", "ttest", "--correction", "holm",
                    qrels, *runs[:3]])
        for fmt in ("latex", "markdown"):
            out.append(["compare", "--view", "paper", "--format", fmt, "--test", "ttest",
                        qrels, *runs[:3]])
        out.append(["meta", "--permutations", "50", "--samples", "20", "--judged-samples",
                    "3", qrels, *runs])
        out.append(["meta", "--view", "human", "--analysis", "power,agreement",
                    "--permutations", "50", qrels, *runs])
        for args in (["-q", "-m", "all_trec"], ["-c", "-q"], ["-l", "2", "-q"],
                     ["-M", "5", "-q"], ["-J", "-q", "-m", "all_trec"]):
            out.append(["trec-eval", *args, qrels, runs[0]])
    for fmt in FORMATS:
        out.append(["eval", "-q", "--format", fmt, "--subtopics", sub, f"{demo}/qrels",
                    *d_runs[:3]])
    out.append(["eval", "-q", "--subtopics", sub, *d_runs[:3]])
    out.append(["levels", "--subtopics", sub, f"{demo}/qrels", *d_runs[:2]])
    out.append(["compare", "--subtopics", sub, "--permutations", "100", f"{demo}/qrels",
                *d_runs[:2]])
    for args in ([], ["-c"], ["-traditional", "-M", "10"], ["-alpha", "0.3", "-beta", "0.9"]):
        out.append(["ndeval", *args, sub, d_runs[0]])
    for jobs in ("1", "2"):
        out.append(["eval", "-q", "-j", jobs, f"{gen}/qrels", *g_runs])
    out.append(["measures"])
    for command in ("eval", "compare", "check", "levels", "meta", "trec-eval", "ndeval"):
        out.append([command, "--help"])
    out.append(["--help"])
    out.append(["eval", f"{demo}/qrels", "no/such/run"])
    out.append(["eval", "-m", "nosuch", f"{demo}/qrels", *d_runs[:2]])
    out.append(["check", "--baseline", d_runs[0], f"{demo}/qrels"])
    return out


def main() -> None:
    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as gen:
        subprocess.run([sys.executable, "fixtures/make_collection.py", "--out", gen, "--runs",
                        "8", "--queries", "200", "--depth", "100", "--docnos", "mixed"],
                       check=True, stdout=subprocess.DEVNULL)
        env = {**os.environ, "COLUMNS": "100"}
        for args in invocations(gen):
            res = subprocess.run([sys.executable, "-m", "rpp_cli", *args], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 stdin=subprocess.DEVNULL)
            shown = " ".join(args).replace(gen, "$GEN")
            err = res.stderr.replace(gen.encode(), b"$GEN")
            print(hashlib.md5(res.stdout.replace(gen.encode(), b"$GEN")).hexdigest()[:12],
                  hashlib.md5(err).hexdigest()[:12], res.returncode, "", shown, flush=True)


if __name__ == "__main__":
    main()

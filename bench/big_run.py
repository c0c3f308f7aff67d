#!/usr/bin/env python3
"""A gzipped run of tens of millions of lines (issue 18's 45M-line run), and its qrels.

fixtures/make_collection.py writes a template collection (3 runs x ``--queries`` x ``--depth``,
``--docnos mixed``); the run ``colbert`` (scores rounded to 0.1: tied scores) is written
``--copies`` times, copy k with every qid ``Q`` renamed ``Q_k`` (string qids such as
``106_1``), so the big run has ``copies * queries * depth`` lines of mixed docnos (short
numeric, msmarco_passage_NN_N, 40-byte hex, UTF-8), tabs nowhere, spaces as written. The
qrels keep the first ``--judged`` judgments of every template query, copied the same way.

Two gzip files are written in ``runs/``: ``run.gz`` and ``bad.gz``, the same lines but for one line
``--bad-from-end`` lines before the end, cut after its rank (4 fields: a truncated line).
Each is two gzip members (as pigz, bgzip or ``cat a.gz b.gz`` write): everything but the
last ``--tail`` lines, then those; the bad file shares the first member's bytes.
"""
from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

HERE = Path(__file__).resolve().parent
GENERATOR = HERE.parent / "fixtures" / "make_collection.py"


def copies_of(lines: list[bytes], k: int) -> bytes:
    """The template's lines with every qid ``Q`` renamed ``Q_k``."""
    suffix = b"_%d " % k
    return b"".join(line.replace(b" ", suffix, 1) for line in lines)


def compress(chunks, level: int) -> bytes:
    """One gzip member of the concatenated ``chunks``."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, 31)
    return b"".join([*(deflate.compress(c) for c in chunks), deflate.flush()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--queries", type=int, default=450)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--pool", type=int, default=1500)
    parser.add_argument("--copies", type=int, default=100)
    parser.add_argument("--judged", type=int, default=20, help="judgments kept per query")
    parser.add_argument("--tail", type=int, default=2000)
    parser.add_argument("--bad-from-end", type=int, default=1000)
    parser.add_argument("--level", type=int, default=6, help="gzip level (default 6)")
    args = parser.parse_args()
    out = Path(args.out)
    template = out / "template"
    subprocess.run([sys.executable, str(GENERATOR), "--out", str(template), "--runs", "3",
                    "--queries", str(args.queries), "--depth", str(args.depth), "--pool",
                    str(args.pool), "--docnos", "mixed"], check=True)
    lines = (template / "runs" / "colbert").read_bytes().splitlines(keepends=True)
    per_query: dict[bytes, int] = {}
    judged = []
    for line in (template / "qrels").read_bytes().splitlines(keepends=True):
        qid = line.split(b" ", 1)[0]
        per_query[qid] = per_query.get(qid, 0) + 1
        if per_query[qid] <= args.judged:
            judged.append(line)
    with open(out / "qrels", "wb") as f:
        for k in range(args.copies):
            f.write(copies_of(judged, k))
    runs = out / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    # the last copy's last lines go to the second member (the bad one cuts one of them)
    last = copies_of(lines, args.copies - 1).splitlines(keepends=True)
    head, tail = last[:-args.tail], last[-args.tail:]
    deflate = zlib.compressobj(args.level, zlib.DEFLATED, 31)
    with open(runs / "run.gz", "wb") as f:
        for k in range(args.copies - 1):
            f.write(deflate.compress(copies_of(lines, k)))
        f.write(deflate.compress(b"".join(head)))
        f.write(deflate.flush())
    shutil.copyfile(runs / "run.gz", runs / "bad.gz")
    bad = list(tail)
    cut = len(tail) - args.bad_from_end
    bad[cut] = b" ".join(bad[cut].split()[:4]) + b"\n"
    with open(runs / "run.gz", "ab") as f:
        f.write(compress(tail, args.level))
    with open(runs / "bad.gz", "ab") as f:
        f.write(compress(bad, args.level))
    shutil.rmtree(template)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""A query that never ends (issue 36): one gzipped run of ``--lines`` lines, all one query,
every line the same, so line 2 repeats line 1's docno; and qrels that judge that query.

45M lines of 49 bytes are 2.2 GB plain and 6.4 MB gzipped: the file is one gzip member (a
million lines) written again and again (as ``cat a.gz a.gz ...`` would), so it takes a second
to write. A reader that holds a query whole before it checks its docnos holds all of
it before the error; one that checks as it reads stops at line 2.
"""
from __future__ import annotations

import argparse
import zlib
from pathlib import Path

QID = "1001"
DOCNO = "msmarco_passage_17_8812345"
LINE = f"{QID} Q0 {DOCNO} 1 13.2500 tag\n".encode()
BLOCK = 1_000_000  # lines per gzip member


def member(lines: int, level: int) -> bytes:
    """One gzip member of ``lines`` copies of LINE."""
    deflate = zlib.compressobj(level, zlib.DEFLATED, 31)
    return deflate.compress(LINE * lines) + deflate.flush()


def main() -> None:
    """Write the qrels and runs/run.gz under --out."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--lines", type=int, default=45_000_000)
    parser.add_argument("--level", type=int, default=6, help="gzip level (default 6)")
    args = parser.parse_args()
    out = Path(args.out)
    (out / "runs").mkdir(parents=True, exist_ok=True)
    (out / "qrels").write_text(f"{QID} 0 {DOCNO} 2\n"
                               + "".join(f"{QID} 0 msmarco_passage_17_{k} {k % 4}\n"
                                         for k in range(100)))
    full, rest = divmod(args.lines, BLOCK)
    block = member(BLOCK, args.level) if full else b""
    with open(out / "runs" / "run.gz", "wb") as f:
        for _ in range(full):
            f.write(block)
        if rest:
            f.write(member(rest, args.level))


if __name__ == "__main__":
    main()

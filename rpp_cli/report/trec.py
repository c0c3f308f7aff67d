"""SPEC §7 text: ``measure<pad 22>\\tqid\\trun[\\tother]\\tvalue``, value last for awk."""
from __future__ import annotations

from typing import TextIO

from ..results import ALL, Results


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Write every row, per-query rows first, in the stable SPEC §7 order (``all`` rows
    only with ``summary``)."""
    lines = []
    for measure, qid, run, other, value in results.rows():
        if not summary and qid == ALL:
            continue
        runs = run if other is None else f"{run}\t{other}"
        lines.append(f"{measure:<22}\t{qid}\t{runs}\t{value:.{precision}f}\n")
        if len(lines) >= 65536:
            out.write("".join(lines))
            lines.clear()
    out.write("".join(lines))

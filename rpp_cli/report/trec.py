"""SPEC §7 text: ``measure<pad 22>\\tqid\\trun[\\tother]\\tvalue``, value last for awk."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .common import coded_rows, number, write_lines


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Write every row, per-query rows first, in the stable SPEC §7 order (``all`` rows
    only with ``summary``)."""
    measures, qids, runs, rows = coded_rows(results, summary)
    m_txt = [f"{m:<22}\t" for m in measures]
    q_txt = [f"{q}\t" for q in qids]
    o_txt = [f"\t{r}" for r in runs] + [""]
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{runs[r]}{o_txt[o]}\t{number(v, precision)}\n"
                      for m, q, r, o, v in rows))

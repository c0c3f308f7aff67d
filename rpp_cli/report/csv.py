"""CSV with a header row ``measure,qid,run,other,value``; ``other`` is empty for per-run
values and ``value`` has the trec format's digits; names as :func:`.escape.csv_field` writes
them (RFC 4180 quoting where needed, a ``'`` before a would-be formula)."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .common import coded_rows, is_count, number, write_lines
from .escape import csv_field

HEADER = ("measure", "qid", "run", "other", "value")


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Header, then one line per row in contract §7 order."""
    measures, qids, runs, rows = coded_rows(results, summary)
    m_txt = [csv_field(m) + "," for m in measures]
    q_txt = [csv_field(q) + "," for q in qids]
    r_txt = [csv_field(r) + "," for r in runs]
    o_txt = [csv_field(r) + "," for r in runs] + [","]
    out.write(",".join(HEADER) + "\n")
    count = [is_count(m) for m in measures]
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{r_txt[r]}{o_txt[o]}{number(v, precision, count[m])}\n"
                      for m, q, r, o, v in rows))

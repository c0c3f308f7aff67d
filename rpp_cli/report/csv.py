"""CSV with a header row ``measure,qid,run,other,value``; ``other`` is empty for per-run
values and ``value`` has the trec format's digits (RFC 4180 quoting where a name needs it)."""
from __future__ import annotations

import csv
import io
from typing import TextIO

from ..results import Results
from .common import coded_rows, is_count, number, write_lines

HEADER = ("measure", "qid", "run", "other", "value")


def _quote(field: str) -> str:
    """``field`` as the csv module would write it (quoted only when it must be)."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow([field])
    return buf.getvalue()


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Header, then one line per row in contract §7 order."""
    measures, qids, runs, rows = coded_rows(results, summary)
    m_txt = [_quote(m) + "," for m in measures]
    q_txt = [_quote(q) + "," for q in qids]
    r_txt = [_quote(r) + "," for r in runs]
    o_txt = [_quote(r) + "," for r in runs] + [","]
    out.write(",".join(HEADER) + "\n")
    count = [is_count(m) for m in measures]
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{r_txt[r]}{o_txt[o]}{number(v, precision, count[m])}\n"
                      for m, q, r, o, v in rows))

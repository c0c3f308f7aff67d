"""JSON Lines: one object a row, ``{"measure", "qid", "run", "other", "value"}``.

``other`` is null for per-run values; ``value`` is the number printed with ``--precision``
decimals (the same digits as the trec format), or null when it is not finite.
"""
from __future__ import annotations

import math
from typing import TextIO

from ..results import Results
from .common import coded_rows, is_count, number, write_lines
from .escape import json_string


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """One JSON object per line, in contract §7 row order."""
    measures, qids, runs, rows = coded_rows(results, summary)
    enc = json_string
    m_txt = [f'{{"measure": {enc(m)}, "qid": ' for m in measures]
    q_txt = [f'{enc(q)}, "run": ' for q in qids]
    r_txt = [enc(r) for r in runs]
    o_txt = [f', "other": {enc(r)}, "value": ' for r in runs] + [', "other": null, "value": ']
    count = [is_count(m) for m in measures]
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{r_txt[r]}{o_txt[o]}"
                      f"{number(v, precision, count[m]) if math.isfinite(v) else 'null'}}}\n"
                      for m, q, r, o, v in rows))

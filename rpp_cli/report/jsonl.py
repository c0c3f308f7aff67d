"""JSON Lines: one object a row, ``{"measure", "qid", "run", "other", "value"}``.

``other`` is null for per-run values; ``value`` is the number printed with ``--precision``
decimals (the same digits as the trec format), a p-value in full, or null when it is not
finite.
"""
from __future__ import annotations

import math
from typing import TextIO

from ..results import Results
from .common import (Verdicts, coded_rows, machine_precision, number, row_ends, styles,
                     write_lines)
from .escape import json_string


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True,
          verdicts: Verdicts | None = None) -> None:
    """One JSON object per line, in contract §7 row order. With ``verdicts`` (rpp check),
    each object also has ``"verdict"`` (PASS/FAIL of its gate) and a last object
    ``{"measure": "verdict", "qid": "all", "run": null, "other": BASELINE, "value": null,
    "verdict": "PASS"|"FAIL"}`` gives the whole check's, after one object per input file
    (``"measure": "input"``, its path as ``run``, its ``"sha256"``: hex, null for stdin)."""
    measures, qids, runs, rows = coded_rows(results, summary)
    enc = json_string
    m_txt = [f'{{"measure": {enc(m)}, "qid": ' for m in measures]
    q_txt = [f'{enc(q)}, "run": ' for q in qids]
    r_txt = [enc(r) for r in runs]
    o_txt = [f', "other": {enc(r)}, "value": ' for r in runs] + [', "other": null, "value": ']
    style = styles(measures)
    digits = machine_precision(measures, precision)
    end = row_ends(measures, runs, verdicts,
                   lambda v: "}\n" if not verdicts else f', "verdict": {enc(v)}}}\n')
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{r_txt[r]}{o_txt[o]}"
                      f"{number(v, digits[m], style[m]) if math.isfinite(v) else 'null'}"
                      f"{end[m][r]}" for m, q, r, o, v in rows))
    for path, digest in getattr(verdicts, "inputs", ()):  # rpp check's input files
        out.write(f'{{"measure": "input", "qid": {q_txt[-1]}{enc(path)}, "other": null, '
                  f'"value": null, "verdict": null, "sha256": '
                  f'{"null" if digest is None else enc(digest)}}}\n')
    if verdicts:
        out.write(f'{{"measure": "verdict", "qid": {q_txt[-1]}null{o_txt[verdicts.baseline]}'
                  f'null, "verdict": {enc(verdicts.overall)}}}\n')

"""CSV with a header row ``measure,qid,run,other,value``; ``other`` is empty for per-run
values and ``value`` has the trec format's digits, p-values in full; names as
:func:`.escape.csv_field` writes them (RFC 4180 quoting where needed, a ``'`` before a would-be
formula)."""
from __future__ import annotations

from typing import TextIO

from ..results import Results
from .common import (Verdicts, coded_rows, machine_precision, number, row_ends, styles,
                     write_lines)
from .escape import csv_field

HEADER = ("measure", "qid", "run", "other", "value")


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True,
          verdicts: Verdicts | None = None) -> None:
    """Header, then one line per row in contract §7 order. With ``verdicts`` (rpp check), a
    sixth column ``verdict`` (PASS/FAIL of the row's gate) and a last row
    ``verdict,all,,BASELINE,,PASS|FAIL`` for the whole check, after a row
    ``input,all,PATH,,,SHA256`` per input file (the digest in the sixth column, empty for
    stdin)."""
    measures, qids, runs, rows = coded_rows(results, summary)
    m_txt = [csv_field(m) + "," for m in measures]
    q_txt = [csv_field(q) + "," for q in qids]
    r_txt = [csv_field(r) + "," for r in runs]
    o_txt = [csv_field(r) + "," for r in runs] + [","]
    out.write(",".join(HEADER + (("verdict",) if verdicts else ())) + "\n")
    style = styles(measures)
    digits = machine_precision(measures, precision)
    end = row_ends(measures, runs, verdicts, lambda v: "\n" if not verdicts else f",{v or ''}\n")
    write_lines(out, (f"{m_txt[m]}{q_txt[q]}{r_txt[r]}{o_txt[o]}{number(v, digits[m], style[m])}"
                      f"{end[m][r]}" for m, q, r, o, v in rows))
    for path, digest in getattr(verdicts, "inputs", ()):  # rpp check's input files
        out.write(f"input,{q_txt[-1]}{csv_field(path)},,,{digest or ''}\n")
    if verdicts:
        out.write(f"verdict,{q_txt[-1]},{o_txt[verdicts.baseline]},{verdicts.overall}\n")

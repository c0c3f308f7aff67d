"""What every format shares: how a value is printed and the rows in contract §7 order."""
from __future__ import annotations

import math
from typing import Iterable, Iterator, TextIO

import numpy as np

from ..results import ALL, Results
from .escape import ident


COUNTS = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})


def is_count(measure: str) -> bool:
    """Counts print as integers, as trec_eval prints them (contract §7)."""
    return measure in COUNTS


def number(value: float, precision: int, count: bool = False) -> str:
    """A value as every format prints it (contract §7: fixed decimals, counts as integers, no
    negative zero), so all formats agree."""
    if count and math.isfinite(value):
        return str(int(value))
    text = f"{value:.{precision}f}"
    return text[1:] if text[0] == "-" and not text.strip("-0.") else text


def coded_rows(results: Results, summary: bool = True
               ) -> tuple[list[str], list[str], list[str], Iterator[tuple]]:
    """Measure names, qids as text (``all`` last; :func:`.escape.ident`), run names and the
    rows ``(m, q, r, o, value)`` as indexes into them (``o = -1`` for per-run rows), in
    contract §7 order.

    Writers encode each name once and then only index, which keeps millions of per-query
    rows cheap. Without ``summary`` the ``all`` rows are left out.
    """
    m, q, r, o, v = results.columns()
    if not summary:
        keep = q >= 0
        m, q, r, o, v = m[keep], q[keep], r[keep], o[keep], v[keep]
    q = np.where(q < 0, len(results.qids), q)
    rows = zip(m.tolist(), q.tolist(), r.tolist(), o.tolist(), v.tolist())
    return results.measures, [ident(q) for q in results.qids] + [ALL], results.runs, rows


def write_lines(out: TextIO, lines: Iterable[str], chunk: int = 65536) -> None:
    """Write ``lines`` in chunks: bounded memory, and a pipe reader sees output early."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))

"""contract §7 text: ``measure<pad 22>\\tqid\\trun[\\tother]\\tvalue``, value last for awk."""
from __future__ import annotations

from typing import TextIO

import numpy as np

from ..results import ALL, Results
from .common import is_count, number

_CHUNK = 1 << 18  # rows formatted per write: bounded memory for millions of lines


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Write every row, per-query rows first, in the stable contract §7 order (``all`` rows
    only with ``summary``). Names are joined as object arrays, values formatted in bulk."""
    m, q, r, o, v = results.columns()
    if not summary:
        keep = q >= 0
        m, q, r, o, v = m[keep], q[keep], r[keep], o[keep], v[keep]
    measures = np.array([f"{name:<22}\t" for name in results.measures], dtype=object)
    qids = np.array([f"{qid}\t" for qid in results.qids + [ALL]], dtype=object)
    runs = np.array([f"{run}\t" for run in results.runs], dtype=object)
    others = np.array([f"{run}\t" for run in results.runs] + [""], dtype=object)
    fmt = f"{{:.{precision}f}}\n".format
    zero, negative_zero = fmt(0.0), "-" + fmt(0.0)
    count = np.array([is_count(name) for name in results.measures], dtype=bool)
    for lo in range(0, len(v), _CHUNK):
        hi = lo + _CHUNK
        prefix = measures[m[lo:hi]] + qids[q[lo:hi]] + runs[r[lo:hi]] + others[o[lo:hi]]
        values = np.array(list(map(fmt, v[lo:hi].tolist())), dtype=object)
        values[values == negative_zero] = zero  # as common.number: no negative zero
        counted = np.flatnonzero(count[m[lo:hi]])
        values[counted] = [number(x, precision, True) + "\n" for x in v[lo:hi][counted].tolist()]
        out.write("".join((prefix + values).tolist()))

"""contract §7 text: ``measure<pad 22>\\tqid\\trun[\\tother]\\tvalue``, value last for awk."""
from __future__ import annotations

import functools
from typing import TextIO

import numpy as np

from ..engine import Inline, Lazy, Processes, current, query_shards
from ..results import ALL, Results
from .common import is_count, number

_CHUNK = 1 << 18  # rows formatted at once, at most (unless one query has more): bounded memory


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Write every row, per-query rows first, in the stable contract §7 order (``all`` rows
    only with ``summary``). Shards of queries are formatted by the command's engine (names
    joined as object arrays, values formatted in bulk) and written in order: in the worker
    processes of ``-j``, inline otherwise (threads or Dask would not pay)."""
    counts = results.key_counts()
    if not summary:
        counts = counts[:-1]
    engine = current()
    if not isinstance(engine, Processes):  # formatting holds the GIL, and its text should not
        engine = Inline()  # cross a network: only forked workers pay, else format here
    bounds = _shard_bounds(counts, engine.workers)
    names = _names(results)
    fmt = functools.partial(_format, names=names, precision=precision)
    shards = Lazy(len(bounds) - 1, lambda i: results.part(int(bounds[i]), int(bounds[i + 1])))
    for text in engine.imap(fmt, shards):
        out.write(text)


def _shard_bounds(counts: np.ndarray, workers: int) -> np.ndarray:
    """Query-key bounds of the output shards: the engine's query shards (weighted by rows),
    cut further so that no shard has over _CHUNK rows unless one query does."""
    total = np.cumsum(counts)
    cuts = np.searchsorted(total, np.arange(_CHUNK, int(total[-1]) if len(total) else 0,
                                            _CHUNK), side="right")
    return np.unique(np.concatenate((query_shards(counts + 1, workers), cuts,
                                     [len(counts)])))


def _names(results: Results) -> tuple[np.ndarray, ...]:
    """The text of every measure, qid, run and other run code, with its tab; which measures
    are counts."""
    return (np.array([f"{name:<22}\t" for name in results.measures], dtype=object),
            np.array([f"{qid}\t" for qid in results.qids + [ALL]], dtype=object),
            np.array([f"{run}\t" for run in results.runs], dtype=object),
            np.array([f"{run}\t" for run in results.runs] + [""], dtype=object),
            np.array([is_count(name) for name in results.measures], dtype=bool))


def _format(columns: tuple[np.ndarray, ...], names: tuple[np.ndarray, ...],
            precision: int) -> str:
    """The lines of rows ``columns`` (m, q, r, o, value codes, in output order)."""
    m, q, r, o, v = columns
    measures, qids, runs, others, count = names
    q = np.where(q < 0, len(qids) - 1, q)
    fmt = f"{{:.{precision}f}}\n".format
    zero, negative_zero = fmt(0.0), "-" + fmt(0.0)
    prefix = measures[m] + qids[q] + runs[r] + others[o]
    values = np.array(list(map(fmt, v.tolist())), dtype=object)
    values[values == negative_zero] = zero  # as common.number: no negative zero
    counted = np.flatnonzero(count[m])
    values[counted] = [number(x, precision, True) + "\n" for x in v[counted].tolist()]
    return "".join((prefix + values).tolist())

"""contract §7 text: ``measure<pad 22>\\tqid\\trun[\\tother]\\tvalue``, value last for awk."""
from __future__ import annotations

import codecs
import functools
import sys
from typing import Callable, TextIO

import numpy as np

from ..core import format_rows
from ..engine import Lazy, Processes, query_shards, write_all, writers
from ..results import ALL, Results, row_bounds
from .common import COUNT, RANK, number, styles

# Rows formatted at once, at most (unless one query has more): bounded memory. Each of 16
# writing workers holds a shard's columns, order and text at once: 160 runs' preferences at
# -j 16 peaked at 1,776 MB (tree PSS) with 2^18 rows, 1,139 MB with 2^16, in the same time.
_CHUNK = 1 << 16


def write(results: Results, out: TextIO, precision: int = 4, summary: bool = True) -> None:
    """Write every row, per-query rows first, in the stable contract §7 order (``all`` rows
    only with ``summary``). Shards of queries are formatted by the command's engine (names
    formatted by the kernel) and written in order: by forked workers of this machine where
    the command has them (:func:`~rpp_cli.engine.writers`), inline otherwise."""
    counts = results.key_counts()
    if not summary:
        counts = counts[:-1]
    engine = writers()
    bounds = _shard_bounds(counts, engine.workers)
    names = _names(results)
    fmt = functools.partial(_format, names=names, precision=precision)
    shards = Lazy(len(bounds) - 1, lambda i: results.part(int(bounds[i]), int(bounds[i + 1])))
    fd = _descriptor(out) if isinstance(engine, Processes) and takes_bytes(out) else None
    if fd is not None:  # the workers write their lines to stdout themselves, in order
        out.flush()
        engine.write_ordered(fmt, shards, fd)
        return
    write_bytes = bytes_writer(out)
    for text in engine.imap(fmt, shards):
        write_bytes(text)


def takes_bytes(out: TextIO) -> bool:
    """Whether ``out`` has a binary buffer and encodes UTF-8 with surrogateescape (rpp's
    stdout): the kernel's bytes are then what its text would become."""
    encoding = codecs.lookup(getattr(out, "encoding", None) or "ascii").name
    return (getattr(out, "buffer", None) is not None and encoding == "utf-8"
            and getattr(out, "errors", None) == "surrogateescape")


def _descriptor(out: TextIO) -> int | None:
    """The file descriptor under ``out`` when it is the process's stdout (what forked workers
    inherit), else None."""
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        return None
    return fd if fd == 1 and out is sys.stdout else None


def bytes_writer(out: TextIO) -> Callable[[bytes], object]:
    """How to write the kernel's bytes (ids as read, the rest ASCII) to ``out``: straight to
    its binary buffer when it :func:`takes_bytes`, which is what decoding and encoding them
    again would give, byte for byte, without two passes over every line in one thread; decoded
    and written as text otherwise."""
    if not takes_bytes(out):
        return lambda data: out.write(data.decode("utf-8", "surrogateescape"))
    out.flush()  # what the text layer holds goes first
    return functools.partial(write_all, out.buffer.write)  # type: ignore[attr-defined]


def _shard_bounds(counts: np.ndarray, workers: int) -> np.ndarray:
    """Query-key bounds of the output shards: the engine's query shards (weighted by rows),
    cut further so that no shard has over _CHUNK rows unless one query does."""
    return np.unique(np.concatenate((query_shards(counts + 1, workers),
                                     row_bounds(counts, _CHUNK))))


def _names(results: Results) -> tuple[bytes, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every measure, qid (``all`` last), run and other run (none last) with its tab, as one
    table of bytes (ids as read: surrogateescape), its offsets, which names are count
    measures, where each of the four groups starts in the table, and which measures are
    ranks (printed here, not by the kernel: :func:`_rank_lines`)."""
    groups = ([f"{name:<22}\t" for name in results.measures],
              [f"{qid}\t" for qid in results.qids + [ALL]],
              [f"{run}\t" for run in results.runs],
              [f"{run}\t" for run in results.runs] + [""])
    texts = [t.encode("utf-8", "surrogateescape") for group in groups for t in group]
    lens = np.array([len(t) for t in texts], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(lens)))
    style = np.array(styles(results.measures), dtype=np.uint8)
    count = np.zeros(len(texts), dtype=np.uint8)
    count[:len(results.measures)] = style == COUNT
    return (b"".join(texts), offsets, count, np.cumsum([0] + [len(g) for g in groups[:-1]]),
            style == RANK)


def _format(columns: tuple[np.ndarray, ...], names: tuple, precision: int) -> bytes:
    """The lines of rows ``columns`` (m, q, r, o, value codes, in output order; q and o -1
    for ``all`` and none), as the kernel prints them; the rows of ranks (a stretch of ``all``
    rows a measure) as :func:`_rank_lines` does."""
    m, q, r, o, v = columns
    table, offsets, count, first, rank = names
    last_q, last_o = first[2] - 1, len(count) - 1
    index = [np.ascontiguousarray(x, dtype=np.int64) for x in
             (m + first[0], np.where(q < 0, last_q, q + first[1]), r + first[2],
              np.where(o < 0, last_o, o + first[3]))]
    values = np.ascontiguousarray(v, dtype=np.float64)
    ranked = rank[m]
    bounds = [0, *(np.flatnonzero(np.diff(ranked)) + 1).tolist(), len(m)]
    parts = []
    for lo, hi in zip(bounds[:-1], bounds[1:]):
        part = [np.ascontiguousarray(x[lo:hi]) for x in index]
        parts.append(_rank_lines(part, values[lo:hi], table, offsets) if ranked[lo:hi].any() else
                     format_rows(*part, values[lo:hi], table, offsets, count, precision))
    return b"".join(parts)


def _rank_lines(index: list[np.ndarray], values: np.ndarray, table: bytes,
                offsets: np.ndarray) -> bytes:
    """Lines as :func:`format_rows` writes them (``index``: the four name columns, name i
    ``table[offsets[i]:offsets[i + 1]]``), each value a rank (``5``, ``5.5``): a few rows a
    measure, in Python."""
    return b"".join(b"".join(table[offsets[i]:offsets[i + 1]] for i in row)
                    + number(v, None, RANK).encode("ascii") + b"\n"
                    for row, v in zip(zip(*index), values.tolist()))

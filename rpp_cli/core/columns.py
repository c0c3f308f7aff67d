"""Columns of strings over a buffer, and the buffers a streamed reader grows in place.

A column is two integer arrays, (offset, length), into the bytes it reads: strings are never
padded, so memory is proportional to the text, not to its longest id.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _kernel

MAX_TOKEN_BYTES = 4096  # the longest field (qid, docno, score, tag ...) a file may hold


@dataclass(frozen=True)
class Column:
    """One field of every row: ``data[starts[i]:starts[i] + lens[i]]``."""

    data: bytearray | bytes
    starts: np.ndarray  # int64, contiguous
    lens: np.ndarray  # int32, contiguous

    def __len__(self) -> int:
        return len(self.starts)

    def take(self, rows: np.ndarray) -> "Column":
        return Column(self.data, self.starts[rows], self.lens[rows])

    def compact(self) -> "Column":
        """The same strings in a buffer of their own (the file's bytes can then be freed)."""
        lens = self.lens.astype(np.int64)
        out = bytearray(int(lens.sum()))
        _kernel.gather(self.data, self.starts, self.lens, out)
        return Column(out, np.cumsum(lens) - lens, self.lens.copy())

    def bytes(self, row: int) -> bytes:
        start = int(self.starts[row])
        return bytes(self.data[start:start + int(self.lens[row])])

    def digits_only(self) -> np.ndarray:
        """Mask of the values made of ASCII digits only."""
        packed = self.compact()
        lens = packed.lens.astype(np.int64)
        if len(lens) == 0 or lens.sum() == 0:
            return lens > 0
        byte = np.frombuffer(packed.data, dtype=np.uint8)
        bad = ((byte < 48) | (byte > 57)).astype(np.int64)
        nonempty = lens > 0
        counts = np.zeros(len(lens), dtype=np.int64)
        counts[nonempty] = np.add.reduceat(bad, packed.starts[nonempty])
        return nonempty & (counts == 0)

    def grid(self) -> np.ndarray:
        """(rows, longest) uint8: each value's bytes, NUL-padded (no value holds NUL), for
        checks of every value at once."""
        data = np.frombuffer(self.data, dtype=np.uint8)
        grid = np.zeros((len(self), max(1, int(self.lens.max(initial=0)))), dtype=np.uint8)
        for k in range(grid.shape[1]):  # a column at a time: memory of one column's indices
            has = np.flatnonzero(self.lens > k)
            grid[has, k] = data[self.starts[has] + k]
        return grid

    def text(self, row: int) -> str:
        """One value as text (for messages and names); undecodable bytes escaped."""
        return self.bytes(row).decode("utf-8", "surrogateescape")

    def texts(self) -> list[str]:
        """Every value as :meth:`text` gives it, from one copy of the buffer."""
        data = bytes(self.data)
        return [data[s:s + n].decode("utf-8", "surrogateescape")
                for s, n in zip(self.starts.tolist(), self.lens.tolist())]


def column_of(strings: list[bytes]) -> Column:
    """A column holding ``strings`` (e.g. ids that came from another file)."""
    lens = np.array([len(s) for s in strings], dtype=np.int32)
    starts = np.cumsum(lens, dtype=np.int64) - lens
    return Column(b"".join(strings), starts, lens)


class Growing:
    """An array appended to piece by piece in one buffer that grows in place (a large
    realloc moves pages, it does not copy them): what is kept is never held twice, as
    concatenating the pieces at the end would."""

    def __init__(self, dtype) -> None:
        self.dtype = np.dtype(dtype)
        self.buffer = bytearray()

    def append(self, values: np.ndarray) -> None:
        """Add ``values`` (cast to the dtype); the copy releases the GIL (other readers go on)."""
        _kernel.extend(self.buffer, np.ascontiguousarray(values, dtype=self.dtype))

    def array(self) -> np.ndarray:
        """The values so far (a view: append no more once taken)."""
        return np.frombuffer(self.buffer, dtype=self.dtype)


class GrowingColumn:
    """A column appended to piece by piece: its strings back to back in one buffer and their
    lengths as uint16 (a field is at most MAX_TOKEN_BYTES), so a row costs 2 bytes beside its
    bytes; the offsets are summed when it is taken as a Column (:func:`packed_column`)."""

    def __init__(self) -> None:
        self.data, self.lens = Growing(np.uint8), Growing(np.uint16)

    def append(self, col: Column) -> None:
        """Add the strings of ``col`` (copied: its data can then be freed), gathered straight
        onto the buffer by one copy that releases the GIL."""
        _kernel.extend(self.data.buffer, col.data, col.starts, col.lens)
        self.lens.append(col.lens)


assert MAX_TOKEN_BYTES < 1 << 16  # GrowingColumn's lengths are uint16


def packed_starts(lens: np.ndarray) -> np.ndarray:
    """int64 offsets of strings stored back to back with these lengths."""
    starts = np.cumsum(lens, dtype=np.int64)
    starts -= lens
    return starts


def packed_column(data: bytearray | bytes, lens: np.ndarray) -> Column:
    """The Column of strings stored back to back in ``data`` with these lengths."""
    return Column(data, packed_starts(lens), lens.astype(np.int32))

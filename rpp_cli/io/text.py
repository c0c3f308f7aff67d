"""Whitespace-separated text files as numpy columns, with line numbers for errors.

TREC files are big (a run of 250 queries x depth 1000 is 250k lines) and regular, so they are
tokenised with numpy on the raw bytes instead of line by line in Python: no Python object per
line is ever created. Every token keeps its line number so that errors can name it.
"""
from __future__ import annotations

import gzip
import os
import sys
import zlib
from dataclasses import dataclass

import numpy as np

from ..errors import InputError

_GZIP_MAGIC = b"\x1f\x8b"
_STDIN = "-"
_stdin_read: object | None = None  # the stdin stream already consumed (one per invocation)

# FNV-1a, 64 bit: the hash of every token, to compare and join strings as integers.
_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)


def read_bytes(path: str) -> bytes:
    """The whole content of ``path`` (``-`` = stdin), gunzipped when it starts with gzip magic."""
    global _stdin_read
    if path == _STDIN:
        if _stdin_read is sys.stdin:
            raise InputError("standard input can be read only once", path="-")
        _stdin_read = sys.stdin
        data = sys.stdin.buffer.read()
    else:
        if os.path.isdir(path):
            raise InputError("is a directory, not a file", path=path)
        try:
            with open(path, "rb") as handle:
                data = handle.read()
        except FileNotFoundError:
            raise InputError("no such file", path=path) from None
        except OSError as err:
            raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    if data[:2] == _GZIP_MAGIC:
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise InputError(f"corrupt gzip data ({err})", path=path) from None
    return data


@dataclass(frozen=True)
class Field:
    """One column of a table: the bytes of each row's token as a fixed-width numpy array."""

    buf: np.ndarray  # (rows, width) uint8, zero-padded
    lens: np.ndarray  # (rows,) token lengths

    @property
    def strings(self) -> np.ndarray:
        """The tokens as a numpy ``S`` array (compares and sorts bytewise, like strcmp)."""
        if self.buf.shape[1] == 0:
            return np.zeros(len(self.lens), dtype="S1")
        return np.ascontiguousarray(self.buf).view(f"S{self.buf.shape[1]}").ravel()

    def hashes(self) -> np.ndarray:
        """A 64-bit FNV-1a hash of each token (equal tokens, equal hashes)."""
        h = np.full(len(self.lens), _FNV_OFFSET, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for j in range(self.buf.shape[1]):  # loop over character columns, not rows
                live = self.lens > j
                mixed = (h ^ self.buf[:, j].astype(np.uint64)) * _FNV_PRIME
                h = np.where(live, mixed, h)
        return h

    def text(self) -> list[str]:
        """The tokens as Python strings (only for APIs that need them, e.g. pytrec_eval)."""
        return decode(self.strings)


def decode(strings: np.ndarray) -> list[str]:
    """A numpy ``S`` array as Python strings (UTF-8; undecodable bytes kept as escapes)."""
    if len(strings) == 0:
        return []
    if int(strings.view(np.uint8).max()) < 128:
        return strings.astype("U").tolist()
    return [s.decode("utf-8", "surrogateescape") for s in strings.tolist()]


@dataclass(frozen=True)
class Table:
    """The data lines of a file split into fields; ``line`` holds 1-based line numbers."""

    path: str
    line: np.ndarray
    nfields: np.ndarray
    _data: np.ndarray
    _first: np.ndarray  # index of each row's first token
    _starts: np.ndarray
    _ends: np.ndarray

    def __len__(self) -> int:
        return len(self.line)

    def field(self, k: int, rows: np.ndarray | None = None) -> Field:
        """Column ``k`` (0-based) of every row (or of ``rows``); rows must have > k fields."""
        tok = self._first + k if rows is None else self._first[rows] + k
        starts = self._starts[tok]
        lens = self._ends[tok] - starts
        width = int(lens.max()) if len(lens) else 0
        cols = np.arange(width)
        idx = np.minimum(starts[:, None] + cols, len(self._data) - 1)
        buf = np.where(cols < lens[:, None], self._data[idx], 0).astype(np.uint8)
        return Field(buf, lens)

    def numbers(self, k: int, what: str) -> np.ndarray:
        """Column ``k`` as finite float64; the first bad value is an :class:`InputError`."""
        strings = self.field(k).strings
        try:
            values = strings.astype(np.float64)
        except ValueError:
            values = None
        if values is not None:
            bad = np.flatnonzero(~np.isfinite(values))
            if len(bad) == 0:
                return values
            row = int(bad[0])
        else:
            row = next(i for i, s in enumerate(strings.tolist()) if not _is_float(s))
        token = strings[row].decode("utf-8", "replace")
        raise InputError(f"{what} '{token}' is not a finite number", self.path, int(self.line[row]))


def _is_float(token: bytes) -> bool:
    try:
        np.float64(token)
    except ValueError:
        return False
    return True


def read_table(path: str, allowed_fields: tuple[int, ...], kind: str) -> Table:
    """Read and split ``path``; every data line must have a field count in ``allowed_fields``.

    Blank lines and lines whose first token starts with ``#`` are skipped. An empty file, a
    binary file and a line with the wrong number of fields are :class:`InputError`.
    """
    raw = read_bytes(path)
    data = np.frombuffer(raw, dtype=np.uint8)
    newlines = np.flatnonzero(data == 10)
    control = (data < 32) & ((data < 9) | (data > 13))
    if control.any():
        pos = int(np.argmax(control))
        line = int(np.searchsorted(newlines, pos)) + 1
        raise InputError(f"not a text file (binary byte 0x{data[pos]:02x}); expected {kind}",
                         path, line)
    space = data <= 32
    if space.all():
        raise InputError(f"empty file: no {kind} lines", path)
    solid = ~space
    starts = np.flatnonzero(solid & np.concatenate(([True], space[:-1])))
    ends = np.flatnonzero(solid & np.concatenate((space[1:], [True]))) + 1
    tok_line = np.searchsorted(newlines, starts)  # 0-based line of each token
    first_in_line = np.concatenate(([True], tok_line[1:] != tok_line[:-1]))
    first = np.flatnonzero(first_in_line)
    comment = data[starts[first]] == ord("#")
    if comment.any():
        keep_line = np.repeat(~comment, np.diff(np.append(first, len(starts))))
        starts, ends, tok_line = starts[keep_line], ends[keep_line], tok_line[keep_line]
        first = first[~comment]
        first = np.searchsorted(np.flatnonzero(keep_line), first)
    if len(first) == 0:
        raise InputError(f"empty file: no {kind} lines", path)
    nfields = np.diff(np.append(first, len(starts)))
    wrong = ~np.isin(nfields, allowed_fields)
    if wrong.any():
        row = int(np.argmax(wrong))
        want = " or ".join(str(n) for n in allowed_fields)
        raise InputError(f"expected {want} fields ({kind}), found {int(nfields[row])}",
                         path, int(tok_line[first[row]]) + 1)
    return Table(path, tok_line[first] + 1, nfields, data, first, starts, ends)

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

_FNV_PRIME = np.uint64(0x100000001B3)


def read_bytes(path: str) -> bytes:
    """The whole content of ``path`` (``-`` = stdin), gunzipped when it starts with gzip magic."""
    if path == _STDIN:
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


_MIX = np.uint64(0x9E3779B97F4A7C15)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


class Strings:
    """A column of byte strings as zero-padded little-endian uint64 words.

    Equal strings have equal (length, words); comparing the byte-swapped words column by
    column is strcmp order; a 64-bit hash of the words joins columns as integers. All of it
    is vectorised: no Python object per string.
    """

    def __init__(self, words: np.ndarray, lens: np.ndarray, arrow=None) -> None:
        self.words = words  # (n, W) uint64
        self.lens = lens  # (n,) int64
        self.arrow = arrow  # the pyarrow StringArray read, if any: the fastest way to Python str
        self._hashes: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.lens)

    @classmethod
    def gather(cls, data: np.ndarray, starts: np.ndarray, lens: np.ndarray) -> "Strings":
        """The strings ``data[starts[i]:starts[i] + lens[i]]`` of a uint8 buffer."""
        n = len(lens)
        n_words = int((lens.max() + 7) // 8) if n else 0
        if n and (lens == lens[0]).all() and (starts[1:] == starts[:-1] + lens[0]).all():
            out = np.zeros((n, 8 * n_words), dtype=np.uint8)  # fixed-length, back to back:
            width = int(lens[0])  # a plain reshape
            out[:, :width] = data[starts[0]:starts[0] + n * width].reshape(n, width)
            return cls(out.view("<u8"), lens.astype(np.int64))
        padded = np.zeros(((len(data) + 23) // 8) * 8, dtype=np.uint8)
        padded[:len(data)] = data
        view = padded.view("<u8")
        words = np.empty((n, n_words), dtype=np.uint64)
        for w in range(n_words):  # 8 bytes at a time from any offset: two aligned loads
            pos = np.minimum(starts + 8 * w, len(data))
            shift = ((pos & 7) * 8).astype(np.uint64)
            lo, hi = view[pos >> 3], view[(pos >> 3) + 1]
            word = np.where(shift == 0, lo, (lo >> shift) | (hi << (np.uint64(64) - shift)))
            words[:, w] = word & _MASKS[np.clip(lens - 8 * w, 0, 8)]
        return cls(words, lens.astype(np.int64))

    @classmethod
    def from_texts(cls, texts: list[str]) -> "Strings":
        """From Python strings (UTF-8 bytes, as in the files)."""
        raw = [t.encode("utf-8", "surrogateescape") for t in texts]
        lens = np.array([len(b) for b in raw], dtype=np.int64)
        starts = np.concatenate(([0], np.cumsum(lens)[:-1])) if len(raw) else lens
        return cls.gather(np.frombuffer(b"".join(raw), dtype=np.uint8), starts, lens)

    def take(self, rows: np.ndarray) -> "Strings":
        return Strings(self.words[rows], self.lens[rows])

    def hashes(self) -> np.ndarray:
        """A 64-bit hash of each string (equal strings, equal hashes); computed once."""
        if self._hashes is None:
            h = self.lens.astype(np.uint64) * _MIX
            with np.errstate(over="ignore"):
                for w in range(self.words.shape[1]):
                    h = (h ^ self.words[:, w]) * _FNV_PRIME
                    h ^= h >> np.uint64(29)
            self._hashes = h
        return self._hashes

    def equal(self, rows: np.ndarray, other: "Strings", other_rows: np.ndarray) -> np.ndarray:
        """Exact equality of ``self[rows]`` and ``other[other_rows]``, element-wise."""
        same = self.lens[rows] == other.lens[other_rows]
        for w in range(min(self.words.shape[1], other.words.shape[1])):
            same &= self.words[rows, w] == other.words[other_rows, w]
        return same

    def order(self, rows: np.ndarray) -> np.ndarray:
        """Rank (0-based) of each of ``self[rows]`` in byte order (strcmp)."""
        keys = _suffix_keys([self.words[rows, w].byteswap() for w in range(self.words.shape[1])])
        order = np.argsort(keys[0], kind="stable") if keys else np.arange(len(rows))
        if len(keys) > 1:  # refine where the first key ties, by the other keys
            first = keys[0][order]
            same = first[1:] == first[:-1]
            if same.any():
                tied = np.zeros(len(order), dtype=bool)
                tied[1:] |= same
                tied[:-1] |= same
                at = np.flatnonzero(tied)
                group = np.concatenate(([0], np.cumsum(~same)))[at]
                sub = order[at]
                order[at] = sub[np.lexsort([k[sub] for k in keys[:0:-1]] + [group])]
        rank = np.empty(len(rows), dtype=np.int64)
        rank[order] = np.arange(len(rows))
        return rank

    def bytes(self) -> np.ndarray:
        """The strings as a numpy ``S`` array (bytewise comparisons, like strcmp)."""
        if self.words.shape[1] == 0:
            return np.zeros(len(self.lens), dtype="S1")
        return np.ascontiguousarray(self.words).view(f"S{8 * self.words.shape[1]}").ravel()

    def texts(self, rows: np.ndarray | None = None) -> list[str]:
        """The strings as Python strings (only for APIs that need them, e.g. pytrec_eval)."""
        if self.arrow is not None:
            return (self.arrow if rows is None else self.arrow.take(rows)).to_pylist()
        raw = self.bytes()
        return decode(raw if rows is None else raw[rows])


def _suffix_keys(be: list[np.ndarray]) -> list[np.ndarray]:
    """Big-endian word columns with their common leading bytes cut off, re-aligned: the same
    order with fewer sort keys (docnos of a collection share long prefixes)."""
    skip = 0
    for col in be:
        diff = np.bitwise_or.reduce(col ^ col[0]) if len(col) else np.uint64(0)
        if diff:
            skip += 8 - (int(diff).bit_length() + 7) // 8
            break
        skip += 8
    word, shift = divmod(skip, 8)
    rest = be[word:]
    if shift == 0 or not rest:
        return rest
    up, down = np.uint64(8 * shift), np.uint64(64 - 8 * shift)
    padded = rest + [np.zeros_like(rest[0])]
    keys = [(padded[i] << up) | (padded[i + 1] >> down) for i in range(len(rest))]
    return [k for k in keys if (k != k[0]).any()]  # a constant column orders nothing


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

    def strings(self, k: int, rows: np.ndarray | None = None) -> Strings:
        """Column ``k`` (0-based) of every row (or of ``rows``); rows must have > k fields."""
        tok = self._first + k if rows is None else self._first[rows] + k
        starts = self._starts[tok]
        return Strings.gather(self._data, starts, self._ends[tok] - starts)

    def texts(self, k: int) -> list[str]:
        """Column ``k`` as Python strings."""
        return self.strings(k).texts()

    def numbers(self, k: int, what: str) -> np.ndarray:
        """Column ``k`` as finite float64; the first bad value is an :class:`InputError`."""
        strings = self.strings(k).bytes()
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


def read_table(path: str, allowed_fields: tuple[int, ...], kind: str,
               raw: bytes | None = None, more_fields_ok: bool = False) -> Table:
    """Read and split ``path``; every data line must have a field count in ``allowed_fields``
    (or, with ``more_fields_ok``, at least the largest of them: trec_eval ignores extra fields).

    Blank lines and lines whose first token starts with ``#`` are skipped. An empty file, a
    binary file and a line with the wrong number of fields are :class:`InputError`.
    """
    raw = read_bytes(path) if raw is None else raw
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
    if more_fields_ok:
        wrong &= nfields < max(allowed_fields)
    if wrong.any():
        row = int(np.argmax(wrong))
        want = " or ".join(str(n) for n in allowed_fields) + (" or more" if more_fields_ok else "")
        raise InputError(f"expected {want} fields ({kind}), found {int(nfields[row])}",
                         path, int(tok_line[first[row]]) + 1)
    return Table(path, tok_line[first] + 1, nfields, data, first, starts, ends)

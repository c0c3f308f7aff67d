"""TREC text of in-memory columns, built by numpy a column at a time (:mod:`.api_inputs`).

The API hands dicts and DataFrames to the file reader as text. Writing that text a row at a
time (``repr`` of each score, a string per line) cost more than the evaluation it fed, so
here the caller's texts (qids, docnos, grades) are joined and encoded at once, checked by a
search for each byte no field may hold, and numpy puts each row's other bytes around them:
separators, and a run's scores as short decimals the reader parses back to the same double
by its fast path (``8.3``: :func:`score_block`), or else as exact hexadecimal floats
(``+0x1.8000000000000p+0001`` is 3.0), which C's strtod, the reader's, reads back as the same
double. Where a text is no field (empty, whitespace, a separator, not UTF-8), the functions
return None and the caller names it.
"""
from __future__ import annotations

import numpy as np

from .core import _kernel

SEPARATOR = "\x01"  # joins the texts; the reader refuses it in a field, so no text holds it
_NOT_IN_A_FIELD = (b"\t", b"\r", b"\n", b"\x00")  # and space, counted apart
_U64 = np.uint64
# Rows made at once: each array a chunk needs (its text, the mask, the bytes) is about a MB,
# which the allocator reuses; a whole run at once (tens of MB an array, new pages each time)
# spent a third of its time in page faults.
CHUNK_ROWS = 1 << 14


def token(text: str) -> bytes | None:
    """``text`` as UTF-8 (surrogateescape) when it is one field of TREC text, else None."""
    found = _encoded(text, 1, 0)
    return found[0] if found is not None and found[1].all() else None


def rows(columns: list, n: int) -> bytes | None:
    """``n`` rows, row i the columns' i-th pieces one after the other, or None where a text is
    no field. Columns alternate: the caller's texts (a list, one a row), then what every row
    has there (bytes) or a (rows, width) uint8 array of each row's bytes. Made CHUNK_ROWS
    rows at a time (:data:`CHUNK_ROWS`)."""
    parts = []
    for lo in range(0, n, CHUNK_ROWS):
        hi = min(n, lo + CHUNK_ROWS)
        texts = columns[0::2]
        pieces = [""] * (len(texts) * (hi - lo))
        for j, column in enumerate(texts):
            pieces[j::len(texts)] = column[lo:hi]
        found = _encoded(SEPARATOR.join(pieces), len(pieces), 0)
        if found is None or not found[1].all():
            return None
        parts.append(_around(*found, [b if isinstance(b, bytes) else b[lo:hi]
                                      for b in columns[1::2]], hi - lo))
    return b"".join(parts)


def nested_rows(qids: list[str], docs: list, after: str, block: np.ndarray) -> bytes | None:
    """The rows of queries in order (``qids`` as text; ``docs[i]``: the docnos of query i,
    the keys of a run dict's query or a list): each query's qid and ``after`` (spaces and a
    field) before each of its docnos, then ``block``'s row (see :func:`rows`); None where a
    qid or a docno is no field. A query's rows are one join of its docnos, with the qid in
    the separator; whole queries of about CHUNK_ROWS rows at a time."""
    if "" in qids:
        return None
    heads = [qid + after for qid in qids]
    counts = [len(d) for d in docs]
    parts, row, first, held = [], 0, 0, 0
    for q, count in enumerate(counts + [CHUNK_ROWS]):  # the last: the end of the last chunk
        if held + count > CHUNK_ROWS and held or q == len(counts):
            part = _queries(heads[first:q], docs[first:q], counts[first:q], after,
                            block[row:row + held])
            if part is None:
                return None
            parts.append(part)
            row, first, held = row + held, q, 0
        held += count
    return b"".join(parts)


def _queries(heads: list[str], docs: list, counts: list[int], after: str, block: np.ndarray
             ) -> bytes | None:
    """:func:`nested_rows` of some whole queries (``heads``: qid and ``after`` of each)."""
    n = sum(counts)
    if n == 0:
        return b""
    try:
        text = SEPARATOR.join([head + (SEPARATOR + head).join(d)
                               for head, d in zip(heads, docs) if d])
    except TypeError:  # a docno that is not text
        text = SEPARATOR.join([head + (SEPARATOR + head).join(map(str, d))
                               for head, d in zip(heads, docs) if d])
    found = _encoded(text, n, n * after.count(" "))
    if found is None:
        return None
    head_bytes = np.array([len(h.encode("utf-8", "surrogateescape")) for h in heads])
    if (found[1] <= np.repeat(head_bytes, counts)).any():  # a docno that is empty
        return None
    return _around(*found, [block], n)


def _encoded(text: str, pieces: int, spaces: int) -> tuple[bytes, np.ndarray] | None:
    """The UTF-8 (surrogateescape) of ``pieces`` texts joined by SEPARATOR and the byte
    length of each; None where it cannot be encoded or holds whitespace (``spaces`` spaces
    aside) or another separator."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return None
    if any(c in data for c in _NOT_IN_A_FIELD) or \
            (data.count(b" ") != spaces if spaces else b" " in data):
        return None
    cuts = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) == ord(SEPARATOR))
    if len(cuts) != pieces - 1:
        return None
    return data, np.diff(cuts, prepend=-1, append=len(data)) - 1


def _around(data: bytes, lengths: np.ndarray, blocks: list, n: int) -> bytearray:
    """The texts of ``data`` (their ``lengths``, k a row, joined by SEPARATOR) with ``blocks``
    put after each row's texts, block j after text j: one copy of each piece by the kernel's
    gather, text i then its row's block j, from ``data`` and the blocks laid out after it."""
    k = len(lengths) // n
    widths = np.array([len(b) if isinstance(b, bytes) else b.shape[1] for b in blocks])
    fixed = np.empty((n, int(widths.sum())), dtype=np.uint8)
    for block, end, width in zip(blocks, np.cumsum(widths), widths):
        fixed[:, end - width:end] = np.frombuffer(block, dtype=np.uint8) \
            if isinstance(block, bytes) else block
    starts = np.empty(2 * n * k, dtype=np.int64)
    starts[0::2] = np.cumsum(lengths + 1) - lengths - 1  # text i, after i separators
    starts[1::2] = (len(data) + np.arange(n)[:, None] * fixed.shape[1]
                    + (np.cumsum(widths) - widths)).ravel()  # its row's block j
    lens = np.empty(2 * n * k, dtype=np.int32)
    lens[0::2] = lengths
    lens[1::2] = np.tile(widths, n)
    out = bytearray()
    _kernel.extend(out, data + fixed.tobytes(), starts, lens)
    return out


def int_block(values: list[int]) -> np.ndarray | None:
    """(rows, width) ASCII of each row's `` GRADE`` and line end, the integer as ``str()``
    writes it, right-aligned (spaces before it separate fields as one does); None past
    int64. A table of the values' texts, taken a row each."""
    try:
        array = np.array(values, dtype=np.int64)
    except OverflowError:
        return None
    low, high = (int(array.min()), int(array.max())) if len(array) else (0, 0)
    if high - low < 1 << 16:  # grades: a few small numbers, no sort
        distinct, inverse = np.arange(low, high + 1), array - low
    else:
        distinct, inverse = np.unique(array, return_inverse=True)
    texts = [str(v) for v in distinct.tolist()]
    width = max(map(len, texts), default=0)
    table = "".join(f" {text:>{width}}\n" for text in texts).encode("ascii")
    return np.frombuffer(table, dtype=np.uint8).reshape(len(texts), width + 2)[inverse.ravel()]


def _top_table() -> np.ndarray:
    """(4096,) 11 ASCII bytes each: for a double's top 12 bits (sign and exponent), its sign,
    ``0x``, leading digit and point, then ``p`` and the power of two, signed, 4 digits."""
    top = np.arange(4096)
    exponent = top & 0x7FF
    power = np.where(exponent > 0, exponent - 1023, -1022)
    text = "".join(f"{'-' if t >> 11 else '+'}0x{int(e > 0)}.p{p:+05d}"
                   for t, e, p in zip(top.tolist(), exponent.tolist(), power.tolist()))
    return np.frombuffer(text.encode("ascii"), dtype="V11")


_TOP = _top_table()
HEX_WIDTH = 24  # [+-]0x[01].(13 hex digits)p[+-](4 digits): any finite double


# The reader's fast path (Clinger's): digits with at most 15 significant ones and at most 22
# after the point are m / 10^k, both exact doubles, and one IEEE division.
DECIMAL_DIGITS, MAX_DECIMALS = 15, 22
DECIMAL_SAMPLE = 256  # rows tried first (see _decimals)
_POW10 = [float(10 ** k) for k in range(MAX_DECIMALS + 1)]  # exact doubles
_FOUR_DIGITS = np.frombuffer("".join(f"{i:04d}" for i in range(10000)).encode("ascii"),
                             dtype=np.uint8).reshape(10000, 4)


def score_block(values: np.ndarray, tag: bytes | None) -> np.ndarray:
    """(rows, width) bytes of each row's `` 0 SCORE [TAG]`` and line end (finite doubles):
    when every score is m / 10^k for one k (a score read from text, 8.3 or 0.25), as that
    decimal, which the reader parses back to the same double, fast and from fewer bytes;
    else :func:`hex_block`'s."""
    found = _decimals(values)
    if found is None:
        return hex_block(values, tag)
    m, k = found
    digits = max(k + 1, len(str(int(m.max(initial=0)))))
    groups = -(-digits // 4)
    text = np.empty((len(m), 4 * groups), dtype=np.uint8)
    for g in range(groups, 0, -1):  # four digits at a time, the last first
        text[:, 4 * g - 4:4 * g] = _FOUR_DIGITS[m % 10000]
        m //= 10000
    text = text[:, 4 * groups - digits:]
    negative = np.signbit(values)  # -0.0 too
    signed = bool(negative.any())
    tail = (b" " + tag if tag else b"") + b"\n"
    point = 3 + signed + digits - k  # where the point goes (none for k = 0)
    out = np.empty((len(m), point + (k + 1 if k else 0) + len(tail)), dtype=np.uint8)
    out[:, :3] = np.frombuffer(b" 0 ", dtype=np.uint8)
    if signed:  # a space for + (one more field separator)
        out[:, 3] = np.where(negative, ord("-"), ord(" "))
    out[:, 3 + signed:point] = text[:, :digits - k]
    if k:
        out[:, point] = ord(".")
        out[:, point + 1:point + 1 + k] = text[:, digits - k:]
    out[:, -len(tail):] = np.frombuffer(tail, dtype=np.uint8)
    return out


def _decimals(values: np.ndarray) -> tuple[np.ndarray, int] | None:
    """The fewest decimals k and each |score| as m (int64) with m / 10^k exactly the score in
    IEEE division and m of at most DECIMAL_DIGITS digits, the reader's fast path; None when
    no k holds for every score. The first rows are tried first: scores with no such k (a
    float32's, widened) most often show it there, after a few thousand divisions."""
    magnitude = np.abs(values)
    k = _fewest_decimals(magnitude[:DECIMAL_SAMPLE], 0)
    k = None if k is None else _fewest_decimals(magnitude, k)
    if k is None:
        return None
    m = np.rint(magnitude * _POW10[k])
    if (m >= 10.0 ** DECIMAL_DIGITS).any() or (m / _POW10[k] != magnitude).any():
        return None  # a score with fewer decimals, past DECIMAL_DIGITS digits at k
    return m.astype(np.int64), k


def _fewest_decimals(magnitude: np.ndarray, start: int) -> int | None:
    """The fewest decimals, ``start`` or more, that every value of ``magnitude`` has (see
    :func:`_decimals`); each k tries the values that fewer did not hold."""
    pending = magnitude
    for k in range(start, MAX_DECIMALS + 1):
        m = np.rint(pending * _POW10[k])
        if (m >= 10.0 ** DECIMAL_DIGITS).any():  # more decimals only add digits
            return None
        pending = pending[m / _POW10[k] != pending]
        if len(pending) == 0:
            return k
    return None


def hex_block(values: np.ndarray, tag: bytes | None) -> np.ndarray:
    """(rows, width) bytes of each row's `` 0 SCORE [TAG]`` and line end, a finite double as
    C99 hexadecimal that strtod reads back exactly (zeros and subnormals ``0x0.…p-1022``),
    one width for all (``tag``: UTF-8, or None for no tag)."""
    n = len(values)
    tail = (b" " + tag if tag else b"") + b"\n"
    out = np.empty((n, 3 + HEX_WIDTH + len(tail)), dtype=np.uint8)
    bits = np.ascontiguousarray(values, dtype="<f8").view("<u8")
    top = np.take(_TOP, (bits >> _U64(52)).astype(np.intp)).view(np.uint8).reshape(n, 11)
    mantissa = bits & _U64((1 << 52) - 1)
    out[:, :3] = np.frombuffer(b" 0 ", dtype=np.uint8)
    out[:, 3:8] = top[:, :5]
    out[:, 8:13] = _hex_digits(mantissa >> _U64(32))[:, 3:]  # its top 20 bits: 5 digits
    out[:, 13:21] = _hex_digits(mantissa & _U64(0xFFFFFFFF))
    out[:, 21:27] = top[:, 5:]
    out[:, 27:] = np.frombuffer(tail, dtype=np.uint8)
    return out


def _hex_digits(x: np.ndarray) -> np.ndarray:
    """(rows, 8) ASCII hex digits of 32-bit values (uint64), the most significant first:
    each nibble spread to a byte of its own, then 0-9 and a-f, in 64-bit words."""
    x = (x | (x << _U64(16))) & _U64(0x0000FFFF0000FFFF)
    x = (x | (x << _U64(8))) & _U64(0x00FF00FF00FF00FF)
    x = (x | (x << _U64(4))) & _U64(0x0F0F0F0F0F0F0F0F)  # byte j: nibble j
    letters = ((x + _U64(0x0606060606060606)) >> _U64(4)) & _U64(0x0101010101010101)
    x = x + _U64(0x3030303030303030) + letters * _U64(0x27)  # '0' + v, 'a' - 10 + v
    return x.astype(">u8").view(np.uint8).reshape(-1, 8)  # big-endian: byte 7 first

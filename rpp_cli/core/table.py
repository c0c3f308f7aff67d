"""Whitespace-separated text files as columns of (offset, length) into their bytes.

One tokenizer for every format rpp reads (trec_eval's rules): fields are separated by runs of
spaces and tabs; a CR before LF and a UTF-8 BOM at the start are ignored; blank lines and lines
whose first field starts with ``#`` are skipped; any other control byte is an error, and so are
the characters :func:`unsafe_kind` names (C1 controls, line separators, bidi controls) and a
field longer than :data:`MAX_TOKEN_BYTES`. Strings are never padded: a column (columns.py) is
two integer arrays over the bytes, so memory is proportional to the text, not to its longest
id; a run's kept columns are copied once per window (:func:`split_stream`).
"""
from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field as dataclass_field

import numpy as np

from ..engine.threads import pool
from ..errors import InputError
from . import _kernel
from .columns import (MAX_TOKEN_BYTES, Column, Growing, GrowingColumn,  # noqa: F401 (the
                      column_of, packed_column, packed_starts)  # readers take them here)
from .source import read_source, source_chunks

# The longest line, LF aside (six fields of MAX_TOKEN_BYTES and their blanks need far less): a
# streamed reader holds a line whole before its LF, so a longer one is refused, not read on
# (a 1 GB line of spaces, 1 MB gzipped, cost 2 GB before its error).
MAX_LINE_BYTES = 1 << 20
MAX_INPUT_BYTES = 16 << 30  # per file, decompressed, unless RPP_MAX_INPUT_BYTES says otherwise
LIMIT_VARIABLE = "RPP_MAX_INPUT_BYTES"
WINDOW_BYTES = 4 << 20  # text a streamed reader tokenises at once (cut after a line end)
BOM = b"\xef\xbb\xbf"

_ERR_CONTROL, _ERR_TOO_LONG, _ERR_UNSAFE, _ERR_LINE = 1, 2, 4, 5


# files read ahead of their turn and the Python API's in-memory inputs (bytes, or what makes
# them), kept for their one reader
_AGAIN: dict[str, bytes | bytearray | Callable[[], bytes]] = {}
_AGAIN_LOCK = threading.Lock()


def remember(path: str, data: bytes | bytearray | Callable[[], bytes]) -> None:
    """Give ``data`` to the next read of ``path`` (in-memory inputs of the Python API): bytes,
    or a builder (no arguments, returns the bytes) that read calls, in the reader's thread, so
    that an input's bytes are made when it is read and held only while it is."""
    with _AGAIN_LOCK:
        _AGAIN[path] = data


def forget(paths: list[str]) -> None:
    """Drop what :func:`remember` gave ``paths`` and no read took (a call that failed first)."""
    with _AGAIN_LOCK:
        for path in paths:
            _AGAIN.pop(path, None)


def remembered(path: str) -> bool:
    """Whether the next read of ``path`` takes bytes given or read before (:func:`remember`)
    rather than the file: a reader that reads ``path`` twice must not mix the two."""
    with _AGAIN_LOCK:
        return path in _AGAIN


def _take(path: str) -> bytes | bytearray | None:
    """What :func:`remember` gave ``path``, taken for this read (a builder called now), or
    None."""
    with _AGAIN_LOCK:
        held = _AGAIN.pop(path, None)
    return held() if callable(held) else held


def read_bytes(path: str, again: bool = False) -> bytes | bytearray:
    """The content of ``path`` (``-`` = stdin; gzip detected by magic), at most the limit.

    With ``again``, the bytes are kept for the next read of ``path``, which takes them: a file
    looked at before its turn (is it qrels or a run?) is read once, even when it is a pipe
    such as ``<(zcat qrels.gz)``."""
    data = _take(path)
    if data is None:
        data = read_source(path, max_input_bytes())
    if again:
        remember(path, data)
    return data


def max_input_bytes() -> int:
    """The size limit of one input file: ``$RPP_MAX_INPUT_BYTES`` (a whole number of bytes,
    1 to 2^63 - 1) or :data:`MAX_INPUT_BYTES`. Read when a file is read, so that a bad value
    is one error line of the command, not a crash at import."""
    text = os.environ.get(LIMIT_VARIABLE)
    if text is None:
        return MAX_INPUT_BYTES
    if text.isascii() and text.isdigit() and len(text) < 20 and 1 <= int(text) < 1 << 63:
        return int(text)
    raise InputError(f"{LIMIT_VARIABLE}='{text}': expected a whole number of bytes from "
                     f"1 to 2^63 - 1, digits only (e.g. 1000000000), or unset for the default "
                     f"{MAX_INPUT_BYTES}")


@dataclass(frozen=True)
class Table:
    """The data rows of a file split into fields; ``columns[k]`` is field ``fields[k]``."""

    path: str
    data: bytearray | bytes
    nfields: np.ndarray  # int32, fields of each row
    columns: dict[int, Column]
    line0: int = 0  # lines of the file before ``data`` (a piece of a streamed file)
    newlines: int = 0  # LF bytes in ``data``
    # field -> its floats (or their error), parsed where the piece was split (split_stream)
    parsed: dict[int, np.ndarray | InputError] = dataclass_field(default_factory=dict)
    failed: InputError | None = None  # the bad line the rows stop before (split_stream's
    # ``partial``): the piece goes on past them

    @property
    def lines_in(self) -> int:
        """The lines of ``data``, rows or not (the last may lack its LF)."""
        return self.newlines + (len(self.data) > 0 and self.data[-1] != 10)

    def __len__(self) -> int:
        return len(self.nfields)

    def column(self, field: int) -> Column:
        return self.columns[field]

    def head(self, rows: int) -> "Table":
        """The first ``rows`` rows alone (those before a bad one), nothing parsed yet."""
        return Table(self.path, self.data, self.nfields[:rows],
                     {f: Column(c.data, c.starts[:rows], c.lens[:rows])
                      for f, c in self.columns.items()}, self.line0, self.newlines)

    def line(self, row: int) -> int:
        """1-based line number of a row (counted on demand: only error messages need it)."""
        return self.line0 + line_at(self.data, int(self.columns[0].starts[row]))

    def lines(self, rows: np.ndarray) -> np.ndarray:
        """1-based line numbers of many rows at once."""
        newlines = np.flatnonzero(np.frombuffer(self.data, dtype=np.uint8) == 10)
        return np.searchsorted(newlines, self.columns[0].starts[rows]) + 1 + self.line0

    def floats(self, field: int, what: str, rows: np.ndarray | None = None) -> np.ndarray:
        """Field ``field`` as finite float64 (C's strtod of the whole field); the first bad
        value is an InputError naming its line."""
        if rows is None and field in self.parsed:
            done = self.parsed[field]
            if isinstance(done, InputError):
                raise done
            return done
        col = self.columns[field] if rows is None else self.columns[field].take(rows)
        return floats(col, what, self.path,
                      lambda bad: self.line(bad if rows is None else int(rows[bad])))


def floats(col: Column, what: str, path: str, line: Callable[[int], int]) -> np.ndarray:
    """The values of ``col`` as finite float64 (C's strtod of the whole field); the first bad
    one is an InputError at ``line(its index in col)``."""
    out = np.empty(len(col), dtype=np.float64)
    bad = _kernel.parse_floats(col.data, col.starts, col.lens, out)
    if bad >= 0:
        raise InputError(f"{what} '{col.text(bad)}' is not a finite number", path,
                         line(int(bad)))
    return out


def unsafe_kind(code: int) -> str | None:
    """What makes character ``code`` refused in a field (contract §1), or None when it is
    allowed: C1 controls, line and paragraph separators, bidirectional controls."""
    if 0x80 <= code <= 0x9F:
        return "a C1 control"
    if code in (0x2028, 0x2029):
        return "a line or paragraph separator"
    if 0x202A <= code <= 0x202E or 0x2066 <= code <= 0x2069:
        return "a bidirectional control"
    return None


def unsafe_message(code: int, not_utf8: bool) -> str:
    """The error for a refused character (``not_utf8``: a byte that is not UTF-8, read as
    Latin-1); it names the character by number, never by itself."""
    what = (f"byte 0x{code:02x} (not UTF-8; {unsafe_kind(code)} in Latin-1)" if not_utf8
            else f"U+{code:04X} ({unsafe_kind(code)})")
    return (f"{what} is not allowed in a field: it could rewrite or reorder what a terminal "
            "or a table shows")


def line_at(data: bytearray | bytes, offset: int) -> int:
    """1-based line number of byte ``offset``."""
    with memoryview(data) as view, view[:offset] as head:  # any buffer (a piece is a view)
        return _kernel.count_lines(head) + 1


def split(path: str, fields: tuple[int, ...], counts: tuple[int, ...], kind: str,
          more_ok: bool = False, data: bytearray | bytes | None = None,
          again: bool = False) -> Table:
    """Read ``path`` and split its data lines, keeping the 0-based ``fields`` (field 0 always).

    Every row must have a field count in ``counts`` (or, with ``more_ok``, at least the
    largest: trec_eval ignores extra fields). An empty file, a control byte, a field longer than
    MAX_TOKEN_BYTES and a wrong field count are InputErrors naming the line. ``again``: keep
    the bytes for the next reader (:func:`read_bytes`).
    """
    data = read_bytes(path, again) if data is None else data
    table = _split_piece(path, data, fields, counts, kind, more_ok, 0)
    if len(table) == 0:
        raise InputError(f"empty file: no {kind} lines", path)
    return table


def split_stream(path: str, fields: tuple[int, ...], counts: tuple[int, ...],
                 kind: str, threads: int = 1, floats: tuple[int, str] | None = None,
                 partial: bool = False) -> Iterator[Table]:
    """:func:`split`, a piece of about WINDOW_BYTES (whole lines) at a time, so that memory
    holds a few windows of the file, never all of it: the same rows and line numbers
    (Table.line0 counts the lines before a piece). With ``threads`` > 1, a window is cut in
    ``threads`` pieces split side by side (the tokenizer releases the GIL) while the caller
    codes the window before; the file is still read, and gunzipped, in order by one thread.
    Errors: as when the file is read whole, the source's own (size limit, corrupt gzip) come
    before the tokenizer's: after a tokenizer error the rest is read, not kept, and then the
    error raised. With ``partial`` (a run, whose reader reports each error as soon as it is
    met), the first error in file order is raised instead, and nothing is read past it: a bad
    line, or the source's own error once the whole lines read before it are split; the piece
    that holds a bad line comes first, with its rows before that line alone (Table.failed
    holds the error), so that the caller can check them too. ``floats`` (field, what it is):
    that field is parsed as Table.floats parses it where each piece is split (on the pool),
    so the caller's thread only takes the result."""
    held = _take(path)
    chunks = [held] if held is not None else source_chunks(path, max_input_bytes())
    state: dict = {"rows": 0, "failed": None}

    def emit(tables: Iterator[Table]) -> Iterator[Table]:
        """The tables of one buffer, in order, up to its first error (kept, not raised)."""
        try:
            for table in tables:
                state["rows"] += len(table)
                state["failed"] = table.failed
                yield table
                if state["failed"] is not None:
                    return
        except InputError as err:
            state["failed"] = err

    def stop() -> bool:
        """Whether to read no more: a bad line met, with ``partial``."""
        return partial and state["failed"] is not None

    source = None  # the source's own error
    if threads < 2:
        try:
            for pieces in _buffers(chunks, WINDOW_BYTES, state):
                yield from emit(_split_each(path, pieces, fields, counts, kind, floats,
                                            partial))
                if stop():
                    break
        except InputError as err:
            source = err
    else:
        with pool(threads, "rpp-split") as workers:
            before: list = []  # the buffer before, being split while its own is coded
            try:
                for pieces in _buffers(chunks, max(1, WINDOW_BYTES // threads), state):
                    now = [workers.submit(_split_one, path, piece, fields, counts, kind, floats,
                                          partial) for piece in pieces]
                    yield from emit(future.result() for future in before)
                    before = now if state["failed"] is None else []
                    if stop():
                        break
            except InputError as err:
                source = err
            yield from emit(future.result() for future in before)
    if source is not None and not partial:
        raise source
    if state["failed"] is not None:
        raise state["failed"]
    if source is not None:
        raise source
    if state["rows"] == 0:
        raise InputError(f"empty file: no {kind} lines", path)


def _buffers(chunks: Iterable[bytes], piece_bytes: int, state: dict) -> Iterator[list[tuple]]:
    """The pieces (data, line0, newlines) of whole lines of about ``piece_bytes`` of each
    window of ``chunks``, a window at a time, in file order; once ``state["failed"]``, the
    rest is read and not split. The source's own error is raised after the pieces of the
    whole lines read before it."""
    pending: list[bytes] = []
    size, line0, want, cut_short = 0, 0, WINDOW_BYTES, False
    try:
        for final, chunk in _with_end(chunks):
            if state["failed"] is not None or cut_short:
                continue
            pending.append(bytes(chunk))
            size += len(chunk)
            if size < want and not final:
                continue
            buffer = b"".join(pending)
            # a line past MAX_LINE_BYTES with no LF yet: its start goes to the tokenizer,
            # which refuses it as it would the whole line, and the rest is read, not kept
            # (what waits for more data is then under a window and a line: memory stays
            # bounded)
            cut_short = len(buffer) - buffer.rfind(b"\n") - 1 > MAX_LINE_BYTES
            pieces, pos, line0 = _pieces(buffer, final or cut_short, piece_bytes, line0)
            yield pieces
            pending = [buffer[pos:]]
            size = len(pending[0])
            # a line longer than the window (no LF yet; under MAX_LINE_BYTES when the window
            # is smaller): scan again once the buffer has doubled, so that its time stays
            # linear
            want = WINDOW_BYTES if size < WINDOW_BYTES else 2 * size
    except InputError:
        buffer = b"".join(pending)
        whole = buffer[:buffer.rfind(b"\n") + 1]  # a line the source cut is not split
        if whole and state["failed"] is None and not cut_short:
            yield _pieces(whole, True, piece_bytes, line0)[0]
        raise


def _pieces(buffer: bytes, final: bool, piece_bytes: int, line0: int
            ) -> tuple[list[tuple], int, int]:
    """The pieces of ``buffer`` (``line0`` lines into the file), where they end in it, and
    the lines before what is left of it (see :func:`_cuts`)."""
    pieces, pos = [], 0
    for cut in _cuts(buffer, final, piece_bytes):
        piece, base = memoryview(buffer)[pos:cut], line0
        if pos + line0 > 0 and bytes(piece[:3]) == BOM:  # a BOM counts at the start only
            piece, base = b"\n" + bytes(piece), line0 - 1
        newlines = _kernel.count_lines(piece)
        pieces.append((piece, base, newlines))
        line0 = base + newlines
        pos = cut
    return pieces, pos, line0


def _split_one(path: str, piece: tuple, fields: tuple[int, ...], counts: tuple[int, ...],
               kind: str, floats: tuple[int, str] | None = None,
               partial: bool = False) -> Table:
    """The Table of one piece (data, line0, newlines) of a streamed file, with the field
    ``floats`` names parsed (see :func:`split_stream`)."""
    data, base, newlines = piece
    table = _split_piece(path, data, fields, counts, kind, False, base, newlines, partial)
    if floats is not None and len(table):
        try:
            table.parsed[floats[0]] = table.floats(*floats)
        except InputError as err:
            table.parsed[floats[0]] = err.with_traceback(None)  # no frame kept alive
    return table


def _split_each(path: str, pieces: list[tuple], fields: tuple[int, ...],
                counts: tuple[int, ...], kind: str,
                floats: tuple[int, str] | None, partial: bool) -> Iterator[Table]:
    """The Tables of ``pieces``, one after the other, each when it is asked for."""
    for piece in pieces:
        yield _split_one(path, piece, fields, counts, kind, floats, partial)


def _with_end(chunks: Iterable[bytes]) -> Iterator[tuple[bool, bytes]]:
    """(is it the last, chunk) for every chunk; one empty last chunk when there is none. A
    chunk read before the source's own error comes before that error."""
    previous = None
    try:
        for chunk in chunks:
            if previous is not None:
                yield False, previous
            previous = chunk
    except InputError:
        if previous is not None:
            yield False, previous
        raise
    yield True, b"" if previous is None else previous


def _cuts(buffer: bytes, final: bool, piece_bytes: int) -> Iterator[int]:
    """Where the pieces of ``buffer`` end: after the last line end of each ``piece_bytes``
    (after the first line end past it for a longer line); the rest waits for more data
    unless ``final``."""
    pos = 0
    while pos < len(buffer):
        end = pos + piece_bytes
        if end > len(buffer) and not final:
            return
        cut = buffer.rfind(b"\n", pos, end) + 1 or buffer.find(b"\n", end) + 1
        if cut == 0:
            if not final:
                return
            cut = len(buffer)
        yield cut
        pos = cut


def _split_piece(path: str, data: bytes | bytearray | memoryview, fields: tuple[int, ...],
                 counts: tuple[int, ...], kind: str, more_ok: bool, line0: int,
                 newlines: int | None = None, partial: bool = False) -> Table:
    """The rows of ``data`` (whole lines, ``line0`` lines into the file; ``newlines`` its LF
    bytes when the caller counted them) as a Table; errors as :func:`split` names them,
    raised, or with ``partial`` in Table.failed of the rows before the bad line."""
    want = np.array(sorted(set(fields) | {0}), dtype=np.int32)
    newlines = _kernel.count_lines(data) if newlines is None else newlines
    capacity = newlines + 1
    nfields = np.empty(capacity, dtype=np.int32)
    starts = np.empty(capacity * len(want), dtype=np.int64)
    lens = np.empty(capacity * len(want), dtype=np.int32)
    rows, err, at, a, b = _kernel.split(data, want, MAX_TOKEN_BYTES, MAX_LINE_BYTES, nfields,
                                        starts, lens)
    wrong = ~np.isin(nfields[:rows], counts)
    if more_ok:
        wrong &= nfields[:rows] < max(counts)
    failed = None
    if wrong.any():  # before any byte error: it comes first in the file
        rows = int(np.argmax(wrong))
        expected = " or ".join(map(str, counts)) + (" or more" if more_ok else "")
        failed = InputError(f"expected {expected} fields ({kind}), found {int(nfields[rows])}",
                            path, line0 + line_at(data, int(starts[rows])))
    elif err == _ERR_CONTROL:
        failed = InputError(f"not a text file: control byte 0x{a:02x}; expected {kind}", path,
                            line0 + line_at(data, at))
    elif err == _ERR_UNSAFE:
        failed = InputError(unsafe_message(a, bool(b)), path, line0 + line_at(data, at))
    elif err == _ERR_LINE:
        failed = InputError(f"line longer than {MAX_LINE_BYTES:,} bytes (a field holds at most "
                            f"{MAX_TOKEN_BYTES:,})", path, line0 + line_at(data, at))
    elif err == _ERR_TOO_LONG:
        failed = InputError(f"field {a} is {b:,} bytes long, over the limit of "
                            f"{MAX_TOKEN_BYTES:,}", path, line0 + line_at(data, at))
    if failed is not None and not partial:
        raise failed
    columns = {int(f): Column(data, starts[k * capacity:k * capacity + rows],
                              lens[k * capacity:k * capacity + rows])
               for k, f in enumerate(want)}
    return Table(path, data, nfields[:rows], columns, line0, newlines, failed=failed)

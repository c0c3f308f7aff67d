"""Input bytes: a file, a gzip file (told by its magic bytes) or standard input, with a cap.

Everything is read in chunks so that a stream that never ends (``/dev/zero``, a gzip bomb)
is refused early instead of filling memory: past ``limit`` bytes (decompressed) the file is
an error, and a chunk holding a NUL byte stops reading (the tokenizer then names the line).
"""
from __future__ import annotations

import os
import sys
import zlib
from collections.abc import Iterator

from ..errors import InputError

STDIN = "-"
GZIP_MAGIC = b"\x1f\x8b"
CHUNK = 1 << 20


def _chunks(handle):
    """The raw chunks of an open binary file."""
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            return
        yield chunk


def _gunzip(first: bytes, rest, path: str):
    """Decompressed chunks of a gzip stream as gzip(1) reads it: members one after another,
    then nothing, or zero bytes (padding). What follows a member is judged by its bytes,
    wherever the reads cut it: a member may end one byte before a read's end (the next
    magic then straddles two reads), and padding may span several."""
    inflate = None  # the member being inflated; None between members
    padding = False  # past the last member: only zero bytes may follow
    held = b""  # what follows a member, too short yet to tell a member from garbage
    members = 0
    for chunk in _chain([first], rest):
        data, held = held + chunk if held else chunk, b""
        pending = False  # output may wait in the inflater with no input left
        while data or pending:
            if inflate is None:
                if padding or (members and data[0] == 0):
                    if data.strip(b"\0"):
                        raise InputError("corrupt gzip data (garbage after the end)", path=path)
                    padding = True
                    break
                if len(data) < len(GZIP_MAGIC):
                    held = data
                    break
                if data[:2] != GZIP_MAGIC:
                    raise InputError("corrupt gzip data (garbage after the end)", path=path)
                inflate, members = zlib.decompressobj(31), members + 1
            try:
                out = inflate.decompress(data, CHUNK)
            except zlib.error as err:
                raise InputError(f"corrupt gzip data ({err})", path=path) from None
            if out:
                yield out
            if inflate.eof:  # what follows the member's end (not the tail too: see zlib)
                data, inflate, pending = inflate.unused_data, None, False
            else:
                data, pending = inflate.unconsumed_tail, len(out) == CHUNK
    if held and held != GZIP_MAGIC[:1]:
        raise InputError("corrupt gzip data (garbage after the end)", path=path)
    if inflate is not None or held:
        raise InputError("corrupt gzip data (truncated)", path=path)


def _chain(first: list[bytes], rest):
    yield from first
    yield from rest


def _too_big(limit: int) -> str:
    return (f"larger than the limit of {limit:,} bytes per input file "
            "(decompressed); split the file or raise RPP_MAX_INPUT_BYTES")


def read_source(path: str, limit: int) -> bytearray:
    """The bytes of ``path`` (``-`` = stdin), gunzipped when they start with gzip magic."""
    data = bytearray()
    for chunk in source_chunks(path, limit):
        data += chunk
    return data


def source_chunks(path: str, limit: int) -> Iterator[bytes]:
    """The bytes of ``path`` (``-`` = stdin) in chunks of at most CHUNK bytes, gunzipped
    when they start with gzip magic: past ``limit`` bytes in all an InputError, and the chunk
    holding a NUL byte is the last (the tokenizer then names the line)."""
    if path == STDIN:
        handle = sys.stdin.buffer if sys.stdin is not None else None
        if handle is None:
            raise InputError("standard input is closed", path=path)
        yield from _limited(handle, path, limit)
        return
    if os.path.isdir(path):
        raise InputError("is a directory, not a file", path=path)
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        raise InputError("no such file", path=path) from None
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None
    with handle:
        yield from _limited(handle, path, limit)


def _limited(handle, path: str, limit: int) -> Iterator[bytes]:
    """The (decompressed) chunks of ``handle``, refusing more than ``limit`` bytes in all."""
    total = 0
    try:
        chunks = _chunks(handle)
        first = next(chunks, b"")
        while 0 < len(first) < len(GZIP_MAGIC):  # the magic, whatever the reads return
            more = next(chunks, b"")
            if not more:
                break
            first += more
        source = _gunzip(first, chunks, path) if first[:2] == GZIP_MAGIC \
            else _chain([first], chunks)
        for chunk in source:
            total += len(chunk)
            if total > limit:  # the bytes within the limit come first (a streamed run's
                if total - len(chunk) < limit:  # bad line there is its first error)
                    yield chunk[:limit - (total - len(chunk))]
                raise InputError(_too_big(limit), path=path)
            yield chunk
            if b"\0" in chunk:
                return  # not text: the tokenizer reports the first bad line
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None

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
    """Decompressed chunks of a gzip stream (several members allowed, as gzip(1) does)."""
    inflate = zlib.decompressobj(31)
    open_member = False  # a member has begun and not yet ended
    for chunk in _chain([first], rest):
        while True:
            open_member = open_member or bool(chunk)
            try:
                out = inflate.decompress(chunk, CHUNK)
            except zlib.error as err:
                raise InputError(f"corrupt gzip data ({err})", path=path) from None
            yield out
            chunk = inflate.unconsumed_tail
            if inflate.eof:
                # everything past the member's end; the tail may still hold the same bytes
                # (when the output limit was reached just before the end), so not tail + it
                chunk = inflate.unused_data
                inflate = zlib.decompressobj(31)
                open_member = False
                if not chunk.strip(b"\0"):
                    break  # the end, or zero padding after the last member
                if chunk[:2] != GZIP_MAGIC:
                    raise InputError("corrupt gzip data (garbage after the end)", path=path)
            elif not chunk and len(out) < CHUNK:
                break  # all input consumed, no output pending
    if open_member:
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
        source = _gunzip(first, chunks, path) if first[:2] == GZIP_MAGIC \
            else _chain([first], chunks)
        for chunk in source:
            total += len(chunk)
            if total > limit:
                raise InputError(_too_big(limit), path=path)
            yield chunk
            if b"\0" in chunk:
                return  # not text: the tokenizer reports the first bad line
    except OSError as err:
        raise InputError(f"cannot read: {err.strerror or err}", path=path) from None

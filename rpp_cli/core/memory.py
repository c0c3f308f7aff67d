"""Handing freed memory back to the system.

The dictionary's tables are many small C blocks (a few KiB per query); freed, they stay in the
C heap, resident, until something reuses them. The arrays that follow are large and mapped
apart, so they never do: without a trim, a process keeps the peak of every dictionary it has
freed, and each forked worker counts it in its share.
"""
from __future__ import annotations

import ctypes
import functools


@functools.cache
def _malloc_trim():
    """glibc's malloc_trim, or None where the C library has none (macOS, musl)."""
    try:
        return ctypes.CDLL(None).malloc_trim
    except (AttributeError, OSError):
        return None


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim(0)``: the free
    pages of every arena, not only the top); a no-op without glibc."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)

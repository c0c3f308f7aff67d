"""The reading budget: how many run files are read at once, and by how many threads, so that
the bytes in flight stay within a share of the machine's memory."""
from __future__ import annotations

import os

from ..core.source import GZIP_MAGIC


# Run files read at once, at most (one is always read). A run is joined a batch of whole
# queries at a time as it is read, so a run in query order needs a few windows and one batch;
# but a run whose queries are interleaved is held whole (about 1.4 times its size) until its
# end. The bytes of files read at once are bounded by a 16th of the machine's memory (at least
# 384 MiB): tall's five 250 MB runs are read side by side on a workstation, one at a time on
# a small VM, whatever their order. A gzipped file counts as ten times its size (text_size).
IN_FLIGHT_FLOOR = 384 << 20


def in_flight_bytes() -> int:
    """Bytes of run files that may be read at once."""
    try:
        physical = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        physical = 0
    return max(IN_FLIGHT_FLOOR, physical // 16)


# Threads that split and code one run, at most: past this a window's pieces get small and the
# one thread that reads the file sets the pace.
PER_RUN_THREADS = 16


def threads_for(paths: list[str], jobs: int) -> int:
    """Threads for reading ``paths``: ``jobs``, fewer when that many of the largest files
    would be more than :func:`in_flight_bytes` at once (stdin: one)."""
    if "-" in paths:
        return 1
    largest = max((text_size(p) for p in paths), default=0)
    return max(1, min(jobs, in_flight_bytes() // largest)) if largest else jobs


GZIP_RATIO = 10  # a gzipped run's text, per byte on disk, at most about (TREC runs: 4-8)


def text_size(path: str) -> int:
    """About how many bytes of text ``path`` holds: its size on disk, GZIP_RATIO times that
    when gzipped (0 for stdin or anything that is not a regular file)."""
    try:
        if path == "-" or not os.path.isfile(path):
            return 0
        with open(path, "rb") as f:
            gzipped = f.read(2) == GZIP_MAGIC
        return os.path.getsize(path) * (GZIP_RATIO if gzipped else 1)
    except OSError:
        return 0

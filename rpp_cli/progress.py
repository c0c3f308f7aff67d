"""Progress on stderr for slow loops: a click progress bar that appears only when stderr is a
terminal and the loop has already run for ``delay`` seconds; silent otherwise (pipes, files,
CI logs), so stdout and logs carry results and notes only (contract §7)."""
from __future__ import annotations

import sys
import time
from typing import Iterable, Iterator, Sized, TextIO, TypeVar

import click

T = TypeVar("T")
DELAY = 0.5  # seconds of work before a bar is worth showing
_shown = True  # False under --quiet: set by the command line for each command it runs


def show_bars(shown: bool) -> None:
    """Whether bars may be drawn (``--quiet`` says no); a process-wide setting, because the
    loops that draw them also run in worker threads."""
    global _shown
    _shown = shown


def progress(items: Iterable[T], label: str, length: int | None = None,
             delay: float = DELAY, stream: TextIO | None = None) -> Iterator[T]:
    """Yield ``items``; on a terminal ``stream`` (stderr), draw a bar once ``delay`` seconds
    have passed, counting an item done when ``items`` has made it (so a bar ends at 100 %
    even when its consumer, a ``zip``, asks no further). ``length`` defaults to ``len(items)`` (no bar when neither is known)."""
    stream = sys.stderr if stream is None else stream
    total = length if length is not None else len(items) if isinstance(items, Sized) else None
    if total is None or not _shown or not stream.isatty():
        yield from items
        return
    start = time.monotonic()
    bar = None
    done = 0
    try:
        for item in items:  # an item counts once it is made: a consumer may stop at the last
            done += 1
            if bar is None and time.monotonic() - start >= delay:
                bar = click.progressbar(length=total, label=label, file=stream)
                bar.__enter__()
                bar.update(done)
            elif bar is not None:
                bar.update(1)
            yield item
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)

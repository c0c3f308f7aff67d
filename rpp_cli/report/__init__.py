"""Output formats, each written once against the Results table.

Every format of :data:`WRITERS` has ``write(results, out, precision, summary)``; :func:`write`
picks one by name, so a command hands its Results over in one line whatever ``--format`` says:
add ``@output_options`` (options.py) and end with ``write(results, fmt, sys.stdout,
precision)``. The other modules are layouts of their own (``levels``' lines, the ``paper`` and
human (``table``) tables, the ``plot`` figures) and what the formats share.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator, TextIO

from ..results import Results
from ..streams import devnull_onto
from . import csv, jsonl, latex, markdown, matrix, trec
from .common import Verdicts

WRITERS = {"trec": trec, "jsonl": jsonl, "csv": csv, "matrix": matrix, "markdown": markdown,
           "latex": latex}
FORMATS = tuple(WRITERS)
MACHINE_FORMATS = ("jsonl", "csv")  # p-values in full, and rpp check's verdict fields


def write(results: Results, fmt: str = "trec", out: TextIO | None = None, precision: int = 4,
          summary: bool = True, verdicts: Verdicts | None = None) -> None:
    """Write ``results`` to ``out`` (stdout) in format ``fmt``; ``summary`` keeps ``all`` rows;
    ``verdicts`` (rpp check) add PASS/FAIL fields to the machine formats, jsonl and csv.

    The stream is flushed afterwards so that whatever goes to stderr next comes after it.
    When the reader of stdout has gone (``| head``), the rest of the output is dropped and
    the command goes on to its own exit status (a check still fails or passes).
    """
    out = sys.stdout if out is None else out
    with reader_may_leave(out):
        if verdicts is not None and fmt in MACHINE_FORMATS:
            WRITERS[fmt].write(results, out, precision, summary, verdicts)
        else:
            WRITERS[fmt].write(results, out, precision, summary)


@contextmanager
def reader_may_leave(out: TextIO) -> Iterator[None]:
    """Write inside this block, then flush; if the reader of stdout has gone (``| head``),
    drop the rest of the output quietly (another stream's BrokenPipeError propagates)."""
    try:
        yield
        out.flush()
    except BrokenPipeError:
        if out is not sys.stdout:
            raise
        discard_stdout()


def discard_stdout() -> None:
    """Point stdout's file descriptor at /dev/null: what is still buffered, and any later
    write, vanishes instead of failing again (and no traceback at interpreter exit)."""
    devnull_onto(sys.stdout.fileno())

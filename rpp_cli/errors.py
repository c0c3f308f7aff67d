"""Errors users can act on, and the exit codes of contract §8.

Every problem with the input is raised as :class:`InputError` where it is found and turned
into one line on stderr (``rpp: FILE:LINE: message``) and its exit status (2 unless the
command documents another, e.g. ``rpp trec-eval`` follows trec_eval's codes) by the CLI.
"""
from __future__ import annotations

import re

# What a number in an option may look like: ASCII digits, as C's atol and strtod read them
# and as a reader of the command line sees them (Python's int() and float() also take
# ``1_0``, ``١`` and ``０.５``, which trec_eval reads otherwise).
ASCII_INTEGER = re.compile(r"[+-]?[0-9]+")
ASCII_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?"
                           r"|[+-]?(inf|infinity|nan)", re.IGNORECASE)

# Every exit status rpp gives (contract §8), in one place; an error carries its own as
# ``exit_code`` (InputError: EXIT_BAD_INPUT unless the error says otherwise; the engine's
# WorkerDied: EXIT_WORKER_DIED).
EXIT_OK = 0
EXIT_CHECK_FAILED = 1  # a check the user asked for failed (rpp check's verdict)
EXIT_BAD_INPUT = 2  # bad usage or input, output that could not be written, out of memory
EXIT_WORKER_DIED = 3  # a worker process or Dask worker died while it held a shard
EXIT_INTERNAL = 70  # a bug (sysexits' EX_SOFTWARE): never 0, nor 1, a failed check
EXIT_INTERRUPTED = 128 + 2  # what a shell reports for a process stopped by Ctrl-C (SIGINT)
EXIT_CLOSED_PIPE = 128 + 13  # ... and for a writer killed by SIGPIPE
# The drop-ins keep their originals' statuses: trec_eval's (bad files and parameters 2, as
# EXIT_BAD_INPUT) and ndeval's (every error 1).
TREC_EVAL_USAGE = 1  # a usage error or an unknown measure
TREC_EVAL_CANNOT_CALCULATE = 4  # a measure cannot be calculated (a duplicate docno ...)
TREC_EVAL_NO_QUERIES = 7  # no query with both results and judgments
NDEVAL_ERROR = 1  # ndeval's error(): every bad input, file and option


class InputError(Exception):
    """Bad input or usage; ``str()`` is the one line printed after ``rpp: ``."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 exit_code: int = EXIT_BAD_INPUT) -> None:
        self.path = path
        self.line = line
        self.message = message
        self.exit_code = exit_code
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            path = shown(self.path)
            where = f"{path}:{self.line}: " if self.line is not None else f"{path}: "
        return where + self.message


def number(value: float) -> str:
    """``value`` as a message shows it: ``:g``'s short form when it reads back as the same
    number (``2``, ``0.5``), else the shortest text that does (``1.0000001``, which ``:g``
    shows as ``1``, a level the user did not give)."""
    short = f"{value:g}"
    return short if float(short) == value else repr(float(value))


def shown(text: str) -> str:
    """``text`` for a one-line message on a terminal: characters that are not printable (a
    newline, a tab, an escape, a C1 or bidi control) written as Python escapes, and a byte that
    is not UTF-8 (a surrogate escape) as ``\\xHH``, so that nothing echoed from a file name,
    an id or an argument can break, forge or recolour a line."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else _escaped(c) for c in text)


def _escaped(char: str) -> str:
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # how "surrogateescape" holds the byte code - 0xDC00
        return f"\\x{code - 0xDC00:02x}"
    return repr(char)[1:-1]

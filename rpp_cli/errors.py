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

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2


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

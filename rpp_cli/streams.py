"""Standard error as rpp uses it: notes, verdict lines and progress, never results.

stderr may be closed (``2>&-``), full (``2>/dev/full``) or a pipe whose reader has gone. None
of that may change what reaches stdout or the exit status (contract §8), so :func:`guard_stderr`
puts a :class:`Forgiving` stream in ``sys.stderr``: a failed write drops the text (and every
later one) instead of raising into the command.
"""
from __future__ import annotations

import os
import sys
from typing import TextIO


class Forgiving:
    """A text stream that passes writes to ``target`` until one fails, then drops them all.

    Everything else (``encoding``, ``fileno`` ...) is the target's, so click and the
    traceback module use it as they would use ``sys.stderr``.
    """

    def __init__(self, target: TextIO) -> None:
        self._target = target
        self.lost = False  # a write failed: nothing more is sent

    def write(self, text: str) -> int:
        """Write ``text``, or drop it once stderr has failed (a TypeError still propagates:
        click probes text streams with ``write(b"")``)."""
        if not self.lost:
            try:
                self._target.write(text)
                self._target.flush()  # a note is complete on stderr, or dropped: never held
            except (OSError, ValueError):
                self._give_up()
        return len(text)

    def flush(self) -> None:
        """Flush the target; a failure only drops what was pending."""
        if not self.lost:
            try:
                self._target.flush()
            except (OSError, ValueError):
                self._give_up()

    def isatty(self) -> bool:
        """A lost stream is no terminal: no progress bar is drawn into it."""
        if self.lost:
            return False
        try:
            return self._target.isatty()
        except (OSError, ValueError):
            return False

    def _give_up(self) -> None:
        """Stop writing; when the target is the process's fd 2, point fd 2 at /dev/null so that
        its pending bytes and writes from C code vanish too (no error at interpreter exit)."""
        self.lost = True
        try:
            if self._target.fileno() == 2:
                devnull_onto(2)
        except (OSError, ValueError, AttributeError):
            pass

    def __getattr__(self, name: str):
        return getattr(self._target, name)


def devnull_onto(fd: int) -> None:
    """Make ``fd`` an open descriptor of /dev/null: what is written to it vanishes."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    if devnull != fd:
        os.dup2(devnull, fd)
        os.close(devnull)


def _fd_is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def guard_stderr() -> None:
    """Wrap ``sys.stderr`` in :class:`Forgiving`. When rpp was started with fd 2 closed, fd 2
    becomes /dev/null first: no file rpp opens later can take descriptor 2 and receive what
    C code or the interpreter writes to 'stderr'."""
    if isinstance(sys.stderr, Forgiving):
        return
    if sys.stderr is None:
        if not _fd_is_open(2):
            devnull_onto(2)
        sys.stderr = open(os.devnull, "w", encoding="utf-8")
    sys.stderr = Forgiving(sys.stderr)

"""Which of a command's files are one file: decided by (device, inode), links followed, never
by the names given.

A stream (a pipe, a FIFO, a terminal, a socket) can be read only once, so one named twice
(``/dev/stdin /dev/fd/0``, a FIFO given twice) would be split between its readers: refused,
as ``- -`` is. An output (``--plot``, ``$GITHUB_STEP_SUMMARY``, standard output redirected to a
file) that is one of the inputs would overwrite it: refused before anything is read or
written. A regular file may be read twice: each reading starts at its beginning.
"""
from __future__ import annotations

import os
import stat
from typing import Iterable, NamedTuple

from ..errors import InputError, shown

STDIN = "-"
STDOUT_FD = 1


class Identity(NamedTuple):
    """What a path names: its device, inode and file type."""

    device: int
    inode: int
    mode: int

    @property
    def stream(self) -> bool:
        """Whether its bytes can be read only once (neither a regular file nor a directory)."""
        return not (stat.S_ISREG(self.mode) or stat.S_ISDIR(self.mode))


def identity(path: str) -> Identity | None:
    """What ``path`` names (``-``: standard input); None when it cannot be told (no such file,
    an in-memory input of the API): its reader reports that."""
    try:
        found = os.fstat(0) if path == STDIN else os.stat(path)
    except (OSError, ValueError):
        return None
    return Identity(found.st_dev, found.st_ino, found.st_mode)


def check_inputs(paths: Iterable[str | None]) -> None:
    """Refuse a stream named twice among ``paths`` (None: an absent optional input): its
    readers would each get part of it."""
    seen: dict[tuple[int, int], str] = {}
    literal_stdin = False
    for path in paths:
        if path is None:
            continue
        if path == STDIN:
            if literal_stdin:
                raise InputError("standard input can be read only once", path=STDIN)
            literal_stdin = True
        found = identity(path)
        if found is None or not found.stream:
            continue
        first = seen.setdefault((found.device, found.inode), path)
        if first is not path:
            what = "named twice" if first == path else f"the same stream as '{shown(first)}'"
            raise InputError(f"{what}: a stream can be read only once (save it to a file to "
                             "read it twice)", path=path)


def check_output(path: str, what: str, inputs: Iterable[str | None]) -> None:
    """Refuse ``path`` as an output (``what``: how messages name it) when it is one of
    ``inputs``: writing it would replace or grow a file being read. A character device
    (``/dev/null``) is no file to lose."""
    found = identity(path)
    if found is None or stat.S_ISCHR(found.mode):
        return
    for source in inputs:
        if source is not None and _same(found, identity(source)):
            raise InputError(f"cannot write {what}: it is the input '{shown(_named(source))}' "
                             "(writing would overwrite it)", path=path)


def check_stdout(inputs: Iterable[str | None]) -> None:
    """Refuse a standard output redirected into (``>>``) a regular file that is one of
    ``inputs``, as cat(1) does: the results would be appended to what is being read."""
    try:
        found = os.fstat(STDOUT_FD)
    except OSError:
        return
    if not stat.S_ISREG(found.st_mode):
        return
    out = Identity(found.st_dev, found.st_ino, found.st_mode)
    for source in inputs:
        if source is not None and _same(out, identity(source)):
            raise InputError(f"standard output is the input '{shown(_named(source))}' (writing "
                             "would overwrite it): redirect the output to another file")


def _same(a: Identity, b: Identity | None) -> bool:
    return b is not None and (a.device, a.inode) == (b.device, b.inode)


def _named(path: str) -> str:
    return "standard input" if path == STDIN else path


def check_files(inputs: Iterable[str | None], outputs: dict[str, str | None] | None = None
                ) -> None:
    """A command's files, checked before any is read: no stream named twice, and no output
    (``outputs``: how messages name each, its path or None) nor standard output that is an
    input."""
    inputs = list(inputs)
    check_inputs(inputs)
    check_stdout(inputs)
    for what, path in (outputs or {}).items():
        if path:
            check_output(path, what, inputs)

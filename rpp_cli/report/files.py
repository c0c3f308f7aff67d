"""Files rpp writes besides stdout (``--plot`` images, ``$GITHUB_STEP_SUMMARY``): whole or not
at all (contract §8).

A file is checked before any work (:func:`check_writable`), so a typo in a path costs no
computation; it is then written beside its target under a temporary name and renamed over it
only when complete and synced (:func:`replaced_whole`), so a full disk or a crash never leaves
half a file under the requested name, and an existing file stays as it was. An append
(:func:`append_whole`) that fails is cut back to where it started. A FIFO is opened without
waiting: one that no process reads is an error, not a wait that never ends. A temporary file
is removed on every way out, a signal's included (:func:`remove_pending`).
"""
from __future__ import annotations

import errno
import fcntl
import os
import signal
import stat
import threading
import time
import uuid
from contextlib import contextmanager
from typing import BinaryIO, Iterator

from ..errors import InputError


def _cannot(what: str, path: str, why: str) -> InputError:
    return InputError(f"cannot write {what}: {why}", path)


def _existing(path: str, what: str) -> os.stat_result | None:
    """``stat`` of what ``path`` names (links followed), None when it does not exist."""
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as err:
        raise _cannot(what, path, err.strerror or str(err)) from None


def check_writable(path: str, what: str, append: bool = False) -> None:
    """Fail now, with one line, when ``path`` could not be written later: a missing or
    read-only directory, a directory in its place. A file to be replaced needs a directory
    that takes a new file (it is renamed into place); a file to be ``append``-ed to, a device
    or a FIFO must be writable itself, and an existing file is never replaced when it is
    read-only to this user."""
    found = _existing(path, what)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise _cannot(what, path, "it is a directory")
    if found is not None and not os.access(path, os.W_OK):  # read-only: kept, as open() would
        raise _cannot(what, path, os.strerror(errno.EACCES))
    if found is not None and stat.S_ISFIFO(found.st_mode):  # opened now, kept for the write:
        try:  # a probe's close would end its reader's input
            _HELD.setdefault(path, open_output(path, os.O_WRONLY))
        except OSError as err:
            raise _cannot(what, path, err.strerror or str(err)) from None
        return
    if found is not None and (append or not stat.S_ISREG(found.st_mode)):
        return
    try:
        fd, probe = _create_beside(os.path.realpath(path), 0o600)
        os.close(fd)
        os.unlink(probe)
    except OSError as err:
        raise _cannot(what, path, err.strerror or str(err)) from None


_HELD: dict[str, int] = {}  # FIFOs opened by check_writable, for their one write later
FIFO_READER_WAIT = 1.0  # seconds a FIFO may take to get its reader (``cat fifo &`` starting)


def open_output(path: str, flags: int, mode: int = 0o666) -> int:
    """``os.open`` for writing that waits at most FIFO_READER_WAIT for a FIFO's reader: a
    FIFO that no process opens for reading is an error that says so, never a wait without
    end; the descriptor returned blocks on writes as usual. A FIFO that
    :func:`check_writable` opened is handed over as it is (``flags`` then do not apply)."""
    held = _HELD.pop(path, None)
    if held is not None:
        return held
    deadline = time.monotonic() + FIFO_READER_WAIT
    while True:
        try:
            fd = os.open(path, flags | os.O_NONBLOCK, mode)
            break
        except OSError as err:
            if err.errno != errno.ENXIO:
                raise
            if time.monotonic() >= deadline:
                raise OSError(err.errno, "it is a FIFO that no process reads (waited "
                                         f"{FIFO_READER_WAIT:g} s for one)") from None
            time.sleep(0.02)
    fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    return fd


_PENDING: set[str] = set()  # temporary files being written, removed on every way out
_FATAL = (signal.SIGTERM, signal.SIGHUP)


def remove_pending() -> None:
    """Remove the temporary files being written: called on the way out of the process
    (Ctrl-C's immediate exit, a fatal signal), where no ``finally`` runs."""
    for temp in list(_PENDING):
        try:
            os.unlink(temp)
        except OSError:
            pass
        _PENDING.discard(temp)


def _fatal(signum: int, frame) -> None:
    """SIGTERM or SIGHUP while a temporary file exists: remove it, then die of the signal as
    its default does (the status a shell reports: 128 + the signal)."""
    remove_pending()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


@contextmanager
def _removed_on_signal(temp: str) -> Iterator[None]:
    """``temp`` is removed should SIGTERM or SIGHUP end the process while the block runs (in
    the main thread, where handlers can be set; a signal ignored at start stays ignored)."""
    _PENDING.add(temp)
    handlers = {}
    if threading.current_thread() is threading.main_thread():
        handlers = {s: signal.getsignal(s) for s in _FATAL}
        for s, old in handlers.items():
            if old is signal.SIG_DFL:
                signal.signal(s, _fatal)
    try:
        yield
    finally:
        for s, old in handlers.items():
            if old is signal.SIG_DFL:
                signal.signal(s, old)
        _PENDING.discard(temp)


def _create_beside(target: str, mode: int) -> tuple[int, str]:
    """A new, empty, hidden file in ``target``'s directory: (descriptor, path)."""
    directory, name = os.path.split(target)
    temp = os.path.join(directory, f".{name}.{uuid.uuid4().hex[:12]}.part")
    return os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), temp


@contextmanager
def replaced_whole(path: str, what: str) -> Iterator[BinaryIO]:
    """Yield a binary file whose bytes replace ``path`` when the block ends without error.

    They go to a temporary file beside the target (links followed), which is fsynced and
    renamed over it; on any failure the temporary file is removed and the target is
    untouched. An existing file keeps its permissions, a new one gets those ``open`` would
    give. A device or FIFO (``/dev/stdout``) has no content to protect: written directly.
    An OSError becomes a one-line InputError naming ``path``.
    """
    target = os.path.realpath(path)
    found = _existing(target, what)
    try:
        if found is not None and not stat.S_ISREG(found.st_mode):
            with os.fdopen(open_output(path, os.O_WRONLY | os.O_TRUNC), "wb") as out:
                yield out
            return
        fd, temp = _create_beside(target, stat.S_IMODE(found.st_mode) if found else 0o666)
    except OSError as err:
        raise _cannot(what, path, err.strerror or str(err)) from None
    try:
        with _removed_on_signal(temp), os.fdopen(fd, "wb") as out:
            yield out
            out.flush()
            os.fsync(out.fileno())  # a full disk may only say so now
        if found is not None:
            os.chmod(temp, stat.S_IMODE(found.st_mode))  # the umask applied at creation
        os.replace(temp, target)
    except BaseException as err:
        try:
            os.unlink(temp)
        except OSError:
            pass
        if isinstance(err, OSError):
            raise _cannot(what, path, err.strerror or str(err)) from None
        raise


def append_whole(path: str, text: str, what: str) -> None:
    """Append ``text`` (UTF-8) to ``path``, creating it if needed; when any byte cannot be
    written (or synced), the file is cut back to its former length and the error is one
    line: a reader never sees part of ``text``."""
    data = memoryview(text.encode("utf-8"))
    try:
        fd = open_output(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    except OSError as err:
        raise _cannot(what, path, err.strerror or str(err)) from None
    regular, start = False, 0
    try:
        found = os.fstat(fd)
        regular, start = stat.S_ISREG(found.st_mode), found.st_size
        while data:
            data = data[os.write(fd, data):]
        if regular:
            os.fsync(fd)
    except OSError as err:
        if regular:
            try:
                os.ftruncate(fd, start)
            except OSError:
                pass
        raise _cannot(what, path, err.strerror or str(err)) from None
    finally:
        os.close(fd)

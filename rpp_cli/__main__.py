"""The ``rpp`` command's entry point, also ``python -m rpp_cli``.

Ctrl-C while the modules load, before the CLI puts its own handler in place, ends rpp as
SIGINT's default does (status 130 in a shell), not with a traceback from whichever module was
loading: the package's ``__init__`` loads nothing heavy, so this runs first. (Under a memory
limit it is noted while the CLI's modules load and acted on once they are: see
:func:`_load_cli`.)

Out of memory is one line and status 2 wherever it strikes (contract §8), numpy's loading
included: :func:`run` loads the CLI with fd 2 held back, has a C library's exit() reported
(OpenBLAS gives up so), and ends the process itself with ``os._exit``, after what Python's own
exit runs, so that neither a library's status nor a traceback is rpp's last word.
"""
from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from types import ModuleType
from typing import Iterator, NoReturn

if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, signal.SIG_DFL)

# errors.EXIT_BAD_INPUT and errors.EXIT_INTERNAL (the list of statuses): this module loads
# none of rpp's before the CLI, and out of memory must be reported without loading one.
EXIT_BAD_INPUT = 2
EXIT_INTERNAL = 70

BLAS_THREADS = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")
OPENBLAS_NO_THREAD = b"blas_thread_init: pthread_create failed"  # then it raises SIGINT
LOADING_OUT_OF_MEMORY = (b"rpp: out of memory: loading its modules (Python's, numpy's, "
                         b"scipy's) needs more than this process may use (ulimit -v, a "
                         b"container's limit)\n")

# Under a limit, loading that has not ended after this long never will: CPython 3.11's import
# lock, left held where a MemoryError struck inside importlib, has the next import wait on it
# for ever (seen: `rpp --help` about 81 MB above what Python used at start). Loading takes
# well under a second.
LOADING_SECONDS = 60

_memory: ModuleType | None = None  # rpp_cli/memory.py, once loaded
_cli: ModuleType | None = None  # rpp_cli/cli.py, once loaded whole
_stderr = [2]  # where rpp's last line goes: fd 2, or the real one while fd 2 is held


def run() -> NoReturn:
    """Load the CLI, run it and end the process with its status."""
    try:
        try:
            status = _load_and_run()
        except BaseException as err:  # noqa: BLE001 - every end is decided here
            status = _failed(err)
        _exit(status)
    finally:  # reached only when reporting failed too: out of memory, most likely
        try:
            _out_of_memory()
        finally:
            os._exit(EXIT_BAD_INPUT)


def _load_and_run() -> int:
    """The CLI's exit status."""
    global _memory, _cli
    _memory = _load_memory()
    limited = _memory.address_space_limited()
    _one_blas_thread()
    _memory.end_library_exits(_library_exit)
    _cli = _load_cli(limited)
    try:
        _cli.main()
    except SystemExit as done:
        return _status(done.code)
    return 0


def _one_blas_thread() -> None:
    """One OpenBLAS thread unless the user chose: rpp's matrix products are small and its own
    threads and processes use the cores. More would map 32 MB and more each as numpy loads
    (which a ``ulimit -v`` counts) and spin as it does: about 0.1 s of CPU at every start."""
    if not any(name in os.environ for name in BLAS_THREADS):
        os.environ["OPENBLAS_NUM_THREADS"] = "1"


def _load_memory() -> ModuleType:
    """rpp_cli/memory.py, which loads nothing beyond the standard library (the package's
    ``__init__`` loads nothing heavy either): it is in place before numpy loads."""
    from . import memory

    return memory


def _load_cli(limited: bool) -> ModuleType:
    """rpp_cli/cli.py, loaded with fd 2 held back and, under an address-space limit
    (``limited``), Ctrl-C noted, not acted on, OpenBLAS's buffer taken, and loading stuck
    past LOADING_SECONDS out of memory: OpenBLAS short of memory as numpy loads or maps its
    buffer says so on fd 2, then exits or raises SIGINT (its threads); either is rpp's one
    line instead.
    Anything else written is passed on after, and the user's own Ctrl-C then ends rpp as
    SIGINT's default does."""
    assert _memory is not None
    noted: list[int] = []
    note = limited and signal.getsignal(signal.SIGINT) is signal.SIG_DFL
    if note:
        signal.signal(signal.SIGINT, lambda signum, _frame: noted.append(signum))
    written: list[bytes] = []
    failure: BaseException | None = None
    try:
        with _held_stderr(written):
            if limited:
                alarm = signal.signal(signal.SIGALRM, lambda _signum, _frame: _out_of_memory())
                signal.alarm(LOADING_SECONDS)
            try:
                from . import cli
                if limited:
                    _memory.take_blas_buffer()
            finally:
                if limited:
                    signal.alarm(0)
                    signal.signal(signal.SIGALRM, alarm)
                if note:
                    signal.signal(signal.SIGINT, signal.SIG_DFL)
    except BaseException as err:  # noqa: BLE001 - decided below, the user's Ctrl-C first
        failure = err
    text = b"".join(written)
    if OPENBLAS_NO_THREAD in text:
        _out_of_memory()
    if failure is None or not (_memory.caused_by_memory(failure) or _memory.exhausted()):
        _write(text)
    if noted:
        os.kill(os.getpid(), signal.SIGINT)
    if failure is not None:
        raise failure
    return cli


@contextmanager
def _held_stderr(written: list[bytes]) -> Iterator[None]:
    """fd 2 on an anonymous file for the block; what was written there is added to
    ``written`` when it ends (fd 2 as it was), for the caller to pass on or drop. Nothing is
    held where memfd is missing (not Linux) or fd 2 is closed."""
    try:
        os.fstat(2)  # closed: a new descriptor would take its place
        real = os.dup(2)
    except OSError:
        yield
        return
    try:
        held = os.memfd_create("rpp-stderr")
    except (AttributeError, OSError):
        os.close(real)
        yield
        return
    _flush(sys.stderr)
    os.dup2(held, 2)
    _stderr[0] = real
    try:
        yield
    finally:
        _flush(sys.stderr)
        os.dup2(real, 2)
        _stderr[0] = 2
        os.lseek(held, 0, os.SEEK_SET)
        while data := os.read(held, 1 << 16):
            written.append(data)
        os.close(held)
        os.close(real)


def _library_exit(status: int) -> NoReturn:
    """A C library called exit() while rpp ran: out of memory when memory is short now (as
    it is when OpenBLAS gives up), else an internal error; never the library's status."""
    if _memory is None or _memory.short_of_memory():
        _out_of_memory()
    _write(f"rpp: internal error: a library ended the process (exit status {status}); please "
           "report it with the output of rpp --version\n".encode())
    os._exit(EXIT_INTERNAL)


def _failed(err: BaseException) -> int:
    """What escaped the CLI (its loading, or its set-up in ``main``): out of memory as one
    line, anything else with its traceback; status 70. Failing to load rpp_cli/memory.py,
    which needs nothing beyond the standard library, is out of memory too."""
    if _memory is None or isinstance(err, MemoryError) or _memory.caused_by_memory(err) \
            or _memory.exhausted():
        _out_of_memory()
    import traceback

    traceback.print_exception(type(err), err, err.__traceback__)
    where = "while loading its modules" if _cli is None else "as it started or ended"
    _write(f"rpp: internal error {where}: see the lines above, and please report them with "
           "the output of rpp --version\n".encode())
    return EXIT_INTERNAL


def _out_of_memory() -> NoReturn:
    """The one line and status 2: the CLI's, with its clean-up, once it is loaded."""
    if _cli is not None:
        _cli._out_of_memory()
    _write(LOADING_OUT_OF_MEMORY)
    os._exit(EXIT_BAD_INPUT)


def _status(code: object) -> int:
    """A SystemExit's code as the process's status, as Python's own exit reads it."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    _write(f"{code}\n".encode(errors="backslashreplace"))
    return 1


def _exit(status: int) -> NoReturn:
    """End as Python's own exit would (threads joined, atexit's functions, streams flushed),
    then by ``os._exit``: C's exit() would run the hook of memory.end_library_exits after the
    interpreter is gone. Out of memory on the way is one line and status 2."""
    try:
        threading = sys.modules.get("threading")
        if threading is not None and hasattr(threading, "_shutdown"):
            threading._shutdown()
        import atexit

        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            _flush(stream)
    except BaseException as err:  # noqa: BLE001 - nothing may escape past here
        if _cli is not None and isinstance(err, _cli._Interrupted):  # Ctrl-C on the way out
            _cli._end_interrupted()
        if isinstance(err, MemoryError) or _memory is not None and _memory.caused_by_memory(err):
            _out_of_memory()
    os._exit(status)


def _flush(stream: object) -> None:
    """Flush a standard stream if it is open (the CLI closes stdout itself); errors are the
    CLI's to report, and stderr is a courtesy."""
    try:
        if stream is not None and not stream.closed:  # type: ignore[attr-defined]
            stream.flush()  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        pass


def _write(data: bytes) -> None:
    """Bytes to the real stderr, best effort."""
    try:
        os.write(_stderr[0], data)
    except OSError:
        pass


if __name__ == "__main__":
    run()

"""glibc's allocator: tuned for a command's large, short-lived arrays, and freed memory handed
back to the system. Both do nothing off glibc.

Tuning (the CLI's only: a library must not change its host's allocator). By default glibc maps
every block over 128 KiB (up to 32 MiB, as it adapts) straight from the kernel and gives it
back when freed, so each new temporary of a pass over millions of rows costs page faults and
zeroed pages: on bench's L (`rpp eval -q -j 2`) 334,000 minor faults and 1.2 s of system
time. Blocks up to 64 MiB from the heap, kept once freed (up to 256 MiB at its top), halve
both (172,000, 0.6 s) for 20-40 MB more peak memory; larger blocks are still mapped and
returned, so a big run's memory is not held twice. The user's own ``MALLOC_*_`` win.

Trimming. The dictionary's tables are many small C blocks (a few KiB per query); freed, they
stay in the C heap, resident, until something reuses them. The arrays that follow are large
and mapped apart, so they never do: without a trim, a process keeps the peak of every
dictionary it has freed, and each forked worker counts it in its share.

Running out. Memory can run out anywhere, not only in an allocation that raises MemoryError:
a shared library that cannot be mapped (ImportError), a thread or process that cannot start,
a C library that gives up and calls exit() (OpenBLAS, for its buffers). :func:`caused_by_memory`
tells such failures apart and :func:`end_library_exits` catches the last kind, so that rpp says
``rpp: out of memory: ...`` and exits 2 wherever it happens (contract §8).

This module loads nothing beyond the standard library: the entry point (rpp_cli/__main__.py)
loads it before numpy, whose loading may be what runs out.
"""
from __future__ import annotations

import ctypes
import errno
import functools
import os
import sys
from typing import Callable, NoReturn

M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3  # glibc's malloc.h
SETTINGS = {M_MMAP_THRESHOLD: 64 << 20, M_TRIM_THRESHOLD: 256 << 20, M_TOP_PAD: 64 << 20}
USER_SETTINGS = ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_",
                 "MALLOC_MMAP_MAX_")


@functools.cache
def _glibc(name: str) -> Callable | None:
    """glibc's function ``name``, or None where the C library is not glibc (macOS, musl)."""
    try:
        if not (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc"):
            return None
        return getattr(ctypes.CDLL(None), name, None)
    except (ValueError, OSError):
        return None


def tune() -> bool:
    """Apply SETTINGS (the CLI, at start); False, and nothing changed, off glibc or when the
    user set any of USER_SETTINGS."""
    mallopt = _glibc("mallopt")
    if mallopt is None or any(v in os.environ for v in USER_SETTINGS):
        return False
    return all(mallopt(k, v) == 1 for k, v in SETTINGS.items())


def release_free_memory() -> None:
    """Return the C heap's free pages to the system (glibc's ``malloc_trim(0)``: the free
    pages of every arena, not only the top); a no-op without glibc."""
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)


OUT_OF_MEMORY = ("rpp: out of memory: the input needs more than this process may use (ulimit -v, "
                 "a container's limit); fewer -j workers, fewer runs or queries at once, or a "
                 "larger machine (docs/performance.md)")
_MAP_FAILED = "failed to map segment from shared object"  # the loader's words for a failed mmap
_NO_THREAD = "can't start new thread"  # RuntimeError of threading.Thread.start
_PROBE_BYTES = 32 << 20  # OpenBLAS's smallest buffer: a library that gave up wanted this much


def take_blas_buffer() -> None:
    """Have OpenBLAS map its work buffer (32 MB) now, with one small matrix product: it maps it
    on its first product and keeps it, and where that is late in a command, near its peak,
    and the mapping fails, it prints its own error before giving up (rpp's line follows it).
    Under a ``ulimit -v`` the CLI calls this while it loads (OpenBLAS held to one thread)."""
    import numpy

    square = numpy.ones((2, 2))
    square @ square


# What importing scipy.special maps (measured under rpp with scipy 1.17: 67 MB, 72 MB with
# the user's own MALLOC_ settings): its own OpenBLAS (24 MB) and that library's buffer among it.
SCIPY_SPECIAL_BYTES = 72 << 20


def load_scipy_special() -> None:
    """``import scipy.special`` (rpp_cli.stats's distributions); under an address-space limit
    only once what it maps can be mapped, else MemoryError. scipy's wheel bundles an OpenBLAS
    of its own (0.3.30 with scipy 1.17) whose constructor, as the library loads, asks for its
    32 MB buffer (mmap, then malloc) and, given neither, asks again forever: no error, no exit
    (numpy's OpenBLAS, 0.3.31, gives up and calls exit(1), which :func:`end_library_exits`
    catches). Where the library fits and its buffer does not, rpp would spin at full CPU
    inside the import until killed."""
    if ("scipy.special" not in sys.modules and address_space_limited()
            and short_of_memory(SCIPY_SPECIAL_BYTES)):
        raise MemoryError(f"no room for scipy.special ({SCIPY_SPECIAL_BYTES >> 20} MB)")
    import scipy.special  # noqa: F401


def address_space_limited() -> bool:
    """Whether mmap can fail for want of memory here: a finite ``ulimit -v`` or ``-d``, or the
    kernel's strict overcommit (elsewhere the kernel maps, and kills when pages run out)."""
    try:
        import resource

        if any(resource.getrlimit(r)[0] != resource.RLIM_INFINITY
               for r in (resource.RLIMIT_AS, resource.RLIMIT_DATA)):
            return True
    except (ImportError, OSError, ValueError, AttributeError):
        pass
    try:
        with open("/proc/sys/vm/overcommit_memory", "rb") as f:
            return f.read().strip() == b"2"
    except OSError:
        return False


def caused_by_memory(err: BaseException | None) -> bool:
    """Whether ``err``, or an error it was raised from or while handling, is the process
    running out of memory: a MemoryError, ENOMEM, a thread that could not start, or a shared
    library that could not be mapped where mmap fails for want of memory."""
    seen: set[int] = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, MemoryError):
            return True
        if isinstance(err, OSError) and err.errno == errno.ENOMEM:
            return True
        text = str(err) if isinstance(err, (RuntimeError, ImportError, OSError)) else ""
        if isinstance(err, RuntimeError) and text == _NO_THREAD:
            return True
        if isinstance(err, (ImportError, OSError)) and (
                os.strerror(errno.ENOMEM) in text
                or _MAP_FAILED in text and address_space_limited()):
            return True
        err = err.__cause__ or err.__context__
    return False


def exhausted() -> bool:
    """Whether the address space is limited and nearly used up: an error that is not a
    MemoryError is then most likely its doing too (CPython's parser reports a failed
    allocation as a SyntaxError; a module half loaded raises ImportError or AttributeError)."""
    return address_space_limited() and short_of_memory()


def short_of_memory(size: int = _PROBE_BYTES) -> bool:
    """Whether ``size`` bytes cannot be mapped now (asked after a failure, to name its cause;
    mmap loads here, so that this module loads with the least). A private mapping, as a
    library's own: a ``ulimit -d`` (RLIMIT_DATA) counts it, not a shared one."""
    try:
        import mmap

        mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE).close()
    except (ImportError, OSError, MemoryError, ValueError):
        return True
    return False


_EXIT_HOOKS: list[Callable] = []  # the C callbacks given to on_exit: alive as long as rpp


def end_library_exits(end: Callable[[int], NoReturn]) -> bool:
    """Have ``end(status)`` run, in this process only, when C code calls exit() while it runs
    (OpenBLAS does when it cannot map its buffers): ``end`` says why and ends the process
    itself, so the library's status (1, a failed check's) is never rpp's. False, and nothing
    done, off glibc.

    Only for a process that always ends with ``os._exit`` once this is set: the hook would
    run after the interpreter's own exit, when no Python code may run."""
    on_exit = _glibc("on_exit")
    if on_exit is None:
        return False
    me = os.getpid()

    def hook(status: int, _arg: object) -> None:
        if os.getpid() != me:  # a forked worker: its parent reports how it ended
            os._exit(status)
        try:
            end(status)
        finally:  # ``end`` failed: memory is the likeliest reason, and exit 2 its status
            os._exit(2)

    callback = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_void_p)(hook)
    if on_exit(callback, None) != 0:
        return False
    _EXIT_HOOKS.append(callback)
    return True

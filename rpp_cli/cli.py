"""The command line: the ``rpp`` group, its commands (rpp_cli/commands/, one module each,
sharing rpp_cli/options.py) and the process around them.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place; so
do a closed pipe (141), Ctrl-C (130), a failed write (2) and a bug (70).
"""
from __future__ import annotations

import io
import os
import re
import signal
import sys
import threading
from contextlib import contextmanager
from typing import Any, Callable, Iterator, NoReturn, TextIO

import click

from . import __version__
from .commands import COMMANDS
from . import memory
from .engine.threads import inline_only
from .errors import (EXIT_BAD_INPUT, EXIT_CLOSED_PIPE, EXIT_INTERNAL, EXIT_INTERRUPTED, InputError,
                     shown)
from .options import quiet_callback
from .report import discard_stdout
from .report.files import remove_pending
from .streams import guard_stderr



def _versions() -> str:
    """The versions a bug report needs: Python, numpy, pytrec_eval."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy

    try:
        pytrec = version("pytrec-eval-terrier")
    except PackageNotFoundError:
        pytrec = "?"
    return (f"python {sys.version.split()[0]}, numpy {numpy.__version__}, "
            f"pytrec_eval {pytrec}")


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    """``--version``: the versions are looked up only when asked for (reading the installed
    packages' metadata costs every other run of rpp some 30 ms)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"rpp {__version__} ({_versions()})", color=ctx.color)
        ctx.exit()


class _ClosedPipe(Exception):
    """The reader of our output went away (``| head``)."""


@contextmanager
def _closed_pipe_guard() -> Iterator[None]:
    """BrokenPipeError -> _ClosedPipe, which click's own handler (exit 1, the status of a
    failed check) does not catch, so that :func:`main` decides."""
    try:
        yield
    except BrokenPipeError as err:
        raise _ClosedPipe() from err


# A byte that is not UTF-8 as click's repr() of the argument writes it (a surrogate escape:
# '\udce9'), not after a backslash repr() doubled: shown as rpp's own messages show it, \xe9.
_REPR_BYTE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")


@contextmanager
def _one_line_usage_errors(group: click.Context | None = None) -> Iterator[None]:
    """A usage error (a missing argument, a bad option value, an unknown option or command)
    as one line, as every other error, with its exit code (2; the drop-ins' 1): ``rpp: eval:
    Invalid value for '-l' / '--level': 'abc' is not a valid float (see 'rpp eval --help')``
    instead of click's four lines. A bare ``rpp`` still prints the help. ``group``: the
    group's context, whose command is named where click's error has no context of its own
    (``-m`` without a value)."""
    try:
        yield
    except click.exceptions.NoArgsIsHelpError:
        raise
    except click.UsageError as err:
        ctx = err.ctx
        if ctx is not None:
            name = ctx.info_name if ctx.parent is not None else None
        else:
            name = group.invoked_subcommand if group is not None else None
        path = " ".join(filter(None, ["rpp", name]))  # whatever click was told it is called
        if ctx is not None and isinstance(err, click.MissingParameter):
            # click's "Usage: PROG [COMMAND] ARGS...", under rpp's own name
            hint = "usage: " + " ".join([path, *ctx.get_usage().split()[3 if name else 2:]])
        else:
            hint = f"see '{path} --help'"
        where = f"{name}: " if name else ""
        message = _REPR_BYTE.sub(r"\1\\x\2", err.format_message().rstrip("."))
        click.echo(f"rpp: {where}{shown(message)} ({hint})", err=True)
        sys.exit(err.exit_code)


class RppGroup(click.Group):
    """The command group: an InputError anywhere below becomes one line and its exit code (2
    unless the error says otherwise), so does a usage error; a closed pipe while parsing
    (``--help``, ``--version``) or running reaches :func:`main`."""

    def make_context(self, *args, **kwargs) -> click.Context:
        with _closed_pipe_guard(), _one_line_usage_errors():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        with _closed_pipe_guard(), _one_line_usage_errors(ctx):
            try:
                return super().invoke(ctx)
            except InputError as err:
                click.echo(f"rpp: {shown(str(err))}", err=True)
                ctx.exit(err.exit_code)


@click.group(cls=RppGroup,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option("-V", "--version", is_flag=True, expose_value=False, is_eager=True,
              callback=_print_version, help="Show the version and exit.")
@click.option("-Q", "--quiet", "group_quiet", is_flag=True, expose_value=False,
              callback=quiet_callback,
              help="No notes and no progress bars on stderr for the command (the same as its "
                   "own -Q); errors stay.")
def cli() -> None:
    """Preference-based evaluation of rankings: recall-paired preference (RPP) beside
    trec_eval's measures, in trec_eval's tab-separated layout.

    Every command reads gzipped or plain files, '-' for stdin; results go to stdout, notes
    to stderr. 'rpp COMMAND --help' lists a command's options.
    """


for _command in COMMANDS:
    cli.add_command(_command)


def _closed_pipe() -> None:
    """A write outside the report writers hit a closed pipe: exit quietly as a writer killed
    by SIGPIPE does (status 141: under ``set -o pipefail`` never taken for a success)."""
    discard_stdout()
    sys.exit(EXIT_CLOSED_PIPE)


class _Interrupted(BaseException):
    """Ctrl-C: raised by our SIGINT handler, so that click does not turn it into "Aborted!"."""


def _interrupt(signum, frame) -> None:
    """Ctrl-C: unwind to :func:`main`; on a local Dask cluster, end at once instead: its
    graceful close, on the way out, took up to 9 s, and its workers are rpp's children (and
    its temporary folder is removed here: the close that would remove it is skipped)."""
    engine = sys.modules.get("rpp_cli.engine")
    if engine is not None and getattr(engine.current(), "on_this_machine", False):
        engine.abandon()
        _end_interrupted()
    raise _Interrupted()


def _end(line: str | None, status: int) -> NoReturn:
    """End now: ``line`` on stderr (a courtesy: lost if stderr fails), what stdout still
    holds dropped (never half a result), and ``status`` (threads are daemons; workers die
    with the parent)."""
    if line is not None:
        try:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()
        except (OSError, AttributeError):
            pass
    remove_pending()  # a plot half written: no ``finally`` runs past os._exit
    try:
        discard_stdout()
    except (AttributeError, ValueError, OSError):  # stdout closed or None: nothing to drop
        pass
    os._exit(status)


def _end_interrupted() -> NoReturn:
    """Ctrl-C's end: status 130 at once, nothing more written."""
    _end(None, EXIT_INTERRUPTED)


def _unraisable(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``sys.unraisablehook`` that ends rpp when the exception Python is about to print and
    ignore is a Ctrl-C: a signal handler runs wherever the main thread is, a finalizer
    (``__del__``, a weakref callback) or the interpreter's own exit included, and there its
    exception would be "ignored" and the command run on to exit 0."""
    def on_unraisable(unraisable: Any) -> object:
        if isinstance(unraisable.exc_value, _Interrupted):
            _end_interrupted()
        if memory.caused_by_memory(unraisable.exc_value):  # a finalizer, an atexit function
            _out_of_memory()
        return hook(unraisable)
    return on_unraisable


def _thread_failed(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """``threading.excepthook`` that ends rpp when a thread's uncaught error is out of memory:
    the thread ends, and whoever waits for its work would wait forever."""
    def on_thread_error(args: Any) -> object:
        if memory.caused_by_memory(args.exc_value):
            _out_of_memory()
        return hook(args)
    return on_thread_error


def handle_out_of_memory() -> None:
    """Out of memory in another thread, a finalizer or an atexit function ends rpp with its
    one line and status 2 (the unraisable case: :func:`handle_ctrl_c`'s hook)."""
    threading.excepthook = _thread_failed(threading.excepthook)


def handle_ctrl_c() -> None:
    """Ctrl-C ends rpp with status 130 wherever it lands; unless rpp was started with SIGINT
    ignored (``rpp ... &`` in a script, ``nohup``), which it then stays, as for any program."""
    sys.unraisablehook = _unraisable(sys.unraisablehook)
    if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
        signal.signal(signal.SIGINT, _interrupt)


def main() -> None:
    """Entry point: the CLI, with output that is complete or reported as not.

    Every write is checked: stdout is flushed and closed before exiting, as coreutils do, and
    a failed write (a full disk, a closed descriptor) is one line and status 2, never 0 or 1.
    Ctrl-C ends with 130 and a closed pipe (``rpp eval ... | head``) quietly with 141.
    stderr is a courtesy: when it is closed or fails, notes are dropped and nothing else changes.
    """
    try:
        handle_ctrl_c()
        handle_out_of_memory()
        status = _run()
    except _Interrupted:
        _end_interrupted()
    sys.exit(status)


def _run() -> int | str | None:
    """The command and the close of stdout; its exit status."""
    memory.tune()
    if memory.address_space_limited():
        inline_only()
    guard_stderr()  # stderr closed or failing: notes are lost, results and status are not
    if sys.stdout is None:  # started with stdout closed (>&-)
        _cannot_write("standard output is closed")
    own = _checked_stdout()
    status: int | str | None = 0
    try:
        cli.main(prog_name="rpp")
    except SystemExit as done:
        status = done.code
    except _ClosedPipe:
        _closed_pipe()
    except OSError as err:  # readers turn theirs into InputError: this is output
        if memory.caused_by_memory(err):  # ENOMEM, or a library that could not be mapped
            _out_of_memory()
        _cannot_write(err.strerror or str(err))
    except MemoryError:  # numpy's _ArrayMemoryError too: the machine's limit, not a bug
        _out_of_memory()
    except Exception as err:  # a bug: say so, and never exit 0 or 1 (a failed check) for it
        if memory.caused_by_memory(err) or memory.exhausted():  # not a bug: see memory.py
            _out_of_memory()
        import traceback

        traceback.print_exc()
        sys.stderr.write("rpp: internal error: this is a bug; please report it with the lines "
                         "above and the output of rpp --version\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERNAL)
    try:
        sys.stdout.flush()
        if own is not None and sys.stdout is own:  # errors can come at close
            own.close()
    except BrokenPipeError:
        _closed_pipe()
    except OSError as err:
        _cannot_write(err.strerror or str(err))
    return status


def _checked_stdout() -> TextIO | None:
    """The process's stdout as every writer needs it, returned so that :func:`_run` closes
    it (None when stdout is another stream, a test's: that is left open).

    UTF-8 whatever the locale or PYTHONIOENCODING say, with the bytes of an id that are not
    UTF-8 as themselves: trec text carries ids byte for byte as trec_eval does, the other
    formats are valid UTF-8 (report/escape.py), and no id can fail to encode. And buffered
    even under ``python -u`` or PYTHONUNBUFFERED: its binary layer is then a raw file, whose
    write may take part of the bytes (a full disk, a file-size limit, a non-blocking pipe),
    and the text layer drops the rest without a word. A BufferedWriter writes every byte or
    raises."""
    out = sys.stdout
    if out is not sys.__stdout__:
        return None
    if isinstance(out.buffer, io.RawIOBase):
        out.flush()
        out = sys.stdout = io.TextIOWrapper(io.BufferedWriter(out.detach()), encoding="utf-8",
                                            errors="surrogateescape")
    else:
        out.reconfigure(encoding="utf-8", errors="surrogateescape")
    return out


def _out_of_memory() -> NoReturn:
    """The work needed more memory than the process may have (``ulimit -v``, a container's
    limit): one line and status 2, as for an input too large, never a traceback nor the
    internal error's 70."""
    _end(memory.OUT_OF_MEMORY, EXIT_BAD_INPUT)


def _cannot_write(why: str) -> NoReturn:
    """Output was lost: say so on stderr and exit 2 (never 0, nor 1, a failed check)."""
    _end(f"rpp: cannot write output: {why}", EXIT_BAD_INPUT)

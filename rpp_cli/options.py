"""The click options the commands share, and how notes reach stderr (unless -Q)."""
from __future__ import annotations

import functools
import inspect
import math
from typing import Callable

import click

from . import engine
from .errors import ASCII_DECIMAL, ASCII_INTEGER, InputError, shown
from .settings import TREC_EVAL_RELEASES, TREC_EVAL_VARIABLE, Options, trec_eval_in_force
from .progress import show_bars
from .report import FORMATS
from .stats import DEFAULT_SEED, MAX_DRAWS, MAX_SEED
from .io.runs import NAME_SOURCES


def once(ctx: click.Context, param: click.Parameter, values: tuple):
    """Callback of an option declared ``multiple=True`` that must be given at most once: its
    one value (None when absent). Click keeps the last of an option given twice, and a gate
    given ``--baseline a --baseline b`` checked against b without a word."""
    if len(values) > 1:
        raise click.BadParameter(f"given {len(values)} times ({', '.join(map(repr, values))}): "
                                 "give it once", ctx, param)
    return values[0] if values else None


class Digits(click.IntRange):
    """An IntRange written in ASCII digits: Python's int() also takes ``1_0`` and ``١``,
    which trec_eval's atol (and a reader of the command line) take otherwise."""

    name = "integer"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not ASCII_INTEGER.fullmatch(value.strip()):
            self.fail(f"{value!r} is not a whole number in ASCII digits", param, ctx)
        return super().convert(value, param, ctx)


class Decimal(click.FloatRange):
    """A FloatRange written as C's strtod reads a decimal (ASCII digits, no ``_``)."""

    name = "float"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not ASCII_DECIMAL.fullmatch(value.strip()):
            self.fail(f"{value!r} is not a number in ASCII digits", param, ctx)
        return super().convert(value, param, ctx)

    def _describe_range(self) -> str:
        """No range in the help when there is none (click wrote ``x<=None``)."""
        return "" if self.min is None and self.max is None else super()._describe_range()


FILE = click.Path(readable=False)
"""An input file: completes as a file name in the shell; the readers open it (and say what is
wrong with it in rpp's one-line form), so click checks nothing."""


def print_notes(notes: list[str]) -> None:
    """Notes on stderr, one line each, unless --quiet."""
    if click.get_current_context().meta.get(QUIET):
        return
    for note in notes:
        click.echo(f"rpp: note: {shown(note)}", err=True)


QUIET = "rpp.quiet"  # ctx.meta key: --quiet given to rpp or to the command


def quiet_callback(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``-Q``: no notes and no progress bars for this command. rpp's own option sets the
    default of every run (so an earlier in-process run leaves nothing behind); the command's
    can only add quiet."""
    if value or param.name == "group_quiet":
        ctx.meta[QUIET] = value
        show_bars(not value)


def collection_arguments(measure_help: str) -> Callable:
    """``[QRELS] RUN...`` and ``-m NAME`` (``measure_help``: what -m does in this command),
    for the commands that evaluate runs (eval, compare, meta)."""
    def add(fn):
        fn = click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
                          help=measure_help)(fn)
        fn = click.argument("runs", nargs=-1, type=FILE, metavar="RUN...")(fn)
        return click.argument("qrels", type=FILE, metavar="[QRELS]")(fn)
    return add


def quiet_option(fn):
    """``-Q, --quiet`` on a command, as on rpp itself."""
    return click.option("-Q", "--quiet", is_flag=True, expose_value=False,
                        callback=quiet_callback,
                        help="No notes and no progress bars on stderr; errors stay (and rpp "
                             "check's verdicts, which are its result).")(fn)


INPUTS_LINE = ("Input options: -l, --corpus-size, --dedup, -j, --dask, --dask-timeout, --name, "
               "--names-from, -M, --binary, --compat, -Q (rpp help inputs).")
"""What each evaluating command's help says of the input options it shares (described once)."""


def input_options(fn):
    """Options every evaluating command shares (relevance level, corpus size, duplicates,
    -j and --dask, run names, -M, --binary, --compat); the command receives them as one
    ``options: Options``. Its help names them in one line (:data:`INPUTS_LINE`) and hides
    them, and its -Q (:func:`quiet_option`, given below this decorator), which ``rpp help
    inputs`` describes."""
    @functools.wraps(fn)
    def command(*args, level, corpus_size, dedup, jobs, dask, dask_timeout, names, names_from,
                max_docs, compat, binary, **kwargs):
        with engine.session(jobs, dask, dask_timeout), trec_eval_in_force(compat) as release:
            return fn(*args, options=Options(level, corpus_size, dedup, jobs, names=names,
                                              max_docs=max_docs, names_from=names_from,
                                              trec_eval=release, binary=binary),
                      **kwargs)

    for param in getattr(command, "__click_params__", []):
        param.hidden = param.hidden or param.name == "quiet"  # -Q, from quiet_option
    command.__doc__ = f"{inspect.cleandoc(fn.__doc__ or '')}\n\n{INPUTS_LINE}"
    for add in reversed(_input_decorators(hidden=True)):
        command = add(command)
    return command


def input_params() -> list[click.Parameter]:
    """The input options and -Q as shown, in help order: what ``rpp help inputs`` prints."""
    def nothing() -> None:
        """A function for the decorators to add their options to."""
    for add in [quiet_option, *reversed(_input_decorators(hidden=False))]:
        nothing = add(nothing)
    return list(reversed(nothing.__click_params__))


def _input_decorators(hidden: bool) -> list[Callable]:
    """The click options of :func:`input_options`, in help order (``hidden`` from help)."""
    def option(*names: str, **attrs) -> Callable:
        """click.option, hidden or not."""
        return click.option(*names, hidden=hidden, **attrs)
    return [
        option("-l", "--level", type=Decimal(), metavar="L",
               help="Relevance level: grade >= L is relevant (default: grade > 0)."),
        option("-j", "--jobs", type=Digits(1, 256), default=engine.default_jobs(),
               show_default=True, metavar="N",
               help="Threads that read and join runs, and worker processes that evaluate "
                    "shards of queries (default: the cores, at most 4)."),
        option("--dask", metavar="ADDRESS",
               help="Run the shards of work on a Dask cluster: a scheduler's address "
                    "(tcp://host:8786) or local[:N] for a LocalCluster of N processes (needs "
                    "pip install 'dask[distributed]'; see docs/scaling.md). Default: $RPP_DASK, "
                    "else this machine (-j)."),
        option("--dask-timeout", "dask_timeout",
               type=Decimal(0, engine.MAX_DASK_TIMEOUT, min_open=True), callback=finite,
               metavar="SECONDS",
               help="Seconds --dask may wait to connect to its scheduler and see a worker, and "
                    "for a worker to join a cluster left without any mid-run; then it is an "
                    "error (default: $RPP_DASK_TIMEOUT, else 10)."),
        option("--corpus-size", type=Digits(1, MAX_CORPUS_SIZE), metavar="N",
               help="Corpus size n for unretrieved items (default: distinct items in the runs' "
                    "rankings and relevant items of the query, paper §5.5)."),
        option("--dedup", is_flag=True,
               help="Keep the best-scored copy of a docno repeated within a query (default: "
                    "it is an error, as in trec_eval)."),
        option("--name", "names", multiple=True, metavar="NAME",
               help="Name of a run, once per RUN in the same order (default: --names-from)."),
        option("--names-from", "names_from", type=click.Choice(NAME_SOURCES), default="file",
               help="What names a run: its file name less .gz ('-' for stdin; runs sharing "
                    "one: the path part that tells them apart), the same less an extension "
                    "all share (stem), or its tag (6th field of its first line)."),
        option("-M", "--max-docs", "max_docs", type=Digits(1, 1 << 40), metavar="K",
               help="Keep each run's top K documents per query, as trec_eval -M and pref_eval "
                    "--topk (default: all)."),
        option("--binary", is_flag=True,
               help="Graded qrels read as binary, as pref_eval reads them: a query's relevant "
                    "items (grade > 0, or >= L) are one population (default: one per grade "
                    "level, the paper's)."),
        functools.partial(compat_option, hidden=hidden),
    ]


def compat_option(fn, hidden: bool = False):
    """``--compat RELEASE``: the trec_eval release whose numbers trec_eval's measures follow
    (also $RPP_TREC_EVAL); the command receives it as ``compat`` (``hidden``: from its help)."""
    return click.option("--compat", "compat", type=click.Choice(TREC_EVAL_RELEASES),
                        envvar=TREC_EVAL_VARIABLE, show_envvar=True, metavar="RELEASE",
                        hidden=hidden,
                        help="trec_eval release that trec_eval's measures follow: "
                             f"{TREC_EVAL_RELEASES[0]} (iprec_at_recall and 11pt_avg round "
                             "their recall cutoffs, scores rank as doubles, all_trec adds rbp, "
                             f"rbp_resid and unj) or {TREC_EVAL_RELEASES[1]} (pytrec_eval's "
                             f"and ir_measures' numbers). Default: {TREC_EVAL_RELEASES[0]}."
                        )(fn)


def subtopics_option(fn):
    """``--subtopics FILE`` for the commands that evaluate runs (eval, compare, meta)."""
    return click.option("--subtopics", type=FILE, metavar="FILE",
                        help="Subtopic qrels (default: none).")(fn)


MAX_CORPUS_SIZE = 1 << 40  # positions are int64 sums of at most 2^40 per item: no overflow


def output_options(fn):
    """``--format`` and ``--precision``, for every command that prints a Results table; the
    command then ends with ``write_report(results, fmt, sys.stdout, precision)``."""
    fn = click.option("--precision", type=Digits(0, 17), default=4, metavar="N",
                      help="Decimals printed (jsonl and csv print p-values in full).")(fn)
    return format_option(FORMATS)(fn)


def format_option(formats: tuple[str, ...] | list[str]) -> Callable:
    """``--format F`` among ``formats`` (the first the default), named in one line: what
    each prints is docs/formats.md's."""
    return click.option("--format", "fmt", type=click.Choice(formats), default=formats[0],
                        metavar="F", help=f"{', '.join(formats)} (docs/formats.md).")


def number_list(kind: type) -> Callable:
    """A click callback parsing a comma-separated list; a bad item is an InputError."""
    def parse(ctx: click.Context, param: click.Parameter, value: str | None):
        if value is None:
            return None
        try:
            return tuple(kind(v) for v in value.split(","))
        except ValueError:
            raise InputError(f"--{param.name.replace('_', '-')}: '{value}' is not a "
                             f"comma-separated list of {kind.__name__} values") from None
    return parse


def seed_option(what: str) -> Callable:
    """``--seed``: a whole number from 0 to 2^63 - 1 (numpy's generators take no negative
    seed), checked by click before any work."""
    return click.option("--seed", type=Digits(0, MAX_SEED), default=DEFAULT_SEED,
                        show_default=True, metavar="N", help=what)


def finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback refusing NaN (which passes every range check) and infinities."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def permutation_options(what: str) -> Callable:
    """``--permutations`` (default 10000) and ``--seed`` of a randomized test."""
    def add(fn):
        fn = seed_option("Seed of the random draws.")(fn)
        return click.option("--permutations", type=Digits(1, MAX_DRAWS), default=10000,
                            show_default=True, help=what)(fn)
    return add


_VIEW_HELP = {
    "trec": "trec: as --format",
    "human": "human: aligned tables",
    "paper": "paper: a paper's table",
}


def view_option(*views: str) -> Callable:
    """``--view`` with the views a command has: contract §7 lines (default), aligned tables
    for people, or (compare) a paper's table."""
    return click.option("--view", type=click.Choice(views), default="trec", show_default=True,
                        metavar="VIEW", help="; ".join(_VIEW_HELP[v] for v in views) + ".")


def check_view(view: str, fmt: str) -> None:
    """A --format that the view would not print is an error, never dropped in silence."""
    if view == "human" and fmt != "trec":
        raise InputError(f"--view human prints aligned tables of its own: --format {fmt} "
                         "is for --view trec")
    if view == "paper" and fmt not in ("latex", "markdown"):
        raise InputError("--view paper needs --format latex or markdown")

"""The command line: click options in, one library call, Results out to a report format.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Iterator

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, InputError
from .evaluate import Options, run_eval
from .measures import DEFAULTS, REGISTRY
from .report import FORMATS, discard_stdout, plot
from .report import write as write_report

EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a writer killed by SIGPIPE


def _notes(notes: list[str]) -> None:
    for note in notes:
        click.echo(f"rpp: note: {note}", err=True)


def input_options(fn):
    """Options every evaluating command shares (relevance level, corpus size, duplicates)."""
    fn = click.option("--dedup", is_flag=True,
                      help="Keep the best-scored copy of a docno repeated within a query "
                           "(default: it is an error, as in trec_eval).")(fn)
    fn = click.option("--corpus-size", type=click.IntRange(min=1), metavar="N",
                      help="Corpus size n for unretrieved items (default: distinct items "
                           "in all runs and qrels of the query).")(fn)
    fn = click.option("-l", "--level", type=float, metavar="L",
                      help="Relevance level: grade >= L is relevant (default: grade > 0).")(fn)
    return fn


def output_options(fn):
    """``--format`` and ``--precision``, for every command that prints a Results table; the
    command then ends with ``write_report(results, fmt, sys.stdout, precision)``."""
    fn = click.option("--precision", type=click.IntRange(0, 17), default=4, metavar="N",
                      help="Decimals printed, the same in every format.")(fn)
    fn = click.option("--format", "fmt", type=click.Choice(FORMATS), default="trec",
                      help="trec: tab-separated lines, value last; jsonl: one JSON "
                           "object a line; csv: with a header row; matrix: aligned tables "
                           "(run x run per preference measure, run x measure); markdown, "
                           "latex: the same tables for papers.")(fn)
    return fn


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


class RppGroup(click.Group):
    """The command group: an InputError anywhere below becomes one line and exit 2; a closed
    pipe while parsing (``--help``, ``--version``) or running reaches :func:`main`."""

    def make_context(self, *args, **kwargs) -> click.Context:
        with _closed_pipe_guard():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        with _closed_pipe_guard():
            try:
                return super().invoke(ctx)
            except InputError as err:
                click.echo(f"rpp: {err}", err=True)
                ctx.exit(EXIT_BAD_INPUT)


@click.group(cls=RppGroup,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, "-V", "--version", prog_name="rpp")
def cli() -> None:
    """Preference-based evaluation of rankings: recall-paired preference (RPP) beside
    trec_eval's measures, in trec_eval's tab-separated layout.

    Every command reads gzipped or plain files, '-' for stdin; results go to stdout, notes
    to stderr. 'rpp COMMAND --help' lists a command's options.
    """


@cli.command("eval")
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to compute; repeatable. trec_eval syntax works (P.5,10, "
                   f"ndcg_cut.10, official); 'rpp measures' lists them. "
                   f"Default: {' '.join(DEFAULTS)}.")
@click.option("-q", "--per-query", is_flag=True, help="Also print per-query values.")
@click.option("-n", "--no-summary", is_flag=True, help="Do not print the 'all' lines.")
@output_options
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png",
              help="Also draw the aggregate preference matrix as a heatmap, runs ordered "
                   "by win rate (needs matplotlib: pip install 'rpp-cli[plot]'). "
                   "Default: no plot.")
@click.option("--plot-measure", metavar="NAME",
              help="Preference measure drawn by --plot. Default: the first one computed.")
@input_options
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool,
                 no_summary: bool, fmt: str, precision: int, plot_path: str | None,
                 plot_measure: str | None, level: float | None, corpus_size: int | None,
                 dedup: bool) -> None:
    """Evaluate RUN files against QRELS: RPP matrices and win rates for every pair of runs,
    and per-run baselines (pytrec_eval). Files may be gzipped; '-' reads stdin.

    \b
    Output (tab-separated, value last):
      rpp                   \tall\trunA\trunB\t0.0953
      map                   \tall\trunA\t0.1785
    """
    if plot_measure and not plot_path:
        raise InputError("--plot-measure needs --plot FILE.png")
    if plot_path:
        plot.require()
    notes: list[str] = []
    ctx = run_eval(qrels, list(runs), list(measures) or None,
                   Options(level, corpus_size, dedup), per_query, notes)
    _notes(notes)
    if plot_path:
        plot.preference_heatmap(ctx.results, plot_path, plot_measure)
    write_report(ctx.results, fmt, sys.stdout, precision, summary=not no_summary)


@cli.command("measures")
def measures_command() -> None:
    """List every measure that -m accepts.

    One tab-separated line each: name, kind (preference: one value per pair of runs; metric:
    one per run; set: a name for several measures), family, what it measures, parameters.
    """
    lines = []
    for m in REGISTRY.values():
        params = f"; parameters: {m.parameters}" if m.parameters else ""
        lines.append(f"{m.name:<22}\t{m.kind:<10}\t{m.family:<13}\t{m.description}{params}\n")
    click.echo("".join(lines), nl=False)


def _closed_pipe() -> None:
    """A write outside the report writers hit a closed pipe: exit quietly as a writer killed
    by SIGPIPE does (status 141: under ``set -o pipefail`` never taken for a success)."""
    discard_stdout()
    sys.exit(EXIT_CLOSED_PIPE)


def main() -> None:
    """Entry point: the CLI, quiet when stdout is a closed pipe (``rpp eval ... | head``)."""
    try:
        cli.main(prog_name="rpp")
    except _ClosedPipe:
        _closed_pipe()

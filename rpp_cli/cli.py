"""The command line: click options in, one library call, Results out to a report format.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place.
"""
from __future__ import annotations

import os
import sys

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, InputError
from .evaluate import Options, run_eval
from .measures import DEFAULTS, REGISTRY, trec
from . import trec_eval as trec_eval_flow
from .report import trec as trec_report
from .report import trec_eval as trec_eval_report


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


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="rpp")
def cli() -> None:
    """Preference-based evaluation of rankings: recall-paired preference (RPP) beside
    trec_eval's measures, in trec_eval's tab-separated layout."""


@cli.command("eval")
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to compute; repeatable. trec_eval syntax works (P.5,10, "
                   f"ndcg_cut.10, official). Default: {' '.join(DEFAULTS)}.")
@click.option("-q", "--per-query", is_flag=True, help="Also print per-query values.")
@click.option("-n", "--no-summary", is_flag=True, help="Do not print the 'all' lines.")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals printed.")
@input_options
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool,
                 no_summary: bool, precision: int, level: float | None,
                 corpus_size: int | None, dedup: bool) -> None:
    """Evaluate RUN files against QRELS: RPP matrices and win rates for every pair of runs,
    and per-run baselines (pytrec_eval). Files may be gzipped; '-' reads stdin.

    \b
    Output (tab-separated, value last):
      rpp                   \tall\trunA\trunB\t0.0953
      map                   \tall\trunA\t0.1785
    """
    notes: list[str] = []
    ctx = run_eval(qrels, list(runs), list(measures) or None,
                   Options(level, corpus_size, dedup), per_query, notes)
    _notes(notes)
    trec_report.write(ctx.results, sys.stdout, precision, summary=not no_summary)


@cli.command("measures")
def measures_command() -> None:
    """List every measure: rpp's own, then trec_eval's (through pytrec_eval)."""
    for m in REGISTRY.values():
        click.echo(f"{m.name:<22}\t{m.kind}\t{m.description}")
    for name in trec.ORDER:
        click.echo(f"{name:<22}\tmetric\ttrec_eval: {trec.DESCRIPTIONS[name]}")
    for nick, members in trec.NICKNAMES.items():
        click.echo(f"{nick:<22}\tnickname\ttrec_eval set: {' '.join(members)}")


class _TrecEvalCommand(click.Command):
    """A command whose usage errors exit 1, as trec_eval's do (click's exit 2)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            err.exit_code = trec_eval_flow.EXIT_USAGE
            raise


@cli.command("trec-eval", cls=_TrecEvalCommand)
@click.argument("qrels", metavar="QRELS")
@click.argument("run", metavar="RUN")
@click.option("-q", "--query_eval_wanted", "per_query", is_flag=True,
              help="Also print the measures of each query.")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE[.PARAMS]",
              help="Measure or nickname (official, all_trec, set), trec_eval syntax "
                   "(P.5,10); repeatable. Default: official.")
@click.option("-c", "--complete_rel_info_wanted", "complete", is_flag=True,
              help="Average over every qrels query; queries without results count 0.")
@click.option("-l", "--level_for_rel", "level", type=int, default=1, show_default=True,
              metavar="N", help="A doc is relevant when its grade is >= N.")
@click.option("-n", "--nosummary", "no_summary", is_flag=True,
              help="Do not print the summary ('all') lines.")
@click.option("-J", "--Judged_docs_only", "judged_only", is_flag=True,
              help="Drop retrieved docs that are not judged before evaluating.")
@click.option("-M", "--Max_retrieved_per_topic", "max_retrieved", type=click.IntRange(min=0),
              metavar="N", help="Evaluate only the top N docs of each query (by score).")
@click.option("-N", "--Number_docs_in_coll", "num_docs", type=int, default=0, metavar="N",
              help="Documents in the collection (only utility's 4th coefficient reads it).")
def trec_eval_command(qrels: str, run: str, per_query: bool, measures: tuple[str, ...],
                      complete: bool, level: int, no_summary: bool, judged_only: bool,
                      max_retrieved: int | None, num_docs: int) -> None:
    """trec_eval 9.0.8 for one RUN, byte for byte, computed by pytrec_eval. Exit codes as
    trec_eval's: 1 usage or unknown measure, 2 bad file or parameter, 4 duplicate docno,
    7 no query with both results and judgments."""
    opts = trec_eval_flow.TrecEvalOptions(measures, per_query, not no_summary, complete, level,
                                          max_retrieved, judged_only, num_docs)
    output = trec_eval_flow.run_trec_eval(qrels, run, opts)
    trec_eval_report.write(output, sys.stdout.buffer)


def main() -> None:
    """Entry point: run the CLI; bad input -> one line and its exit code (2 unless the error
    says otherwise); closed pipes are quiet."""
    try:
        cli.main(standalone_mode=False)
    except InputError as err:
        click.echo(f"rpp: {err}", err=True)
        sys.exit(err.exit_code)
    except click.exceptions.Abort:
        click.echo("rpp: aborted", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except click.exceptions.Exit as err:
        sys.exit(err.exit_code)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())

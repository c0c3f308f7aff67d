"""The command line: click options in, one library call, Results out to a report format.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place.
"""
from __future__ import annotations

import os
import sys

import click

from . import __version__
from .errors import EXIT_BAD_INPUT, InputError
from .evaluate import Options, run_eval, split_paths
from .measures import DEFAULTS, REGISTRY, trec
from .ndeval import NdevalOptions, run_ndeval
from .report import ndeval as ndeval_report
from .report import trec as trec_report


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


class RppGroup(click.Group):
    """The command group; turns an InputError anywhere below into one line and exit 2."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InputError as err:
            click.echo(f"rpp: {err}", err=True)
            ctx.exit(EXIT_BAD_INPUT)


@click.group(cls=RppGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="rpp")
def cli() -> None:
    """Preference-based evaluation of rankings: recall-paired preference (RPP) beside
    trec_eval's measures, in trec_eval's tab-separated layout."""


@cli.command("eval")
@click.argument("qrels", metavar="[QRELS]")
@click.argument("runs", nargs=-1, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to compute; repeatable. trec_eval syntax works (P.5,10, "
                   f"ndcg_cut.10, official). Default: {' '.join(DEFAULTS)}.")
@click.option("-q", "--per-query", is_flag=True, help="Also print per-query values.")
@click.option("-n", "--no-summary", is_flag=True, help="Do not print the 'all' lines.")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals printed.")
@click.option("--subtopics", metavar="FILE",
              help="Subtopic qrels (qid subtopic docno grade): adds st-rpp, st-dcgrpp, "
                   "st-invrpp and ndeval's ERR-IA@20 alpha-nDCG@20 MAP-IA strec@20 to the "
                   "defaults. QRELS may then be '-' or omitted (grade = largest over subtopics).")
@input_options
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool,
                 no_summary: bool, precision: int, subtopics: str | None, level: float | None,
                 corpus_size: int | None, dedup: bool) -> None:
    """Evaluate RUN files against QRELS: RPP matrices and win rates for every pair of runs,
    and per-run baselines (pytrec_eval). Files may be gzipped; '-' reads stdin.

    \b
    Output (tab-separated, value last):
      rpp                   \tall\trunA\trunB\t0.0953
      map                   \tall\trunA\t0.1785
    """
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics)
    ctx = run_eval(qrels_path, run_paths, list(measures) or None,
                   Options(level, corpus_size, dedup, subtopics), per_query, notes)
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


@cli.command("ndeval")
@click.argument("qrels", metavar="QRELS")
@click.argument("run", metavar="RUN")
@click.option("-alpha", "alpha", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="Redundancy: a subtopic's gain decays by (1 - alpha) with each repeat.")
@click.option("-beta", "beta", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              help="NRBP patience.")
@click.option("-c", "all_topics", is_flag=True,
              help="amean divides by the number of topics in QRELS.")
@click.option("-M", "max_docs", type=click.IntRange(min=1), metavar="N",
              help="Evaluate only the first N items of each topic.")
@click.option("-traditional", "traditional", is_flag=True,
              help="Order by score, then docno descending (default: by the rank column).")
@click.option("-a", "_ignored", is_flag=True, hidden=True)  # ndeval accepts -a and ignores it
def ndeval_command(qrels: str, run: str, alpha: float, beta: float, all_topics: bool,
                   max_docs: int | None, traditional: bool, _ignored: bool) -> None:
    """ndeval (TREC Web track, v4.5) for one RUN: the same CSV of ERR-IA, alpha-nDCG,
    NRBP, MAP-IA, P-IA and strec per topic and amean. QRELS is subtopic qrels
    (topic subtopic docno grade). Where ndeval prints -nan, rpp prints 0 (note on stderr)."""
    notes: list[str] = []
    results = run_ndeval(qrels, run, NdevalOptions(alpha, beta, traditional, max_docs,
                                                   all_topics), notes)
    _notes(notes)
    ndeval_report.write(results, sys.stdout)


def main() -> None:
    """Entry point: the CLI, quiet when stdout is a closed pipe (``rpp eval ... | head``)."""
    try:
        cli.main(prog_name="rpp")
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that is silent too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)

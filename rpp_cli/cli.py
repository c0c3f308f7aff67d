"""The command line: click options in, one library call, Results out to a report format.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place.
"""
from __future__ import annotations

import os
import sys
from typing import Callable

import click

from . import __version__
from .errors import InputError
from .aggregate import ORDERINGS, add_orderings
from .evaluate import Options, lower_is_better, run_eval
from .meta import ANALYSES, MetaOptions, plan_meta
from .report import table as table_report
from .stats import CORRECTIONS, DEFAULT_SEED, TESTS, run_compare
from .measures import DEFAULTS, REGISTRY, trec
from .parallel import default_jobs
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
    fn = click.option("-j", "--jobs", type=click.IntRange(min=1), default=default_jobs(),
                      show_default=True,
                      help="Worker processes for per-run work (baseline metrics).")(fn)
    fn = click.option("-l", "--level", type=float, metavar="L",
                      help="Relevance level: grade >= L is relevant (default: grade > 0).")(fn)
    return fn


class RppGroup(click.Group):
    """The command group; turns an InputError anywhere below into one line and its exit code
    (2 unless the error says otherwise)."""

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except InputError as err:
            click.echo(f"rpp: {err}", err=True)
            ctx.exit(err.exit_code)


@click.group(cls=RppGroup, context_settings={"help_option_names": ["-h", "--help"]})
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
@click.option("--orderings", is_flag=True,
              help="Also print system orderings: M_win_rank, M_borda(_rank), M_mc4(_rank) "
                   "per preference measure, M_rank per metric (1 = best, ties by run name).")
@input_options
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool,
                 no_summary: bool, precision: int, orderings: bool, level: float | None,
                 corpus_size: int | None, dedup: bool, jobs: int) -> None:
    """Evaluate RUN files against QRELS: RPP matrices and win rates for every pair of runs,
    and per-run baselines (pytrec_eval). Files may be gzipped; '-' reads stdin.

    \b
    Output (tab-separated, value last):
      rpp                   \tall\trunA\trunB\t0.0953
      map                   \tall\trunA\t0.1785
    """
    notes: list[str] = []
    ctx = run_eval(qrels, list(runs), list(measures) or None,
                   Options(level, corpus_size, dedup, jobs), per_query, notes)
    if orderings:
        add_orderings(ctx.results, ctx.tensors, ctx.metrics, lower_is_better(measures))
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


def _number_list(kind: type) -> Callable:
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


def view_option(fn):
    """``--view``: SPEC §7 lines (default) or aligned tables for people."""
    return click.option("--view", type=click.Choice(["trec", "human"]), default="trec",
                        show_default=True,
                        help="trec: SPEC lines, value last; human: aligned tables.")(fn)


@cli.command("compare")
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to test; repeatable (default: as rpp eval).")
@click.option("--test", type=click.Choice(TESTS), default="randomization", show_default=True,
              help="Paired t-test, paired randomization (sign flips) or randomized Tukey HSD.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Level for the '*' of --view human.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="none",
              show_default=True,
              help="Adjust p-values over the run pairs of each measure.")
@click.option("--permutations", type=click.IntRange(min=1), default=10000, show_default=True,
              help="Random sign flips / label permutations.")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="Seed of the random permutations.")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals printed.")
@view_option
@input_options
def compare_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], test: str,
                    alpha: float, correction: str, permutations: int, seed: int,
                    precision: int, view: str, level: float | None, corpus_size: int | None,
                    dedup: bool, jobs: int) -> None:
    """Test every pair of RUN files for a significant difference on every measure.

    \b
    Per ordered pair (a, b) and measure M: the mean effect (M: mean RPP(a, b) for a
    preference measure; M_diff: mean of m(a) - m(b) for a metric) and its p-value M_p:
      rpp                   \tall\trunA\trunB\t0.0953
      rpp_p                 \tall\trunA\trunB\t0.0021
    """
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {alpha:g})")
    notes: list[str] = []
    results = run_compare(qrels, list(runs), list(measures) or None,
                          Options(level, corpus_size, dedup, jobs), test, correction, permutations,
                          seed, notes)
    _notes(notes)
    if view == "human":
        legend = (f"* p < {alpha:g} ({test}" +
                  (f", {correction} correction)" if correction != "none" else ")"))
        table_report.write(results, sys.stdout, precision,
                           table_report.significance_marks(results, alpha), legend)
    else:
        trec_report.write(results, sys.stdout, precision)


@cli.command("meta")
@click.argument("qrels", metavar="QRELS")
@click.argument("runs", nargs=-1, required=True, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to study; repeatable (default: as rpp eval).")
@click.option("--analysis", "analyses", default=",".join(ANALYSES), show_default=True,
              help="Comma-separated analyses to run.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Significance level of discriminative power.")
@click.option("--permutations", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Label permutations of the randomized Tukey HSD.")
@click.option("--samples", type=click.IntRange(min=1), default=1000, show_default=True,
              help="Random query subsets (robustness) and split halves (predictive).")
@click.option("--query-counts", callback=_number_list(int), metavar="K,K,...",
              help="Robustness grid of query-subset sizes (default: 10%, 25%, 50%, 75% "
                   "of the queries).")
@click.option("--judged-fractions", callback=_number_list(float), metavar="F,F,...",
              help="Also robustness to keeping a fraction F of each query's relevant "
                   "judgments (re-evaluates every measure per sample: slow).")
@click.option("--judged-samples", type=click.IntRange(min=1), default=10, show_default=True,
              help="Draws per judged fraction.")
@click.option("--top-fraction", type=float, default=1.0, show_default=True,
              help="Predictive power among the top fraction of runs by map only.")
@click.option("--ordering", type=click.Choice(ORDERINGS), default="mc4", show_default=True,
              help="System ordering of preference measures (metrics: by mean).")
@click.option("--seed", type=int, default=DEFAULT_SEED, show_default=True,
              help="Seed of every random draw.")
@click.option("--precision", type=click.IntRange(0, 17), default=4, show_default=True,
              help="Decimals printed.")
@view_option
@input_options
def meta_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], analyses: str,
                 alpha: float, permutations: int, samples: int,
                 query_counts: tuple[int, ...] | None, judged_fractions: tuple[float, ...] | None,
                 judged_samples: int, top_fraction: float, ordering: str, seed: int,
                 precision: int, view: str, level: float | None, corpus_size: int | None,
                 dedup: bool, jobs: int) -> None:
    """How well does each measure tell RUN files apart, agree with the others, survive fewer
    queries or judgments and predict itself on unseen queries? (Lines: measure as run.)

    \b
      power_ttest           \tall\trpp\t0.6000
      agreement_tau         \tall\trpp\tmap\t0.8667
      robust_queries_12     \tall\trpp\t0.9120
      predictive_tau        \tall\trpp\tmap\t0.7733
    """
    notes: list[str] = []
    opts = MetaOptions(tuple(a.strip() for a in analyses.split(",") if a.strip()), alpha,
                       permutations, samples, query_counts, judged_fractions or (),
                       judged_samples, top_fraction, ordering, seed)
    meta = plan_meta(qrels, list(runs), list(measures) or None,
                     Options(level, corpus_size, dedup, jobs), opts, notes)
    _notes(notes)
    notes.clear()
    jobs = meta.jobs()
    if sys.stderr.isatty():
        with click.progressbar(jobs, label="rpp meta", file=sys.stderr) as bar:
            for job in bar:
                job()
    else:
        for job in jobs:
            job()
    _notes(notes)
    if view == "human":
        table_report.write(meta.results, sys.stdout, precision)
    else:
        trec_report.write(meta.results, sys.stdout, precision)


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
    """Entry point: the CLI, quiet when stdout is a closed pipe (``rpp eval ... | head``)."""
    try:
        cli.main(prog_name="rpp")
    except BrokenPipeError:
        # Python flushes stdout again at exit; point it at /dev/null so that is silent too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)

"""``rpp ndeval`` and ``rpp trec-eval``: drop-ins that read and print what ndeval and trec_eval do,
exit codes included."""
from __future__ import annotations

import sys

import click

from ..errors import NDEVAL_ERROR, TREC_EVAL_USAGE, InputError
from ..io.identity import check_files
from ..options import FILE, Decimal, Digits, finite, print_notes, quiet_option
from ..settings import TREC_EVAL_RELEASES, TREC_EVAL_VARIABLE, trec_eval_release
from ..tasks import ndeval as ndeval_task
from ..tasks import trec_eval as trec_eval_task
from ..tasks.ndeval import writer as ndeval_writer
from ..tasks.trec_eval import writer as trec_eval_writer


class _ExitOneCommand(click.Command):
    """A drop-in for trec_eval or ndeval: usage errors exit 1, as theirs do (click's exit 2)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            err.exit_code = TREC_EVAL_USAGE  # ndeval's usage errors exit 1 too
            raise


@click.command("ndeval", cls=_ExitOneCommand)
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("run", type=FILE, metavar="RUN")
@click.option("-alpha", "alpha", type=Decimal(0, 1), default=0.5, show_default=True,
              callback=finite,
              help="Redundancy: a subtopic's gain decays by (1 - alpha) with each repeat.")
@click.option("-beta", "beta", type=Decimal(0, 1), default=0.5, show_default=True,
              callback=finite,
              help="NRBP patience.")
@click.option("-c", "all_topics", is_flag=True,
              help="amean divides by the number of topics in QRELS.")
@click.option("-M", "max_docs", type=Digits(1, (1 << 31) - 1), metavar="N",
              help="Evaluate only the first N items of each topic. Default: all.")
@click.option("-traditional", "traditional", is_flag=True,
              help="Order by score, then docno descending (default: by the rank column).")
@click.option("-a", "_ignored", is_flag=True, hidden=True)  # ndeval accepts -a and ignores it
@quiet_option
def ndeval_command(qrels: str, run: str, alpha: float, beta: float, all_topics: bool,
                   max_docs: int | None, traditional: bool, _ignored: bool) -> None:
    """ndeval (TREC Web track, v4.5) for one RUN: the same CSV of ERR-IA, alpha-nDCG,
    NRBP, MAP-IA, P-IA and strec per topic and amean. QRELS is subtopic qrels
    (topic subtopic docno grade). Where ndeval prints -nan for a topic, rpp prints 0 (note on
    stderr), and the amean counts that 0."""
    try:
        check_files([qrels, run])
        outcome = ndeval_task.run(qrels, run, ndeval_task.NdevalOptions(
            alpha, beta, traditional, max_docs, all_topics))
    except InputError as err:
        err.exit_code = NDEVAL_ERROR
        raise
    print_notes(outcome.notes)
    ndeval_writer.write(outcome.results, sys.stdout)


@click.command("trec-eval", cls=_ExitOneCommand)
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("run", type=FILE, metavar="RUN")
@click.option("-q", "--query_eval_wanted", "per_query", is_flag=True,
              help="Also print the measures of each query.")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE[.PARAMS]",
              help="Measure or nickname (official, all_trec, set), trec_eval syntax "
                   "(P.5,10); repeatable. Default: official.")
@click.option("-c", "--complete_rel_info_wanted", "complete", is_flag=True,
              help="Average over every qrels query; queries without results count 0.")
@click.option("-l", "--level_for_rel", "level", type=Digits(-(1 << 31), (1 << 31) - 1),
              default=1, show_default=True,
              metavar="N", help="A doc is relevant when its grade is >= N.")
@click.option("-n", "--nosummary", "no_summary", is_flag=True,
              help="Do not print the summary ('all') lines.")
@click.option("-J", "--Judged_docs_only", "judged_only", is_flag=True,
              help="Drop retrieved docs that are not judged before evaluating.")
@click.option("-M", "--Max_retrieved_per_topic", "max_retrieved",
              type=Digits(0, (1 << 31) - 1),
              metavar="N", help="Evaluate only the top N docs of each query (by score; "
                   "default: all).")
@click.option("-N", "--Number_docs_in_coll", "num_docs", type=Digits(0, 1 << 53),
              default=0, metavar="N",
              help="Documents in the collection (only utility's 4th coefficient reads it).")
@click.option("--compat", "compat", type=click.Choice(TREC_EVAL_RELEASES),
              envvar=TREC_EVAL_VARIABLE, show_envvar=True, metavar="RELEASE",
              help=f"The trec_eval release to be: {' or '.join(TREC_EVAL_RELEASES)}. Default: "
                   f"{TREC_EVAL_RELEASES[0]}.")
def trec_eval_command(qrels: str, run: str, per_query: bool, measures: tuple[str, ...],
                      complete: bool, level: int, no_summary: bool, judged_only: bool,
                      max_retrieved: int | None, num_docs: int, compat: str | None) -> None:
    """trec_eval 10.0 for one RUN, byte for byte (9.0.8 with --compat 9.0.8), computed by
    pytrec_eval and, for what 10.0 added or changed, by rpp. Exit codes as trec_eval's: 1
    usage or unknown measure, 2 bad file or parameter, 4 duplicate docno or (10.0, without -c)
    a qrels query the run lacks, 7 (9.0.8) no query with both results and judgments."""
    opts = trec_eval_task.TrecEvalOptions(measures, per_query, not no_summary, complete, level,
                                          max_retrieved, judged_only, num_docs,
                                          trec_eval_release(compat))
    check_files([qrels, run])
    outcome = trec_eval_task.run(qrels, run, opts)
    print_notes(outcome.notes)
    trec_eval_writer.write(trec_eval_task.TrecEvalOutput(outcome.results,
                                                         outcome.extras["texts"]),
                           sys.stdout.buffer)
    if outcome.extras["stop"] is not None:  # trec_eval 10.0 printed the lines before it too
        raise outcome.extras["stop"]

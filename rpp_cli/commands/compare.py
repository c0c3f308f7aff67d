"""``rpp compare``: effects and significance of every pair of runs."""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..errors import InputError
from ..io.identity import check_files
from ..options import (Decimal, Digits, check_view, collection_arguments, input_options,
                       output_options, permutation_options, print_notes, quiet_option,
                       subtopics_option, view_option)
from ..pipeline import split_paths
from ..report import paper as paper_report
from ..report import table as table_report
from ..report import write as write_report
from ..settings import Options
from ..stats import CORRECTIONS, DEFAULT_RESAMPLES, INTERVALS, MAX_DRAWS, TESTS
from ..tasks import Outcome
from ..tasks import compare as compare_task
from ..pipeline import query_counts
from ..tasks.eval import lower_is_better

PAPER_CI = ("interval", "dagger")


@click.command("compare")
@collection_arguments("Measure to test; repeatable (default: as rpp eval).")
@click.option("--test", type=click.Choice(TESTS), default="randomization", show_default=True,
              metavar="TEST", help=f"Paired test: {', '.join(TESTS)}.")
@click.option("--alpha", type=Decimal(), default=0.05, show_default=True,
              help="Level of --view's '*' and letters.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="none",
              show_default=True, metavar="C",
              help=f"Of p-values over run pairs: {', '.join(CORRECTIONS)}.")
@permutation_options("Random sign flips / label permutations.")
@click.option("--ci", type=Decimal(), metavar="LEVEL",
              help="Also intervals and effect sizes (default: none).")
@click.option("--interval", type=click.Choice(INTERVALS), default="t", show_default=True,
              metavar="I", help=f"Interval of --ci: {', '.join(INTERVALS)}.")
@click.option("--resamples", type=Digits(1, MAX_DRAWS), default=DEFAULT_RESAMPLES,
              show_default=True, help="Bootstrap resamples of --interval percentile|bca.")
@click.option("--paper-ci", "paper_ci", type=click.Choice(PAPER_CI), metavar="HOW",
              help="--ci in --view paper: brackets (interval, the default) or a dagger.")
@output_options
@view_option("trec", "human", "paper")
@subtopics_option
@input_options
@quiet_option
def compare_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], test: str,
                    alpha: float, correction: str, permutations: int, seed: int,
                    ci: float | None, interval: str, resamples: int, paper_ci: str | None,
                    fmt: str, precision: int, view: str, subtopics: str | None,
                    options: Options) -> None:
    """Test every pair of RUN files for a significant difference on every measure.

    \b
    Per ordered pair (a, b) and measure M: the mean effect (M: mean RPP(a, b) for a
    preference measure; M_diff: mean of m(a) - m(b) for a metric) and its p-value M_p:
      rpp                   \tall\trunA\trunB\t0.0953
      rpp_p                 \tall\trunA\trunB\t0.0021
    """
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {alpha:g})")
    check_view(view, fmt)
    if paper_ci and (ci is None or view != "paper"):
        raise InputError("--paper-ci needs --ci LEVEL and --view paper")
    request = compare_task.CompareRequest(measures, test, correction, permutations, seed, ci,
                                          interval, resamples)
    request.check()
    check_files([qrels, *runs, subtopics])
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics, notes)
    outcome = compare_task.run(qrels_path, run_paths, request,
                               replace(options, subtopics=subtopics))
    results = outcome.results
    print_notes(notes + outcome.notes)
    if view == "paper":
        _paper(outcome, request, measures, alpha, paper_ci, fmt, precision)
    elif view == "human":
        legend = (f"* p < {alpha:g} ({test}" +
                  (f", {correction} correction)" if correction != "none" else ")"))
        if ci is not None:
            legend += (f"; M_ci_low, M_ci_high: {100 * ci:g}% "
                       f"{paper_report.INTERVAL_NAMES[interval]}; M_d: Hedges' g_z")
        table_report.write(results, sys.stdout, precision,
                           table_report.significance_marks(results, alpha), legend)
    else:
        write_report(results, fmt, sys.stdout, precision)


def _paper(outcome: Outcome, request: compare_task.CompareRequest, measures: tuple[str, ...],
           alpha: float, paper_ci: str | None, fmt: str, precision: int) -> None:
    """``--view paper``: the table, with --ci each value's interval (or the daggers of
    --paper-ci dagger) and a caption sentence saying what they are."""
    results, ctx, tested = outcome.results, outcome.extras["context"], outcome.extras["tested"]
    lower = lower_is_better(measures)
    columns = [paper_report.Column(name, f"{name}_win" if pref else name,
                                   name if pref else f"{name}_diff", f"{name}_p",
                                   name in lower, f"{name}_ci_low", f"{name}_ci_high")
               for name, pref in tested]
    run_names, table = paper_report.cells(ctx.results, results, columns, alpha)
    sizes = sorted(set(query_counts(ctx, tested)))
    test, correction = request.test, request.correction
    if correction in ("bh", "by"):  # named in full, as the caption names the test
        names = paper_report.TEST_NAMES[test], paper_report.CORRECTION_NAMES[correction]
        test, correction = f"{names[0]}, {names[1]} correction", "none"
    text = paper_report.caption(sizes or [len(ctx.collection.qids)], test, correction, alpha)
    extras = None
    if request.ci is not None:
        shown = paper_ci or "interval"
        if shown == "dagger":
            marks = paper_report.daggers(run_names, results, columns)
            extras = [[(mark, None) for mark in row] for row in marks]
        else:
            ends = compare_task.run_intervals(ctx, tested, request)
            extras = [[(False, (float(ends[c.name][0][r]), float(ends[c.name][1][r])))
                       for c in columns] for r in range(len(run_names))]
        text += " " + paper_report.interval_caption(shown, request.interval, request.ci)
    render = paper_report.latex if fmt == "latex" else paper_report.markdown
    sys.stdout.write(render(run_names, table, columns, precision, text, extras))

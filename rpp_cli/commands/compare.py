"""``rpp compare``: effects and significance of every pair of runs."""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..errors import InputError
from ..io.identity import check_files
from ..options import (Decimal, check_view, collection_arguments, input_options,
                       output_options, permutation_options, print_notes, quiet_option,
                       subtopics_option, view_option)
from ..pipeline import split_paths
from ..report import paper as paper_report
from ..report import table as table_report
from ..report import write as write_report
from ..settings import Options
from ..stats import CORRECTIONS, TESTS
from ..tasks import compare as compare_task
from ..pipeline import query_counts
from ..tasks.eval import lower_is_better


@click.command("compare")
@collection_arguments("Measure to test; repeatable (default: as rpp eval).")
@click.option("--test", type=click.Choice(TESTS), default="randomization", show_default=True,
              help="Paired t-test, paired randomization (sign flips) or randomized Tukey HSD.")
@click.option("--alpha", type=Decimal(), default=0.05, show_default=True,
              help="Significance level: the '*' of --view human, the letters and the caption of "
                   "--view paper.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="none",
              show_default=True,
              help="Adjust p-values over the run pairs of each measure.")
@permutation_options("Random sign flips / label permutations.")
@output_options
@view_option("trec", "human", "paper")
@subtopics_option
@input_options
@quiet_option
def compare_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], test: str,
                    alpha: float, correction: str, permutations: int, seed: int,
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
    check_files([qrels, *runs, subtopics])
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics, notes)
    outcome = compare_task.run(qrels_path, run_paths,
                               compare_task.CompareRequest(measures, test, correction,
                                                           permutations, seed),
                               replace(options, subtopics=subtopics))
    results, ctx, tested = outcome.results, outcome.extras["context"], outcome.extras["tested"]
    print_notes(notes + outcome.notes)
    if view == "paper":
        lower = lower_is_better(measures)
        columns = [paper_report.Column(name, f"{name}_win" if pref else name,
                                       name if pref else f"{name}_diff", f"{name}_p",
                                       name in lower) for name, pref in tested]
        run_names, table = paper_report.cells(ctx.results, results, columns, alpha)
        sizes = sorted(set(query_counts(ctx, tested)))
        text = paper_report.caption(sizes or [len(ctx.collection.qids)], test, correction,
                                    alpha)
        render = paper_report.latex if fmt == "latex" else paper_report.markdown
        sys.stdout.write(render(run_names, table, columns, precision, text))
    elif view == "human":
        legend = (f"* p < {alpha:g} ({test}" +
                  (f", {correction} correction)" if correction != "none" else ")"))
        table_report.write(results, sys.stdout, precision,
                           table_report.significance_marks(results, alpha), legend)
    else:
        write_report(results, fmt, sys.stdout, precision)

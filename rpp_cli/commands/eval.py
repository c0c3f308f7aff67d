"""``rpp eval``: RPP matrices, win rates and per-run measures of RUN files."""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..errors import InputError
from ..io.identity import check_files
from ..measures import DEFAULTS, PREFERENCE, REGISTRY
from ..options import (collection_arguments, input_options, output_options, print_notes,
                       quiet_option, subtopics_option)
from ..pipeline import default_measures, split_paths
from ..report import plot
from ..report import write as write_report
from ..settings import Options
from ..tasks import eval as eval_task


@click.command("eval")
@collection_arguments("Measure to compute; repeatable. trec_eval syntax works (P.5,10, "
                      f"ndcg_cut.10, official); 'rpp measures' lists them. "
                      f"Default: {' '.join(DEFAULTS)}.")
@click.option("-q", "--per-query", is_flag=True, help="Also print per-query values.")
@click.option("-n", "--no-summary", is_flag=True, help="Do not print the 'all' lines.")
@output_options
@click.option("--orderings", is_flag=True,
              help="Also print system orderings: M_win_rank, M_borda(_rank), M_mc4(_rank) "
                   "per preference measure, M_rank per metric (1 = best; tied runs share "
                   "the mean of their positions).")
@subtopics_option
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png|pdf|svg",
              help="Also draw the aggregate preference matrix as a heatmap, runs ordered "
                   "by win rate (needs matplotlib: pip install matplotlib). "
                   "Default: no plot.")
@click.option("--plot-measure", metavar="NAME",
              help="Preference measure drawn by --plot. Default: the first one computed.")
@input_options
@quiet_option
def eval_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], per_query: bool,
                 no_summary: bool, fmt: str, precision: int, orderings: bool,
                 subtopics: str | None, plot_path: str | None, plot_measure: str | None,
                 options: Options) -> None:
    """Evaluate RUN files against QRELS: RPP matrices and win rates for every pair of runs,
    and per-run baselines (pytrec_eval). Files may be gzipped; '-' reads stdin.

    \b
    Output (tab-separated, value last):
      rpp                   \tall\trunA\trunB\t0.0953
      map                   \tall\trunA\t0.1785
    """
    if plot_measure and not plot_path:
        raise InputError("--plot-measure needs --plot FILE.png")
    if plot_measure:  # checked before any file is read
        asked = default_measures(list(measures), subtopics)
        choices = [n for n in asked if n in REGISTRY and REGISTRY[n].kind == PREFERENCE]
        if plot_measure not in choices:
            raise InputError(f"--plot-measure {plot_measure}: not a preference measure of this "
                             f"evaluation (choose from {', '.join(choices) or 'none: add -m rpp'})")
    check_files([qrels, *runs, subtopics], {"the plot": plot_path})
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics, notes)
    outcome = eval_task.run(qrels_path, run_paths,
                            eval_task.EvalRequest(measures, per_query, orderings),
                            replace(options, subtopics=subtopics))
    print_notes(notes + outcome.notes)
    if plot_path:
        print_notes(plot.preference_heatmap(outcome.results, plot_path, plot_measure))
    write_report(outcome.results, fmt, sys.stdout, precision, summary=not no_summary)


@click.command("measures")
def measures_command() -> None:
    """List every measure that -m accepts.

    One tab-separated line each, fields unpadded (for awk -F'\\t' and cut; rpp eval pads
    its measure field as trec_eval does): name, kind
    (preference: one value per pair of runs; metric: one per run; set: a name for several
    measures), family, what it measures (with its parameters).
    """
    from ..measures.ir_measures import spelling

    lines = []
    for m in REGISTRY.values():
        params = f"; parameters: {m.parameters}" if m.parameters else ""
        alias = spelling(m.name) if m.trec is not None else None
        params += f"; ir_measures: {alias}" if alias else ""
        lines.append(f"{m.name}\t{m.kind}\t{m.family}\t{m.description}{params}\n")
    click.echo("".join(lines), nl=False)

"""``rpp meta``: how sure one can be of each measure (power, agreement, robustness)."""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..io.identity import check_files
from ..options import (Decimal, Digits, check_view, collection_arguments, input_options,
                       number_list, output_options, print_notes, quiet_option, seed_option,
                       subtopics_option, view_option)
from ..orderings import ORDERINGS
from ..pipeline import split_paths
from ..report import plot
from ..report import table as table_report
from ..report import write as write_report
from ..settings import Options
from ..stats import MAX_DRAWS
from ..tasks import meta as meta_task
from ..tasks.meta import (DEFAULT_ANALYSES, JUDGED_POLICIES, MetaOptions, MetaRequest,
                          require_analyses)


@click.command("meta")
@collection_arguments("Measure to study (default: as rpp eval).")
@click.option("--analysis", "analyses", default=",".join(DEFAULT_ANALYSES), metavar="A,A,...",
              show_default=False,
              help=f"Analyses (default: {', '.join(DEFAULT_ANALYSES)}; also widths).")
@click.option("--alpha", type=Decimal(), default=0.05, show_default=True,
              help="Level of discriminative power.")
@click.option("--permutations", type=Digits(1, MAX_DRAWS), default=10_000,
              show_default=True, help="Permutations of Tukey's HSD.")
@click.option("--samples", type=Digits(1, MAX_DRAWS), default=1000, show_default=True,
              help="Query subsets and split halves.")
@click.option("--query-counts", callback=number_list(int), metavar="K,K,...",
              help="Robustness query counts (default: 10-75%).")
@click.option("--judged-fractions", callback=number_list(float), metavar="F,F,...",
              help="Robustness to fewer judgments (default: none).")
@click.option("--judged-samples", type=Digits(1, 1_000_000), default=10,
              show_default=True, help="Draws per judged fraction.")
@click.option("--judged-policy", type=click.Choice(JUDGED_POLICIES), default="random",
              show_default=True, metavar="P",
              help=f"{' or '.join(JUDGED_POLICIES)}.")
@click.option("--top-fraction", type=Decimal(), default=0.75, show_default=True,
              help="Top runs of predictive power.")
@click.option("--ordering", type=click.Choice([*ORDERINGS, "all"]), default="mc4",
              show_default=True, metavar="O",
              help=f"{', '.join(ORDERINGS)} or all.")
@seed_option("Seed of every random draw.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE",
              help="Draw a panel per analysis (default: none).")
@output_options
@view_option("trec", "human")
@subtopics_option
@input_options
@quiet_option
def meta_command(qrels: str, runs: tuple[str, ...], measures: tuple[str, ...], analyses: str,
                 alpha: float, permutations: int, samples: int,
                 query_counts: tuple[int, ...] | None, judged_fractions: tuple[float, ...] | None,
                 judged_samples: int, judged_policy: str, top_fraction: float, ordering: str,
                 seed: int,
                 plot_path: str | None, fmt: str, precision: int, view: str,
                 subtopics: str | None, options: Options) -> None:
    """How well does each measure tell RUN files apart, agree with the others, survive fewer
    queries or judgments and predict itself on unseen queries? (Lines: measure as run.)

    \b
      power_ttest           \tall\trpp\t0.6000
      agreement_tau         \tall\trpp\tmap\t0.8667
    """
    check_view(view, fmt)
    check_files([qrels, *runs, subtopics], {"the plot": plot_path})
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    opts = MetaOptions(analyses, alpha, permutations, samples, query_counts,
                       judged_fractions or (), judged_samples, top_fraction, ordering, seed,
                       judged_policy)
    require_analyses(opts)
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics, notes)
    study = meta_task.plan(qrels_path, run_paths, MetaRequest(measures, opts),
                           replace(options, subtopics=subtopics))
    planned = len(study.notes)
    print_notes(notes + study.notes)  # before the long part
    outcome = meta_task.execute(study)
    print_notes(outcome.notes[planned:])
    if plot_path:
        print_notes(plot.robustness_curves(outcome.results, plot_path,
                                           outcome.extras["scatter"],
                                           outcome.extras["differences"]))
    if view == "human":
        table_report.write(outcome.results, sys.stdout, precision)
    else:
        write_report(outcome.results, fmt, sys.stdout, precision)

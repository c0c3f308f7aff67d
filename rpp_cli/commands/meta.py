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
@collection_arguments("Measure to study; repeatable (default: as rpp eval).")
@click.option("--analysis", "analyses", default=",".join(DEFAULT_ANALYSES), show_default=True,
              help="Comma-separated analyses to run; also widths: the mean t-interval "
                   "width of a pair's mean difference on the robustness grid's query "
                   "counts.")
@click.option("--alpha", type=Decimal(), default=0.05, show_default=True,
              help="Significance level of discriminative power.")
@click.option("--permutations", type=Digits(1, MAX_DRAWS), default=10_000,
              show_default=True,
              help="Label permutations of the randomized Tukey HSD.")
@click.option("--samples", type=Digits(1, MAX_DRAWS), default=1000, show_default=True,
              help="Random query subsets (robustness) and split halves (predictive).")
@click.option("--query-counts", callback=number_list(int), metavar="K,K,...",
              help="Robustness grid of query-subset sizes (default: 10%, 25%, 50%, 75% "
                   "of the queries).")
@click.option("--judged-fractions", callback=number_list(float), metavar="F,F,...",
              help="Also robustness to keeping a fraction F of each query's relevant "
                   "judgments (re-evaluates every measure per sample: slow). Default: not "
                   "done.")
@click.option("--judged-samples", type=Digits(1, 1_000_000), default=10,
              show_default=True,
              help="Draws per judged fraction.")
@click.option("--judged-policy", type=click.Choice(JUDGED_POLICIES), default="random",
              show_default=True,
              help="Which relevant judgments a fraction keeps: a random sample, or those a "
                   "shallow pool of the runs reaches first (best rank over the runs).")
@click.option("--top-fraction", type=Decimal(), default=0.75, show_default=True,
              help="Predictive power among the top fraction of runs by map (Webber et al.).")
@click.option("--ordering", type=click.Choice([*ORDERINGS, "all"]), default="mc4",
              show_default=True,
              help="System ordering of preference measures (metrics: by mean); all: study "
                   "each ordering of M as M:win, M:borda, M:mc4.")
@seed_option("Seed of every random draw.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png|pdf|svg",
              help="Also draw one panel per analysis computed (needs matplotlib). Default: no "
                   "plot.")
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
      robust_queries_12     \tall\trpp\t0.9120
      predictive_tau        \tall\trpp\tmap\t0.7733
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

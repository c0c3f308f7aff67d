"""``rpp levels``: why RPP prefers one run, level by level."""
from __future__ import annotations

import sys
from dataclasses import replace

import click

from ..io.identity import check_files
from ..options import FILE, Digits, input_options, once, print_notes, quiet_option
from ..pipeline import split_paths
from ..report import levels as levels_report
from ..report import plot
from ..settings import Options
from ..tasks import levels as levels_task


@click.command("levels")
@click.argument("paths", nargs=-1, type=FILE, metavar="QRELS RUN_A RUN_B")
@click.option("--subtopics", type=FILE, metavar="FILE",
              help="Subtopic qrels: ST-RPP's populations (one per subtopic, labelled by its "
                   "id, plus '*', all relevant items) instead of the graded ones. QRELS may "
                   "then be '-' or omitted, as in rpp eval. Default: none.")
@click.option("-n", "--no-summary", is_flag=True,
              help="Do not print the 'all' lines (shares of levels where each run is ahead).")
@click.option("--format", "fmt", type=click.Choice(levels_report.FORMATS), default="trec",
              help="trec: tab-separated lines, value last; jsonl: one JSON object a line; "
                   "csv: with a header row. (The run x run tables have nothing to show here.)")
@click.option("--precision", type=Digits(0, 17), default=4, metavar="N",
              help="Decimals of the shares (positions and signs are integers).")
@click.option("--query", metavar="QID", multiple=True, callback=once,
              help="Only this query's levels (an evaluated query, compared byte for byte). "
                   "Default: every evaluated query.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png|pdf|svg",
              help="Also draw (needs matplotlib) the paper's Fig. 4b when the levels are one "
                   "query's (--query): f_i(RUN_B) - f_i(RUN_A) against the recall level i, per "
                   "population; over several queries, the ECDF of those differences pooled "
                   "over every query, population and level. Default: no plot.")
@input_options
@quiet_option
def levels_command(paths: tuple[str, ...], subtopics: str | None, no_summary: bool, fmt: str,
                   precision: int, query: str | None, plot_path: str | None,
                   options: Options) -> None:
    """Why RPP prefers one run: for every query, population and recall level i, the
    worst-case positions f_i of RUN_A and RUN_B (as RPP sees them) and the sign of
    f_i(B) - f_i(A): 1 when A places its i-th member higher, -1 when B does.

    \b
      levels                \t201\tmonot5\tbm25\t>=1\t2\t2\t18\t1
      levels_ahead          \tall\tmonot5\tbm25\t>=1\t0.7363
      levels_ahead          \tall\tmonot5\tbm25\t0.7848
    """
    check_files([*paths, subtopics], {"the plot": plot_path})
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    qrels_path, run_paths = split_paths(list(paths), subtopics, notes)
    outcome = levels_task.run(qrels_path, run_paths, levels_task.LevelsRequest(query),
                              replace(options, subtopics=subtopics))
    levels = outcome.extras["levels"]
    print_notes(notes + outcome.notes)
    if plot_path:
        print_notes(levels_task.plot(levels, plot_path))
    levels_report.write(levels_task.rows(levels, summary=not no_summary), fmt, sys.stdout,
                        precision)

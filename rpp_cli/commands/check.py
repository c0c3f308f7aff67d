"""``rpp check``: a CI gate on runs; the exit status says pass or fail."""
from __future__ import annotations

import os
import sys

import click

from ..errors import EXIT_CHECK_FAILED
from ..io.identity import check_files
from ..options import (FILE, Decimal, input_options, once, output_options, permutation_options,
                       print_notes, quiet_option)
from ..report import write as write_report
from ..report.files import append_whole, check_writable
from ..settings import Options
from ..tasks import check as check_task

SUMMARY_FILE = "$GITHUB_STEP_SUMMARY"


@click.command("check")
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("candidates", nargs=-1, required=True, type=FILE, metavar="CANDIDATE...")
@click.option("--baseline", required=True, type=FILE, metavar="RUN", multiple=True,
              callback=once,
              help="The run every candidate is checked against (required: no default).")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to test; repeatable. Default: rpp.")
@click.option("--test", type=click.Choice(check_task.GATE_TESTS), default="randomization",
              show_default=True, help="Paired randomization (sign flips) or paired t-test.")
@click.option("--alpha", type=Decimal(), default=0.05, show_default=True,
              help="A candidate fails when significantly worse at this level.")
@click.option("--max-drop", "max_drops", multiple=True, metavar="MEASURE=DELTA",
              help="Also fail when the metric's mean drops by more than DELTA "
                   "(e.g. map=0.01); repeatable. Default: none.")
@click.option("--confidence", type=Decimal(), metavar="LEVEL",
              help="Make each --max-drop a non-inferiority test: fail unless the one-sided "
                   "upper t bound of the drop at this level (e.g. 0.95) is below DELTA. "
                   "Default: the drop itself is compared with DELTA.")
@permutation_options("Random sign flips of the randomization test.")
@output_options
@input_options
@quiet_option
def check_command(qrels: str, candidates: tuple[str, ...], baseline: str,
                  measures: tuple[str, ...], test: str, alpha: float, max_drops: tuple[str, ...],
                  confidence: float | None, permutations: int, seed: int, fmt: str,
                  precision: int, options: Options) -> None:
    """Regression gate: exit 0 when no CANDIDATE is significantly worse than the baseline
    (and no --max-drop is exceeded), 1 otherwise, 2 on bad input.

    \b
    One verdict line per candidate and gate on stderr:
      PASS\tnew-ranker\trpp\teffect +0.0412, p 0.0310 (randomization, alpha 0.05)
    Evidence on stdout (effect = mean RPP(candidate, baseline); p-value):
      rpp                   \tall\tnew-ranker\told-ranker\t0.0412
      rpp_p                 \tall\tnew-ranker\told-ranker\t0.0310
    """
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")  # GitHub Actions shows it on the run
    check_files([qrels, baseline, *candidates], {SUMMARY_FILE: step_summary})
    if step_summary:
        check_writable(step_summary, SUMMARY_FILE, append=True)
    outcome = check_task.run(qrels, list(candidates),
                             check_task.CheckRequest(baseline, measures, test, alpha, max_drops,
                                                     permutations, seed, precision, confidence),
                             options)
    results, verdicts = outcome.results, outcome.extras["verdicts"]
    print_notes(outcome.notes)  # every note before the first verdict line
    summary = check_task.markdown_summary(verdicts, results.runs[0])  # run 0 is the baseline
    if fmt == "markdown":  # the verdicts, for a pull request; the evidence is in the other formats
        sys.stdout.write(summary)
    else:
        write_report(results, fmt, sys.stdout, precision,
                     verdicts=check_task.machine_verdicts(verdicts, 0,
                                                          [qrels, baseline, *candidates]))
    sys.stdout.flush()
    for verdict in verdicts:
        click.echo(verdict.line(), err=True)
    if step_summary:
        append_whole(step_summary, summary + "\n", SUMMARY_FILE)
    if not all(v.passed for v in verdicts):
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)

"""The command line: click options in, one library call, Results out to a report format.

Every InputError becomes ``rpp: message`` on stderr and exit status 2 here, in one place.
"""
from __future__ import annotations

import functools
import math
import os
import signal
import sys
from contextlib import contextmanager
from dataclasses import replace
from typing import Callable, Iterator

import click

from . import __version__, allocator, engine
from .errors import InputError, shown
from .aggregate import ORDERINGS, add_orderings
from .evaluate import Options, default_measures, lower_is_better, run_eval, split_paths
from .measures import DEFAULTS, PREFERENCE, REGISTRY
from .metaeval import ANALYSES, JUDGED_POLICIES, MetaOptions, plan_meta
from .progress import show_bars
from .streams import guard_stderr
from .report import FORMATS, discard_stdout, plot
from .report import table as table_report
from .report.files import append_whole, check_writable
from .report import write as write_report
from .check import GATE_TESTS, machine_verdicts, markdown_summary, parse_max_drops, run_check
from .errors import EXIT_BAD_INPUT, EXIT_CHECK_FAILED
from .stats import CORRECTIONS, DEFAULT_SEED, MAX_SEED, TESTS, compare_runs, query_counts
from .io.runs import NAME_SOURCES
from .ndeval import NDEVAL_EXIT_ERROR, NdevalOptions, run_ndeval
from .parallel import default_jobs
from . import trec_eval as trec_eval_flow
from . import levels as levels_flow
from .report import ndeval as ndeval_report
from .report import paper as paper_report
from .report import trec_eval as trec_eval_report

EXIT_CLOSED_PIPE = 128 + 13  # what a shell reports for a writer killed by SIGPIPE
EXIT_INTERRUPTED = 128 + 2  # ... and for one stopped by Ctrl-C (SIGINT)
EXIT_INTERNAL = 70  # a bug (sysexits' EX_SOFTWARE): never 0, nor 1, a failed check


FILE = click.Path(readable=False)
"""An input file: completes as a file name in the shell; the readers open it (and say what is
wrong with it in rpp's one-line form), so click checks nothing."""


def _notes(notes: list[str]) -> None:
    """Notes on stderr, one line each, unless --quiet."""
    if click.get_current_context().meta.get(QUIET):
        return
    for note in notes:
        click.echo(f"rpp: note: {shown(note)}", err=True)


QUIET = "rpp.quiet"  # ctx.meta key: --quiet given to rpp or to the command


def _quiet(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``-Q``: no notes and no progress bars for this command. rpp's own option sets the
    default of every run (so an earlier in-process run leaves nothing behind); the command's
    can only add quiet."""
    if value or param.name == "group_quiet":
        ctx.meta[QUIET] = value
        show_bars(not value)


def quiet_option(fn):
    """``-Q, --quiet`` on a command, as on rpp itself."""
    return click.option("-Q", "--quiet", is_flag=True, expose_value=False, callback=_quiet,
                        help="No notes and no progress bars on stderr; errors stay (and rpp "
                             "check's verdicts).")(fn)


def input_options(fn):
    """Options every evaluating command shares (relevance level, corpus size, duplicates,
    -j and --dask, run names, -M); the command receives them as one ``options: Options``."""
    @functools.wraps(fn)
    def command(*args, level, corpus_size, dedup, jobs, dask, names, names_from, max_docs,
                **kwargs):
        with engine.session(jobs, dask):
            return fn(*args, options=Options(level, corpus_size, dedup, jobs, names=names,
                                              max_docs=max_docs, names_from=names_from),
                      **kwargs)

    command = click.option("-M", "--max-docs", "max_docs", type=click.IntRange(1, 1 << 40),
                           metavar="K",
                           help="Keep each run's top K documents per query, as trec_eval -M "
                                "and pref_eval --topk (default: all).")(command)
    command = click.option("--names-from", "names_from", type=click.Choice(NAME_SOURCES),
                           default="file",
                           help="What names a run: its file name less .gz ('-' for stdin), or "
                                "its tag (6th field of its first line).")(command)
    command = click.option("--name", "names", multiple=True, metavar="NAME",
                           help="Name of a run, once per RUN in the same order (default: "
                                "--names-from).")(command)
    command = click.option("--dedup", is_flag=True,
                           help="Keep the best-scored copy of a docno repeated within a query "
                                "(default: it is an error, as in trec_eval).")(command)
    command = click.option("--corpus-size", type=click.IntRange(1, MAX_CORPUS_SIZE), metavar="N",
                           help="Corpus size n for unretrieved items (default: distinct items "
                                "in the runs' rankings and relevant items of the query, paper "
                                "§5.5).")(command)
    command = click.option("--dask", metavar="ADDRESS",
                           help="Run the shards of work on a Dask cluster: a scheduler's "
                                "address (tcp://host:8786) or local[:N] for a LocalCluster "
                                "of N processes (needs pip install 'rpp-cli[dask]'; see "
                                "docs/scaling.md). Default: $RPP_DASK, else this machine "
                                "(-j).")(command)
    command = click.option("-j", "--jobs", type=click.IntRange(1, 256), default=default_jobs(),
                           show_default=True, metavar="N",
                           help="Threads that read and join runs, and worker processes "
                                "that evaluate shards of queries (default: the cores, at "
                                "most 4).")(command)
    command = click.option("-l", "--level", type=float, metavar="L",
                           help="Relevance level: grade >= L is relevant (default: grade > "
                                "0).")(command)
    return command


def subtopics_option(fn):
    """``--subtopics FILE`` for the commands that evaluate runs (eval, compare, meta)."""
    return click.option("--subtopics", type=FILE, metavar="FILE",
                        help="Subtopic qrels (qid subtopic docno grade): adds st-rpp, st-dcgrpp, "
                             "st-invrpp and ndeval's ERR-IA@20 alpha-nDCG@20 MAP-IA strec@20 "
                             "to the defaults. QRELS may then be '-' or omitted (grade = "
                             "largest over subtopics). Default: none.")(fn)


MAX_CORPUS_SIZE = 1 << 40  # positions are int64 sums of at most 2^40 per item: no overflow


def output_options(fn):
    """``--format`` and ``--precision``, for every command that prints a Results table; the
    command then ends with ``write_report(results, fmt, sys.stdout, precision)``."""
    fn = click.option("--precision", type=click.IntRange(0, 17), default=4, metavar="N",
                      help="Decimals printed, the same in every format.")(fn)
    fn = click.option("--format", "fmt", type=click.Choice(FORMATS), default="trec",
                      help="trec: tab-separated lines, value last; jsonl: one JSON "
                           "object a line; csv: with a header row; matrix: aligned tables "
                           "(run x run per preference measure, run x measure); markdown, "
                           "latex: the same tables for papers.")(fn)
    return fn


def _versions() -> str:
    """The versions a bug report needs: Python, numpy, pytrec_eval."""
    from importlib.metadata import PackageNotFoundError, version

    import numpy

    try:
        pytrec = version("pytrec-eval-terrier")
    except PackageNotFoundError:
        pytrec = "?"
    return (f"python {sys.version.split()[0]}, numpy {numpy.__version__}, "
            f"pytrec_eval {pytrec}")


class _ClosedPipe(Exception):
    """The reader of our output went away (``| head``)."""


@contextmanager
def _closed_pipe_guard() -> Iterator[None]:
    """BrokenPipeError -> _ClosedPipe, which click's own handler (exit 1, the status of a
    failed check) does not catch, so that :func:`main` decides."""
    try:
        yield
    except BrokenPipeError as err:
        raise _ClosedPipe() from err


class RppGroup(click.Group):
    """The command group: an InputError anywhere below becomes one line and its exit code (2
    unless the error says otherwise); a closed pipe while parsing (``--help``, ``--version``) or running reaches :func:`main`."""

    def make_context(self, *args, **kwargs) -> click.Context:
        with _closed_pipe_guard():
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context):
        with _closed_pipe_guard():
            try:
                return super().invoke(ctx)
            except InputError as err:
                click.echo(f"rpp: {shown(str(err))}", err=True)
                ctx.exit(err.exit_code)


@click.group(cls=RppGroup,
             context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.version_option(__version__, "-V", "--version", prog_name="rpp",
                      message=f"%(prog)s %(version)s ({_versions()})")
@click.option("-Q", "--quiet", "group_quiet", is_flag=True, expose_value=False,
              callback=_quiet, help="No notes and no progress bars on stderr for the command "
                                    "(the same as its own -Q); errors stay.")
def cli() -> None:
    """Preference-based evaluation of rankings: recall-paired preference (RPP) beside
    trec_eval's measures, in trec_eval's tab-separated layout.

    Every command reads gzipped or plain files, '-' for stdin; results go to stdout, notes
    to stderr. 'rpp COMMAND --help' lists a command's options.
    """


@cli.command("eval")
@click.argument("qrels", type=FILE, metavar="[QRELS]")
@click.argument("runs", nargs=-1, type=FILE, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to compute; repeatable. trec_eval syntax works (P.5,10, "
                   f"ndcg_cut.10, official); 'rpp measures' lists them. "
                   f"Default: {' '.join(DEFAULTS)}.")
@click.option("-q", "--per-query", is_flag=True, help="Also print per-query values.")
@click.option("-n", "--no-summary", is_flag=True, help="Do not print the 'all' lines.")
@output_options
@click.option("--orderings", is_flag=True,
              help="Also print system orderings: M_win_rank, M_borda(_rank), M_mc4(_rank) "
                   "per preference measure, M_rank per metric (1 = best, ties by run name).")
@subtopics_option
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png|pdf|svg",
              help="Also draw the aggregate preference matrix as a heatmap, runs ordered "
                   "by win rate (needs matplotlib: pip install 'rpp-cli[plot]'). "
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
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics)
    ctx = run_eval(qrels_path, run_paths, list(measures) or None,
                   replace(options, subtopics=subtopics), per_query, notes)
    if orderings:
        add_orderings(ctx.results, ctx.tensors, ctx.metrics, lower_is_better(measures))
    _notes(notes)
    if plot_path:
        plot.preference_heatmap(ctx.results, plot_path, plot_measure)
    write_report(ctx.results, fmt, sys.stdout, precision, summary=not no_summary)


@cli.command("measures")
def measures_command() -> None:
    """List every measure that -m accepts.

    One tab-separated line each: name, kind (preference: one value per pair of runs; metric:
    one per run; set: a name for several measures), family, what it measures, parameters.
    """
    from .measures.ir_measures import spelling

    lines = []
    for m in REGISTRY.values():
        params = f"; parameters: {m.parameters}" if m.parameters else ""
        alias = spelling(m.name) if m.trec is not None else None
        params += f"; ir_measures: {alias}, (rel=N) for a level" if alias else ""
        lines.append(f"{m.name:<22}\t{m.kind:<10}\t{m.family:<13}\t{m.description}{params}\n")
    click.echo("".join(lines), nl=False)


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


def seed_option(what: str) -> Callable:
    """``--seed``: a whole number from 0 to 2^63 - 1 (numpy's generators take no negative
    seed), checked by click before any work."""
    return click.option("--seed", type=click.IntRange(0, MAX_SEED), default=DEFAULT_SEED,
                        show_default=True, metavar="N", help=what)


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """A click callback refusing NaN (which passes every range check) and infinities."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(f"{value} is not a finite number")
    return value


def permutation_options(what: str) -> Callable:
    """``--permutations`` (default 10000) and ``--seed`` of a randomized test."""
    def add(fn):
        fn = seed_option("Seed of the random draws (results are deterministic).")(fn)
        return click.option("--permutations", type=click.IntRange(1, 10_000_000), default=10000,
                            show_default=True, help=what)(fn)
    return add


def view_option(fn):
    """``--view``: contract §7 lines (default) or aligned tables for people."""
    return click.option("--view", type=click.Choice(VIEWS), default="trec",
                        show_default=True,
                        help="human: aligned tables for people instead of --format; "
                             "trec: as --format says; paper (compare): one row per run with "
                             "the best in bold and significance letters, in --format latex "
                             "or markdown.")(fn)


VIEWS = ("trec", "human", "paper")


@cli.command("compare")
@click.argument("qrels", type=FILE, metavar="[QRELS]")
@click.argument("runs", nargs=-1, type=FILE, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to test; repeatable (default: as rpp eval).")
@click.option("--test", type=click.Choice(TESTS), default="randomization", show_default=True,
              help="Paired t-test, paired randomization (sign flips) or randomized Tukey HSD.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Level for the '*' of --view human.")
@click.option("--correction", type=click.Choice(CORRECTIONS), default="none",
              show_default=True,
              help="Adjust p-values over the run pairs of each measure.")
@permutation_options("Random sign flips / label permutations.")
@output_options
@view_option
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
    if view == "paper" and fmt not in ("latex", "markdown"):
        raise InputError("--view paper needs --format latex or markdown")
    notes: list[str] = []
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics)
    results, ctx, tested = compare_runs(qrels_path, run_paths, list(measures) or None,
                                        replace(options, subtopics=subtopics), test, correction,
                                        permutations, seed, notes)
    _notes(notes)
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


SUMMARY_FILE = "$GITHUB_STEP_SUMMARY"


@cli.command("check")
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("candidates", nargs=-1, required=True, type=FILE, metavar="CANDIDATE...")
@click.option("--baseline", required=True, type=FILE, metavar="RUN",
              help="The run every candidate is checked against (required: no default).")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to test; repeatable. Default: rpp.")
@click.option("--test", type=click.Choice(GATE_TESTS), default="randomization",
              show_default=True, help="Paired randomization (sign flips) or paired t-test.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="A candidate fails when significantly worse at this level.")
@click.option("--max-drop", "max_drops", multiple=True, metavar="MEASURE=DELTA",
              help="Also fail when the metric's mean drops by more than DELTA "
                   "(e.g. map=0.01); repeatable. Default: none.")
@permutation_options("Random sign flips of the randomization test.")
@output_options
@input_options
@quiet_option
def check_command(qrels: str, candidates: tuple[str, ...], baseline: str,
                  measures: tuple[str, ...], test: str, alpha: float, max_drops: tuple[str, ...],
                  permutations: int, seed: int, fmt: str, precision: int,
                  options: Options) -> None:
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
    if step_summary:
        check_writable(step_summary, SUMMARY_FILE, append=True)
    notes: list[str] = []
    results, verdicts = run_check(qrels, baseline, list(candidates), list(measures) or None,
                                  options, test, alpha,
                                  parse_max_drops(max_drops), permutations, seed, notes)
    _notes(notes)
    summary = markdown_summary(verdicts, results.runs[0])  # run 0 is the baseline
    if fmt == "markdown":  # the verdicts, for a pull request; the evidence is in the other formats
        sys.stdout.write(summary)
    else:
        write_report(results, fmt, sys.stdout, precision, verdicts=machine_verdicts(verdicts))
    sys.stdout.flush()
    for verdict in verdicts:
        click.echo(verdict.line(), err=True)
    if step_summary:
        append_whole(step_summary, summary + "\n", SUMMARY_FILE)
    if not all(v.passed for v in verdicts):
        raise click.exceptions.Exit(EXIT_CHECK_FAILED)


@cli.command("meta")
@click.argument("qrels", type=FILE, metavar="[QRELS]")
@click.argument("runs", nargs=-1, type=FILE, metavar="RUN...")
@click.option("-m", "--measure", "measures", multiple=True, metavar="NAME",
              help="Measure to study; repeatable (default: as rpp eval).")
@click.option("--analysis", "analyses", default=",".join(ANALYSES), show_default=True,
              help="Comma-separated analyses to run.")
@click.option("--alpha", type=float, default=0.05, show_default=True,
              help="Significance level of discriminative power.")
@click.option("--permutations", type=click.IntRange(1, 10_000_000), default=10_000,
              show_default=True,
              help="Label permutations of the randomized Tukey HSD.")
@click.option("--samples", type=click.IntRange(1, 10_000_000), default=1000, show_default=True,
              help="Random query subsets (robustness) and split halves (predictive).")
@click.option("--query-counts", callback=_number_list(int), metavar="K,K,...",
              help="Robustness grid of query-subset sizes (default: 10%, 25%, 50%, 75% "
                   "of the queries).")
@click.option("--judged-fractions", callback=_number_list(float), metavar="F,F,...",
              help="Also robustness to keeping a fraction F of each query's relevant "
                   "judgments (re-evaluates every measure per sample: slow). Default: not "
                   "done.")
@click.option("--judged-samples", type=click.IntRange(1, 1_000_000), default=10,
              show_default=True,
              help="Draws per judged fraction.")
@click.option("--judged-policy", type=click.Choice(JUDGED_POLICIES), default="random",
              show_default=True,
              help="Which relevant judgments a fraction keeps: a random sample, or those a "
                   "shallow pool of the runs reaches first (best rank over the runs).")
@click.option("--top-fraction", type=float, default=0.75, show_default=True,
              help="Predictive power among the top fraction of runs by map (Webber et al.).")
@click.option("--ordering", type=click.Choice([*ORDERINGS, "all"]), default="mc4",
              show_default=True,
              help="System ordering of preference measures (metrics: by mean); all: study "
                   "each ordering of M as M:win, M:borda, M:mc4.")
@seed_option("Seed of every random draw.")
@click.option("--plot", "plot_path", type=click.Path(dir_okay=False), metavar="FILE.png|pdf|svg",
              help="Also draw the robustness curves (needs matplotlib). Default: no plot.")
@output_options
@view_option
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
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    opts = MetaOptions(tuple(a.strip() for a in analyses.split(",") if a.strip()), alpha,
                       permutations, samples, query_counts, judged_fractions or (),
                       judged_samples, top_fraction, ordering, seed, judged_policy)
    qrels_path, run_paths = split_paths([qrels, *runs], subtopics)
    meta = plan_meta(qrels_path, run_paths, list(measures) or None,
                     replace(options, subtopics=subtopics), opts, notes)
    _notes(notes)
    notes.clear()
    meta.run()
    _notes(notes)
    if plot_path:
        plot.robustness_curves(meta.results, plot_path, meta.scatter, meta.differences)
    if view == "human":
        table_report.write(meta.results, sys.stdout, precision)
    else:
        write_report(meta.results, fmt, sys.stdout, precision)


def _closed_pipe() -> None:
    """A write outside the report writers hit a closed pipe: exit quietly as a writer killed
    by SIGPIPE does (status 141: under ``set -o pipefail`` never taken for a success)."""
    discard_stdout()
    sys.exit(EXIT_CLOSED_PIPE)


class _ExitOneCommand(click.Command):
    """A drop-in for trec_eval or ndeval: usage errors exit 1, as theirs do (click's exit 2)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as err:
            err.exit_code = trec_eval_flow.EXIT_USAGE  # ndeval's usage errors exit 1 too
            raise


@cli.command("ndeval", cls=_ExitOneCommand)
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("run", type=FILE, metavar="RUN")
@click.option("-alpha", "alpha", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              callback=_finite,
              help="Redundancy: a subtopic's gain decays by (1 - alpha) with each repeat.")
@click.option("-beta", "beta", type=click.FloatRange(0, 1), default=0.5, show_default=True,
              callback=_finite,
              help="NRBP patience.")
@click.option("-c", "all_topics", is_flag=True,
              help="amean divides by the number of topics in QRELS.")
@click.option("-M", "max_docs", type=click.IntRange(1, (1 << 31) - 1), metavar="N",
              help="Evaluate only the first N items of each topic. Default: all.")
@click.option("-traditional", "traditional", is_flag=True,
              help="Order by score, then docno descending (default: by the rank column).")
@click.option("-a", "_ignored", is_flag=True, hidden=True)  # ndeval accepts -a and ignores it
@quiet_option
def ndeval_command(qrels: str, run: str, alpha: float, beta: float, all_topics: bool,
                   max_docs: int | None, traditional: bool, _ignored: bool) -> None:
    """ndeval (TREC Web track, v4.5) for one RUN: the same CSV of ERR-IA, alpha-nDCG,
    NRBP, MAP-IA, P-IA and strec per topic and amean. QRELS is subtopic qrels
    (topic subtopic docno grade). Where ndeval prints -nan, rpp prints 0 (note on stderr)."""
    notes: list[str] = []
    try:
        results = run_ndeval(qrels, run, NdevalOptions(alpha, beta, traditional, max_docs,
                                                       all_topics), notes)
    except InputError as err:
        err.exit_code = NDEVAL_EXIT_ERROR
        raise
    _notes(notes)
    ndeval_report.write(results, sys.stdout)


@cli.command("trec-eval", cls=_ExitOneCommand)
@click.argument("qrels", type=FILE, metavar="QRELS")
@click.argument("run", type=FILE, metavar="RUN")
@click.option("-q", "--query_eval_wanted", "per_query", is_flag=True,
              help="Also print the measures of each query.")
@click.option("-m", "--measure", "measures", multiple=True, metavar="MEASURE[.PARAMS]",
              help="Measure or nickname (official, all_trec, set), trec_eval syntax "
                   "(P.5,10); repeatable. Default: official.")
@click.option("-c", "--complete_rel_info_wanted", "complete", is_flag=True,
              help="Average over every qrels query; queries without results count 0.")
@click.option("-l", "--level_for_rel", "level", type=click.IntRange(-(1 << 31), (1 << 31) - 1),
              default=1, show_default=True,
              metavar="N", help="A doc is relevant when its grade is >= N.")
@click.option("-n", "--nosummary", "no_summary", is_flag=True,
              help="Do not print the summary ('all') lines.")
@click.option("-J", "--Judged_docs_only", "judged_only", is_flag=True,
              help="Drop retrieved docs that are not judged before evaluating.")
@click.option("-M", "--Max_retrieved_per_topic", "max_retrieved",
              type=click.IntRange(0, (1 << 31) - 1),
              metavar="N", help="Evaluate only the top N docs of each query (by score; "
                   "default: all).")
@click.option("-N", "--Number_docs_in_coll", "num_docs", type=click.IntRange(0, 1 << 53),
              default=0, metavar="N",
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


@cli.command("levels")
@click.argument("paths", nargs=-1, type=FILE, metavar="QRELS RUN_A RUN_B")
@click.option("--subtopics", type=FILE, metavar="FILE",
              help="Subtopic qrels: ST-RPP's populations (one per subtopic, labelled by its "
                   "id, plus '*', all relevant items) instead of the graded ones. QRELS may "
                   "then be '-' or omitted, as in rpp eval. Default: none.")
@click.option("-n", "--no-summary", is_flag=True,
              help="Do not print the 'all' lines (shares of levels where each run is ahead).")
@click.option("--format", "fmt", type=click.Choice(levels_flow.FORMATS), default="trec",
              help="trec: tab-separated lines, value last; jsonl: one JSON object a line; "
                   "csv: with a header row. (The run x run tables have nothing to show here.)")
@click.option("--precision", type=click.IntRange(0, 17), default=4, metavar="N",
              help="Decimals of the shares (positions and signs are integers).")
@click.option("--query", metavar="QID",
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
    if plot_path:
        plot.check(plot_path)
    notes: list[str] = []
    qrels_path, run_paths = split_paths(list(paths), subtopics)
    levels = levels_flow.compute_levels(qrels_path, run_paths,
                                        replace(options, subtopics=subtopics), notes, query)
    _notes(notes)
    if plot_path:
        levels_flow.plot(levels, plot_path)
    levels_flow.write(levels, fmt, sys.stdout, precision, summary=not no_summary)


class _Interrupted(BaseException):
    """Ctrl-C: raised by our SIGINT handler, so that click does not turn it into "Aborted!"."""


def _interrupt(signum, frame) -> None:
    raise _Interrupted()


def main() -> None:
    """Entry point: the CLI, with output that is complete or reported as not.

    Every write is checked: stdout is flushed and closed before exiting, as coreutils do, and
    a failed write (a full disk, a closed descriptor) is one line and status 2, never 0 or 1.
    Ctrl-C ends with 130 and a closed pipe (``rpp eval ... | head``) quietly with 141.
    stderr is a courtesy: when it is closed or fails, notes are dropped and nothing else changes.
    """
    signal.signal(signal.SIGINT, _interrupt)
    allocator.tune()
    guard_stderr()  # stderr closed or failing: notes are lost, results and status are not
    if sys.stdout is None:  # started with stdout closed (>&-)
        _cannot_write("standard output is closed")
    _bytes_out()
    status: int | str | None = 0
    try:
        cli.main(prog_name="rpp")
    except SystemExit as done:
        status = done.code
    except _ClosedPipe:
        _closed_pipe()
    except _Interrupted:
        discard_stdout()
        os._exit(EXIT_INTERRUPTED)  # no waiting for anything: threads are daemons
    except OSError as err:  # readers turn theirs into InputError: this is output
        _cannot_write(err.strerror or str(err))
    except Exception:  # a bug: say so, and never exit 0 or 1 (a failed check) for it
        import traceback

        traceback.print_exc()
        sys.stderr.write("rpp: internal error: this is a bug; please report it with the lines "
                         "above and the output of rpp --version\n")
        sys.stderr.flush()
        os._exit(EXIT_INTERNAL)
    try:
        sys.stdout.flush()
        if sys.stdout is sys.__stdout__:  # the process's own stdout: errors can come at close
            sys.stdout.close()
    except BrokenPipeError:
        _closed_pipe()
    except OSError as err:
        _cannot_write(err.strerror or str(err))
    sys.exit(status)


def _bytes_out() -> None:
    """stdout writes UTF-8 whatever the locale or PYTHONIOENCODING say, and the bytes of an id
    that are not UTF-8 as themselves: trec text carries ids byte for byte as trec_eval does,
    the other formats are valid UTF-8 (report/escape.py), and no id can fail to encode."""
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        reconfigure(encoding="utf-8", errors="surrogateescape")


def _cannot_write(why: str) -> None:
    """Output was lost: say so on stderr and exit 2 (never 0, nor 1, a failed check)."""
    try:
        sys.stderr.write(f"rpp: cannot write output: {why}\n")
        sys.stderr.flush()
    except (OSError, AttributeError):
        pass
    if sys.stdout is not None:
        discard_stdout()
    os._exit(EXIT_BAD_INPUT)

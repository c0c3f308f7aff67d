"""The Python API, for notebooks and scripts: the commands as functions over paths or
in-memory dicts, returning the one Results table (``.records()``, ``.to_pandas()``).

    import rpp_cli
    qrels = {"q1": {"d1": 1, "d2": 0}}
    runs = {"bm25": {"q1": {"d1": 1.2, "d2": 3.4}}, "dense": {"q1": {"d1": 9.0}}}
    rpp_cli.evaluate(qrels, runs, measures=["rpp", "map"]).records()

Dicts are the ranx / pytrec_eval shapes: qrels ``{qid: {docno: grade}}``, a run
``{qid: {docno: score}}``, several runs ``{name: run}``. pandas DataFrames are ir_measures' and
ranx's: columns ``query_id`` (or ``q_id``), ``doc_id`` and ``relevance`` (qrels; ranx's
``score`` too) or ``score`` (a run); other columns are ignored. Both are written to TREC text in
memory (:mod:`.api_inputs`) and read by the same reader as files, so every rule and every error
is the command line's; an id holding whitespace, which no file can hold, is an error.
"""
from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager

from .api_inputs import as_given, inputs, made, qrels_source as _qrels_source, run_sources
from .engine import default_jobs, session
from .errors import InputError
from .io.runs import NAME_SOURCES
from .report.levels import FIELDS as LEVEL_FIELDS
from .results import Results
from .settings import Options, trec_eval_release
from .stats import DEFAULT_RESAMPLES, DEFAULT_SEED
from .tasks import Outcome
from .tasks import compare as compare_task
from .tasks import eval as eval_task
from .tasks import levels as levels_task
from .tasks import meta as meta_task
from .tasks.meta import MetaOptions, MetaRequest, require_analyses


def _measure_names(measures) -> list[str] | None:
    """``measures`` as a list of names: one name (``"map"``) is one measure, not letters."""
    if measures is None:
        return None
    if isinstance(measures, str):
        return [measures]
    names = list(measures)
    if not all(isinstance(m, str) for m in names):
        raise InputError(f"measures: expected a name or a list of names (got {measures!r})")
    return names or None


def _options(level, corpus_size, dedup, jobs, names, subtopics, max_docs,
             names_from, trec_eval=None, binary=False) -> Options:
    """The command line's Options from the API's keyword arguments, checked as it checks them."""
    if names_from not in NAME_SOURCES:
        raise InputError(f"names_from: expected one of {', '.join(NAME_SOURCES)} "
                         f"(got {names_from!r})")
    if subtopics is not None and not isinstance(subtopics, (str, os.PathLike)):
        raise InputError("subtopics: expected the path of subtopic qrels")
    for what, value in (("max_docs", max_docs), ("corpus_size", corpus_size), ("jobs", jobs)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise InputError(f"{what}: expected a positive integer (got {value!r})")
    if level is not None and (isinstance(level, bool) or not isinstance(level, (int, float))):
        raise InputError(f"level: expected a number (got {level!r})")
    if isinstance(names, str) or not all(isinstance(n, str) or n is None for n in names or ()):
        raise InputError(f"names: expected a list of names, one per run (got {names!r})")
    if trec_eval is not None:
        trec_eval_release(trec_eval)  # a release rpp does not follow: its one-line error
    if not isinstance(binary, bool):
        raise InputError(f"binary: expected True or False (got {binary!r})")
    return Options(level, corpus_size, dedup, jobs or default_jobs(),
                   None if subtopics is None else str(subtopics), tuple(names or ()), max_docs,
                   names_from, trec_eval, binary)


@contextmanager
def _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
          names_from, trec_eval=None, binary=False) -> Iterator[tuple[list[str], Options]]:
    """One API call's runs and command-line Options, checked, with its in-memory inputs
    (:func:`_inputs`) and its engine (``jobs``) for the time of the call."""
    with inputs():
        paths, given = run_sources(runs)
        options = _options(level, corpus_size, dedup, jobs, names or given, subtopics,
                           max_docs, names_from, trec_eval, binary)
        with session(options.jobs):
            yield paths, options


class RppNote(UserWarning):
    """A note the command line prints on stderr (a judged query a run lacks, a level no
    judgment reaches), issued as a Python warning when the call gives no ``notes`` list."""


def _noted(task: Callable[[], Outcome], notes: list[str] | None) -> Outcome:
    """``task()``'s Outcome; its notes, those of a failed task too (``err.notes``, see
    :func:`.tasks.noting`), appended to the caller's ``notes``, or issued as RppNote
    warnings when it gives none (a notebook shows them; ``warnings`` filters them). An
    in-memory input whose text cannot be made fails the call with no note, as when every
    text was made before the task began (:func:`.api_inputs.made`)."""
    try:
        outcome = task()
    except Exception as err:
        made()
        _tell(getattr(err, "notes", ()), notes)
        raise
    made()
    _tell(outcome.notes, notes)
    return outcome


def _tell(said: Iterable[str], notes: list[str] | None) -> None:
    """Notes to the caller's list, else as RppNote warnings; in-memory inputs named as given."""
    said = [as_given(note) for note in said]
    if notes is not None:
        notes.extend(said)
        return
    for note in said:
        warnings.warn(note, RppNote, stacklevel=4)


def evaluate(qrels, runs, measures: Sequence[str] | str | None = None,
             per_query: bool = False, *,
             level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
             jobs: int | None = None, names: Sequence[str] | None = None,
             names_from: str = "file", subtopics=None, max_docs: int | None = None,
             trec_eval: str | None = None,
             binary: bool = False,
             notes: list[str] | None = None) -> Results:
    """``rpp eval``: every measure (default: rpp's defaults) for every run and pair of runs.
    ``qrels``: a path, a dict or a DataFrame; ``runs``: paths, a run dict, a DataFrame or
    ``{name: run}``; ``subtopics``:
    the path of subtopic qrels; ``max_docs``: each run's top K per query (``-M K``). A run is
    named as on the command line (``names``: --name; ``names_from``: ``"file"`` or ``"tag"``),
    an in-memory run by its key (``run<i>`` in a list); ``binary``: a query's relevant items
    are one population, as pref_eval reads graded qrels (``--binary``).
    Notes the command line prints on stderr are appended to ``notes``."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, options):
        source = _qrels_source(qrels)
        request = eval_task.EvalRequest(tuple(_measure_names(measures) or ()), per_query)
        return _noted(lambda: eval_task.run(source, paths, request, options), notes).results


def compare(qrels, runs, measures: Sequence[str] | str | None = None, *,
            test: str = "randomization", correction: str = "none", permutations: int = 10000,
            seed: int = DEFAULT_SEED, ci: float | None = None, interval: str = "t",
            resamples: int = DEFAULT_RESAMPLES, level: float | None = None,
            corpus_size: int | None = None, dedup: bool = False, jobs: int | None = None,
            names: Sequence[str] | None = None, names_from: str = "file", subtopics=None,
            max_docs: int | None = None, trec_eval: str | None = None,
            binary: bool = False,
            notes: list[str] | None = None) -> Results:
    """``rpp compare``: the mean effect and p-value of every pair of runs on every measure;
    with ``ci`` (a level, 0.95) the interval rows and effect sizes too, by ``interval`` (t,
    percentile or bca; ``resamples`` bootstrap draws). The input arguments are
    :func:`evaluate`'s."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, options):
        source = _qrels_source(qrels)
        request = compare_task.CompareRequest(tuple(_measure_names(measures) or ()), test,
                                              correction, permutations, seed, ci, interval,
                                              resamples)
        return _noted(lambda: compare_task.run(source, paths, request, options), notes).results


def meta(qrels, runs, measures: Sequence[str] | str | None = None, *,
         options: MetaOptions | None = None, level: float | None = None,
         corpus_size: int | None = None, dedup: bool = False, jobs: int | None = None,
         names: Sequence[str] | None = None, names_from: str = "file", subtopics=None,
         max_docs: int | None = None,
         trec_eval: str | None = None,
         binary: bool = False,
         notes: list[str] | None = None) -> Results:
    """``rpp meta``: discriminative power, agreement, robustness and predictive power of the
    measures (``options``: the analyses and their settings, rpp meta's defaults if None)."""
    options = options or MetaOptions()
    require_analyses(options)
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, inputs):
        source = _qrels_source(qrels)
        request = MetaRequest(tuple(_measure_names(measures) or ()), options)
        return _noted(lambda: meta_task.run(source, paths, request, inputs), notes).results


def levels(qrels, runs, *, query: str | None = None, summary: bool = True,
           level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
           jobs: int | None = None, names: Sequence[str] | None = None,
           names_from: str = "file", subtopics=None, max_docs: int | None = None,
           binary: bool = False,
           notes: list[str] | None = None) -> list[dict]:
    """``rpp levels``: for the two ``runs`` (RUN_A, RUN_B), every query's, population's and
    recall level's worst-case positions and the sign of f_i(B) - f_i(A) (with ``summary``, the
    shares of levels where each run is ahead), as dicts keyed as the jsonl lines are
    (measure, qid, run, other, population, level, run_position, other_position, value)."""
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, binary=binary) as (paths, options):
        source = _qrels_source(qrels)
        request = levels_task.LevelsRequest(query)
        found = _noted(lambda: levels_task.run(source, paths, request, options), notes)
        return [dict(zip(LEVEL_FIELDS, row))
                for row in levels_task.rows(found.extras["levels"], summary)]


__all__ = ["evaluate", "compare", "meta", "levels", "Results", "MetaOptions", "InputError",
           "RppNote"]

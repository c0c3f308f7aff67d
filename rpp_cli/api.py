"""The Python API, for notebooks and scripts: the commands as functions over paths or
in-memory dicts, returning the one Results table (``.records()``, ``.to_pandas()``).

    import rpp_cli
    qrels = {"q1": {"d1": 1, "d2": 0}}
    runs = {"bm25": {"q1": {"d1": 1.2, "d2": 3.4}}, "dense": {"q1": {"d1": 9.0}}}
    rpp_cli.evaluate(qrels, runs, measures=["rpp", "map"]).records()

Dicts are the ranx / pytrec_eval shapes: qrels ``{qid: {docno: grade}}``, a run
``{qid: {docno: score}}``, several runs ``{name: run}``. They are written to TREC text in memory
and read by the same reader as files, so every rule and every error is the command line's.
"""
from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence

from .core.table import remember
from .engine import session
from .errors import InputError
from .evaluate import Options, run_eval
from .io.runs import NAME_SOURCES
from .meta import MetaOptions, plan_meta
from .parallel import default_jobs
from .results import Results
from .stats import DEFAULT_SEED, run_compare

_counter = itertools.count()


def _qrels_source(qrels) -> str:
    """A path, or the name under which in-memory qrels were put for the reader."""
    if isinstance(qrels, (str, os.PathLike)):
        return str(qrels)
    if not isinstance(qrels, Mapping):
        raise InputError("qrels: expected a path or a dict {qid: {docno: grade}}")
    text = "".join(f"{q} 0 {d} {g!r}\n" for q, docs in qrels.items() for d, g in docs.items())
    return _put("qrels", text)


def _run_sources(runs) -> tuple[list[str], tuple[str | None, ...]]:
    """Paths (or in-memory names) of the runs, and the name of each in-memory run: its key in
    ``{name: run}``, else ``run`` or ``run<i>`` (i: its place in the list); None for a path,
    which ``names_from`` names as on the command line."""
    if isinstance(runs, (str, os.PathLike)):
        return [str(runs)], (None,)
    if isinstance(runs, Mapping):
        if runs and all(isinstance(v, Mapping) and all(isinstance(x, Mapping)
                                                       for x in v.values())
                        for v in runs.values()):  # {name: {qid: {docno: score}}}
            names = tuple(str(n) for n in runs)
            return [_run_text(name, run) for name, run in runs.items()], names
        return [_run_text("run", runs)], ("run",)  # one run {qid: {docno: score}}
    if isinstance(runs, Sequence):
        named = [(str(r), None) if isinstance(r, (str, os.PathLike))
                 else (_run_text(f"run{i}", r), f"run{i}") for i, r in enumerate(runs)]
        return [path for path, _ in named], tuple(name for _, name in named)
    raise InputError("runs: expected paths, a run dict or {name: run dict}")


def _run_text(name: str, run: Mapping) -> str:
    lines = (f"{q} Q0 {d} 0 {float(s)!r} {name}\n" for q, docs in run.items()
             for d, s in docs.items())
    return _put(f"run {name}", "".join(lines))


def _put(what: str, text: str) -> str:
    """Hand ``text`` to the reader under a name no file has (``<what #n>``)."""
    name = f"<{what} #{next(_counter)}>"
    remember(name, text.encode("utf-8", "surrogateescape"))
    return name


def _options(level, corpus_size, dedup, jobs, names, subtopics, max_docs,
             names_from) -> Options:
    """The command line's Options from the API's keyword arguments, checked as it checks them."""
    if names_from not in NAME_SOURCES:
        raise InputError(f"names_from: expected one of {', '.join(NAME_SOURCES)} "
                         f"(got {names_from!r})")
    if subtopics is not None and not isinstance(subtopics, (str, os.PathLike)):
        raise InputError("subtopics: expected the path of subtopic qrels")
    if max_docs is not None and (not isinstance(max_docs, int) or max_docs < 1):
        raise InputError(f"max_docs: expected a positive integer (got {max_docs!r})")
    return Options(level, corpus_size, dedup, jobs or default_jobs(),
                   None if subtopics is None else str(subtopics), tuple(names or ()), max_docs,
                   names_from)


def evaluate(qrels, runs, measures: Sequence[str] | None = None, per_query: bool = False, *,
             level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
             jobs: int | None = None, names: Sequence[str] | None = None,
             names_from: str = "file", subtopics=None, max_docs: int | None = None,
             notes: list[str] | None = None) -> Results:
    """``rpp eval``: every measure (default: rpp's defaults) for every run and pair of runs.
    ``qrels``: a path or a dict; ``runs``: paths, a run dict or ``{name: run}``; ``subtopics``:
    the path of subtopic qrels; ``max_docs``: each run's top K per query (``-M K``). A run is
    named as on the command line (``names``: --name; ``names_from``: ``"file"`` or ``"tag"``),
    an in-memory run by its key (``run<i>`` in a list).
    Notes the command line prints on stderr are appended to ``notes``."""
    paths, given = _run_sources(runs)
    options = _options(level, corpus_size, dedup, jobs, names or given, subtopics, max_docs,
                       names_from)
    with session(options.jobs):
        return run_eval(_qrels_source(qrels), paths, list(measures) if measures else None,
                        options, per_query, notes if notes is not None else []).results


def compare(qrels, runs, measures: Sequence[str] | None = None, *, test: str = "randomization",
            correction: str = "none", permutations: int = 10000, seed: int = DEFAULT_SEED,
            level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
            jobs: int | None = None, names: Sequence[str] | None = None,
            names_from: str = "file", subtopics=None, max_docs: int | None = None,
            notes: list[str] | None = None) -> Results:
    """``rpp compare``: the mean effect and p-value of every pair of runs on every measure
    (the input arguments are :func:`evaluate`'s)."""
    paths, given = _run_sources(runs)
    options = _options(level, corpus_size, dedup, jobs, names or given, subtopics, max_docs,
                       names_from)
    with session(options.jobs):
        return run_compare(_qrels_source(qrels), paths, list(measures) if measures else None,
                           options, test, correction, permutations, seed,
                           notes if notes is not None else [])


def meta(qrels, runs, measures: Sequence[str] | None = None, *, options: MetaOptions | None = None,
         level: float | None = None, corpus_size: int | None = None, dedup: bool = False,
         jobs: int | None = None, names: Sequence[str] | None = None,
         names_from: str = "file", subtopics=None, max_docs: int | None = None,
         notes: list[str] | None = None) -> Results:
    """``rpp meta``: discriminative power, agreement, robustness and predictive power of the
    measures (``options``: the analyses and their settings, rpp meta's defaults if None)."""
    paths, given = _run_sources(runs)
    notes = notes if notes is not None else []
    inputs = _options(level, corpus_size, dedup, jobs, names or given, subtopics, max_docs,
                      names_from)
    with session(inputs.jobs):
        return plan_meta(_qrels_source(qrels), paths, list(measures) if measures else None,
                         inputs, options or MetaOptions(), notes).run()


__all__ = ["evaluate", "compare", "meta", "Results", "MetaOptions", "InputError"]

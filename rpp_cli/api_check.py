"""``rpp check`` as a function for notebooks and scripts (:func:`check`), beside the other
commands of :mod:`rpp_cli.api`, whose input handling it shares."""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from .api import _call, _measure_names, _noted, _qrels_source
from .errors import InputError
from .results import Results
from .stats import DEFAULT_SEED
from .tasks import check as check_task


@dataclass(frozen=True)
class Check:
    """What :func:`check` found: ``passed`` (the command's exit 0), one dict per candidate and
    gate in ``verdicts`` (candidate, measure, gate, passed and the verdict line's numbers),
    and the evidence rows the command prints in ``results``."""

    passed: bool
    verdicts: list[dict]
    results: Results


def check(qrels, runs, *, baseline, candidates=None, measures: Sequence[str] | str | None = None,
          test: str = "randomization", alpha: float = 0.05,
          max_drops: Mapping[str, float] | None = None, confidence: float | None = None,
          permutations: int = 10000, seed: int = DEFAULT_SEED, level: float | None = None,
          corpus_size: int | None = None, dedup: bool = False, jobs: int | None = None,
          names: Sequence[str] | None = None, names_from: str = "file", subtopics=None,
          max_docs: int | None = None, trec_eval: str | None = None,
          binary: bool = False,
          notes: list[str] | None = None) -> Check:
    """``rpp check``: each candidate against ``baseline`` (a name among ``runs``, or its path
    when ``runs`` are paths); ``candidates``: the names to check (None: every other run);
    ``max_drops``: ``{measure: delta}`` (``--max-drop``). A gate that could not fail is an
    InputError, as on the command line. The input arguments are :func:`evaluate`'s."""
    drops = tuple(f"{m}={float(d)!r}" if isinstance(d, (int, float)) and not isinstance(d, bool)
                  else f"{m}={d}" for m, d in (max_drops or {}).items())  # numpy's too
    with _call(runs, level, corpus_size, dedup, jobs, names, subtopics, max_docs,
               names_from, trec_eval, binary) as (paths, options):
        named = [*options.names, *[None] * (len(paths) - len(options.names))]
        given = [n or p for n, p in zip(named, paths)]  # a path's run: by its path here
        if baseline not in given:
            raise InputError(f"baseline {baseline!r}: not among the runs ({', '.join(given)})")
        others = [n for n in given if n != baseline] if candidates is None else \
            ([candidates] if isinstance(candidates, str) else list(candidates))
        unknown = [n for n in others if n not in given or n == baseline]
        if unknown or not others:
            raise InputError(f"candidates: {unknown[0]!r} is not a run other than the baseline"
                             if unknown else "candidates: none besides the baseline")
        order = [given.index(n) for n in (baseline, *others)]
        options = replace(options, names=tuple(named[i] for i in order))
        source = _qrels_source(qrels)
        request = check_task.CheckRequest(paths[order[0]], tuple(_measure_names(measures) or ()),
                                          test, alpha, drops, permutations, seed, 4, confidence)
        found = _noted(lambda: check_task.run(source, [paths[i] for i in order[1:]], request,
                                              options), notes)
    verdicts = found.extras["verdicts"]
    return Check(all(v.passed for v in verdicts), [v.record() for v in verdicts], found.results)

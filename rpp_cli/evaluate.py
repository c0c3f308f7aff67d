"""The main job as one function: read -> encode -> measure -> one Results table."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .collection import Collection, encode
from .errors import InputError
from .io.qrels import read_qrels
from .io.runs import name_runs, read_run
from .measures import FAMILIES, PREFERENCE, Measure, resolve
from .progress import progress
from .results import Results


@dataclass
class Context:
    """What a measure family reads (the collection, options) and writes (rows, raw arrays)."""

    collection: Collection
    results: Results
    per_query: bool = False
    tensors: dict[str, np.ndarray] = field(default_factory=dict)  # preference: (Q, R, R)
    metrics: dict[str, np.ndarray] = field(default_factory=dict)  # metric: (Q, R)


@dataclass(frozen=True)
class Options:
    """Input options shared by every command that evaluates runs."""

    level: float | None = None
    corpus_size: int | None = None
    dedup: bool = False


def load(qrels_path: str, run_paths: list[str], options: Options,
         notes: list[str]) -> Collection:
    """Read the qrels and runs and join them (SPEC §1-2)."""
    if options.level is not None and options.level <= 0:
        raise InputError(f"relevance level must be > 0 (got {options.level:g})")
    if options.corpus_size is not None and options.corpus_size < 1:
        raise InputError(f"--corpus-size must be positive (got {options.corpus_size})")
    qrels = read_qrels(qrels_path)
    runs = [read_run(p) for p in progress(run_paths, "reading runs")]
    names, name_notes = name_runs(runs)
    notes.extend(name_notes)
    return encode(qrels, runs, names, level=options.level, corpus_size=options.corpus_size,
                  dedup=options.dedup, notes=notes)


def measure(coll: Collection, measures: list[Measure], per_query: bool,
            notes: list[str]) -> Context:
    """Compute ``measures`` on ``coll``, family by family, into one Context."""
    if len(coll.run_names) < 2 and any(m.kind == PREFERENCE for m in measures):
        notes.append("preferences need two runs: only per-run measures computed")
        measures = [m for m in measures if m.kind != PREFERENCE]
    outputs = [name for m in measures for name in m.outputs]  # fixes the output order
    ctx = Context(coll, Results(coll.qids, coll.run_names, outputs), per_query)
    by_family: dict[str, list[Measure]] = {}
    for m in measures:
        by_family.setdefault(m.family, []).append(m)
    for fam, group in by_family.items():
        FAMILIES[fam](ctx, group)
    return ctx


def run_eval(qrels_path: str, run_paths: list[str], measure_names: list[str] | None,
             options: Options, per_query: bool, notes: list[str]) -> Context:
    """``rpp eval``: every selected measure for every run (and pair of runs)."""
    measures = resolve(measure_names)
    coll = load(qrels_path, run_paths, options, notes)
    return measure(coll, measures, per_query, notes)


def lower_is_better(measure_names: list[str] | tuple[str, ...] | None) -> set[str]:
    """Output names of the measures (``-m`` values) for which lower is better (e.g. asl)."""
    return {out for m in resolve(list(measure_names) or None) for out in m.outputs
            if not m.higher_is_better}

"""``rpp eval``: every selected measure for every run (and pair of runs), and with
``--orderings`` the system orderings."""
from __future__ import annotations

from dataclasses import dataclass

from ..orderings import add_orderings
from ..errors import InputError
from ..measures import PREFERENCE, resolve
from ..pipeline import default_measures, evaluate_runs
from ..settings import Options
from . import Outcome, noting


@dataclass(frozen=True)
class EvalRequest:
    """``rpp eval``'s own settings: ``-m`` (empty: the defaults), ``-q``, ``--orderings``."""

    measures: tuple[str, ...] = ()
    per_query: bool = False
    orderings: bool = False


def run(qrels: str | None, runs: list[str], request: EvalRequest, options: Options
        ) -> Outcome:
    """Evaluate ``runs`` against ``qrels``. A preference measure named with ``-m`` needs two
    runs (one run: an error, never a silent omission); the default set drops them with a
    note. ``extras["context"]``: the evaluation (its per-query arrays, the collection)."""
    with noting() as notes:
        measures = resolve(default_measures(list(request.measures) or None, options.subtopics))
        pairwise = [m.name for m in measures if m.kind == PREFERENCE]
        if request.measures and pairwise and len(runs) < 2:
            raise InputError(f"measure '{pairwise[0]}' compares runs: it needs two or more runs "
                             "(one given)")
        ctx = evaluate_runs(qrels, runs, measures, options, request.per_query, notes)
        if request.orderings:
            add_orderings(ctx.results, ctx.tensors, ctx.metrics, lower_is_better(request.measures))
        return Outcome(ctx.results, notes, {"context": ctx})


def lower_is_better(measure_names: list[str] | tuple[str, ...] | None) -> set[str]:
    """Output names of the measures (``-m`` values) for which lower is better (e.g. asl)."""
    return {out for m in resolve(list(measure_names or ()) or None) for out in m.outputs
            if not m.higher_is_better}

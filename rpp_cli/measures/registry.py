"""The registry: every measure rpp knows, by name, and every family that computes them.

A measure family is a module with a ``compute(ctx, measures)`` function named by
:func:`family`; a new measure is one function in its family plus one :func:`register` call
there. Families take these names from here, never from the package, which fills the
registry by importing them.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:
    from .trec_names import TrecRequest

PREFERENCE = "preference"  # RPP(a, b) for ordered pairs of runs
METRIC = "metric"  # one value per run
SET = "set"  # a name for several measures (trec_eval's nicknames)


@dataclass(frozen=True)
class Measure:
    """A named measure: what it is, how to compute it, which way is better, and the facts
    commands ask of it before trusting a test or a gate on it."""

    name: str
    kind: str
    family: str
    description: str
    higher_is_better: bool = True
    options: dict = field(default_factory=dict)  # settings only its family reads (discount)
    trec: TrecRequest | None = None  # for trec_eval measures
    parameters: str = ""  # what it takes and the defaults, one line (rpp measures)
    level: int | None = None  # its own relevance level (P(rel=2)@5); None: the command's -l
    shown_as: tuple[str, ...] = ()  # the names it prints when not its own (an ir_measures
    # name for a trec_eval measure; rbp and its residual)
    informative: tuple[str, ...] = ()  # outputs that do not score runs (rbp's residual)
    per_query_values: bool = True  # a number per query for tests (not gm_map's logs, num_q)
    run_independent: bool = False  # the same for every run (num_rel, counted from the qrels)
    counts_retrieved: bool = False  # counts retrieved or judged documents, which a query with
    # no relevant item still moves (num_ret, utility, Judged@k)
    gain_weighted: bool = False  # weighs every positive grade as its gain whatever -l says
    # (ndcg, ndcg_cut, ERR@k)
    custom_gains: bool = False  # given grade=gain pairs (ndcg.1=3), which may weigh grade 0

    @property
    def outputs(self) -> list[str]:
        """The measure names this measure prints, in order."""
        if self.shown_as:
            return list(self.shown_as)
        if self.trec is not None:
            return self.trec.output_names()
        if self.kind == PREFERENCE:
            return [self.name, f"{self.name}_win"]
        return [self.name]

    @property
    def studied(self) -> list[str]:
        """The outputs that score runs (tests, orderings, gates): all but informative ones,
        such as RBP's residual."""
        return [o for o in self.outputs if o not in self.informative]

    @property
    def all_queries(self) -> bool:
        """Whether it averages over every query of the qrels, as trec_eval -c (ALL_QUERIES),
        rather than over the queries with a relevant item."""
        return self.family in ALL_QUERIES


REGISTRY: dict[str, Measure] = {}
FAMILIES: dict[str, Callable] = {}
# Families that compare docnos across runs: the default corpus size (the union of the runs'
# rankings) or offline interleaving (which merges two rankings by docno).
ACROSS_RUNS: set[str] = set()
# Families that average over every query of the qrels (trec_eval -c's set) -> their owners,
# as notes name them.
ALL_QUERIES: dict[str, str] = {}
# Measures that take a parameter after a dot (rbp.0.8): base name -> the measure for a text.
PARAMETRIC: dict[str, Callable[[str, str], Measure]] = {}
DEFAULTS = ["rpp", "dcgrpp", "invrpp", "map", "ndcg", "recip_rank", "P.10", "asl"]
# Added to the defaults when subtopic qrels are given (ndeval's usual four, and ST-RPP).
SUBTOPIC_DEFAULTS = ["st-rpp", "st-dcgrpp", "st-invrpp", "ERR-IA@20", "alpha-nDCG@20", "MAP-IA",
                     "strec@20"]


def register(measure: Measure) -> Measure:
    """Add a measure to the registry (at import time of its family module)."""
    REGISTRY[measure.name] = measure
    return measure


def family(name: str, across_runs: bool = False, all_queries: str | None = None
           ) -> Callable[[Callable], Callable]:
    """Decorator naming a family's compute function; ``across_runs``: its measures need the
    identity of unjudged docnos across runs (see ACROSS_RUNS); ``all_queries``: its owner's
    name when its measures average over every query of the qrels (see ALL_QUERIES)."""
    def wrap(fn: Callable) -> Callable:
        FAMILIES[name] = fn
        if across_runs:
            ACROSS_RUNS.add(name)
        if all_queries is not None:
            ALL_QUERIES[name] = all_queries
        return fn
    return wrap


def across_runs(measures: list[Measure]) -> bool:
    """Whether any of ``measures`` compares docnos across runs (ACROSS_RUNS)."""
    return any(m.family in ACROSS_RUNS for m in measures)

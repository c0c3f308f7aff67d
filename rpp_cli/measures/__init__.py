"""The registry: every measure rpp knows, by name (the single list `-m`, help and
``rpp measures`` read).

A measure family is a module with a ``compute(collection, measures, results)`` function; a new
measure is one function in its family plus one ``register`` call there.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InputError

PREFERENCE = "preference"  # RPP(a, b) for ordered pairs of runs
METRIC = "metric"  # one value per run
SET = "set"  # a name for several measures (trec_eval's nicknames)


@dataclass(frozen=True)
class Measure:
    """A named measure: what it is, how to compute it, which way is better."""

    name: str
    kind: str
    family: str
    description: str
    higher_is_better: bool = True
    options: dict = field(default_factory=dict)  # family-specific settings (discount, ...)
    trec: "trec.TrecRequest | None" = None  # for trec_eval measures
    parameters: str = ""  # what it takes and the defaults, one line (rpp measures)


    @property
    def outputs(self) -> list[str]:
        """The measure names this measure prints, in order."""
        if "shown_as" in self.options:
            return [self.options["shown_as"]]
        if "outputs" in self.options:
            return list(self.options["outputs"])
        if self.trec is not None:
            return self.trec.output_names()
        if self.kind == PREFERENCE:
            return [self.name, f"{self.name}_win"]
        return [self.name]

    @property
    def studied(self) -> list[str]:
        """The outputs that score runs (tests, orderings, gates): all but informative ones,
        such as RBP's residual."""
        return [o for o in self.outputs if o not in self.options.get("informative", ())]


REGISTRY: dict[str, Measure] = {}
FAMILIES: dict[str, Callable] = {}
# Families that compare docnos across runs: the default corpus size (the union of the runs'
# rankings) or offline interleaving (which merges two rankings by docno).
ACROSS_RUNS: set[str] = set()
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


def family(name: str, across_runs: bool = False) -> Callable[[Callable], Callable]:
    """Decorator naming a family's compute function; ``across_runs``: its measures need the
    identity of unjudged docnos across runs (see ACROSS_RUNS)."""
    def wrap(fn: Callable) -> Callable:
        FAMILIES[name] = fn
        if across_runs:
            ACROSS_RUNS.add(name)
        return fn
    return wrap


def across_runs(measures: list[Measure]) -> bool:
    """Whether any of ``measures`` compares docnos across runs (ACROSS_RUNS)."""
    return any(m.family in ACROSS_RUNS for m in measures)


def resolve(names: list[str] | None) -> list[Measure]:
    """Measures for ``-m`` values (contract: none given = the defaults; any given = exactly those).

    Names rpp knows come from the registry; the rest are parsed with trec_eval's syntax
    (nicknames, parameters; all together, as trec_eval merges them), each measure placed
    where it was first named. Unknown names raise InputError.
    """
    wanted = list(names) if names else list(DEFAULTS)
    for name in wanted:
        _check_printable(name)
    slots: list[tuple[int, Measure]] = []  # (position in -m, measure)
    trec_names: list[str] = []
    first_named: dict[str, int] = {}  # trec_eval base measure -> position that named it
    for pos, name in enumerate(wanted):
        if name in REGISTRY and REGISTRY[name].trec is None:
            slots.append((pos, REGISTRY[name]))
        elif name.partition(".")[0] in PARAMETRIC:
            base, _, param = name.partition(".")
            slots.append((pos, PARAMETRIC[base](name, param)))
        elif ir_measures.is_own(name):
            slots.append((pos, ir_measures.own_measure(name)))
        elif ir_measures.is_alias(name):
            spec, rel = ir_measures.translate(name)
            try:
                requests = trec.parse([spec])
            except InputError as err:  # named as the user wrote it
                raise InputError(err.message.replace(f"'{spec}'", f"'{name}'")) from None
            for req in requests:
                slots.append((pos, Measure(name, METRIC, "trec",
                                           f"ir_measures' name for trec_eval's {spec}", trec=req,
                                           options={"shown_as": name, "level": rel})))
        elif trec.base_name(name) in trec.TEXT_MEASURES:
            raise InputError(f"measure '{name}' is text, not a number: rpp trec-eval prints it")
        elif trec.is_trec_name(name):
            trec_names.append(name)
            for req in trec.parse([name]):
                first_named.setdefault(req.base, pos)
        else:
            raise InputError(f"unknown measure '{name}'{_did_you_mean(name)} (rpp measures "
                             "lists them all)")
    for r in trec.parse(trec_names, first_wins=False) if trec_names else []:
        if r.base not in trec.TEXT_MEASURES:
            slots.append((first_named[r.base],
                          Measure(r.base if r.params is None else r.spec, METRIC, "trec",
                                  trec.DESCRIPTIONS.get(r.base, r.base), trec=r)))
    flat: list[Measure] = []
    seen: set[str] = set()
    for _, m in sorted(slots, key=lambda slot: slot[0]):  # stable: trec_eval order within
        if m.name not in seen:
            seen.add(m.name)
            flat.append(m)
    return flat


def _check_printable(name: str) -> None:
    """Refuse a measure name that could not print as one token of a line (contract §7): a
    space, a control (a newline, an escape) or a byte that is not UTF-8 in it. trec_eval's
    parameters are free text that reaches the printed name (``set_F.``, ``ndcg.1=``); such
    bytes there would split or recolour the output, and pytrec_eval crashes on non-UTF-8."""
    if not name.isprintable() or any(c.isspace() for c in name):
        raise InputError(f"measure '{name}': names are printable text without spaces "
                         "or control characters")


# What users type for a measure with a cutoff, lower-cased, beyond ir_measures' and trec_eval's
# own names (which _cutoff_names adds): -> ir_measures' name.
_CUTOFF_SYNONYMS = {"mrr": "RR", "recip_rank": "RR", "precision": "P", "prec": "P"}
_CUTOFF_TYPO = re.compile(r"(?P<stem>[A-Za-z][A-Za-z_-]*?)[@._-]?(?P<k>[0-9]+)")


def _cutoff_names(name: str) -> list[str]:
    """The names ``name`` may mean when it is a measure with a cutoff in another spelling or
    case (``ndcg@10``, ``P10``, ``map@10``, ``ndcg_cut10``): ir_measures' and trec_eval's."""
    m = _CUTOFF_TYPO.fullmatch(name)
    if not m:
        return []
    stems = dict(_CUTOFF_SYNONYMS)
    for alias, (plain, cut) in ir_measures.ALIASES.items():
        if cut is not None:
            stems.update({alias.lower(): alias, cut.lower(): alias})
            if plain is not None:
                stems[plain.lower()] = alias
    stems.update({own.lower(): own for own in ir_measures.OWN})
    alias = stems.get(m["stem"].lower())
    if alias is None:
        return []
    cut = ir_measures.ALIASES.get(alias, (None, None))[1]
    names = [f"{alias}@{m['k']}"]
    return names + [f"{cut}.{m['k']}"] if cut is not None and alias not in ir_measures.OWN \
        else names


def _did_you_mean(name: str) -> str:
    """`` (did you mean ...?)`` with the closest known names, or nothing: the same name in
    another case, the cutoff spellings it may mean, then difflib's closest."""
    import difflib

    known = {k.lower(): k for k in [*REGISTRY, *ir_measures.ALIASES, *trec.ORDER,
                                    *trec.NICKNAMES]}
    close = [known[name.lower()]] if name.lower() in known else []
    close += _cutoff_names(name)
    close += [known[k] for k in difflib.get_close_matches(name.lower(), list(known), n=3,
                                                          cutoff=0.6)]
    close = list(dict.fromkeys(c for c in close if c != name))[:3]
    return f" (did you mean {', '.join(close)}?)" if close else ""


# The families register their measures on import (after the names above exist).
# Import order is listing order (rpp measures).
from . import (preference, lexicographic, interleaving, search_length,  # noqa: E402,F401,I001
               rank_biased, diversity, trec, ir_measures)

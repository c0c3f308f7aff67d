"""What ``-m`` values mean: the measures they name, or an error that says what was meant.

rpp's own names come from the registry, ir_measures' names and trec_eval's from their own
syntax (:mod:`.ir_measures`, :mod:`.trec_names`).
"""
from __future__ import annotations

import re

from ..errors import InputError
from . import ir_measures
from .registry import DEFAULTS, PARAMETRIC, REGISTRY, Measure
from .trec_names import base_name, is_trec_name, parse, trec_measure
from .trec_table import NICKNAMES, ORDER, TEXT_MEASURES


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
    trec_specs: list[str] = []
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
                requests = parse([spec])
            except InputError as err:  # named as the user wrote it
                raise InputError(err.message.replace(f"'{spec}'", f"'{name}'")) from None
            for req in requests:
                slots.append((pos, trec_measure(req, name, "ir_measures' name for trec_eval's "
                                                f"{spec}", level=rel, shown_as=(name,))))
        elif base_name(name) in TEXT_MEASURES:
            raise InputError(f"measure '{name}' is text, not a number: rpp trec-eval prints it")
        elif is_trec_name(name):
            trec_specs.append(name)
            for req in parse([name]):
                first_named.setdefault(req.base, pos)
        else:
            raise InputError(f"unknown measure '{name}'{_did_you_mean(name)} (rpp measures "
                             "lists them all)")
    for r in parse(trec_specs, first_wins=False) if trec_specs else []:
        if not r.record.text:
            slots.append((first_named[r.base],
                          trec_measure(r, r.base if r.params is None else r.spec,
                                       r.record.description)))
    flat: list[Measure] = []
    seen: dict[str, Measure] = {}
    for _, m in sorted(slots, key=lambda slot: slot[0]):  # stable: trec_eval order within
        if m.name not in seen:
            seen[m.name] = m
            flat.append(m)
        elif seen[m.name].family != m.family:  # rbp: rpp's, and trec_eval 10.0's in all_trec
            raise InputError(f"measure '{m.name}' is asked for twice: rpp's own and trec_eval's "
                             f"(in a set such as all_trec), which print under one name; ask for "
                             f"rpp's with its parameter ({m.name}.0.8) to have both")
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

    known = {k.lower(): k for k in [*REGISTRY, *ir_measures.ALIASES, *ORDER, *NICKNAMES]}
    close = [known[name.lower()]] if name.lower() in known else []
    close += _cutoff_names(name)
    close += [known[k] for k in difflib.get_close_matches(name.lower(), list(known), n=3,
                                                          cutoff=0.6)]
    close = list(dict.fromkeys(c for c in close if c != name))[:3]
    return f" (did you mean {', '.join(close)}?)" if close else ""

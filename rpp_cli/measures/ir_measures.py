"""ir_measures' names for the trec_eval measures the two share (``nDCG@10``, ``P@5``, ``AP``,
``RR``, ``R@100``, ``P(rel=2)@5``, ...): the same numbers as the trec_eval spelling, printed under
the name the user typed. ir_measures' own measures (``Judged@k``, ``ERR@k``, ...) are not
trec_eval's and are refused with a pointer."""
from __future__ import annotations

import re

from ..errors import InputError
from ..io.qrels import GRADE_MAX

# ir_measures name -> (trec_eval measure, its cutoff parameter is the @k)
ALIASES = {
    "AP": ("map", "map_cut"), "nDCG": ("ndcg", "ndcg_cut"), "P": (None, "P"),
    "R": (None, "recall"), "RR": ("recip_rank", None), "Rprec": ("Rprec", None),
    "Bpref": ("bpref", None), "infAP": ("infAP", None), "Success": (None, "success"),
    "NumRet": ("num_ret", None), "NumRel": ("num_rel", None), "NumRelRet": ("num_rel_ret", None),
    "NumQ": ("num_q", None), "SetP": ("set_P", None), "SetR": ("set_recall", None),
    "SetF": ("set_F", None), "IPrec": (None, "iprec_at_recall"),
}
NOT_TREC = {"Judged", "ERR", "RBP", "Compat", "INST", "INSQ", "alpha_nDCG", "NERR", "SDCG",
            "accuracy", "BPM", "EPM", "Precision"}
_SYNTAX = re.compile(r"(?P<name>[A-Za-z_]+)(\(rel=(?P<rel>\d+)\))?(@(?P<cut>[0-9.]+))?")


def is_alias(name: str) -> bool:
    """True when ``name`` is written in ir_measures' syntax (and not trec_eval's)."""
    m = _SYNTAX.fullmatch(name)
    return bool(m) and (m["name"] in ALIASES or m["name"] in NOT_TREC) and (
        "@" in name or "(" in name or m["name"] not in ("P", "Rprec", "infAP"))


def translate(name: str) -> tuple[str, int | None]:
    """The trec_eval spelling of an ir_measures name, and its relevance level (None: -l's)."""
    m = _SYNTAX.fullmatch(name)
    if m["name"] in NOT_TREC:
        raise InputError(f"measure '{name}' is ir_measures' own, not trec_eval's: rpp computes "
                         "trec_eval's measures (rpp measures lists them)")
    plain, cut = ALIASES[m["name"]]
    if m["cut"] is None:
        if plain is None:
            raise InputError(f"measure '{name}' needs a cutoff, e.g. {m['name']}@10")
        spec = plain
    else:
        if cut is None:
            raise InputError(f"measure '{name}': {m['name']} takes no cutoff in trec_eval")
        spec = f"{cut}.{m['cut']}"
    if m["rel"] is not None and not 1 <= int(m["rel"]) <= GRADE_MAX:
        raise InputError(f"measure '{name}': rel= takes a relevance level from 1 to {GRADE_MAX}")
    return spec, None if m["rel"] is None else int(m["rel"])


def spelling(trec_base: str) -> str | None:
    """How ir_measures writes a trec_eval measure (for ``rpp measures``), or None."""
    for name, (plain, cut) in ALIASES.items():
        if trec_base == plain:
            return name
        if trec_base == cut:
            return f"{name}@k"
    return None

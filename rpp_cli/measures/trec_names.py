"""trec_eval's ``-m`` language: nicknames, parameters, repeats, and the names it prints.

``-m`` is parsed the way trec_eval parses it, and parameters are validated first (pytrec_eval
aborts or segfaults on some malformed ones); the measures themselves are the records of
:mod:`.trec_table`.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from ..errors import InputError
from ..io.qrels import GRADE_MAX, GRADE_MIN
from ..settings import trec_eval_release
from .registry import METRIC, Measure
from .trec_table import NICKNAMES, TABLE, Parameters, TrecMeasure, nickname_members


@dataclass(frozen=True)
class TrecRequest:
    """One trec_eval measure with its parameter text (``None``: trec_eval's defaults)."""

    base: str
    params: str | None = None

    @property
    def spec(self) -> str:
        """The measure string trec_eval itself parses."""
        return self.base if self.params is None else f"{self.base}.{self.params}"

    @property
    def record(self) -> TrecMeasure:
        """What trec_eval's table says of the measure."""
        return TABLE[self.base]

    def output_names(self) -> list[str]:
        """The names trec_eval prints for this measure, in its order."""
        record = TABLE.get(self.base)  # (a nickname prints as itself)
        if record is not None and record.parameters is Parameters.LONG_CUTOFFS:
            return [f"{self.base}_{c}" for c in cutoffs(self)]
        if record is not None and record.parameters is Parameters.FLOAT_CUTOFFS:
            return [f"{self.base}_{_c_float_name(c)}" for c in cutoffs(self)]
        if self.params is not None:  # float and pair parameters: raw text in the name
            return [f"{self.base}_{self.params}"]
        return [self.base]


def trec_measure(req: TrecRequest, name: str, description: str, *, level: int | None = None,
                 shown_as: tuple[str, ...] = (), parameters: str = "") -> Measure:
    """The measure that computes ``req``, named ``name``, with the facts of its record."""
    record = req.record
    return Measure(name, METRIC, "trec", description, trec=req, parameters=parameters,
                   higher_is_better=not record.lower_is_better,
                   level=level, shown_as=shown_as, per_query_values=record.per_query_values,
                   run_independent=record.run_independent,
                   counts_retrieved=record.counts_retrieved, gain_weighted=record.gain_weighted,
                   custom_gains=record.parameters is Parameters.GAIN_PAIRS
                   and req.params is not None)


def base_name(name: str) -> str:
    """The trec_eval measure ``name`` names, in either spelling: ``relstring_5`` and
    ``relstring.5`` are ``relstring``."""
    return (_underscore_form(name) or name).partition(".")[0]


def is_trec_name(name: str) -> bool:
    """True when ``name`` looks like a trec_eval measure or nickname (params allowed)."""
    base = name.split(".", 1)[0]
    return base in TABLE or base in NICKNAMES or _underscore_form(name) is not None


def parse(names: list[str], *, allow_underscore: bool = True, check: bool = True,
          first_wins: bool = True, release: str | None = None) -> list[TrecRequest]:
    """trec_eval's ``-m`` semantics: nicknames expand (to their measures in trec_eval
    ``release``, default: the one in force), repeats merge, first params win.

    With ``allow_underscore``, the printed form ``P_10`` is accepted for ``P.10`` (rpp eval).
    Unknown names raise InputError; so do invalid parameters (with ``check``; trec_eval itself
    checks them later, see :func:`validate`), before pytrec_eval ever sees them. Without
    ``first_wins`` (rpp eval: each measure asked is printed or refused), a measure given two
    different parameter lists has its cutoffs merged, or is an InputError (see :func:`_merged`),
    instead of its second list dropped.
    """
    chosen: dict[str, str | None] = {}
    order: list[str] = []
    plain: dict[str, bool] = {}  # measures asked without parameters -> named by themselves
    for raw in names:
        name = raw
        if allow_underscore and raw.partition(".")[0] not in TABLE and raw not in NICKNAMES:
            name = _underscore_form(raw) or raw
        base, dot, params = name.partition(".")
        if dot and params == "":
            raise InputError(f"improper measure parameters in '{raw}'")
        if base in NICKNAMES:
            members = nickname_members(base, trec_eval_release(release))
        elif base in TABLE:
            members = [base]
        else:
            raise InputError(f"unknown measure '{raw}' (see: rpp measures)")
        for member in members:
            if member not in chosen:
                order.append(member)
                chosen[member] = None
            if base == member and dot and chosen[member] is None:
                chosen[member] = params if first_wins or member not in plain else \
                    _with_defaults(member, params, plain[member], raw)
            elif base == member and dot and chosen[member] != params and not first_wins:
                chosen[member] = _merged(base, chosen[member], params, raw)
            elif not dot and chosen[member] is not None and not first_wins:
                chosen[member] = _with_defaults(member, chosen[member], base == member, raw)
            if not dot:
                plain[member] = plain.get(member, False) or base == member
    requests = [TrecRequest(b, chosen[b]) for b in order]
    if check:
        for req in requests:
            validate(req)
    return requests


def _with_defaults(base: str, params: str, by_name: bool, raw: str) -> str:
    """``base`` asked both with its default parameters and with ``params`` (``-m P -m P.7``,
    ``-m official -m P.7``): cutoffs print together (5, ..., 1000 and 7); other parameters,
    asked for by the measure's own name both ways, are an InputError (``-m ndcg -m ndcg.1=3``:
    one pass cannot give both), and given a nickname's defaults they win, as in trec_eval."""
    record = TABLE[base]
    if record.cutoffs:
        return _merged(base, ",".join(map(str, record.defaults)), params, raw)
    if by_name:
        raise InputError(f"measure '{base}' is given twice with different parameters ('{base}' "
                         f"and '{base}.{params}'): give it once (trec_eval would keep one and "
                         "drop the other)")
    return params


def _merged(base: str, first: str, more: str, raw: str) -> str:
    """Cutoffs given twice (``-m P.5 -m P_10``) as one list, in order (``5,10``); any other
    parameters given twice differently are an InputError (trec_eval keeps the first)."""
    record = TABLE[base]
    if record.cutoffs:  # one cutoff once, however written (5 and 05, 0.1 and 0.10)
        read = c_atol if record.parameters is Parameters.LONG_CUTOFFS else c_atof
        kept: dict[float, str] = {}
        for cut in first.split(",") + more.split(","):
            kept.setdefault(read(cut), cut)
        return ",".join(kept.values())
    raise InputError(f"measure '{base}' is given twice with different parameters "
                     f"('{base}.{first}' and '{raw}'): give it once (trec_eval would keep the "
                     "first and drop the second)")


_PARAMETER_STARTS = set("0123456789+-.")
# the measures that take parameters, longest name first (ndcg_cut before ndcg)
_PARAMETERISED = sorted((r.name for r in TABLE.values() if r.parameters is not Parameters.NONE),
                        key=len, reverse=True)


def _underscore_form(name: str) -> str | None:
    """``P_10`` -> ``P.10``, ``iprec_at_recall_0.10`` -> ``iprec_at_recall.0.10``; parameters
    are numbers or grade=gain pairs, so ``ndcg_cut10`` is no ``ndcg`` with parameters."""
    for base in _PARAMETERISED:
        rest = name[len(base) + 1:]
        if name.startswith(base + "_") and (rest[:1] in _PARAMETER_STARTS or (
                TABLE[base].parameters is Parameters.PERSISTENCE and rest.startswith("p="))):
            return f"{base}.{rest}"
    return None


def c_atol(text: str) -> int:
    """C's atol: leading integer prefix (ASCII digits only), 0 when there is none."""
    m = re.match(r"[ \t\n\v\f\r]*[+-]?[0-9]+", text)
    return int(m.group()) if m else 0


# C's strtod: decimal, hexadecimal (0x1p-1), inf/infinity and nan, after C's white space.
_C_FLOAT = re.compile(r"[ \t\n\v\f\r]*(?P<sign>[+-]?)(?:(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*"
                      r"|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)|(?P<dec>[0-9]+\.?[0-9]*"
                      r"(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|inf(?:inity)?|nan))",
                      re.IGNORECASE)


def c_atof(text: str) -> float:
    """C's atof: the longest leading float prefix (hexadecimal, ``inf``, ``nan`` too), 0.0 when
    none; what trec_eval (and pytrec_eval's copy of it) reads a measure's parameters with."""
    m = _C_FLOAT.match(text)
    if not m:
        return 0.0
    sign = -1.0 if m["sign"] == "-" else 1.0
    if m["hex"] is None:
        return sign * float(m["dec"])
    try:
        return sign * float.fromhex(m["hex"])
    except OverflowError:  # strtod gives HUGE_VAL
        return sign * math.inf


# trec_eval sorts cutoffs by their difference taken as a C int, and multiplies float cutoffs
# by R into a C long: parameters beyond these bounds garble its order, names or values.
C_INT_MAX = (1 << 31) - 1


def cutoffs(req: TrecRequest) -> list[int] | list[float]:
    """The cutoffs of a cutoff measure, ascending; its defaults when it has no parameters."""
    if req.params is None:
        return list(req.record.defaults)
    if req.record.parameters is Parameters.LONG_CUTOFFS:
        return _long_cutoffs(req)
    return _float_cutoffs(req)


def _long_cutoffs(req: TrecRequest) -> list[int]:
    """The cutoffs of ``req``'s parameters, read with atol: positive C ints, each once."""
    cuts = sorted(c_atol(p) for p in req.params.split(","))
    if cuts[0] <= 0 or cuts[-1] > C_INT_MAX:
        raise InputError(f"measure '{req.spec}': cutoffs must be positive integers up to "
                         f"{C_INT_MAX}")
    if len(set(cuts)) != len(cuts):
        raise InputError(f"measure '{req.spec}': duplicate cutoffs")
    return cuts


def _finite(req: TrecRequest, values: list[float], bound: float = math.inf) -> list[float]:
    """``values`` of ``req``'s parameters, each finite and at most ``bound`` in magnitude."""
    if not all(math.isfinite(v) and abs(v) <= bound for v in values):
        limit = "" if bound == math.inf else f" of magnitude at most {int(bound)}"
        raise InputError(f"measure '{req.spec}': parameters must be finite numbers{limit}")
    return values


def _float_cutoffs(req: TrecRequest) -> list[float]:
    """The cutoffs of ``req``'s parameters, read with atof: finite, within a C int, each once."""
    cuts = sorted(_finite(req, [c_atof(p) for p in req.params.split(",")], C_INT_MAX))
    if len(set(cuts)) != len(cuts):
        raise InputError(f"measure '{req.spec}': duplicate cutoffs")
    return cuts


def _c_float_name(value: float) -> str:
    """trec_eval's ``%3.2f`` parameter name, cut to 8 characters as its buffer does."""
    return ("%3.2f" % value)[:8]


def validate(req: TrecRequest) -> None:
    """Reject what trec_eval rejects (and what pytrec_eval would mis-handle) before pytrec_eval
    can abort the process on it; accept what trec_eval accepts (``atof`` of any float param)."""
    if req.params is None:
        return
    kind = req.record.parameters
    if kind is Parameters.LONG_CUTOFFS:
        _long_cutoffs(req)
    elif kind is Parameters.FLOAT_CUTOFFS:
        names = req.output_names()  # sorts the cutoffs and rejects duplicates
        if len(set(names)) != len(names):  # trec_eval prints both; pytrec_eval keeps one
            raise InputError(f"measure '{req.spec}': two cutoffs print as the same name")
    elif kind is Parameters.GAIN_PAIRS:
        if not _PAIRS.fullmatch(req.params):
            raise InputError(f"measure '{req.spec}': parameters must be level=gain pairs")
        pairs = [p.split("=") for p in req.params.split(",")]
        if not all(GRADE_MIN <= c_atol(level) <= GRADE_MAX for level, _ in pairs):
            raise InputError(f"measure '{req.spec}': levels must be grades, integers from "
                             f"{GRADE_MIN} to {GRADE_MAX}")
        _finite(req, [c_atof(gain) for _, gain in pairs])
    elif kind is Parameters.PERSISTENCE:
        _persistence_pairs(req)
    elif req.base == "utility" and len(req.params.split(",")) != 4:
        # trec_eval fails at calc time; pytrec_eval would print 0.0
        raise InputError(f"measure '{req.spec}': needs exactly 4 coefficients")
    elif kind is not Parameters.FLOATS:
        raise InputError(f"measure '{req.base}' takes no parameters (got '{req.spec}')")
    else:
        _finite(req, [c_atof(p) for p in req.params.split(",")])


# trec_eval's get_param_pairs: ``name=value`` items, no empty item, no second '=' in one.
_PAIRS = re.compile(r"[^,=]*=[^,=]*(,[^,=]*=[^,=]*)*")
# a grade as trec_eval 10.0's setup_gains takes it (valid_int): a sign, then digits only
_GRADE_NAME = re.compile(r"[+-]?[0-9]+")


def persistence_pairs(req: TrecRequest) -> tuple[float, dict[int, float]]:
    """rbp's and rbp_resid's ``p=P`` (the last one given; default 0.9) and rbp's
    ``grade=gain`` pairs (grade -> gain), as trec_eval 10.0 reads them."""
    p, gains = req.record.defaults[0], {}
    for name, value in (item.split("=") for item in (req.params or "").split(",") if item):
        if name == "p":
            p = c_atof(value)
        else:
            gains[c_atol(name)] = c_atof(value)
    return p, gains


def _persistence_pairs(req: TrecRequest) -> None:
    """``p=P`` pairs (rbp: and ``grade=gain`` pairs) with finite values, each grade once.
    trec_eval ignores any other name (``P=0.5``, ``1.5=2``); rpp refuses it, a likely typo."""
    if not _PAIRS.fullmatch(req.params):
        raise InputError(f"measure '{req.spec}': parameters must be name=value pairs")
    pairs = [p.split("=") for p in req.params.split(",")]
    grades = [name for name, _ in pairs if name != "p"]
    takes = "p=P and grade=gain pairs" if req.base == "rbp" else "only p=P"
    if (req.base != "rbp" and grades) or not all(_GRADE_NAME.fullmatch(g) for g in grades):
        raise InputError(f"measure '{req.spec}': takes {takes}")
    if not all(GRADE_MIN <= c_atol(g) <= GRADE_MAX for g in grades):
        raise InputError(f"measure '{req.spec}': grades must be integers from {GRADE_MIN} to "
                         f"{GRADE_MAX}")
    if len({c_atol(g) for g in grades}) != len(grades):
        raise InputError(f"measure '{req.spec}': give each grade once")
    _finite(req, [c_atof(value) for _, value in pairs])

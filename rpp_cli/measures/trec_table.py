"""trec_eval's measures (10.0's, each with the release that brought it), one record each, in
its own table's order (te_trec_measures): what parameters each takes and their defaults, how
its per-query values add up to ``all``, how it prints, and the facts ``rpp check`` asks of
it. Every other list of trec_eval's measures is read from here.
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable

from ..settings import TREC_EVAL_RELEASES


class Parameters(Enum):
    """What a measure's parameter text (``-m P.5,10``) holds."""

    NONE = "none"
    LONG_CUTOFFS = "long cutoffs"  # ranks, read with atol: P_5, P_10
    FLOAT_CUTOFFS = "float cutoffs"  # read with atof, printed %3.2f: iprec_at_recall_0.10
    FLOATS = "floats"  # numbers read with atof, the raw text printed: utility_1,-1,0,0
    GAIN_PAIRS = "gain pairs"  # grade=gain items: ndcg_1=3,2=9
    PERSISTENCE = "persistence pairs"  # p=persistence (rbp: and grade=gain): rbp_p=0.95


class Aggregation(Enum):
    """How trec_eval's ``all`` line comes from the per-query values."""

    MEAN = "mean"
    SUM = "sum"  # counts of documents
    QUERIES = "queries"  # the number of queries (num_q)
    GEOMETRIC = "geometric"  # exp of the mean of per-query logs, each at least GM_FLOOR
    TEXT = "text"  # not a number (runid, relstring)


@dataclass(frozen=True)
class TrecMeasure:
    """One trec_eval measure: its parameters, its aggregation, how it prints, and the facts
    that tell whether a gate on it could fail (``rpp check``)."""

    name: str
    description: str  # one line; a trailing "(.k1,k2)" is its -m parameter syntax
    parameters: Parameters = Parameters.NONE
    defaults: tuple[float, ...] = ()  # trec_eval's parameters when none are given
    syntax: str = ""  # the parameters and defaults rpp measures shows for FLOATS
    aggregation: Aggregation = Aggregation.MEAN
    per_query: bool = True  # printed for each query, not only on the 'all' line
    long_integer: bool = False  # printed as a C long (%ld), not %6.4f
    run_independent: bool = False  # counted from the qrels: the same for every run
    counts_retrieved: bool = False  # counts retrieved or judged non-relevant documents,
    # which a query with no relevant item still moves
    gain_weighted: bool = False  # weighs every positive grade as its gain whatever -l says
    # (not Rndcg: its R counts the relevant items at the level, and with none there it is 0)
    lower_is_better: bool = False  # a warning sign, not effectiveness (unjudged documents)
    since: str = TREC_EVAL_RELEASES[-1]  # the first release rpp follows that has it
    rounded: bool = False  # turns recall shares into ranks, rounded as each release rounds

    @property
    def cutoffs(self) -> bool:
        """Whether its parameters are cutoffs (one printed name each)."""
        return self.parameters in (Parameters.LONG_CUTOFFS, Parameters.FLOAT_CUTOFFS)

    def in_release(self, release: str) -> bool:
        """Whether trec_eval ``release`` has this measure."""
        return _AGE[self.since] <= _AGE[release]

    def by_rpp(self, release: str) -> bool:
        """Whether rpp computes it itself under ``release`` rather than through pytrec_eval
        (which has 9.0.8's measures only): the measures 10.0 added or changed."""
        return self.since != OLDEST or (self.rounded and release != OLDEST)

    @property
    def text(self) -> bool:
        """Whether its values are text, not numbers (runid, relstring)."""
        return self.aggregation is Aggregation.TEXT

    @property
    def per_query_values(self) -> bool:
        """Whether it has a number per query that tests can compare (not gm_map's logs,
        num_q, runid or relstring)."""
        return self.per_query and not self.text

    @property
    def usage(self) -> str:
        """Its ``-m`` parameter syntax and trec_eval's defaults, for ``rpp measures``."""
        if self.parameters is Parameters.LONG_CUTOFFS:
            return f"{self.name}.k1,k2,... (default {','.join(map(str, self.defaults))})"
        if self.parameters is Parameters.FLOAT_CUTOFFS:
            return f"{self.name}.x1,x2,... (default {','.join(map(str, self.defaults))})"
        if self.parameters is Parameters.GAIN_PAIRS:
            return f"{self.name}.grade=gain,... (default: gain = grade)"
        return f"{self.name}.{self.syntax}" if self.syntax else ""


_AGE = {release: age for age, release in enumerate(reversed(TREC_EVAL_RELEASES))}
LATEST, OLDEST = TREC_EVAL_RELEASES[0], TREC_EVAL_RELEASES[-1]
_LONG = {"parameters": Parameters.LONG_CUTOFFS,
         "defaults": (5, 10, 15, 20, 30, 100, 200, 500, 1000)}
_PAIRS = {"parameters": Parameters.GAIN_PAIRS, "gain_weighted": True}
_COUNT = {"aggregation": Aggregation.SUM, "long_integer": True}
_GEOMETRIC = {"aggregation": Aggregation.GEOMETRIC, "per_query": False}
RECALL_POINTS = tuple(i / 10 for i in range(11))

TABLE: dict[str, TrecMeasure] = {r.name: r for r in (
    TrecMeasure("runid", "run tag (text)", aggregation=Aggregation.TEXT, per_query=False),
    TrecMeasure("num_q", "number of queries evaluated", aggregation=Aggregation.QUERIES,
                per_query=False, long_integer=True),
    TrecMeasure("num_ret", "documents retrieved", counts_retrieved=True, **_COUNT),
    TrecMeasure("num_rel", "relevant documents", run_independent=True, **_COUNT),
    TrecMeasure("num_rel_ret", "relevant documents retrieved", **_COUNT),
    TrecMeasure("map", "mean average precision"),
    TrecMeasure("gm_map", "geometric mean of AP (floor 1e-5)", **_GEOMETRIC),
    TrecMeasure("Rprec", "precision at R"),
    TrecMeasure("bpref", "binary preference"),
    TrecMeasure("recip_rank", "reciprocal rank of the first relevant"),
    TrecMeasure("iprec_at_recall", "interpolated precision at recall levels (.p1,p2 in [0,1])",
                Parameters.FLOAT_CUTOFFS, RECALL_POINTS, rounded=True),
    TrecMeasure("P", "precision at cutoffs (.k1,k2)", **_LONG),
    TrecMeasure("relstring", "relevance string of the top docs (text)", Parameters.FLOATS,
                (10,), aggregation=Aggregation.TEXT),
    TrecMeasure("recall", "recall at cutoffs (.k1,k2)", **_LONG),
    TrecMeasure("infAP", "inferred AP"),
    TrecMeasure("gm_bpref", "geometric mean of bpref", **_GEOMETRIC),
    TrecMeasure("Rprec_mult", "precision at multiples of R (.m1,m2)", Parameters.FLOAT_CUTOFFS,
                tuple(round(0.2 * i, 1) for i in range(1, 11))),
    TrecMeasure("utility", "linear utility (.a,b,c,d)", Parameters.FLOATS,
                (1.0, -1.0, 0.0, 0.0), "a,b,c,d (default 1,-1,0,0)", counts_retrieved=True),
    TrecMeasure("11pt_avg", "11-point interpolated average precision", Parameters.FLOATS,
                RECALL_POINTS, "r1,r2,... (default 0.0,0.1,...,1.0)", rounded=True),
    TrecMeasure("binG", "binary G"),
    TrecMeasure("G", "G with gains (.lvl=gain,...)", **_PAIRS),
    TrecMeasure("ndcg", "nDCG over the whole ranking (.lvl=gain,...)", **_PAIRS),
    TrecMeasure("ndcg_rel", "nDCG averaged over relevant docs", **_PAIRS),
    TrecMeasure("Rndcg", "nDCG at R", Parameters.GAIN_PAIRS),
    TrecMeasure("ndcg_cut", "nDCG at cutoffs (.k1,k2)", gain_weighted=True, **_LONG),
    TrecMeasure("map_cut", "AP at cutoffs (.k1,k2)", **_LONG),
    TrecMeasure("relative_P", "precision relative to the best possible at cutoffs (.k1,k2)",
                **_LONG),
    TrecMeasure("success", "1 if a relevant doc is in the top k (.k1,k2)",
                Parameters.LONG_CUTOFFS, (1, 5, 10)),
    TrecMeasure("set_P", "set precision"),
    TrecMeasure("set_relative_P", "set relative precision"),
    TrecMeasure("set_recall", "set recall"),
    TrecMeasure("set_map", "set precision x recall"),
    TrecMeasure("set_F", "set F measure (.beta)", Parameters.FLOATS, (1.0,),
                "beta (default 1)"),
    TrecMeasure("num_nonrel_judged_ret", "judged non-relevant documents retrieved",
                counts_retrieved=True, **_COUNT),
    TrecMeasure("rbp", "rank-biased precision, each grade's gain scaled into [0, 1]",
                Parameters.PERSISTENCE, (0.9,), "p=P,grade=gain,... (default p=0.9, gain = "
                "grade)", gain_weighted=True, since=LATEST),
    TrecMeasure("rbp_resid", "rbp's residual: what unjudged documents could add (0 without "
                "any)", Parameters.PERSISTENCE, (0.9,), "p=P (default p=0.9)",
                counts_retrieved=True, lower_is_better=True, since=LATEST),
    TrecMeasure("unj", "share of unjudged documents in the top k (.k1,k2)",
                Parameters.LONG_CUTOFFS, (5, 10, 20), counts_retrieved=True,
                lower_is_better=True, since=LATEST),
)}

# trec_eval's measure order, which is also its output order.
ORDER = list(TABLE)

# 10.0's sets; nickname_members gives a release's
NICKNAMES = {
    "official": ("runid num_q num_ret num_rel num_rel_ret map gm_map Rprec bpref recip_rank "
                 "iprec_at_recall P").split(),
    "all_trec": list(ORDER),
    "set": ("runid num_q num_ret num_rel num_rel_ret utility set_P set_recall set_relative_P "
            "set_map set_F").split(),
}


def nickname_members(nickname: str, release: str) -> list[str]:
    """The measures a nickname stands for in trec_eval ``release``."""
    return [m for m in NICKNAMES[nickname] if TABLE[m].in_release(release)]


def _named(test: Callable[[TrecMeasure], bool]) -> frozenset[str]:
    """The names of the measures whose record passes ``test``."""
    return frozenset(r.name for r in TABLE.values() if test(r))


# Views of the table by name, for code that holds a printed name rather than a record.
TEXT_MEASURES = _named(lambda r: r.text)
NOT_PER_QUERY = _named(lambda r: not r.per_query)
LONG_MEASURES = _named(lambda r: r.long_integer)
PAIR_PARAMS = _named(lambda r: r.parameters is Parameters.GAIN_PAIRS)

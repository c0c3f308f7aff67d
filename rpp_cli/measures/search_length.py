"""Average search length (contract §6, paper §3.1): mean worst-case position of the relevant
items."""
from __future__ import annotations

import numpy as np

from ..populations import Populations, mean_positions
from .registry import METRIC, Measure, family, register

register(Measure("asl", METRIC, "search_length",
                 "average search length: mean full-corpus position of the relevant items "
                 "(lower is better)", higher_is_better=False,
                 parameters="--corpus-size N (default: distinct items in the query's rankings "
                            "and relevant items)"))


def relevant_population(item_query: np.ndarray, relevant: np.ndarray) -> Populations:
    """One population per query: all of its relevant items (``relevant`` masks the items)."""
    members = np.flatnonzero(relevant)
    seg_query = np.unique(item_query[members])
    return Populations(members, np.searchsorted(seg_query, item_query[members]), seg_query)


@family("search_length", across_runs=True)
def compute(ctx, measures: list[Measure]) -> None:
    coll = ctx.collection
    pops = relevant_population(coll.item_query, coll.relevant)
    asl = mean_positions(coll.ranks, pops, coll.corpus_size)  # (R, Q)
    for m in measures:
        ctx.add_metric(m.name, asl.T)

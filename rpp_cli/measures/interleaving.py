"""Offline interleaving (paper §3.3, §5): oi, dcgoi (balanced, the paper's), tdi, dcgtdi
(team draft).

For runs a and b on one query, the two interleavings of a method, one where a goes first and
one where b does; a user stops at position k of the N interleaved items (p(k) uniform, or
∝ 1/log2(k+1)) and clicks every relevant item up to k; pref(k) ∈ {−1, 0, 1} is the preference
those clicks give (Joachims' Eq. 2 for balanced, the team with more clicks for team draft):

    OI(a, b) = ½ Σ_{first ∈ {a, b}} Σ_{k=1..N} p(k) · pref(k)

Interleaving is sequential, so the kernel (core.interleave) walks every pair of runs on every
query in C; numpy lays out its input and normalises. docs/contract.md: "Offline
interleaving".
"""
from __future__ import annotations

import functools
from typing import Callable

import numpy as np

from ..collection import Collection
from ..core import interleave
from ..io.qrels import relevant
from ..engine import current
from .registry import PREFERENCE, Measure, family, register

# w(k), the stopping weight of position k before normalisation over 1..N (1-based array).
STOPS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "uniform": lambda k: np.ones(len(k)),
    "dcg": lambda k: 1.0 / np.log2(k + 1.0),
}

_HOW = {"uniform": "uniformly at a position", "dcg": "at position k with p(k) ∝ 1/log2(k+1)"}
_RULE = {"balanced": "the run whose top k (k: the last click's better rank) holds more clicks "
                    "wins (Eq. 2)",
         "team-draft": "the team credited with more clicks wins"}
for _name, _method, _stop, _what in (
        ("oi", "balanced", "uniform", "balanced (Joachims 2003, the paper's)"),
        ("dcgoi", "balanced", "dcg", "balanced (Joachims 2003, the paper's)"),
        ("tdi", "team-draft", "uniform", "team draft"),
        ("dcgtdi", "team-draft", "dcg", "team draft")):
    register(Measure(_name, PREFERENCE, "interleaving",
                     f"offline interleaving, {_what}, each run first once; the user stops "
                     f"{_HOW[_stop]} and clicks the relevant items above; {_RULE[_method]}",
                     options={"stop": _stop, "method": _method},
                     parameters=f"-l L: relevant when grade >= L (default: > 0); prints {_name} "
                                f"per pair, {_name}_win per run"))


def run_layout(coll: Collection) -> tuple[np.ndarray, np.ndarray]:
    """Every run's codes in ranking order, concatenated, and the (R, Q + 1) offsets of each
    run's queries in them (a query a run lacks is an empty slice)."""
    sizes = [len(run.doc) for run in coll.runs]
    docs = np.concatenate([run.doc for run in coll.runs]).astype(np.int64, copy=False)
    first = np.cumsum([0] + sizes[:-1])
    bounds = np.stack([start + run.bounds(len(coll.qids))
                       for start, run in zip(first, coll.runs)])
    return docs, bounds


def relevant_codes(coll: Collection, docs: np.ndarray) -> np.ndarray:
    """A bool per code: relevant in the main qrels (contract §1, with the level). Codes judged
    in the subtopic qrels only (NaN grade) and unjudged codes are not."""
    grade = np.nan_to_num(coll.judged.grade, nan=0.0)
    flags = np.zeros(max(len(grade), int(docs.max(initial=-1)) + 1), dtype=bool)
    flags[:len(grade)] = relevant(grade, coll.level)
    return flags


def offline_interleaving(docs: np.ndarray, bounds: np.ndarray, rel: np.ndarray,
                         stops: list[str], jobs: int = 1, method: str = "balanced"
                         ) -> np.ndarray:
    """OI of every ordered pair of runs on every query under each user model of ``stops``:
    (M, Q, R, R), from one walk of every interleaving of ``method`` (core.INTERLEAVINGS).

    Only pairs a < b go to the kernel, in ``jobs`` blocks, shards of the engine's work;
    OI(b, a) = −OI(a, b) fills the rest exactly and the diagonal stays 0. The kernel adds each
    maximal stretch of positions with one sign as one difference of the cumulative
    weights, so a sign held on all of 1..N gives exactly W[N] (OI = ±1 exactly). N = 0 (both
    rankings empty) gives 0.
    """
    n_runs, n_queries = bounds.shape[0], bounds.shape[1] - 1
    out = np.zeros((len(stops), n_queries, n_runs, n_runs))
    ia, ib = np.triu_indices(n_runs, 1)
    if len(ia) == 0:
        return out
    longest = int(np.diff(bounds, axis=1).max(initial=0))
    k = np.arange(1, 2 * longest + 1, dtype=np.float64)
    weights = np.stack([STOPS[stop](k) for stop in stops], axis=1)  # (K, M)
    cumulative = np.concatenate((np.zeros((1, len(stops))), np.cumsum(weights, axis=0)))
    blocks = np.array_split(np.stack([ia, ib], axis=1), min(max(1, jobs), len(ia)))
    parts = list(current().imap(
        functools.partial(_interleave_block, docs, bounds, rel=rel, cumulative=cumulative,
                          method=method), blocks))
    sums = np.concatenate([part[0] for part in parts])  # (P, Q, 2, M)
    n = np.concatenate([part[1] for part in parts])  # (P, Q)
    value = np.divide(sums.sum(axis=2), 2.0 * cumulative[n], out=np.zeros(n.shape + (len(stops),)),
                      where=(n > 0)[..., None])  # (P, Q, M)
    out[:, :, ia, ib] = value.transpose(2, 1, 0)
    out[:, :, ib, ia] = -value.transpose(2, 1, 0)
    return out


def _interleave_block(docs: np.ndarray, bounds: np.ndarray, block: np.ndarray, *,
                      rel: np.ndarray, cumulative: np.ndarray, method: str) -> tuple:
    """The kernel's sums and lengths for one block of pairs: a shard for the engine."""
    return interleave(docs, bounds, block, rel, cumulative, method)


@family("interleaving", across_runs=True)
def compute(ctx, measures: list[Measure]) -> None:
    """Add the per-query and aggregate matrices and win rates of ``measures`` to ctx.results
    (every user model of one method from one walk of its interleavings)."""
    coll = ctx.collection
    docs, bounds = run_layout(coll)
    rel = relevant_codes(coll, docs)
    for method in dict.fromkeys(m.options["method"] for m in measures):
        chosen = [m for m in measures if m.options["method"] == method]
        tensors = offline_interleaving(docs, bounds, rel, [m.options["stop"] for m in chosen],
                                       ctx.jobs, method)
        for m, per_query in zip(chosen, tensors):
            ctx.add_preference(m.name, per_query)

"""Rank-biased precision (Moffat & Zobel, TOIS 2008), with its residual.

A user reads rank 1 and goes on from rank i to i + 1 with persistence p:

    rbp     = (1 - p) Σ_{i <= d} rel_i p^(i-1)
    rbp_res = (1 - p) Σ_{i <= d, i unjudged} p^(i-1) + p^d

over the run's ranking of depth d (contract §2 order), rel_i = 1 when the item is relevant
(grade > 0, or >= ``-l L``). The residual is how much rbp could still grow if every unjudged
item in the ranking and every item below it were relevant: the true value lies in
[rbp, rbp + rbp_res].

trec_eval 10.0's ``rbp`` (in its all_trec) is another measure: persistence 0.9, gains the
grades scaled into [0, 1], and a residual ``rbp_resid`` that is 0 when no retrieved document is
unjudged. rpp gives it under trec_eval's syntax, ``rbp.p=P[,grade=gain...]`` (and through
``all_trec``); plain ``rbp`` and ``rbp.P`` are rpp's.
"""
from __future__ import annotations

import numpy as np

from ..errors import InputError
from ..io.qrels import relevant
from .registry import METRIC, PARAMETRIC, Measure, family, register
from .trec_names import parse, trec_measure

DEFAULT_PERSISTENCE = 0.8


def rbp_measure(name: str, param: str) -> Measure:
    """The measure for ``rbp`` (p = 0.8) or ``rbp.P``, outputs named as typed; or, given
    trec_eval's ``name=value`` pairs (``rbp.p=0.95``), trec_eval 10.0's rbp."""
    if "=" in param:
        req, = parse([name])
        return trec_measure(req, name, "trec_eval 10.0's rank-biased precision")
    p = DEFAULT_PERSISTENCE
    if name != "rbp":  # rbp.P (``rbp.`` alone is no persistence)
        try:
            p = float(param)
        except ValueError:
            p = float("nan")
        if not 0 < p < 1:
            raise InputError(f"measure '{name}': the persistence must be a number in (0, 1)")
    residual = "rbp_res" + name[len("rbp"):]
    return Measure(name, METRIC, "rank_biased",
                   f"rank-biased precision, persistence {p:g}, and its residual "
                   "(Moffat & Zobel 2008)",
                   options={"persistence": p}, shown_as=(name, residual),
                   informative=(residual,),
                   parameters=f"rbp.P: persistence P in (0, 1), default {DEFAULT_PERSISTENCE:g}; "
                              "-l L; prints rbp[.P] and its residual rbp_res[.P]. trec_eval 10.0's "
                              "rbp (graded, p 0.9; in all_trec): rbp.p=P[,grade=gain,...]")


PARAMETRIC["rbp"] = rbp_measure
register(rbp_measure("rbp", ""))


def rank_biased(coll, p: float) -> tuple[np.ndarray, np.ndarray]:
    """(Q, R) rbp and (Q, R) residual of every run on every query of ``coll``."""
    n_q = len(coll.qids)
    n_judged = len(coll.judged.query)
    is_rel = relevant(np.nan_to_num(coll.judged.grade, nan=0.0), coll.level)
    value = np.zeros((n_q, len(coll.runs)))
    residual = np.zeros((n_q, len(coll.runs)))
    for r, rows in enumerate(coll.runs):  # one vectorised pass per run
        weight = (1.0 - p) * p ** (rows.rank - 1.0)
        judged = rows.doc < n_judged
        hit = judged.copy()
        hit[judged] = is_rel[rows.doc[judged]]
        qidx, depth = rows.qidx, np.diff(rows.bounds(n_q))
        value[:, r] = np.bincount(qidx, weights=weight * hit, minlength=n_q)
        residual[:, r] = (np.bincount(qidx, weights=weight * ~judged, minlength=n_q)
                          + p ** depth.astype(np.float64))
    return value, residual


@family("rank_biased")
def compute(ctx, measures: list[Measure]) -> None:
    for m in measures:
        value, residual = rank_biased(ctx.collection, m.options["persistence"])
        name, res_name = m.outputs
        ctx.add_metric(name, value)
        ctx.add_metric(res_name, residual, keep=False)

"""``rpp levels``: why RPP prefers one run, level by level (paper Fig. 4b with ``--query``).

For two runs a and b, every evaluated query, every population P (contract §3) and every
recall level i = 1..m_P: the worst-case full-corpus positions f_i^a(P) and f_i^b(P)
(contract §2) and sgn(f_i^b − f_i^a), the term RPP sums (contract §4; +1 when a places its
i-th member higher). The positions come from the population builders and
:func:`worst_case_positions` that RPP itself uses, on the same collection (same corpus size
n), so they are RPP's numbers by construction.

Output (contract §7 layout; the runs in fields 3-4 as in every pair line of rpp, value last):

    levels                \\tqid\\trunA\\trunB\\tpopulation\\ti\\tf_a\\tf_b\\tsign
    levels_ahead          \\tall\\trunA\\trunB\\tpopulation\\tshare     (one per population label)
    levels_ahead          \\tall\\trunA\\trunB\\tshare                (every population)

``levels_ahead``, ``levels_behind`` and ``levels_tied`` are the shares of levels where a is
ahead (sign +1), behind (−1) or tied (0), pooled over the queries.

``--plot`` draws the paper's Fig. 4b when the levels are those of one query (``--query``, or
a collection with one evaluated query): f_i^b − f_i^a against the recall level i, one series
per population. Over several queries it draws the ECDF of those differences pooled over
every query, population and level, titled as what it is (the paper has no such figure).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np

from .. import errors
from ..collection import Collection
from ..errors import InputError
from ..pipeline import load
from ..populations import (BACKGROUND, Populations, graded_populations,
                           labelled_subtopic_populations, subtopic_key, worst_case_positions)
from ..results import ALL
from ..settings import Options
from . import Outcome

MEASURE = "levels"
SHARES = ("levels_ahead", "levels_behind", "levels_tied")  # sign +1, -1, 0


@dataclass(frozen=True)
class LevelsRequest:
    """``rpp levels``'s own setting: ``--query`` (None: every evaluated query)."""

    query: str | None = None


@dataclass(frozen=True)
class Levels:
    """The positions of two runs at every recall level of every population of every query."""

    qids: list[str]  # the queries pops.seg_query indexes (every query of the qrels)
    runs: tuple[str, str]  # (a, b)
    pops: Populations  # segments by query; a query's in the builder's order
    labels: list[str]  # (S,) printable label of each population
    label_key: Callable[[str], object]  # the order of the labels in the summary
    positions: np.ndarray  # (2, L) int64: f_i(P) of a and of b, for each level slot

    @property
    def difference(self) -> np.ndarray:
        """(L,) f_i^b − f_i^a: > 0 where a places the i-th member higher."""
        return self.positions[1] - self.positions[0]

    @property
    def sign(self) -> np.ndarray:
        """(L,) sgn(f_i^b − f_i^a), the term RPP(a, b) sums (contract §4)."""
        return np.sign(self.difference)

    def only(self, qid: str) -> Levels:
        """These levels for the one query ``qid`` (``rpp levels --query``), compared as bytes;
        a query that is not evaluated is an error naming how many are."""
        evaluated = [self.qids[q] for q in np.unique(self.pops.seg_query).tolist()]
        if qid not in evaluated:
            raise InputError(f"--query {qid}: not one of the {len(evaluated)} evaluated queries "
                             "(queries of the qrels with a relevant item)")
        kept_seg = self.pops.seg_query == self.qids.index(qid)
        kept = kept_seg[self.pops.member_seg]
        renumber = np.cumsum(kept_seg) - 1
        pops = Populations(self.pops.member_item[kept], renumber[self.pops.member_seg[kept]],
                           np.zeros(int(kept_seg.sum()), dtype=self.pops.seg_query.dtype))
        labels = [label for label, k in zip(self.labels, kept_seg.tolist()) if k]
        return Levels([qid], self.runs, pops, labels, self.label_key, self.positions[:, kept])

    def by_population(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """{label: (levels i, f_i^b − f_i^a)} of a one-query Levels, labels in summary order
        (the series of the paper's Fig. 4b)."""
        label = np.array(self.labels, dtype=object)[self.pops.member_seg]
        level, difference = self.pops.level, self.difference
        return {name: (level[label == name], difference[label == name])
                for name in sorted(set(self.labels), key=self.label_key)}

    def shares(self) -> tuple[list[str | None], np.ndarray]:
        """Summary rows: the population labels in ``label_key`` order then None (every
        population), and a (K, 3) array of the shares of levels where a is ahead, behind,
        tied, pooled over the queries."""
        names, code = np.unique(np.array(self.labels, dtype=object), return_inverse=True)
        sign = self.sign
        outcome = np.where(sign > 0, 0, np.where(sign < 0, 1, 2))
        counts = np.bincount(code.ravel()[self.pops.member_seg] * 3 + outcome,
                             minlength=3 * len(names)).reshape(-1, 3)
        order = sorted(range(len(names)), key=lambda k: self.label_key(names[k]))
        counts = np.vstack([counts[order], counts.sum(axis=0)])
        return [names[k] for k in order] + [None], counts / counts.sum(axis=1, keepdims=True)


def graded_labels(coll: Collection, pops: Populations) -> list[str]:
    """``>=λ`` for each graded population: λ is the smallest grade among the members, since
    the items of grade λ are members (contract §3). λ prints as an integer when it is one
    (grades are within 32 bits: ``>=1234567``, not ``>=1e+06`` or ``>=1234567.0``), else as
    ``%g``, or in full where ``%g`` would round it (two grades must never share a label)."""
    lam = np.minimum.reduceat(coll.item_grade[pops.member_item], pops.seg_starts)
    return [f">={_grade_text(x)}" for x in lam.tolist()]


def _grade_text(x: float) -> str:
    """A grade as an integer when it is one, else as :func:`errors.number` writes it."""
    return str(int(x)) if x == int(x) else errors.number(x)


def _graded_key(label: str) -> float:
    """The summary order of graded labels: by grade (``>=2`` after ``>=1``)."""
    return float(label[2:])


def _subtopic_key(label: str) -> tuple:
    """The summary order of subtopic labels: subtopics in their order, the background last."""
    return (label == BACKGROUND, subtopic_key(label))


def run(qrels: str | None, runs: list[str], request: LevelsRequest, options: Options
        ) -> Outcome:
    """Read QRELS and the two runs as ``rpp eval`` does and take every f_i(P): graded
    populations, or ST-RPP's with ``options.subtopics``; only ``request.query``'s when given.
    No Results table: ``extras["levels"]`` holds the :class:`Levels` (see :func:`rows`)."""
    if len(runs) != 2:
        raise InputError(f"levels compares exactly two runs, RUN_A and RUN_B (got "
                         f"{len(runs)})")
    notes: list[str] = []
    coll = load(qrels, runs, options, notes)
    if options.subtopics:
        if BACKGROUND in coll.subtopics.names:
            raise InputError(f"subtopic id '{BACKGROUND}' is reserved for the background "
                             "population in rpp levels", path=options.subtopics)
        pops, labels = labelled_subtopic_populations(coll)
        key = _subtopic_key
    else:
        pops = graded_populations(coll)
        labels, key = graded_labels(coll, pops), _graded_key
    positions = worst_case_positions(coll.ranks, pops, coll.corpus_size)
    levels = Levels(coll.qids, (coll.run_names[0], coll.run_names[1]), pops, labels, key,
                    positions)
    return Outcome(None, notes,
                   {"levels": levels if request.query is None else levels.only(request.query)})


def rows(lv: Levels, summary: bool = True) -> Iterator[tuple]:
    """The output rows, one tuple of :data:`rpp_cli.report.levels.FIELDS` each (None where a
    field is absent): per level (value: the sign, an int), by query, population, level; then
    with ``summary`` the shares (floats), measure by measure, population labels then every
    population."""
    a, b = lv.runs
    pops = lv.pops
    seg = [(lv.qids[q], label) for q, label in zip(pops.seg_query.tolist(), lv.labels)]
    for s, i, fa, fb, sg in zip(pops.member_seg.tolist(), pops.level.tolist(),
                                lv.positions[0].tolist(), lv.positions[1].tolist(),
                                lv.sign.tolist()):
        qid, label = seg[s]
        yield MEASURE, qid, a, b, label, i, fa, fb, sg
    if summary:
        labels, shares = lv.shares()
        for k, measure in enumerate(SHARES):
            for label, share in zip(labels, shares[:, k].tolist()):
                yield measure, ALL, a, b, label, None, None, None, share


def plot(lv: Levels, path: str) -> list[str]:
    """``--plot``: the paper's Fig. 4b for one query, else the pooled ECDF of f_i^b − f_i^a
    over every query, population and level; the notes of drawing it."""
    from ..report.plot import difference_ecdf, level_differences

    _, shares = lv.shares()
    shown = np.unique(lv.pops.seg_query)  # the queries with levels (evaluated)
    if len(shown) == 1:
        return level_differences(path, lv.by_population(), lv.runs, lv.qids[int(shown[0])],
                                 shares[-1])
    return difference_ecdf(path, lv.difference, lv.runs, shares[-1], len(shown))

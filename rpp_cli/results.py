"""The one tidy table every command produces and every output format reads.

Columns: ``measure``, ``qid`` (or ``all``), ``run``, ``other`` (the second run of a pair,
``None`` for per-run values) and ``value``. Rows are stored as integer codes into the
name lists so that millions of per-query preference values cost no Python objects.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

ALL = "all"


@dataclass
class Results:
    """Append blocks of rows with :meth:`add`; read them in contract §7 order with :meth:`rows`."""

    qids: list[str]
    runs: list[str]
    measures: list[str] = field(default_factory=list)
    _blocks: list[tuple[np.ndarray, ...]] = field(default_factory=list)
    _sorted: list[bool] = field(default_factory=list)  # block's queries in order, one kind

    def add(self, measure: str, q: np.ndarray, r: np.ndarray, value: np.ndarray,
            o: np.ndarray | None = None) -> None:
        """Rows of one measure: query index (-1 = all), run index, other run index or None."""
        if measure not in self.measures:
            self.measures.append(measure)
        m = self.measures.index(measure)
        n = len(value)
        if max(len(self.qids), len(self.runs), len(self.measures)) >= 1 << 31:
            raise OverflowError("Results: over 2^31 queries, runs or measures")
        # codes as int32 (a constant as a stride-0 view): 19M per-query preference rows of 160
        # runs cost 456 MB, not 760
        cols = [np.broadcast_to(np.asarray(x, dtype=np.int32), (n,))
                for x in (m, q, r, -1 if o is None else o)]
        q = cols[1]
        self._blocks.append((*cols, np.asarray(value, dtype=np.float64).ravel()))
        self._sorted.append(bool(n == 0 or q.strides == (0,) or ((q[1:] >= q[:-1]).all()
                                                      and (q[0] >= 0 or q[-1] < 0))))

    def columns(self) -> tuple[np.ndarray, ...]:
        """(m, q, r, o, value) code arrays in output order: per-query rows first (queries in
        trec_eval order, then measure, run, other), then ``all`` rows."""
        return self.part(0, len(self.qids) + 1)

    def part(self, lo: int, hi: int) -> tuple[np.ndarray, ...]:
        """:meth:`columns` of the rows of queries ``lo..hi-1`` (query ``len(qids)``: the
        ``all`` rows), so that output can be made shard by shard. Blocks added in query order
        (most are) are cut by bisection, the others by a mask."""
        parts = []
        for block, ordered in zip(self._blocks, self._sorted):
            if ordered:
                a, b = self._bisect(block[1], lo, hi)
                parts.append(tuple(c[a:b] for c in block))
            else:
                key = self._key(block[1])
                keep = (key >= lo) & (key < hi)
                parts.append(tuple(c[keep] for c in block))
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty, np.zeros(0)
        m, q, r, o, v = (np.concatenate(c) for c in zip(*parts))
        order = np.lexsort((o, r, m, self._key(q)))
        return m[order], q[order], r[order], o[order], v[order]

    def _key(self, q: np.ndarray) -> np.ndarray:
        """Query keys: the index, ``len(qids)`` for ``all`` (-1), which comes last."""
        return np.where(q < 0, len(self.qids), q)

    def _bisect(self, q: np.ndarray, lo: int, hi: int) -> tuple[int, int]:
        """Rows a..b-1 of a block in query order (all ``all`` or all per-query) have the
        query keys lo..hi-1."""
        if len(q) and q[-1] < 0:  # the block's rows are all ``all`` rows
            return (0, len(q)) if lo <= len(self.qids) < hi else (0, 0)
        # the bounds in q's own dtype: other values make searchsorted cast all of q
        a, b = np.searchsorted(q, np.array((lo, min(hi, len(self.qids))), dtype=q.dtype))
        return int(a), int(max(a, b))

    def key_counts(self) -> np.ndarray:
        """(Q + 1,) rows per query key (the last: the ``all`` rows)."""
        return sum((np.bincount(self._key(b[1]), minlength=len(self.qids) + 1)
                    for b in self._blocks), np.zeros(len(self.qids) + 1, dtype=np.int64))

    def rows(self) -> Iterator[tuple[str, str, str, str | None, float]]:
        """(measure, qid, run, other, value) tuples in output order."""
        m, q, r, o, v = self.columns()
        qnames = self.qids + [ALL]
        for mi, qi, ri, oi, val in zip(m.tolist(), q.tolist(), r.tolist(), o.tolist(),
                                       v.tolist()):
            yield (self.measures[mi], qnames[qi], self.runs[ri],
                   None if oi < 0 else self.runs[oi], val)

    def value(self, measure: str, qid: str, run: str, other: str | None = None) -> float:
        """One value (for tests and gates); KeyError when absent."""
        for row in self.rows():
            if row[:4] == (measure, qid, run, other):
                return row[4]
        raise KeyError((measure, qid, run, other))

    def records(self, summary: bool = True) -> list[dict]:
        """The rows as dicts ``{measure, qid, run, other, value}`` (``other`` None for per-run
        values), in output order; without ``summary``, no ``all`` rows."""
        keys = ("measure", "qid", "run", "other", "value")
        return [dict(zip(keys, row)) for row in self.rows() if summary or row[1] != ALL]

    def to_pandas(self, summary: bool = True, wide: bool = False):
        """The rows as a pandas DataFrame (pandas is optional: ``pip install pandas``).

        ``wide``: the ``all`` value of every per-run measure, runs x measures (rows and
        columns in output order), as ranx and ir_measures users tabulate runs."""
        pandas = _pandas("to_pandas")
        frame = pandas.DataFrame(self.records(summary or wide),
                                 columns=["measure", "qid", "run", "other", "value"])
        if not wide:
            return frame
        per_run = frame[(frame["qid"] == ALL) & frame["other"].isna()]
        measures = [m for m in self.measures if m in set(per_run["measure"])]
        return per_run.pivot(index="run", columns="measure", values="value").reindex(
            index=pandas.Index(self.runs, name="run"),
            columns=pandas.Index(measures, name="measure"))

    def pair_measures(self) -> list[str]:
        """Measures with rows for pairs of runs (the preference matrices), in order."""
        m, _, _, o, _ = self.columns()
        found = set(m[o >= 0].tolist())
        return [name for i, name in enumerate(self.measures) if i in found]

    def pair_grid(self, measure: str, q: int | None = -1) -> np.ndarray:
        """(R, R) values of ``measure`` on query index ``q`` (-1: ``all``), ``[run, other]``;
        NaN where there is no row (the diagonal, a query without values)."""
        m, qs, r, o, v = self.columns()
        keep = (m == self.measures.index(measure)) & (qs == q) & (o >= 0)
        out = np.full((len(self.runs), len(self.runs)), np.nan)
        out[r[keep], o[keep]] = v[keep]
        return out

    def matrix(self, measure: str | None = None, qid: str = ALL):
        """A pair measure (default: the first, e.g. ``rpp``) as a runs x runs DataFrame:
        row a, column b holds its value for (a, b), RPP(a, b) > 0 when a is preferred; the
        diagonal is NaN (no pair)."""
        pandas = _pandas("matrix")
        pairs = self.pair_measures()
        if measure is None and pairs:
            measure = pairs[0]
        if measure not in pairs:
            raise KeyError(f"no pair measure {measure!r} in these results (pair measures: "
                           f"{', '.join(pairs) or 'none'})")
        qi = -1 if qid == ALL else self.qids.index(qid) if qid in self.qids else None
        grid = self.pair_grid(measure, qi)
        if np.isnan(grid).all():
            raise KeyError(f"no {measure} values for query {qid!r} in these results "
                           "(per-query values need per_query=True)")
        index = pandas.Index(self.runs, name="run")
        return pandas.DataFrame(grid, index=index, columns=pandas.Index(self.runs, name="other"))

    def __len__(self) -> int:
        return sum(len(b[0]) for b in self._blocks)

    def __repr__(self) -> str:
        """A short summary (a notebook shows it): counts and the first names, never the rows."""
        def some(names: list[str]) -> str:
            return ", ".join(names[:6]) + (f", ... ({len(names)})" if len(names) > 6 else "")
        return (f"<rpp Results: {len(self):,} rows; {len(self.runs)} runs ({some(self.runs)}); "
                f"{len(self.qids)} queries; {len(self.measures)} measure outputs "
                f"({some(self.measures)})>")


def _pandas(what: str):
    """The pandas module, or an ImportError saying how to get it."""
    try:
        import pandas
    except ImportError:
        raise ImportError(f"Results.{what} needs pandas (pip install pandas); "
                          "Results.records() needs nothing") from None
    return pandas

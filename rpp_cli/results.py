"""The one tidy table every command produces and every output format reads.

Columns: ``measure``, ``qid`` (or ``all``), ``run``, ``other`` (the second run of a pair,
``None`` for per-run values) and ``value``. Rows are stored as integer codes into the
name lists so that millions of per-query preference values cost no Python objects.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Iterator

import numpy as np

ALL = "all"


class _Rows:
    """Rows given as columns: measure, query (-1 = all), run and other run (-1 = none) as int32
    codes (a constant as a stride-0 view: 19M codes of one value cost nothing), and values."""

    def __init__(self, m: int, q, r, o, value) -> None:
        self.m = m
        n = len(np.ravel(value))
        codes = (np.broadcast_to(np.asarray(x, dtype=np.int32), (n,)) for x in (m, q, r, o))
        self.cols = (*codes, np.asarray(value, dtype=np.float64).ravel())
        q = self.cols[1]
        # queries in order and one kind (all per-query, or all ``all``): cut by bisection
        self.ordered = bool(n == 0 or q.strides == (0,) or ((q[1:] >= q[:-1]).all()
                                                           and (q[0] >= 0 or q[-1] < 0)))

    def __len__(self) -> int:
        return len(self.cols[4])

    def recoded(self, m: int) -> "_Rows":
        """These rows under measure code ``m`` (the other columns shared, not copied)."""
        out = copy.copy(self)
        out.m, out.cols = m, (np.broadcast_to(np.int32(m), self.cols[0].shape), *self.cols[1:])
        return out

    def key_counts(self, n_qids: int) -> np.ndarray:
        """(n_qids + 1,) rows per query key (see :meth:`Results.key_counts`)."""
        return np.bincount(_key(self.cols[1], n_qids), minlength=n_qids + 1)

    def part(self, lo: int, hi: int, n_qids: int) -> tuple[np.ndarray, ...]:
        """The (m, q, r, o, value) columns of the rows with query keys lo..hi-1, in the
        block's order (:meth:`Results.part` orders them)."""
        q = self.cols[1]
        if not self.ordered:
            key = _key(q, n_qids)
            keep = (key >= lo) & (key < hi)
            return tuple(c[keep] for c in self.cols)
        if len(q) and q[-1] < 0:  # the block's rows are all ``all`` rows
            a, b = (0, len(q)) if lo <= n_qids < hi else (0, 0)
        else:  # the bounds in q's own dtype: other values make searchsorted cast all of q
            a, b = np.searchsorted(q, np.array((lo, min(hi, n_qids)), dtype=q.dtype))
            b = max(a, b)
        return tuple(c[a:b] for c in self.cols)


class _Grid:
    """The per-query rows of a pair measure, kept as its (E, R, R) tensor: a row for every
    ordered pair of distinct runs (run-major) of each of ``queries`` (ascending). Their codes
    are made only for the queries asked: 160 runs' 19M rows would cost 380 MB as columns, and
    the tensor is kept anyway (orderings, tests)."""

    def __init__(self, m: int, queries: np.ndarray, values: np.ndarray) -> None:
        self.m = m
        self.queries = np.asarray(queries, dtype=np.int32)
        if (self.queries[1:] <= self.queries[:-1]).any() or (self.queries < 0).any():
            raise ValueError("Results.add_grid: queries must be ascending query indices")
        self.values = np.asarray(values, dtype=np.float64).view()
        self.values.flags.writeable = False  # the rows read it: nobody writes it after
        n_runs = self.values.shape[1]
        self.run, self.other = (x.astype(np.int32) for x in
                                np.nonzero(~np.eye(n_runs, dtype=bool)))

    def __len__(self) -> int:
        return len(self.queries) * len(self.run)

    def recoded(self, m: int) -> "_Grid":
        """This grid under measure code ``m`` (its tensor shared, not copied)."""
        out = copy.copy(self)
        out.m = m
        return out

    def key_counts(self, n_qids: int) -> np.ndarray:
        """(n_qids + 1,) rows per query key: R (R - 1) for each query of the grid."""
        return np.bincount(self.queries, minlength=n_qids + 1) * len(self.run)

    def part(self, lo: int, hi: int, n_qids: int) -> tuple[np.ndarray, ...]:
        """The columns of the grid's rows with query keys lo..hi-1, made now."""
        a, b = np.searchsorted(self.queries, np.array((lo, hi), dtype=np.int32))
        n = len(self.run) * (b - a)
        return (np.broadcast_to(np.int32(self.m), (n,)),
                np.repeat(self.queries[a:b], len(self.run)),
                np.tile(self.run, b - a), np.tile(self.other, b - a),
                self.values[a:b][:, self.run, self.other].ravel())


PART_ROWS = 1 << 16  # rows of one of :meth:`Results.parts`, at most, unless a query has more


def row_bounds(counts: np.ndarray, rows: int) -> np.ndarray:
    """Query-key bounds (0 first, len(counts) last) cutting keys with ``counts`` rows each into
    shards of at most ``rows`` rows, unless one key has more: greedily, a search per shard."""
    total = np.cumsum(counts)
    bounds = [0]
    while bounds[-1] < len(counts):
        done = int(total[bounds[-1] - 1]) if bounds[-1] else 0
        bounds.append(max(bounds[-1] + 1, int(np.searchsorted(total, done + rows, "right"))))
    return np.array(bounds, dtype=np.int64)


def _key(q: np.ndarray, n_qids: int) -> np.ndarray:
    """Query keys: the index, ``n_qids`` for ``all`` (-1), which comes last."""
    return np.where(q < 0, n_qids, q)


@dataclass
class Results:
    """Append blocks of rows with :meth:`add` (and a pair measure's per-query tensor with
    :meth:`add_grid`); read them in contract §7 order with :meth:`rows`."""

    qids: list[str]
    runs: list[str]
    measures: list[str] = field(default_factory=list)
    _blocks: list[_Rows | _Grid] = field(default_factory=list)
    subject: str = "run"  # what the run column holds, for tables' titles (meta: "measure")

    def add(self, measure: str, q: np.ndarray, r: np.ndarray, value: np.ndarray,
            o: np.ndarray | None = None) -> None:
        """Rows of one measure: query index (-1 = all), run index, other run index or None."""
        self._blocks.append(_Rows(self._code(measure), q, r, -1 if o is None else o, value))

    def add_grid(self, measure: str, queries: np.ndarray, values: np.ndarray) -> None:
        """Per-query rows of a pair measure: ``values[k, a, b]`` for query ``queries[k]``
        (ascending indices) and every pair of runs a != b; the tensor is kept, not copied."""
        self._blocks.append(_Grid(self._code(measure), queries, values))

    def extend(self, other: "Results") -> None:
        """Append the rows of ``other`` (of the same queries and runs) after these, as if they
        had been added here in its order: measures are matched by name, and those new here
        are added in the order ``other`` added them."""
        if other.qids != self.qids or other.runs != self.runs:
            raise ValueError("Results.extend: other queries or runs")
        codes = [self._code(name) for name in other.measures]
        self._blocks.extend(block.recoded(codes[block.m]) for block in other._blocks)

    def _code(self, measure: str) -> int:
        """The measure's index, the measure added when new."""
        if measure not in self.measures:
            self.measures.append(measure)
        if max(len(self.qids), len(self.runs), len(self.measures)) >= 1 << 31:
            raise OverflowError("Results: over 2^31 queries, runs or measures")
        return self.measures.index(measure)

    def columns(self) -> tuple[np.ndarray, ...]:
        """(m, q, r, o, value) code arrays in output order: per-query rows first (queries in
        trec_eval order, then measure, run, other), then ``all`` rows."""
        return self.part(0, len(self.qids) + 1)

    def part(self, lo: int, hi: int) -> tuple[np.ndarray, ...]:
        """:meth:`columns` of the rows of queries ``lo..hi-1`` (query ``len(qids)``: the
        ``all`` rows), so that output can be made shard by shard."""
        parts = [block.part(lo, hi, len(self.qids)) for block in self._blocks]
        if not parts:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty, empty, empty, np.zeros(0)
        m, q, r, o, v = (np.concatenate(c) for c in zip(*parts))
        order = np.lexsort((o, r, m, _key(q, len(self.qids))))
        return m[order], q[order], r[order], o[order], v[order]

    def parts(self, summary: bool = True, rows: int | None = None
              ) -> Iterator[tuple[np.ndarray, ...]]:
        """:meth:`columns` a shard of whole queries at a time, of at most ``rows`` rows unless
        one query has more (``all`` rows last, only with ``summary``): a writer holds a shard's
        rows as Python objects, not the table's."""
        counts = self.key_counts()
        bounds = row_bounds(counts if summary else counts[:-1], rows or PART_ROWS)
        for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist()):
            yield self.part(lo, hi)

    def key_counts(self) -> np.ndarray:
        """(Q + 1,) rows per query key (the last: the ``all`` rows)."""
        return sum((b.key_counts(len(self.qids)) for b in self._blocks),
                   np.zeros(len(self.qids) + 1, dtype=np.int64))

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
        return sum(len(b) for b in self._blocks)

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

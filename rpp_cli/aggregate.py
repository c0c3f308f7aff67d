"""From per-query values to the rows users read (contract §5): matrices, means, win rates.
The system orderings built on them are in :mod:`rpp_cli.orderings`."""
from __future__ import annotations

import numpy as np

from .results import Results


# The unit roundoff of float64 (2^-53): a sum of k values errs by at most about
# k * this * sum |v| (every rounding bound of rpp's ties is written with it).
UNIT_ROUNDOFF = np.finfo(np.float64).eps / 2


def tie_exact_sum(values: np.ndarray, axis: int, ordered: bool = False) -> np.ndarray:
    """The sum of preferences along ``axis``, 0 where it is within its rounding bound of 0: a
    tie is a tie (contract §4), and 1, -2/3 and -1/3, or 0.1, 0.2 and -0.3, are no preference
    of 1e-17. ``ordered``: summed in ascending order, the same bits whatever order the values
    come in (over runs, which the user orders; queries keep the qrels' order)."""
    # each sum over one contiguous row: the same bits for the same values in every command,
    # whatever the layout of its array (eval's (Q, R, R), compare's (Q, pairs))
    rows = np.moveaxis(values, axis, -1)
    rows = np.sort(rows, axis=-1) if ordered else np.ascontiguousarray(rows)  # copies: the
    # caller's values stay as they are
    total = rows.sum(axis=-1)
    bound = 2 * rows.shape[-1] * UNIT_ROUNDOFF * np.abs(rows).sum(axis=-1)
    return np.where(np.abs(total) <= bound, 0.0, total)


def win_rates(per_query: np.ndarray) -> np.ndarray:
    """(Q, R) mean of RPP(a, b) over the other runs b (paper eq. 7 / (|S| - 1)), summed by
    :func:`tie_exact_sum` in ascending order."""
    return tie_exact_sum(per_query, axis=2, ordered=True) / max(per_query.shape[1] - 1, 1)


def mean_preference(per_query: np.ndarray) -> np.ndarray:
    """The ``all`` value of per-query preferences (Q, ...): their mean over the queries,
    summed by :func:`tie_exact_sum`."""
    return tie_exact_sum(per_query, axis=0) / max(len(per_query), 1)


def add_preference(results: Results, name: str, per_query: np.ndarray, with_queries: bool,
                   queries: np.ndarray | None = None) -> None:
    """Rows of one preference measure from its (Q, R, R) tensor: pairs, then ``<name>_win``.
    ``queries`` are the indices in ``results.qids`` of the tensor's Q rows (None: all, in
    order); ``all`` is the mean over them."""
    n_q, n_runs, _ = per_query.shape
    a, b = np.nonzero(~np.eye(n_runs, dtype=bool))
    if with_queries:
        results.add_grid(name, _queries(queries, n_q), per_query)
    results.add(name, -1, a, mean_preference(per_query)[a, b], b)
    wins = win_rates(per_query)
    add_metric(results, f"{name}_win", wins, with_queries, mean_preference(wins),
               queries=queries)


def add_metric(results: Results, name: str, per_query: np.ndarray, with_queries: bool,
               overall: np.ndarray | None = None, queries: np.ndarray | None = None) -> None:
    """Rows of a per-run measure from its (Q, R) values (rows: ``queries`` as in
    :func:`add_preference`); ``all`` = mean unless given."""
    n_q, n_runs = per_query.shape
    if with_queries:
        results.add(name, np.repeat(_queries(queries, n_q), n_runs),
                    np.tile(np.arange(n_runs), n_q), per_query.ravel())
    results.add(name, -1, np.arange(n_runs),
                per_query.mean(axis=0) if overall is None else overall)


def _queries(queries: np.ndarray | None, n_q: int) -> np.ndarray:
    """Result-table query indices of Q per-query rows."""
    return np.arange(n_q) if queries is None else queries

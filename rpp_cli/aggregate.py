"""From per-query values to the rows users read (SPEC §5): matrices, means, win rates."""
from __future__ import annotations

import numpy as np

from .results import Results


def win_rates(per_query: np.ndarray) -> np.ndarray:
    """(Q, R) mean of RPP(a, b) over the other runs b (paper eq. 7 / (|S| - 1))."""
    n_runs = per_query.shape[1]
    return per_query.sum(axis=2) / max(n_runs - 1, 1)


def add_preference(results: Results, name: str, per_query: np.ndarray, with_queries: bool) -> None:
    """Rows of one preference measure from its (Q, R, R) tensor: pairs, then ``<name>_win``."""
    n_q, n_runs, _ = per_query.shape
    a, b = np.nonzero(~np.eye(n_runs, dtype=bool))
    if with_queries:
        q = np.repeat(np.arange(n_q), len(a))
        results.add(name, q, np.tile(a, n_q), per_query[:, a, b].ravel(), np.tile(b, n_q))
    results.add(name, -1, a, per_query.mean(axis=0)[a, b], b)
    add_metric(results, f"{name}_win", win_rates(per_query), with_queries)


def add_metric(results: Results, name: str, per_query: np.ndarray, with_queries: bool,
               overall: np.ndarray | None = None) -> None:
    """Rows of a per-run measure from its (Q, R) values; ``all`` = mean unless given."""
    n_q, n_runs = per_query.shape
    if with_queries:
        results.add(name, np.repeat(np.arange(n_q), n_runs), np.tile(np.arange(n_runs), n_q),
                    per_query.ravel())
    results.add(name, -1, np.arange(n_runs),
                per_query.mean(axis=0) if overall is None else overall)

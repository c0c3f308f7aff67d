"""asl's mean worst-case position in closed form (populations.mean_positions) against the mean
of the positions themselves (worst_case_positions, sorted per population): the same float,
bit for bit, while the sum stays under 2^53; by hand on one query; and past 2^53, the exact
integer sum rounded once (a float sum of the positions rounds at every addition)."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rpp_cli.populations as populations
from rpp_cli.populations import Populations, mean_positions, worst_case_positions
from rpp_cli.measures.search_length import relevant_population


def by_sorting(ranks: np.ndarray, pops: Populations, n: np.ndarray | None) -> np.ndarray:
    positions = worst_case_positions(ranks, pops, n).astype(np.float64)
    return np.add.reduceat(positions, pops.seg_starts, axis=1) / pops.seg_size


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 6), st.integers(1, 7), st.integers(1, 9),
       st.sampled_from(["infinite", "small", "large"]))
def test_closed_form_equals_the_mean_of_sorted_positions(seed, n_runs, n_queries, depth, n):
    """Random rankings (many misses, ties of rank across items), relevant items a random
    subset, corpus sizes infinite (2^40: the paper's), small (a missed item ties with or
    beats a retrieved one) or large."""
    rng = np.random.default_rng(seed)
    per_query = rng.integers(1, depth + 1, size=n_queries)
    item_query = np.repeat(np.arange(n_queries), per_query)
    relevant = rng.random(len(item_query)) < 0.7
    relevant[np.searchsorted(item_query, np.arange(n_queries))] = True  # one in every query
    ranks = rng.integers(0, 2 * depth + 1, size=(n_runs, len(item_query)))
    ranks[rng.random(ranks.shape) < 0.3] = 0
    pops = relevant_population(item_query, relevant)
    corpus = {"infinite": None, "small": np.maximum(per_query, 2),
              "large": np.full(n_queries, 10**12)}[n]
    got = mean_positions(ranks, pops, corpus)
    assert got.dtype == np.float64
    assert np.array_equal(got, by_sorting(ranks, pops, corpus))
    with pytest.MonkeyPatch.context() as patch:  # Python's integers, as past int64's range
        patch.setattr(populations, "INT64_SUMS", 0)
        exact = mean_positions(ranks, pops, corpus)
    assert exact.dtype == np.float64 and np.array_equal(exact, got)


def test_by_hand():
    """One query, 3 relevant items, n = 10: a run that retrieved them at 4 and 2 and missed
    one has positions 2, 4, 10 (n - 3 + 3): mean 16/3; one that missed all has 8, 9, 10."""
    pops = relevant_population(np.zeros(3, dtype=np.int64), np.ones(3, dtype=bool))
    ranks = np.array([[4, 0, 2], [0, 0, 0]])
    assert mean_positions(ranks, pops, np.array([10])).tolist() == [[16 / 3], [9.0]]


def test_past_two_to_the_53_the_exact_sum_is_rounded_once():
    """4,000 relevant items, 3,999 of them missed, at n = 2^50 + 1: the positions sum past
    2^53, and the mean is the exact integer sum as a float, divided; within an ulp of the
    exact rational mean."""
    m, n = 4000, 2**50 + 1
    pops = relevant_population(np.zeros(m, dtype=np.int64), np.ones(m, dtype=bool))
    ranks = np.zeros((1, m), dtype=np.int64)
    ranks[0, 7] = 3
    got = mean_positions(ranks, pops, np.array([n]))[0, 0]
    exact = 3 + sum(n - m + i for i in range(2, m + 1))
    assert exact > 2**53 and got == float(exact) / m
    assert abs(Fraction(got) - Fraction(exact, m)) <= Fraction(np.spacing(got))


def test_sums_past_int64_are_exact():
    """m x n past 2^62 (millions of relevant items at a corpus size near 2^40) would overflow
    int64 sums: Python's integers take over, and the mean is the same formula's."""
    m, n = 5, 2**40
    pops = relevant_population(np.zeros(m, dtype=np.int64), np.ones(m, dtype=bool))
    ranks = np.array([[0, 3, 0, 0, 9]])
    exact = 12 + sum(n - m + i for i in range(3, m + 1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(populations, "INT64_SUMS", 1)
        got = mean_positions(ranks, pops, np.array([n]))
    assert got.tolist() == [[float(exact) / m]]

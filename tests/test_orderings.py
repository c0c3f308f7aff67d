"""System orderings (contract §5): mean win rate, Borda, MC4 on hand-made preference sets."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.aggregate import win_rates
from rpp_cli.orderings import (MC4_TELEPORT, ORDERINGS, add_orderings, borda_points,
                               mc4_scores, ordering_scores, rank_positions, tie_key)
from rpp_cli.results import Results


def from_scores(per_query: list[list[float]]) -> np.ndarray:
    """(Q, R, R) tensor with RPP_q(a, b) = sign(s_q(a) - s_q(b)): query q orders runs by s_q."""
    s = np.array(per_query, dtype=float)
    return np.sign(s[:, :, None] - s[:, None, :])


def ranks(tensor: np.ndarray, names: list[str], method: str) -> dict[str, float]:
    """Rank of each run by name (1 = best; tied runs share their mean position)."""
    return dict(zip(names, rank_positions(ordering_scores(tensor, method)).tolist()))


# q1: a > b > c, q2: b > a > c, q3: a > c > b
HAND = from_scores([[3, 2, 1], [2, 3, 1], [3, 1, 2]])
NAMES = ["a", "b", "c"]


def test_mean_win_rate_by_hand():
    # per-query win rates: q1 (1, 0, -1), q2 (0, 1, -1), q3 (1, -1, 0)
    assert np.allclose(ordering_scores(HAND, "win"), [2 / 3, 0, -2 / 3])


def test_a_win_rate_whose_preferences_cancel_is_zero_in_any_run_order():
    """Offline interleaving's 1, -2/3 and -1/3 against three other runs: a win rate of exactly
    0, which summing in the order the runs were given made 1.1e-16 for one order and 0 for
    another."""
    t = np.zeros((1, 4, 4))
    t[0, 0, 1:] = [1.0, -2 / 3, -1 / 3]
    t[0, 1:, 0] = -t[0, 0, 1:]
    for order in ([0, 1, 2, 3], [0, 2, 3, 1], [0, 3, 1, 2], [3, 2, 1, 0]):
        assert win_rates(t[:, order][:, :, order])[0, order.index(0)] == 0.0


@settings(max_examples=50, deadline=None)
@given(st.integers(2, 7), st.integers(0, 2 ** 32 - 1))
def test_win_rates_do_not_depend_on_the_order_of_the_runs(n_runs, seed):
    """The same bits for every order of the runs (values in thirds, sevenths and tenths)."""
    rng = np.random.default_rng(seed)
    raw = rng.integers(-21, 22, size=(5, n_runs, n_runs)) / rng.choice([3, 7, 10, 21])
    t = np.triu(raw, 1) - np.triu(raw, 1).transpose(0, 2, 1)
    order = rng.permutation(n_runs)
    assert np.array_equal(win_rates(t)[:, order], win_rates(t[:, order][:, :, order]))


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(2, 9), st.data())
def test_mc4_scores_in_name_order_do_not_depend_on_the_order_of_the_runs(seed, n_q, n_runs,
                                                                         data):
    """Solved with the runs in name order, a run's MC4 score has the same bits however the
    runs were given (the solver's pivots follow the rows: 0.55128205128205121 or ...132)."""
    from rpp_cli.orderings import name_order

    tensor = random_tensor(seed, n_q, n_runs, coarse=False)
    names = [f"run{i}" for i in range(n_runs)]
    perm = np.array(data.draw(st.permutations(range(n_runs))))
    shuffled = tensor[:, perm][:, :, perm]
    given_order = ordering_scores(tensor, "mc4", name_order(names))
    other_order = ordering_scores(shuffled, "mc4", name_order([names[i] for i in perm]))
    assert np.array_equal(given_order[perm], other_order)


def test_eval_orderings_are_the_same_bits_in_any_run_order():
    """``add_orderings`` (rpp eval --orderings) gives every run the same values, to the bit,
    for the runs given in another order."""
    tensor = random_tensor(3, 4, 6, coarse=False)
    names = ["b", "d", "a", "f", "c", "e"]
    perm = [4, 0, 5, 2, 1, 3]
    rows = []
    for t, order in ((tensor, names), (tensor[:, perm][:, :, perm], [names[i] for i in perm])):
        results = Results(["q1", "q2", "q3", "q4"], order)
        add_orderings(results, {"rpp": t}, {}, set())
        rows.append({(m, r): v for m, q, r, o, v in results.rows()})
    assert rows[0] == rows[1]


def test_borda_by_hand():
    # points = runs below (+ half per tie): a 2+1+2, b 1+2+0, c 0+0+1
    assert ordering_scores(HAND, "borda").tolist() == [5, 3, 1]


def test_borda_splits_ties():
    rates = np.array([[0.5, 0.5, -1.0], [1.0, 0.0, 0.0]])
    assert borda_points(rates).tolist() == [[1.5, 1.5, 0.0], [2.0, 0.5, 0.5]]


def test_mc4_stationary_distribution_by_hand():
    # majorities: a beats b (2-1), a beats c (3-0), b beats c (2-1)
    t = Fraction(MC4_TELEPORT).limit_denominator(1000)
    n, keep = 3, 1 - t
    # pi_c = t/3 + keep * pi_c * 1/3 (c stays only when it draws itself)
    pi_c = (t / n) / (1 - keep / n)
    # pi_b = t/3 + keep * (pi_b * 2/3 + pi_c * 1/3)
    pi_b = (t / n + keep * pi_c / n) / (1 - keep * 2 / n)
    pi_a = 1 - pi_b - pi_c
    got = ordering_scores(HAND, "mc4")
    assert np.allclose(got, [float(pi_a), float(pi_b), float(pi_c)], atol=1e-12)
    assert got.sum() == pytest.approx(1.0)


def test_mc4_is_a_stationary_distribution():
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 20, size=(6, 6)).astype(float)
    pi = mc4_scores(counts)
    n = 6
    beats = counts > counts.T
    step = beats.T / n
    step[np.arange(n), np.arange(n)] = 1 - step.sum(axis=1)
    chain = (1 - MC4_TELEPORT) * step + MC4_TELEPORT / n
    assert np.allclose(pi @ chain, pi, atol=1e-14) and pi.min() > 0


@pytest.mark.parametrize("method", ORDERINGS)
def test_hand_ordering(method):
    assert ranks(HAND, NAMES, method) == {"a": 1, "b": 2, "c": 3}


@pytest.mark.parametrize("method", ORDERINGS)
def test_identical_runs_share_their_mean_rank(method):
    # "zeta" and "alpha" are the same system; "mid" is worse than both on every query
    names = ["zeta", "mid", "alpha"]
    tensor = from_scores([[2, 1, 2], [5, 0, 5], [1, 0, 1]])
    scores = ordering_scores(tensor, method)
    assert tie_key(scores)[0] == tie_key(scores)[2]
    assert ranks(tensor, names, method) == {"zeta": 1.5, "alpha": 1.5, "mid": 3}


@pytest.mark.parametrize("method", ORDERINGS)
def test_cycle_is_a_three_way_tie(method):
    # rock-paper-scissors: a > b > c > a by the same margin on different queries
    tensor = from_scores([[3, 2, 1], [1, 3, 2], [2, 1, 3]])
    assert ranks(tensor, ["c", "a", "b"], method) == {"a": 2, "b": 2, "c": 2}


def random_tensor(seed: int, n_q: int, n_runs: int, coarse: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    raw = rng.integers(-4, 5, size=(n_q, n_runs, n_runs)) / 4 if coarse else \
        rng.uniform(-1, 1, size=(n_q, n_runs, n_runs))
    return (raw - raw.transpose(0, 2, 1)) / 2


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(2, 7), st.booleans(),
       st.sampled_from(ORDERINGS), st.data())
def test_no_input_order_bias(seed, n_q, n_runs, coarse, method, data):
    tensor = random_tensor(seed, n_q, n_runs, coarse)
    names = [f"run{i}" for i in range(n_runs)]
    perm = np.array(data.draw(st.permutations(range(n_runs))))
    shuffled = tensor[:, perm][:, :, perm]
    assert ranks(tensor, names, method) == ranks(shuffled, [names[i] for i in perm], method)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(2, 7), st.booleans(),
       st.sampled_from(ORDERINGS), st.data())
def test_strictly_better_run_is_first(seed, n_q, n_runs, coarse, method, data):
    """A run that beats every other outright on every query (RPP = 1: it places every
    relevant item higher) is first. Any smaller margin is not enough, for any of the three,
    because the per-query orderings come from win rates, which weigh margins: a run that
    wins by 0.1 can have a lower win rate than one that loses to it but crushes the rest."""
    tensor = random_tensor(seed, n_q, n_runs, coarse)
    best = data.draw(st.integers(0, n_runs - 1))
    margin = 1.0
    others = [r for r in range(n_runs) if r != best]
    tensor[:, best, others] = margin
    tensor[:, others, best] = -margin
    names = [f"a{i}" for i in range(n_runs)]
    names[best] = "zz"
    assert ranks(tensor, names, method)["zz"] == 1


def test_tie_key_merges_float_noise_only():
    key = tie_key(np.array([1.0, 1.0 + 1e-15, 0.5, 0.5 - 1e-9]))
    assert key[0] == key[1] and key[2] != key[3]


def test_add_orderings_rows():
    results = Results(["q1", "q2", "q3"], NAMES)
    metric = np.array([[0.1, 0.5, 0.3], [0.2, 0.6, 0.1], [0.0, 0.4, 0.4]])
    add_orderings(results, {"rpp": HAND}, {"map": metric, "asl": 10 * metric}, {"asl"})
    rows = {(m, r): v for m, q, r, o, v in results.rows()}
    assert [rows[("rpp_mc4_rank", n)] for n in NAMES] == [1, 2, 3]
    assert [rows[("rpp_borda", n)] for n in NAMES] == [5, 3, 1]
    assert [rows[("map_rank", n)] for n in NAMES] == [3, 1, 2]
    assert [rows[("asl_rank", n)] for n in NAMES] == [1, 3, 2]  # lower is better
    assert {m for m, _ in rows} == {"rpp_win_rank", "rpp_borda", "rpp_borda_rank", "rpp_mc4",
                                    "rpp_mc4_rank", "map_rank", "asl_rank"}


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 6), st.integers(3, 7),
       st.sampled_from(["borda", "mc4"]), st.data())
def test_top_of_every_query_is_first(seed, n_q, n_runs, method, data):
    """Borda and MC4 put first the run that tops every per-query ordering (by any margin)."""
    scores = np.random.default_rng(seed).uniform(size=(n_q, n_runs))
    best = data.draw(st.integers(0, n_runs - 1))
    scores[:, best] = scores.max(axis=1) + data.draw(st.floats(1e-3, 1))
    names = [f"a{i}" for i in range(n_runs)]
    names[best] = "zz"
    assert ranks(from_scores(scores.tolist()), names, method)["zz"] == 1

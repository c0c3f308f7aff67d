"""A tie is a tie (contract §4, issue 17.3): uniform RPP is a ratio of integer counts, and a
weighted sum within the bound of its float arithmetic is exactly 0, so that ``rpp meta``'s
ties, agreement and significance never read float leftovers as preferences."""
from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from rpp_cli.populations import Populations
from rpp_cli.settings import Options
from rpp_cli.tasks import eval as eval_task
from rpp_cli.measures.preference import level_weights, pairwise

from .conftest import parse_lines, rpp, write_qrels, write_run
from .realistic import generate, write_collection
from .reference import EXACT, slow_preferences

SEEDS = range(60)


def _tensors(tmp_path, seed: int):
    """The collection of ``seed`` and rpp's rpp/invrpp tensors over its evaluated queries."""
    coll = generate(seed)
    qrels, runs = write_collection(coll, tmp_path, "mixed")
    names = tuple(f"r{i}" for i in range(len(runs)))
    ctx = eval_task.run(str(qrels), [str(p) for p in runs],
                        eval_task.EvalRequest(("rpp", "invrpp")),
                        Options(names=names)).extras["context"]
    return coll, ctx


@pytest.mark.parametrize("seed", SEEDS)
def test_ties_and_values_match_exact_rationals(tmp_path, seed: int) -> None:
    """Every (query, pair): rpp is exactly the correctly rounded ratio of integers
    Σ sgn / (levels) and invrpp is within 1e-12 of its exact rational value, 0 exactly when
    that value is 0 (contract §4)."""
    coll, ctx = _tensors(tmp_path, seed)
    exact = slow_preferences(coll.qrels, coll.runs, EXACT)
    qids = [ctx.collection.qids[q] for q in ctx.collection.evaluated]
    for (measure, q, a, b), value in exact.items():
        got = ctx.tensors[measure][qids.index(q), a, b]
        if measure == "rpp":
            assert got == float(value), (measure, q, a, b)
        else:
            assert (got == 0) == (value == 0) and got == pytest.approx(float(value), abs=1e-12)


def test_realistic_collections_have_cancelling_ties() -> None:
    """The check above is not vacuous: across the seeds, pairs tie by cancelling signs (some
    levels prefer a, some b), not only where every level ties. Weights 2^-i tell the two
    apart: their signed sum is 0 only when every level ties."""
    cancelling = 0
    for seed in SEEDS:
        coll = generate(seed)
        exact = slow_preferences(coll.qrels, coll.runs, EXACT)
        binary = slow_preferences(coll.qrels, coll.runs, {"b": lambda i: Fraction(1, 2 ** i)})
        cancelling += sum(1 for (m, q, a, b), v in exact.items()
                          if m == "rpp" and v == 0 and binary[("b", q, a, b)] != 0)
    assert cancelling > 0


def test_float_leftover_of_cancelling_inverse_weights_is_a_tie() -> None:
    """One population of 6 items; a at f = 1 4 5 10 11 12, b at 1 3 6 10 11 13: the signs are
    0 -1 +1 0 0 +1 and invrpp = (-1/2 + 1/3 + 1/6) / H_6 = 0 exactly, but the float sum of
    the weights is 1.4e-17 away. rpp = (-1 + 1 + 1) / 6 = 1/6."""
    pops = Populations(np.arange(6), np.zeros(6, dtype=np.int64), np.array([0]))
    w = level_weights(pops, "inverse")
    signs = np.array([0, -1, 1, 0, 0, 1], dtype=np.int8)
    assert np.add.reduceat(signs * w, [0])[0] != 0  # the leftover the kernel must not keep
    positions = np.array([[1, 4, 5, 10, 11, 12], [1, 3, 6, 10, 11, 13]])
    weights = np.stack([level_weights(pops, "uniform"), w], axis=1)
    out = pairwise(positions, pops, weights, 1, np.array([True, False]))
    assert out[0, 0, 0, 1] == 1 / 6
    assert out[1, 0, 0, 1] == 0 and out[1, 0, 1, 0] == 0


def test_cancelling_inverse_weights_through_the_cli(tmp_path) -> None:
    """The same case as files: invrpp prints an exact 0 (not 1e-17) at 17 decimals, and
    rpp meta counts the query as a tie for invrpp."""
    rel = [f"clueweb09-en0000-00-0000{i}" for i in range(1, 7)]
    fill = [f"GX{k:03d}-00-0000000" for k in range(20)]
    a_pos, b_pos = [1, 4, 5, 10, 11, 12], [1, 3, 6, 10, 11, 13]

    def ranking(pos: list[int]) -> list[str]:
        docs, rest = [None] * 13, iter(fill)
        for d, p in zip(rel, pos):
            docs[p - 1] = d
        return [d if d else next(rest) for d in docs]

    q = write_qrels(tmp_path / "qrels", [("106_1", d, 1) for d in rel])
    a = write_run(tmp_path / "a", {"106_1": ranking(a_pos)}, "a")
    b = write_run(tmp_path / "b", {"106_1": ranking(b_pos)}, "b")
    res = rpp("eval", "-m", "invrpp", "-m", "rpp", "--precision", "17", q, a, b)
    got = parse_lines(res.out)
    assert got[("invrpp", "all", "a", "b")] == 0
    assert res.out.split("invrpp")[1].split("\n")[0].endswith("\t0." + "0" * 17)
    assert got[("rpp", "all", "a", "b")] == pytest.approx(1 / 6)
    meta = rpp("meta", "--analysis", "ties", "-m", "invrpp", "-m", "rpp", q, a, b)
    ties = parse_lines(meta.out)
    assert ties[("ties", "all", "invrpp")] == 1 and ties[("ties", "all", "rpp")] == 0


@pytest.mark.parametrize("seed", range(0, 60, 6))
def test_meta_tie_share_is_the_exact_one(tmp_path, seed: int) -> None:
    """``rpp meta``'s ties for rpp and invrpp equal the share of (query, pair) whose exact
    rational value is 0."""
    coll = generate(seed)
    qrels, runs = write_collection(coll, tmp_path, "plain")
    names = [x for i in range(len(runs)) for x in ("--name", f"r{i}")]
    res = rpp("meta", "--analysis", "ties", "--precision", "15", "-m", "rpp", "-m", "invrpp",
              *names, qrels, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    exact = slow_preferences(coll.qrels, coll.runs, EXACT)
    for measure in ("rpp", "invrpp"):
        pairs = [v for (m, q, a, b), v in exact.items() if m == measure and a < b]
        assert got[("ties", "all", measure)] == pytest.approx(
            sum(v == 0 for v in pairs) / len(pairs), abs=1e-12)

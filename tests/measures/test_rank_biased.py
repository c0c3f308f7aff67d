"""RBP and its residual (Moffat & Zobel 2008) on rankings small enough to count by hand."""
from __future__ import annotations

from pathlib import Path

import pytest

from ..conftest import parse_lines, rpp


@pytest.fixture
def collection(tiny):
    """q1: r1 (grade 1), r2 (grade 2) relevant, n1 judged non-relevant. q2: s1 relevant.
    a ranks q1 = r1 n1 x1 r2 (x1 unjudged, depth 4) and q2 = s1; b has only q2 = z (unjudged)."""
    return tiny([("q1", "r1", 1), ("q1", "r2", 2), ("q1", "n1", 0), ("q2", "s1", 1)],
                {"a": {"q1": ["r1", "n1", "x1", "r2"], "q2": ["s1"]}, "b": {"q2": ["z"]}})


def test_by_hand(collection):
    """p = 0.5, a on q1: rbp = 0.5 (1 + 0.5^3) = 0.5625; residual = 0.5 * 0.5^2 (x1 at rank 3)
    + 0.5^4 (below depth 4) = 0.1875. a on q2: rbp = 0.5, residual = 0.5^1 = 0.5.
    b on q1 (no ranking): 0 and residual 1; b on q2: z unjudged at rank 1: 0.5 + 0.5 = 1.
    The default p = 0.8, a on q1: 0.2 (1 + 0.8^3) = 0.3024; 0.2 * 0.64 + 0.8^4 = 0.5376."""
    res = rpp("eval", "-q", "--precision", "12", "-m", "rbp.0.5", "-m", "rbp", *_args(collection))
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    want = {("rbp.0.5", "q1", "a"): 0.5625, ("rbp_res.0.5", "q1", "a"): 0.1875,
            ("rbp.0.5", "q2", "a"): 0.5, ("rbp_res.0.5", "q2", "a"): 0.5,
            ("rbp.0.5", "q1", "b"): 0.0, ("rbp_res.0.5", "q1", "b"): 1.0,
            ("rbp.0.5", "q2", "b"): 0.0, ("rbp_res.0.5", "q2", "b"): 1.0,
            ("rbp.0.5", "all", "a"): (0.5625 + 0.5) / 2,
            ("rbp_res.0.5", "all", "a"): (0.1875 + 0.5) / 2,
            ("rbp", "q1", "a"): 0.3024, ("rbp_res", "q1", "a"): 0.5376}
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_level_makes_grade_1_non_relevant(collection):
    """-l 2: only r2 (rank 4) counts on q1: rbp.0.5 = 0.5 * 0.5^3 = 0.0625; q2 has no
    relevant item at level 2 and is not evaluated (so b, which has only q2, is left out)."""
    res = rpp("eval", "-q", "-l", "2", "--precision", "12", "-m", "rbp.0.5",
              *_args(collection)[:2])
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    assert got[("rbp.0.5", "q1", "a")] == pytest.approx(0.0625, abs=1e-12)
    assert ("rbp.0.5", "q2", "a") not in got


@pytest.mark.parametrize("name", ["rbp.1", "rbp.0", "rbp.x", "rbp.-0.5", "rbp.nan", "rbp."])
def test_bad_persistence(collection, name):
    res = rpp("eval", "-m", name, *_args(collection))
    assert res.code == 2
    assert res.err == f"rpp: measure '{name}': the persistence must be a number in (0, 1)\n"


def test_residual_is_not_tested_or_gated(collection):
    """compare tests rbp but not its residual (it bounds uncertainty, it does not score runs);
    --max-drop accepts rbp.0.5 as one metric."""
    res = rpp("compare", "-m", "rbp.0.5", *_args(collection))
    assert res.code == 0, res.err
    lines = parse_lines(res.out)
    assert ("rbp.0.5_diff", "all", "a", "b") in lines
    assert not any(k[0].startswith("rbp_res") for k in lines)
    assert "no per-query values" not in res.err
    qrels, a, _ = _args(collection)  # b ranks no judged document: a gate it could not fail
    again = Path(a).with_name("a_again")
    again.write_bytes(Path(a).read_bytes())
    res = rpp("check", "--baseline", str(a), "--max-drop", "rbp.0.5=1",
              "-m", "rbp.0.5", "--test", "ttest", qrels, again)
    assert res.code in (0, 1), res.err
    assert "rbp.0.5_drop" in res.out


def test_listed():
    res = rpp("measures")
    assert any(line.startswith("rbp\t") and "persistence" in line for line in res.out.splitlines())


def _args(collection):
    qrels, runs = collection
    return [qrels, *runs]

"""``--binary``: pref_eval reads graded qrels as binary (every relevant item in one population),
where rpp's graded populations are the paper's (one per grade level). With ``--binary`` rpp on
the graded qrels gives pref_eval's own numbers (tests/golden/pref_eval: pref_eval ran on the
same collections with the grades made binary), and equals rpp on binary qrels everywhere."""
from __future__ import annotations

import re

import pytest

import rpp_cli

from .. import realistic
from ..conftest import parse_lines, rpp
from .test_pref_eval_goldens import GOLDEN, MEASURES, _pref_eval

SEEDS = {"seed2": 2, "seed7": 7, "seed17": 17}


def _graded(seed: str, tmp_path) -> tuple:
    """The graded qrels of the collection pref_eval's golden was made from, each pair once
    with its largest grade (checked: made binary, they are the golden's qrels), and the
    golden's runs."""
    coll = realistic.generate(SEEDS[seed])
    graded = [[q, "0", d, str(g)] for q, docs in coll.qrels.items() for d, g in docs.items()]
    qrels = tmp_path / f"{seed}.graded"
    qrels.write_text("".join(" ".join(line) + "\n" for line in graded))
    golden = [line.split() for line in (GOLDEN / seed / "qrels").read_text().splitlines()]
    assert sorted((q, d, str(int(int(g) > 0))) for q, _, d, g in graded) == \
        sorted((q, d, g) for q, _, d, g in golden)
    runs = sorted(p for p in (GOLDEN / seed).iterdir() if re.fullmatch(r"r\d+", p.name))
    return qrels, runs, graded


def _eval(qrels, runs, *flags: str) -> dict:
    """rpp eval -q of the three preference measures, to 17 decimals."""
    res = rpp("eval", "-q", "--precision", "17", *[a for m in MEASURES for a in ("-m", m)],
              *flags, qrels, *runs)
    assert res.code == 0, res.err
    return parse_lines(res.out)


@pytest.mark.parametrize("seed", sorted(SEEDS))
def test_binary_on_graded_qrels_gives_pref_eval(seed, tmp_path):
    qrels, runs, _ = _graded(seed, tmp_path)
    want = _pref_eval(seed)
    got = _eval(qrels, runs, "--binary", "--corpus-size", "1000000000")
    assert len(want) >= 15
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key


def test_graded_populations_differ_from_pref_eval_where_grades_differ(tmp_path):
    """Without --binary the graded collections give other values than pref_eval's, on queries
    with two or more relevant grades only (the reason the option exists)."""
    differ, multi = set(), set()
    for seed in SEEDS:
        qrels, runs, graded = _graded(seed, tmp_path)
        got = _eval(qrels, runs, "--corpus-size", "1000000000")
        differ |= {(seed, key[1]) for key, value in _pref_eval(seed).items()
                   if key[1] != "all" and abs(got[key] - value) > 1e-12}
        grades: dict[str, set] = {}
        for q, _, _, g in graded:
            if int(g) > 0:
                grades.setdefault(q, set()).add(g)
        multi |= {(seed, q) for q, g in grades.items() if len(g) > 1}
    assert differ and differ <= multi


@pytest.mark.parametrize("level", [None, "2"])
def test_binary_equals_rpp_on_binary_qrels(level, tmp_path):
    """The literal reference: --binary on graded qrels is rpp on the qrels with every relevant
    grade (>= L with -l) made 1 and every other 0, at the default corpus size too."""
    for seed in SEEDS:
        qrels, runs, graded = _graded(seed, tmp_path)
        cut = 1 if level is None else int(level)
        flat = tmp_path / f"{seed}.binary"
        flat.write_text("".join(f"{q} 0 {d} {int(int(g) >= cut)}\n" for q, _, d, g in graded))
        at = () if level is None else ("-l", level)
        assert _eval(qrels, runs, "--binary", *at) == _eval(flat, runs)


def test_levels_binary_has_one_population_per_query(tmp_path):
    qrels, runs, graded = _graded("seed7", tmp_path)
    lines = rpp("levels", "--binary", "--format", "jsonl", qrels, runs[0], runs[1]).out
    populations = set(re.findall(r'"qid": "([^"]*)".*?"population": "([^"]*)"', lines))
    queries = {q for q, _ in populations if q != "all"}
    assert queries and len(populations - {p for p in populations if p[0] == "all"}) == \
        len(queries)
    assert {p for q, p in populations if q != "all"} == {">=1"}


def test_the_api_takes_binary(tmp_path):
    qrels, runs, _ = _graded("seed2", tmp_path)
    got = rpp_cli.evaluate(str(qrels), [str(r) for r in runs], ["rpp"], per_query=True,
                           binary=True, corpus_size=1000000000, notes=[])
    want = _pref_eval("seed2")
    rows = {tuple(row[:4]): row[4] for row in got.rows() if row[3] is not None}
    for key, value in want.items():
        if key[0] == "rpp":
            assert rows[key] == pytest.approx(value, abs=1e-12), key
    with pytest.raises(rpp_cli.InputError, match="binary: expected True or False"):
        rpp_cli.evaluate(str(qrels), [str(r) for r in runs], ["rpp"], binary="yes")

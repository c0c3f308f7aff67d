"""The ranks of system orderings (``--orderings``: M_rank, M_win_rank, M_borda_rank,
M_mc4_rank) print as the integer or half they are, ``4`` or ``2.5``, in every format and at any
--precision (a number in jsonl and csv); every other value keeps its decimals."""
from __future__ import annotations

import json

import pytest

from rpp_cli.report.common import COUNT, FIXED, RANK, styles

from ..conftest import rpp, write_qrels, write_run
from .test_formats import PARSERS, parse_trec

RANKS = ("rpp_win_rank", "rpp_borda_rank", "rpp_mc4_rank", "map_rank", "recip_rank_rank")
MEASURES = ("-m", "rpp", "-m", "map", "-m", "recip_rank", "-m", "num_ret")


def _collection(tmp_path, names: list[str]):
    """Two queries (106_1 and 7), each judging two documents relevant, and runs that rank
    them, per query: best [R1, R2, N], the twins [N, R1, R2] (twin-a.run, twin_b.run: one
    ranking under two names), worst [N, N2, R1]. By hand, on both queries: AP 1, 7/12, 7/12,
    1/6; RR 1, 1/2, 1/2, 1/3; best is preferred to every other run and the twins to worst,
    the twins tie; so every ordering (win rate, Borda 6, 3, 3, 0, MC4, the metrics' means)
    puts best 1st, the twins at 2.5 (places 2 and 3 shared) and worst 4th."""
    docs = {"106_1": ("clueweb09-en0003-55-31884", "d7", "msmarco_passage_01_2049152006",
                      "São_Paulo_2"),
            "7": ("0830aa511faf2f97175d6caf635e067ad8053db9", "22884", "x",
                  "clueweb12-0000tw-05-12114")}
    qrels = write_qrels(tmp_path / "qrels", [(q, d, g) for q, (r1, r2, n, _) in docs.items()
                                             for d, g in ((r1, 1), (r2, 2), (n, 0))])
    orders = {"best.run": (0, 1, 2), "twin-a.run": (2, 0, 1), "twin_b.run": (2, 0, 1),
              "worst.run": (2, 3, 0)}
    runs = [write_run(tmp_path / name, {q: [d[i] for i in orders[name]] for q, d in docs.items()},
                      tag=name.split(".")[0].replace(" ", "_"))
            for name in names]
    return qrels, runs


def _ranks(fmt: str, tmp_path, names: list[str], precision: str = "4") -> dict:
    """{(measure, run): printed value} of the rank rows of ``rpp eval --orderings``, and the
    whole output parsed."""
    qrels, runs = _collection(tmp_path, names)
    res = rpp("eval", "--orderings", "--precision", precision, *MEASURES, "--format", fmt,
              qrels, *runs)
    assert res.code == 0, res.err
    values = parse_trec(res.out) if fmt == "trec" else PARSERS[fmt](res.out)
    return values, res.out


ALL_FOUR = ["best.run", "twin-a.run", "twin_b.run", "worst.run"]
WANT = {"best.run": "1", "twin-a.run": "2.5", "twin_b.run": "2.5", "worst.run": "4"}


@pytest.mark.parametrize("fmt", ["trec", *sorted(PARSERS)])
@pytest.mark.parametrize("precision", ["0", "4", "9"])
def test_hand_computed_ranks_print_as_integers_and_halves(tmp_path, fmt, precision):
    values, _ = _ranks(fmt, tmp_path, ALL_FOUR, precision)
    for measure in RANKS:
        got = {run: values[(measure, "all", run, None)] for run in ALL_FOUR}
        assert got == WANT, (measure, got)
    decimals = int(precision)
    twin_rr = values[("recip_rank", "all", "twin-a.run", None)]
    assert twin_rr == f"{0.5:.{decimals}f}"  # recip_rank is a measure, not a rank
    assert values[("map", "all", "worst.run", None)] == f"{1 / 6:.{decimals}f}"
    assert values[("num_ret", "all", "best.run", None)] == "6"  # a count, as before


def test_a_tie_at_the_top_shares_places_one_and_two(tmp_path):
    values, _ = _ranks("trec", tmp_path, ["twin-a.run", "worst.run", "twin_b.run"])
    for measure in RANKS:
        assert [values[(measure, "all", run, None)] for run in
                ("twin-a.run", "worst.run", "twin_b.run")] == ["1.5", "3", "1.5"], measure


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_machine_formats_give_ranks_as_numbers_a_script_compares(tmp_path, fmt):
    """jsonl: the JSON numbers 1, 2.5, 4 (an int where the rank is whole); csv: the same
    text, which float() reads."""
    _, out = _ranks(fmt, tmp_path, ALL_FOUR)
    if fmt == "jsonl":
        rows = [json.loads(line) for line in out.splitlines()]
        got = {(r["measure"], r["run"]): r["value"] for r in rows if r["measure"] in RANKS}
        assert {type(v) for v in got.values()} == {int, float}
        assert all(got[(m, run)] == float(WANT[run]) for m in RANKS for run in ALL_FOUR)
        assert all(type(got[(m, "best.run")]) is int for m in RANKS)
    else:
        lines = [line for line in out.splitlines() if line.split(",")[0] in RANKS]
        assert len(lines) == len(RANKS) * 4
        assert {line.rsplit(",", 1)[1] for line in lines} == {"1", "2.5", "4"}


def test_a_rank_is_an_ordering_of_a_measure_in_the_same_table():
    """M_rank is a rank when M is a measure of the table: trec_eval's recip_rank is not one
    (no measure 'recip'), its ordering recip_rank_rank is; no measure -m accepts is a rank."""
    assert styles(["recip_rank", "recip_rank_rank", "rpp_win", "rpp_win_rank", "num_ret",
                   "P_10_rank"]) == [FIXED, RANK, FIXED, RANK, COUNT, FIXED]
    names = [line.split("\t")[0] for line in rpp("measures").out.splitlines()]
    assert len(names) > 50 and "recip_rank" in names
    assert RANK not in styles(names)
    assert styles(names + [f"{n}_rank" for n in names])[len(names):] == [RANK] * len(names)

"""``rpp compare --ci`` and ``rpp check --confidence`` against scipy's own numbers on the same
per-query values: t, bootstrap percentile and BCa intervals (the same resamples), Hedges'
g_z, Wilcoxon and sign p-values, Benjamini-Hochberg and -Yekutieli, the non-inferiority
bound; to 1e-12, on the demo, the demo with a copy of a run, a generated 60-query collection
and realistic ones (string qids, ties, negative grades, runs missing queries).

Two ways: the committed goldens (tests/golden/scipy: the per-query values in inputs.json,
scipy's numbers on them in values.tsv, both made by make_goldens.py) through compare's and
check's own code, whatever the evaluation does; and end to end, the command line against
scipy run here on the values this checkout's evaluation gives.

Where scipy has no number rpp has its documented one: a constant pair's BCa interval is the
point [mean, mean] (scipy: NaN) and the Wilcoxon p of all-zero values is 1 (scipy: NaN)."""
from __future__ import annotations

import importlib.util
import json
import math
import re
import warnings
from collections import defaultdict
from types import SimpleNamespace

import numpy as np
import pytest

from rpp_cli.results import ALL
from rpp_cli.tasks import compare as compare_task
from rpp_cli.tasks.check import non_inferior

from .conftest import ROOT, rpp, tiered

GOLDEN_DIR = ROOT / "tests" / "golden" / "scipy"
TOLERANCE = 1e-12
# (interval, test, correction) asked, and the golden statistics each answers: the interval's
# ends, the p-value, and the effect size
ASKED = {("t", "wilcoxon", "none"): ("t", "wilcoxon"),
         ("percentile", "wilcoxon", "bh"): ("percentile", "wilcoxon_bh"),
         ("bca", "wilcoxon", "by"): ("bca", "wilcoxon_by"),
         ("t", "sign", "none"): ("t", "sign")}


def _load_generator():
    """make_goldens.py as a module: the collections it writes and its scipy calls (the end to
    end test makes them on this checkout's values)."""
    spec = importlib.util.spec_from_file_location("make_scipy_goldens",
                                                  GOLDEN_DIR / "make_goldens.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATOR = _load_generator()
INPUTS = json.loads((GOLDEN_DIR / "inputs.json").read_text())


def _goldens() -> dict[str, dict[tuple[str, str, str, str], float]]:
    """{source: {(measure, run, other, statistic): value}}."""
    out: dict[str, dict] = defaultdict(dict)
    for line in (GOLDEN_DIR / "values.tsv").read_text().splitlines():
        if not line.startswith("#"):
            source, measure, run, other, statistic, value = line.split("\t")
            out[source][measure, run, other, statistic] = float(value)
    return out


GOLDEN = _goldens()


def close(got: float, want: float) -> bool:
    """Equal to 1e-12 (absolute, or relative past 1), infinities and NaN equal to
    themselves."""
    if math.isnan(want) or math.isinf(want):
        return got == want or (math.isnan(got) and math.isnan(want))
    return abs(got - want) <= TOLERANCE * max(1.0, abs(want))


def effect_name(measure: str) -> str:
    """The comparison's effect row of ``measure``."""
    return measure if measure == "rpp" else f"{measure}_diff"


def check_rows(rows: dict[tuple[str, str, str], float],
               golden: dict[tuple[str, str, str, str], float], prefix: str, p_name: str,
               where: str) -> int:
    """Assert compare's ``rows`` {(row, run, other): value} equal scipy's ``golden`` for the
    interval ``prefix``, the p-value ``p_name`` and the effect size; how many were checked."""
    checked = 0
    for (measure, run, other, statistic), want in golden.items():
        if statistic not in (p_name, f"{prefix}_low", "d"):
            continue
        if statistic == p_name:
            got = rows[f"{measure}_p", run, other]
            want = 1.0 if math.isnan(want) else want  # scipy's NaN: values all 0
            assert got == rows[f"{measure}_p", other, run]
        elif statistic == "d":
            got = rows[f"{measure}_d", run, other]
            assert got == -rows[f"{measure}_d", other, run] or math.isnan(got)
        else:
            high = golden[measure, run, other, f"{prefix}_high"]
            got, got_high = (rows[f"{measure}_ci_{end}", run, other] for end in ("low", "high"))
            assert (got, got_high) == (-rows[f"{measure}_ci_high", other, run],
                                       -rows[f"{measure}_ci_low", other, run])
            if math.isnan(want):  # a constant pair: the point interval
                assert math.isnan(high)
                assert got == got_high == rows[effect_name(measure), run, other]
                checked += 1
                continue
            assert close(got_high, high), (where, measure, run, other, prefix)
        assert close(got, want), (where, measure, run, other, statistic, got, want)
        checked += 1
    return checked


def expected_count(golden: dict) -> int:
    """How many numbers :func:`check_rows` checks over ASKED."""
    per_statistic: dict[str, int] = defaultdict(int)
    for key in golden:
        per_statistic[key[3]] += 1
    return sum(per_statistic[f"{prefix}_low"] + per_statistic[p_name] + per_statistic["d"]
               for prefix, p_name in ASKED.values())


def test_the_goldens_cover_every_source_and_the_degenerate_cases():
    assert set(GOLDEN) == set(INPUTS) == {"demo", "copy", "gen60", *(
        f"realistic{s}" for s in GENERATOR.REALISTIC_SEEDS)}
    copy = GOLDEN["copy"]
    assert math.isnan(copy["map", "monot5", "monot5.copy", "bca_low"])  # scipy: degenerate
    assert math.isnan(copy["map", "monot5", "monot5.copy", "wilcoxon"])
    assert len(INPUTS["gen60"]["values"]["map"]) == 60  # Wilcoxon's normal approximation
    assert min(len(v["values"]["rpp"]) for v in INPUTS.values()) == 3  # exact enumeration


def golden_context(source: str) -> SimpleNamespace:
    """What compare reads of an evaluation, from inputs.json: the run names, each measure's
    per-query values."""
    data = INPUTS[source]
    values = {m: np.array(v, dtype=np.float64) for m, v in data["values"].items()}
    n_q = max(len(v) for v in values.values())
    return SimpleNamespace(
        collection=SimpleNamespace(qids=[f"q{i}" for i in range(n_q)], run_names=data["runs"]),
        tensors={m: v for m, v in values.items() if v.ndim == 3},
        metrics={m: v for m, v in values.items() if v.ndim == 2})


@pytest.mark.parametrize("source", sorted(GOLDEN))
def test_compare_rows_on_the_committed_values_equal_scipys(source):
    ctx = golden_context(source)
    names = [(m, m in ctx.tensors) for m in GENERATOR.MEASURES]
    checked = 0
    for (interval, test, correction), (prefix, p_name) in ASKED.items():
        request = compare_task.CompareRequest((), test, correction, 100, 2022, 0.95, interval)
        results = compare_task.compare(ctx, names, request)
        rows = {(m, r, o): v for m, q, r, o, v in results.rows() if q == ALL}
        checked += check_rows(rows, GOLDEN[source], prefix, p_name, source)
    assert checked == expected_count(GOLDEN[source]) > 0


@pytest.mark.parametrize("source", sorted(GOLDEN))
def test_the_non_inferiority_bound_on_the_committed_values_equals_scipys(source):
    """The gate's decision on run 0 as baseline and every other run as candidate: the bound
    of the per-query drops map(0) - map(c) is scipy's one-sided bound."""
    ctx = golden_context(source)
    values, names = ctx.metrics["map"], ctx.collection.run_names
    drops = values[:, :1] - values[:, 1:]
    bound, passed = non_inferior(drops, 0.05, 0.95)
    for c, name in enumerate(names[1:]):
        assert close(bound[c], GOLDEN[source]["map", names[0], name, "drop_bound"])
        assert passed[c] == (bound[c] < 0.05)


@pytest.fixture(scope="module")
def collections(tmp_path_factory) -> dict[str, tuple[str, list[str]]]:
    """The goldens' collections, written as the generator writes them."""
    return GENERATOR.sources(tmp_path_factory.mktemp("scipy_goldens"))


def compare_rows(qrels: str, runs: list[str], *args: str) -> dict[tuple, float]:
    """{(measure, run, other): value} of ``rpp compare -m rpp -m map -m P.10 ARGS`` as jsonl
    with every digit (NaN for a null)."""
    res = rpp("compare", "-Q", "--format", "jsonl", "--precision", "17", "-m", "rpp", "-m",
              "map", "-m", "P.10", *args, qrels, *runs)
    assert res.code == 0, res.err
    rows = [json.loads(line) for line in res.out.splitlines()]
    return {(r["measure"], r["run"], r["other"]): math.nan if r["value"] is None
            else float(r["value"]) for r in rows}


@pytest.mark.parametrize("source", tiered(["demo", "copy", "gen60", "realistic2",
                                             "realistic4"]))
def test_the_command_line_equals_scipy_on_this_evaluation(source, collections):
    """End to end: rpp compare's jsonl (every digit) against scipy on the per-query values
    this checkout evaluates, and rpp check's bound and verdict line."""
    qrels, runs = collections[source]
    names, measured = GENERATOR.evaluated(qrels, runs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy on degenerate data
        golden = {(m, *key): value for m, values in measured.items()
                  for key, value in GENERATOR.scipy_values(names, values, m).items()}
    checked = 0
    for (interval, test, correction), (prefix, p_name) in ASKED.items():
        rows = compare_rows(qrels, runs, "--ci", "0.95", "--interval", interval, "--test",
                            test, "--correction", correction)
        checked += check_rows(rows, golden, prefix, p_name, source)
    assert checked == expected_count(golden) > 0
    res = rpp("check", "-Q", "--format", "jsonl", "--precision", "17", "--baseline", runs[0],
              "-m", "rpp", "--max-drop", "map=0.05", "--confidence", "0.95", qrels, *runs[1:])
    assert res.code in (0, 1), res.err
    rows = {(r["measure"], r["run"]): r for r in map(json.loads, res.out.splitlines())}
    lines = [v.split("\t") for v in res.err.splitlines()]
    for name in names[1:]:
        want = golden["map", names[0], name, "drop_bound"]
        bound = rows["map_drop_bound", name]
        assert close(float(bound["value"]), want), (source, name)
        assert bound["verdict"] == ("PASS" if float(bound["value"]) < 0.05 else "FAIL")
        line = next(v for v in lines if v[1] == name and v[2] == "map")
        shown = re.search(r"95% upper bound ([-+][0-9.]+) (<|>=) 0.05 \(one-sided t, "
                          r"([0-9]+) queries\)", line[3])
        assert line[0] == bound["verdict"] and close(float(shown[1]), want)
        assert int(shown[3]) == len(measured["map"])

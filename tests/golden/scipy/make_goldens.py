#!/usr/bin/env python3
"""Write inputs.json and values.tsv: the paired per-query values of real-looking collections
and scipy's intervals, effect sizes, p-values and corrections on them, the goldens of
tests/test_scipy_goldens.py. Run from the repository root:

    .venv/bin/python tests/golden/scipy/make_goldens.py

The inputs are the per-query values ``rpp compare`` tests: for every pair of runs (a, b),
a before b as given, RPP(a, b) per query for ``rpp`` and m(a) - m(b) for ``map`` and
``P_10``, taken from rpp's evaluation (``rpp_cli.pipeline.evaluate_runs`` and
``rpp_cli.stats.pair_values``, which zeroes a metric difference within 1e-12 of its values);
inputs.json keeps those values, every digit (per source: the run names, and per measure
rpp's (Q, R, R) tensor or the metric's (Q, R) values), so that the goldens stay a test of the
statistics whatever the evaluation does; everything after that is scipy's (scipy 1.17 made
the committed file):

- ``t_low``, ``t_high``: ``ttest_1samp(d, 0).confidence_interval(0.95)``;
- ``percentile_*``, ``bca_*``: ``bootstrap((d,), np.mean, n_resamples=9999,
  rng=numpy.random.default_rng(2022), method=...)``, on the pair oriented by name (the
  runs sorted by name, as rpp resamples; d negated and the ends swapped back when a's name
  sorts after b's);
- ``d``: Hedges' g_z, ``ttest_1samp(d, 0).statistic / sqrt(n)`` times
  ``exp(loggamma(df/2) - loggamma((df-1)/2)) / sqrt(df/2)``, df = n - 1;
- ``wilcoxon``: ``wilcoxon(d).pvalue`` with its defaults, on d rounded to 12 decimals (so
  that values equal in exact arithmetic, 0.3 - 0.2 and 0.2 - 0.1, tie as rpp ties them);
- ``sign``: ``binomtest(#positive, #non-zero).pvalue``;
- ``wilcoxon_bh``, ``wilcoxon_by``: ``false_discovery_control`` of the measure's wilcoxon
  p-values over its pairs (NaN, scipy's p of all-zero values, taken as 1 first);
- ``drop_bound`` (map): ``ttest_1samp(d, 0, alternative="less").confidence_interval(0.95)
  .high``, the non-inferiority bound of ``rpp check --baseline a b --max-drop map=...
  --confidence 0.95`` (d = map(a) - map(b) is b's drop).

NaN is written where scipy gives NaN (a degenerate bootstrap, the Wilcoxon test of zeros);
``d`` of a pair whose values are all equal is rpp's definition (0, or an infinity of their
sign: no spread to measure by), d of 2 queries NaN (Hedges' J(1) is 0).
"""
from __future__ import annotations

import json
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import loggamma

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "fixtures"))

from make_collection import generate as make_collection  # noqa: E402
from rpp_cli.measures import resolve  # noqa: E402
from rpp_cli.pipeline import evaluate_runs  # noqa: E402
from rpp_cli.settings import Options  # noqa: E402
from rpp_cli.stats import pair_values  # noqa: E402
from tests.realistic import generate, write_collection  # noqa: E402

MEASURES = ("rpp", "map", "P_10")
REALISTIC_SEEDS = (0, 2, 3, 4, 6, 7, 10)  # those with 3 or more queries with a relevant item
LEVEL, RESAMPLES, SEED = 0.95, 9999, 2022


def sources(tmp: Path) -> dict[str, tuple[str, list[str]]]:
    """{source: (qrels path, run paths)}: the demo, the demo with a copy of a run, a
    generated 60-query collection and the realistic collections (the test writes the same
    files)."""
    out = {"demo": (str(ROOT / "fixtures/demo/qrels"),
                    sorted(str(p) for p in (ROOT / "fixtures/demo/runs").iterdir()))}
    out["copy"] = write_copy(tmp / "copy")
    out["gen60"] = write_gen60(tmp / "gen60")
    for seed in REALISTIC_SEEDS:
        qrels, runs = write_collection(generate(seed), tmp / f"realistic{seed}", "plain")
        out[f"realistic{seed}"] = (str(qrels), [str(p) for p in runs])
    return out


def write_copy(directory: Path) -> tuple[str, list[str]]:
    """The demo's monot5 and bm25 and a byte copy of monot5 (``monot5.copy``): a pair whose
    per-query values are all 0 (scipy: a degenerate bootstrap, Wilcoxon's NaN)."""
    directory.mkdir(parents=True)
    runs = []
    for source, name in (("monot5", "monot5"), ("bm25", "bm25"), ("monot5", "monot5.copy")):
        path = directory / name
        path.write_bytes((ROOT / "fixtures/demo/runs" / source).read_bytes())
        runs.append(str(path))
    return str(ROOT / "fixtures/demo/qrels"), runs


def write_gen60(directory: Path) -> tuple[str, list[str]]:
    """fixtures/make_collection.py's collection of 5 runs x 60 queries (depth 50, mixed
    docnos, seed 7): more than 50 queries, Wilcoxon's normal approximation."""
    make_collection(str(directory), n_runs=5, n_queries=60, depth=50, seed=7,
                    docno_style="mixed")
    return str(directory / "qrels"), sorted(str(p) for p in (directory / "runs").iterdir())


def hedges(df: int) -> float:
    """Hedges' exact correction J(df)."""
    return float(np.exp(loggamma(df / 2) - loggamma((df - 1) / 2)) / np.sqrt(df / 2))


def pair_rows(d: np.ndarray, flipped: bool) -> dict[str, float]:
    """scipy's numbers for one pair's per-query values ``d``."""
    n = len(d)
    row: dict[str, float] = {}
    t = stats.ttest_1samp(d, 0.0)
    ci = t.confidence_interval(LEVEL)
    row["t_low"], row["t_high"] = float(ci.low), float(ci.high)
    if (d == d[0]).all():  # no spread: rpp's definition, 0 or an infinity of the sign
        row["d"] = 0.0 if d[0] == 0 else float(np.copysign(np.inf, d[0]))
    else:
        row["d"] = float(t.statistic / np.sqrt(n) * hedges(n - 1)) if n > 2 else float("nan")
    oriented = -d if flipped else d
    for method in ("percentile", "bca"):
        res = stats.bootstrap((oriented,), np.mean, n_resamples=RESAMPLES, method=method,
                              confidence_level=LEVEL, rng=np.random.default_rng(SEED))
        low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
        row[f"{method}_low"], row[f"{method}_high"] = (-high, -low) if flipped else (low, high)
    nonzero = int(np.count_nonzero(d))
    row["wilcoxon"] = float(stats.wilcoxon(np.round(d, 12)).pvalue) if nonzero else float("nan")
    row["sign"] = (float(stats.binomtest(int((d > 0).sum()), nonzero).pvalue) if nonzero
                   else 1.0)
    row["drop_bound"] = float(stats.ttest_1samp(d, 0.0, alternative="less")
                              .confidence_interval(LEVEL).high)
    return row


def evaluated(qrels: str, runs: list[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The run names and each measure's per-query values as rpp compare tests them: rpp's
    (Q, R, R) tensor, a metric's (Q, R) values."""
    ctx = evaluate_runs(qrels, runs, resolve(["rpp", "map", "P.10"]), Options(), False, [])
    return ctx.collection.run_names, {m: ctx.tensors[m] if m == "rpp" else ctx.metrics[m]
                                      for m in MEASURES}


def scipy_values(names: list[str], values: np.ndarray, measure: str
                 ) -> dict[tuple[str, str, str], float]:
    """{(run, other, statistic): scipy's value} of one measure's values (Q, R) or (Q, R, R)
    for every pair of runs, the first before the second as given."""
    ia, ib = np.triu_indices(len(names), 1)
    x = pair_values(values)
    rows = [pair_rows(x[:, k], names[a] > names[b]) for k, (a, b) in enumerate(zip(ia, ib))]
    p = np.nan_to_num(np.array([r["wilcoxon"] for r in rows]), nan=1.0)
    for method in ("bh", "by"):
        for r, q in zip(rows, stats.false_discovery_control(p, method=method)):
            r[f"wilcoxon_{method}"] = float(q)
    with_bound = measure == "map"
    return {(names[a], names[b], key): value for (a, b), r in zip(zip(ia, ib), rows)
            for key, value in r.items() if key != "drop_bound" or with_bound}


def main() -> None:
    """Write inputs.json (each source's run names and per-query values, every digit) and
    values.tsv (scipy's numbers on them)."""
    lines = [f"# made by tests/golden/scipy/make_goldens.py with scipy {_version()}",
             "# source\tmeasure\trun\tother\tstatistic\tvalue"]
    inputs = {}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # scipy's warnings on degenerate data: NaN is written
        for source, (qrels, runs) in sources(Path(tmp)).items():
            names, measured = evaluated(qrels, runs)
            inputs[source] = {"runs": names,
                              "values": {m: v.tolist() for m, v in measured.items()}}
            for measure, values in measured.items():
                for (run, other, key), value in scipy_values(names, values, measure).items():
                    lines.append(f"{source}\t{measure}\t{run}\t{other}\t{key}\t{value!r}")
    (HERE / "values.tsv").write_text("\n".join(lines) + "\n")
    (HERE / "inputs.json").write_text(json.dumps(inputs, indent=None) + "\n")


def _version() -> str:
    """scipy's version."""
    import scipy

    return scipy.__version__


if __name__ == "__main__":
    main()

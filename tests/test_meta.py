"""Meta-evaluation on the demo collection, checked against independent computations."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rpp_cli.evaluate import Options
from rpp_cli.meta import MetaOptions, plan_meta, random_subsets, subsample_judgments

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
RUNS = sorted(str(p) for p in (DEMO / "runs").iterdir())
MEASURES = ["rpp", "map", "asl"]


def run_meta(**kw):
    """(Meta, {(measure, run, other): value}) after running every job."""
    notes: list[str] = []
    meta = plan_meta(str(DEMO / "qrels"), RUNS, MEASURES, Options(), MetaOptions(**kw), notes)
    for job in meta.jobs():
        job()
    return meta, {(m, r, o): v for m, q, r, o, v in meta.results.rows()}


@pytest.fixture(scope="module")
def base():
    """Per-query values computed once: (ctx, oriented {name: values})."""
    meta, _ = run_meta(analyses=())
    return meta.ctx, {s.name: s.values for s in meta.subjects}


def win_or_mean(values: np.ndarray, rows: np.ndarray | slice = slice(None)) -> np.ndarray:
    """Mean win rate (preference) or mean (metric) over the query rows, computed directly."""
    v = values[rows]
    if v.ndim == 3:
        return (v.sum(axis=2) / (v.shape[1] - 1)).mean(axis=0)
    return v.mean(axis=0)


def test_power_ttest_matches_scipy_and_bonferroni(base):
    ctx, values = base
    _, rows = run_meta(analyses=("power",), permutations=200)
    n_runs = len(ctx.collection.run_names)
    pairs = [(a, b) for a in range(n_runs) for b in range(a + 1, n_runs)]
    for name, v in values.items():
        p = []
        for a, b in pairs:
            x = v[:, a, b] if v.ndim == 3 else v[:, a] - v[:, b]
            p.append(scipy_stats.ttest_1samp(x, 0.0).pvalue)
        share = np.mean([min(1.0, pv * len(pairs)) < 0.05 for pv in p])
        assert rows[("power_ttest", name, None)] == pytest.approx(share)
        assert 0 <= rows[("power_hsd", name, None)] <= 1


def test_agreement_matches_scipy_kendalltau(base):
    _, values = base
    _, rows = run_meta(analyses=("agreement",), ordering="win")
    for a in values:
        for b in values:
            if a != b:
                ref = scipy_stats.kendalltau(win_or_mean(values[a]), win_or_mean(values[b]))
                assert rows[("agreement_tau", a, b)] == pytest.approx(ref.statistic, abs=1e-12)


def test_robustness_deterministic_and_seeded():
    kw = dict(analyses=("robustness",), samples=50, query_counts=(3, 10))
    _, first = run_meta(**kw)
    _, again = run_meta(**kw)
    _, other = run_meta(seed=99, **kw)
    assert first == again
    assert first != other
    assert set(first) == {(f"robust_queries_{k}", m, None) for k in (3, 10) for m in
                          ["rpp", "map", "asl"]}


def test_robustness_tau_is_one_with_all_queries(base):
    ctx, _ = base
    n_q = len(ctx.collection.qids)
    _, rows = run_meta(analyses=("robustness",), samples=5, query_counts=(n_q,))
    assert set(rows.values()) == {1.0}


def test_robustness_matches_scipy_on_the_same_subsets(base):
    ctx, values = base
    n_q, k, samples = len(ctx.collection.qids), 7, 30
    _, rows = run_meta(analyses=("robustness",), samples=samples, query_counts=(k,),
                       ordering="win")
    (w,) = random_subsets(np.random.default_rng([2022, 2, k]), samples, n_q, (k,))
    for name, v in values.items():
        taus = [scipy_stats.kendalltau(win_or_mean(v, w[s] > 0), win_or_mean(v)).statistic
                for s in range(samples)]
        assert rows[(f"robust_queries_{k}", name, None)] == pytest.approx(np.nanmean(taus))


def test_judged_fraction_one_keeps_everything():
    _, rows = run_meta(analyses=("robustness",), samples=2, query_counts=(5,),
                       judged_fractions=(1.0,), judged_samples=2)
    assert [rows[("robust_judged_1.00", m, None)] for m in MEASURES] == [1.0, 1.0, 1.0]


def test_subsample_judgments(base):
    ctx, _ = base
    coll = ctx.collection
    sub = subsample_judgments(coll, 0.5, np.random.default_rng(1))
    again = subsample_judgments(coll, 0.5, np.random.default_rng(1))
    assert sub.item_docno == again.item_docno
    sizes, kept = np.bincount(coll.item_query), np.bincount(sub.item_query)
    assert np.array_equal(kept, np.maximum(1, sizes // 2))
    assert np.array_equal(sub.corpus_size, coll.corpus_size)
    kept = set(sub.item_doc.tolist())
    for doc in coll.item_doc.tolist():  # a dropped relevant judgment is no judgment at all
        assert (not np.isnan(sub.judged.grade[doc])) == (doc in kept)
    assert np.array_equal(coll.judged.grade <= 0, sub.judged.grade <= 0)  # non-relevant kept


def test_predictive_matches_scipy_on_the_same_splits(base):
    ctx, values = base
    n_q, samples = len(ctx.collection.qids), 40
    _, rows = run_meta(analyses=("predictive",), samples=samples, ordering="win")
    again = run_meta(analyses=("predictive",), samples=samples, ordering="win")[1]
    assert rows == again
    w1, w2 = random_subsets(np.random.default_rng([2022, 4]), samples, n_q, (n_q // 2,) * 2)
    assert not (w1 * w2).any() and (w1.sum(axis=1) == n_q // 2).all()
    for a in values:
        for b in values:
            taus = [scipy_stats.kendalltau(win_or_mean(values[a], w1[s] > 0),
                                           win_or_mean(values[b], w2[s] > 0)).statistic
                    for s in range(samples)]
            assert rows[("predictive_tau", a, b)] == pytest.approx(np.nanmean(taus))


def test_predictive_top_fraction(base):
    ctx, values = base
    notes: list[str] = []
    meta = plan_meta(str(DEMO / "qrels"), RUNS, MEASURES, Options(),
                     MetaOptions(analyses=("predictive",), samples=20, top_fraction=0.5,
                                 ordering="win"), notes)
    for job in meta.jobs():
        job()
    ap = ctx.metrics["map"].mean(axis=0)
    names = ctx.collection.run_names
    top = sorted(np.argsort(-ap)[:3].tolist())
    assert notes[-1].endswith(" ".join(names[i] for i in top))
    w1, w2 = random_subsets(np.random.default_rng([2022, 4]), 20, len(ctx.collection.qids),
                            (len(ctx.collection.qids) // 2,) * 2)
    v = values["map"][:, top]
    taus = [scipy_stats.kendalltau(v[w1[s] > 0].mean(0), v[w2[s] > 0].mean(0)).statistic
            for s in range(20)]
    assert meta.results.value("predictive_tau", "all", "map", "map") == \
        pytest.approx(np.nanmean(taus))

"""Meta-evaluation on the demo collection, checked against independent computations."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rpp_cli.settings import Options
from rpp_cli.tasks import meta as meta_task
from rpp_cli.tasks.meta import MetaOptions, MetaRequest
from rpp_cli.tasks.meta.robustness import subsample_judgments
from rpp_cli.tasks.meta.study import random_subsets
from rpp_cli.stats import pair_values

from .conftest import rpp, tiered
from .realistic import generate, write_collection

DEMO = Path(__file__).resolve().parent.parent / "fixtures" / "demo"
RUNS = sorted(str(p) for p in (DEMO / "runs").iterdir())
MEASURES = ["rpp", "map", "asl"]


def studied(measures: list[str], opts: MetaOptions) -> meta_task.Study:
    """The study of ``measures`` on the demo runs after running every job, in this process."""
    meta = meta_task.plan(str(DEMO / "qrels"), RUNS, MetaRequest(tuple(measures), opts),
                          Options())
    for job in meta_task.jobs(meta):
        job.finish(job.compute())
    return meta


def run_meta(**kw):
    """(Study, {(measure, run, other): value}) after running every job."""
    meta = studied(MEASURES, MetaOptions(**kw))
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


def drawn(rng: np.random.Generator, samples: int, n_q: int,
          sizes: tuple[int, ...]) -> list[np.ndarray]:
    """Every sample's (S, Q) weights of :func:`random_subsets`, its blocks joined."""
    return [np.concatenate(ws) for ws in zip(*random_subsets(rng, samples, n_q, sizes))]


def test_robustness_matches_scipy_on_the_same_subsets(base):
    ctx, values = base
    n_q, k, samples = len(ctx.collection.qids), 7, 30
    _, rows = run_meta(analyses=("robustness",), samples=samples, query_counts=(k,),
                       ordering="win")
    (w,) = drawn(np.random.default_rng([2022, 2, k]), samples, n_q, (k,))
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


def both_ways(va: np.ndarray, vb: np.ndarray, w1: np.ndarray, w2: np.ndarray) -> float:
    """Mean over splits and both directions of scipy's tau between A on one half and B on
    the other (the symmetric predictive power)."""
    taus = [scipy_stats.kendalltau(win_or_mean(x, u[s] > 0), win_or_mean(y, v[s] > 0)).statistic
            for s in range(len(w1)) for (x, u), (y, v) in (((va, w1), (vb, w2)),
                                                            ((va, w2), (vb, w1)))]
    return float(np.nanmean(taus))


def test_predictive_matches_scipy_on_the_same_splits(base):
    ctx, values = base
    n_q, samples = len(ctx.collection.qids), 40
    _, rows = run_meta(analyses=("predictive",), samples=samples, ordering="win",
                       top_fraction=1.0)
    again = run_meta(analyses=("predictive",), samples=samples, ordering="win",
                     top_fraction=1.0)[1]
    assert rows == again
    w1, w2 = drawn(np.random.default_rng([2022, 4]), samples, n_q, (n_q // 2, n_q - n_q // 2))
    assert not (w1 * w2).any() and ((w1 + w2) == 1).all()  # every query in one half
    for a in values:
        for b in values:
            assert rows[("predictive_tau", a, b)] == pytest.approx(
                both_ways(values[a], values[b], w1, w2))


def test_predictive_is_symmetric_in_the_halves(base):
    """Both directions per split: predictive_tau(A, B) = predictive_tau(B, A)."""
    _, rows = run_meta(analyses=("predictive",), samples=30)
    for a in MEASURES:
        for b in MEASURES:
            assert rows[("predictive_tau", a, b)] == pytest.approx(
                rows[("predictive_tau", b, a)], abs=1e-12)


def test_odd_number_of_queries_uses_every_query():
    """Q = 5: halves of 2 and 3 queries, no query left out."""
    w1, w2 = drawn(np.random.default_rng(0), 10, 5, (2, 3))
    assert (w1.sum(axis=1) == 2).all() and (w2.sum(axis=1) == 3).all()
    assert ((w1 + w2) == 1).all()


def test_predictive_top_fraction(base):
    ctx, values = base
    meta = studied(MEASURES, MetaOptions(analyses=("predictive",), samples=20,
                                         top_fraction=0.5, ordering="win"))
    notes = meta.notes
    ap = ctx.metrics["map"].mean(axis=0)
    names = ctx.collection.run_names
    top = sorted(np.argsort(-ap)[:3].tolist())
    assert notes[-1].endswith(" ".join(names[i] for i in top))
    n_q = len(ctx.collection.qids)
    w1, w2 = drawn(np.random.default_rng([2022, 4]), 20, n_q, (n_q // 2, n_q - n_q // 2))
    v = values["map"][:, top]
    assert meta.results.value("predictive_tau", "all", "map", "map") == \
        pytest.approx(both_ways(v, v, w1, w2))


def test_methodologist_defaults():
    """HSD with 10,000 permutations; predictive power among the top 75% of runs by AP."""
    opts = MetaOptions()
    assert opts.permutations == 10_000 and opts.top_fraction == 0.75
    notes = studied(["map"], MetaOptions(analyses=("predictive",), samples=5)).notes
    assert any("among the top 5 of 6 runs by map" in n for n in notes)


def test_top_runs_keep_ties_at_the_cut():
    from rpp_cli.orderings import top_runs

    assert top_runs(np.array([0.3, 0.5, 0.3, 0.1]), 2).tolist() == [0, 1, 2]
    assert top_runs(np.array([0.3, 0.5, 0.2, 0.1]), 2).tolist() == [0, 1]


def test_ties_by_hand():
    """3 runs, 2 queries: per-query metric values (1, 1, 0) and (0.5, 0.2, 0.5): pairs
    (a,b), (a,c), (b,c) tie on q1 once and on q2 once: 2/6. A preference tensor ties where
    RPP(a, b) = 0: one of the 3 pairs on one query: 1/3."""
    from rpp_cli.tasks.meta.power import tie_share

    assert tie_share(np.array([[1.0, 1.0, 0.0], [0.5, 0.2, 0.5]])) == pytest.approx(2 / 6)
    pref = np.array([[[0, 0.5, 0], [-0.5, 0, 1], [0, -1, 0]]], dtype=float)
    assert tie_share(pref) == pytest.approx(1 / 3)


def test_agreement_sign_and_r_match_scipy(base):
    _, values = base
    _, rows = run_meta(analyses=("agreement",))
    for a in values:
        for b in values:
            if a == b:
                continue
            x, y = pair_values(values[a]).ravel(), pair_values(values[b]).ravel()
            assert rows[("agreement_sign", a, b)] == pytest.approx(
                np.mean(np.sign(x) == np.sign(y)), abs=1e-12)
            both_ways = (np.concatenate([x, -x]), np.concatenate([y, -y]))
            assert rows[("agreement_r", a, b)] == pytest.approx(
                scipy_stats.pearsonr(*both_ways).statistic, abs=1e-12)
            assert rows[("agreement_r", a, b)] == rows[("agreement_r", b, a)]


def test_pearson_r_by_hand():
    """Pairs' differences x = (1, 2, -1), y = (1, 1, 1), each pair both ways: Σxy = 2,
    Σx² = 6, Σy² = 3, r = 2 / sqrt(18); all 0 has no r."""
    from rpp_cli.tasks.meta.agreement import pearson_r

    assert pearson_r(np.array([1.0, 2, -1]), np.ones(3)) == 2 / np.sqrt(18)
    assert np.isnan(pearson_r(np.zeros(4), np.arange(4.0)))


def test_pearson_r_does_not_depend_on_which_run_comes_first():
    """Flipping a pair's orientation (both differences negated) leaves r bit for bit:
    centring one orientation made the same runs 0.961 or 0.966."""
    from rpp_cli.tasks.meta.agreement import pearson_r

    rng = np.random.default_rng(7)
    for _ in range(200):
        x = rng.normal(size=60) * rng.choice([1e-3, 1, 1e3])
        y = 0.3 * x + rng.normal(size=60)
        flip = np.where(rng.random(60) < 0.5, -1.0, 1.0)
        assert pearson_r(x * flip, y * flip) == pearson_r(x, y)


@pytest.mark.parametrize("seed", range(6))
def test_meta_agreement_is_the_same_bits_in_any_run_order(tmp_path, seed):
    """rpp meta --analysis agreement on the runs given in another order prints the same
    lines, at --precision 17 (the pairs are taken in name order, whatever the argument order)."""
    qrels, runs = write_collection(generate(seed), tmp_path, "mixed")
    args = ["meta", "-Q", "--analysis", "agreement", "--precision", "17", "-m", "rpp",
            "-m", "dcgrpp", "-m", "map", "-m", "P.10", qrels]
    order = list(np.random.default_rng(seed).permutation(len(runs)))
    first, second = rpp(*args, *runs), rpp(*args, *[runs[i] for i in order])
    assert first.code == second.code == 0, first.err
    assert sorted(first.out.splitlines()) == sorted(second.out.splitlines())
    assert "agreement_r" in first.out


def test_ordering_all_studies_each_ordering(base):
    """rpp:win, rpp:borda, rpp:mc4 are three subjects for the ordering analyses; power and
    ties, which do not depend on the ordering, are printed once for rpp."""
    _, rows = run_meta(analyses=("power", "ties", "agreement", "robustness"), ordering="all",
                       permutations=50, samples=20, query_counts=(5,))
    orderings = [f"rpp:{o}" for o in ("win", "borda", "mc4")]
    assert {r for m, r, _ in rows if m == "power_ttest"} == {"rpp", "map", "asl"}
    assert {r for m, r, _ in rows if m == "ties"} == {"rpp", "map", "asl"}
    assert {r for m, r, _ in rows if m == "robust_queries_5"} == {*orderings, "map", "asl"}
    for o in ("win", "mc4"):
        single = run_meta(analyses=("robustness",), ordering=o, samples=20,
                          query_counts=(5,))[1]
        assert rows[("robust_queries_5", f"rpp:{o}", None)] == single[("robust_queries_5", "rpp",
                                                                        None)]
    assert rows[("agreement_tau", "rpp:win", "rpp:mc4")] <= 1


def test_pool_policy_keeps_what_the_runs_rank_first(base):
    """The pool policy keeps, per query, the relevant items with the best rank over all runs
    (then the most runs retrieving them); the random one a uniform sample."""
    ctx, _ = base
    coll = ctx.collection
    sub = subsample_judgments(coll, 0.5, np.random.default_rng(1), "pool")
    ranks = np.where(coll.ranks > 0, coll.ranks, 10 ** 9).min(axis=0)
    kept = set(sub.item_doc.tolist())
    for q in range(len(coll.qids)):
        items = np.flatnonzero(coll.item_query == q)
        keep_n = max(1, len(items) // 2)
        kept_ranks = sorted(ranks[i] for i in items if coll.item_doc[i] in kept)
        assert len(kept_ranks) == keep_n
        assert kept_ranks[-1] <= sorted(ranks[items])[keep_n - 1]  # the best ranked first


def test_pool_policy_rows_are_named():
    _, rows = run_meta(analyses=("robustness",), samples=2, query_counts=(5,),
                       judged_fractions=(0.5,), judged_samples=2, judged_policy="pool")
    assert {m for m, _, _ in rows} == {"robust_queries_5", "robust_judged_0.50_pool"}


def test_judged_fractions_each_have_a_name_of_their_own():
    """0.125 and 0.12 were both robust_judged_0.12 (one table column dropped the other),
    0.999 printed as 1.00 and a fraction given twice gave its lines twice: each fraction now
    has its own exact name (two decimals where they are exact), once."""
    from rpp_cli.tasks.meta.robustness import fraction_label

    from .conftest import rpp

    assert [fraction_label(f) for f in (0.5, 0.25, 0.125, 0.12, 0.999, 0.001, 1.0)] == [
        "0.50", "0.25", "0.125", "0.12", "0.999", "0.001", "1.00"]
    res = rpp("meta", "-Q", "--analysis", "robustness", "-m", "map", "--samples", "5",
              "--judged-fractions", "0.125,0.12,0.999,0.5,0.5", "--judged-samples", "2",
              DEMO / "qrels", *sorted((DEMO / "runs").iterdir()))
    assert res.code == 0, res.err
    names = [line.split("\t")[0].strip() for line in res.out.splitlines()
             if line.startswith("robust_judged")]
    assert names == ["robust_judged_0.125", "robust_judged_0.12", "robust_judged_0.999",
                     "robust_judged_0.50"]


def test_an_analysis_named_twice_runs_once():
    """--analysis ties,ties printed every line twice."""
    assert MetaOptions(analyses="ties,ties,power").analyses == ("ties", "power")
    assert MetaOptions(analyses=("power", "power")).analyses == ("power",)


def literal_widths(values: np.ndarray, subsets: np.ndarray, level: float) -> float:
    """The definition of ci_width_K, literally: over every subset and pair a < b, the width of
    scipy's t-interval of the mean paired value on the subset's queries, then the mean."""
    n_runs = values.shape[1]
    widths = []
    for w in subsets:
        rows = w > 0
        for a in range(n_runs):
            for b in range(a + 1, n_runs):
                x = (values[:, a, b] if values.ndim == 3 else values[:, a] - values[:, b])[rows]
                if (x == x[0]).all():
                    widths.append(0.0)  # no spread: a point (scipy: 1e-17 for 0.1 0.1 0.1)
                    continue
                ci = scipy_stats.ttest_1samp(x, 0.0).confidence_interval(level)
                widths.append(ci.high - ci.low)
    return float(np.mean(widths))


@pytest.mark.parametrize("k", tiered([2, 7, 25]))
def test_interval_widths_equal_scipys_t_intervals_on_the_robustness_subsets(base, k):
    """ci_width_K: the mean width of scipy's t-interval (level 1 - alpha) over the subsets
    robust_queries_K draws (the same stream) and every pair of runs; at K = Q, the one
    subset is every query."""
    ctx, values = base
    n_q, samples = len(ctx.collection.qids), 12
    _, rows = run_meta(analyses=("widths", "robustness"), samples=samples, query_counts=(k,),
                       alpha=0.1)
    (w,) = drawn(np.random.default_rng([2022, 2, k]), samples, n_q, (k,))
    for name, v in values.items():
        want = literal_widths(v, w, 0.9)
        assert rows[(f"ci_width_{k}", name, None)] == pytest.approx(want, rel=1e-10), name
    assert {key[0] for key in rows} == {f"ci_width_{k}", f"robust_queries_{k}"}


def test_interval_widths_on_one_query_are_undefined_and_shrink_with_more():
    """K = 1 has no spread (NaN, like an undefined tau); widths shrink as queries are added,
    about as 1 / sqrt(K) once t's quantile has settled."""
    _, rows = run_meta(analyses=("widths",), samples=200, query_counts=(1, 5, 10, 20))
    for m in MEASURES:
        assert np.isnan(rows[("ci_width_1", m, None)])
        w5, w10, w20 = (rows[(f"ci_width_{k}", m, None)] for k in (5, 10, 20))
        assert w5 > w10 > w20 > 0
        assert w10 / w20 == pytest.approx(np.sqrt(2), rel=0.15)


def test_widths_are_not_a_default_analysis():
    """The default analyses are the paper's five: rpp meta's output without --analysis is what
    it was; widths runs when named."""
    assert meta_task.DEFAULT_ANALYSES == ("power", "ties", "agreement", "robustness",
                                          "predictive")
    assert MetaOptions().analyses == meta_task.DEFAULT_ANALYSES
    assert "widths" in meta_task.ANALYSES

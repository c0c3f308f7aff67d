"""ndeval's diversity measures (contract §6): hand-worked values per family, properties on random
judgments against a literal restatement written here, and every per-query value of
`rpp eval --subtopics` on the demo collection against stored ndeval output."""
from __future__ import annotations

import csv
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpp_cli.settings import Options
from rpp_cli.measures.diversity import NAMES, Judgments, Listed, Scorer, ideal_ranking
from rpp_cli.tasks import eval as eval_task
from rpp_cli.tasks import ndeval as ndeval_task
from rpp_cli.tasks.ndeval import NdevalOptions

from ..conftest import DEMO, ROOT, parse_lines, rpp

GOLDEN = ROOT / "tests" / "golden" / "ndeval"
NORMALISED = [n for n in NAMES if n.startswith(("nERR-IA", "alpha-nDCG", "nNRBP"))]
RUNS = sorted((DEMO / "runs").iterdir())


def judgments(subtopics_of: list[set[int]], n_sub: int) -> Judgments:
    """One query; item k (docno order = k) is relevant to the subtopics in subtopics_of[k]."""
    member = np.zeros((len(subtopics_of) + 1, n_sub), dtype=bool)
    for k, subs in enumerate(subtopics_of):
        member[k, sorted(subs)] = True
    nrel = member.sum(axis=0)
    return Judgments(member, np.zeros(len(subtopics_of), dtype=np.int64),
                     np.arange(len(subtopics_of)), np.array([int((nrel > 0).sum())]),
                     nrel[None, :])


def values(scorer: Scorer, ranking: list[int]) -> dict[str, float]:
    """The 21 values of one query's ranking (item indices, -1: not relevant)."""
    at = [k for k, item in enumerate(ranking) if item >= 0]
    listed = Listed(np.zeros(len(at), dtype=np.int64), np.array(at, dtype=np.int64),
                    np.array([ranking[k] for k in at], dtype=np.int64))
    return dict(zip(NAMES, scorer.evaluate(listed).ravel().tolist()))


# Items 0..3 = d1{s1}, d2{s1,s2}, d3{s2}, d4{s3}; run: d3, -, d1, d2, -, d4 (α = β = 0.5).
# Novelty gains of the run: 1, 0, 1, .5+.5, 0, 1. Greedy ideal: d2 (2), d4 (1), then d1 and
# d3 tie at .5 and the larger docno (d3) goes first: gains 2, 1, .5, .5.
HAND = judgments([{0}, {0, 1}, {1}, {2}], 3)
RUN = [2, -1, 0, 1, -1, 3]


def test_err_ia_family_by_hand():
    v = values(Scorer.prepare(HAND), RUN)
    ideal_ideal = lambda k: 3 * sum(0.5 ** t / (t + 1) for t in range(k))  # noqa: E731
    assert v["ERR-IA@5"] == pytest.approx((1 + 1 / 3 + 1 / 4) / ideal_ideal(5), abs=1e-15)
    assert v["ERR-IA@10"] == pytest.approx((1 + 1 / 3 + 1 / 4 + 1 / 6) / ideal_ideal(10),
                                           abs=1e-15)
    assert v["nERR-IA@5"] == pytest.approx((1 + 1 / 3 + 1 / 4) / (2 + 1 / 2 + .5 / 3 + .5 / 4),
                                           abs=1e-15)
    assert v["nERR-IA@20"] == pytest.approx((1 + 1 / 3 + 1 / 4 + 1 / 6)
                                            / (2 + 1 / 2 + .5 / 3 + .5 / 4), abs=1e-15)


def test_alpha_dcg_family_by_hand():
    v = values(Scorer.prepare(HAND), RUN)
    run5 = 1 + 1 / math.log2(4) + 1 / math.log2(5)
    ideal_ideal = 3 * sum(0.5 ** t / math.log2(t + 2) for t in range(5))
    assert v["alpha-DCG@5"] == pytest.approx(run5 / ideal_ideal, abs=1e-15)
    ideal5 = 2 + 1 / math.log2(3) + .5 / 2 + .5 / math.log2(5)
    assert v["alpha-nDCG@5"] == pytest.approx(run5 / ideal5, abs=1e-15)
    assert v["alpha-nDCG@10"] == pytest.approx((run5 + 1 / math.log2(7)) / ideal5, abs=1e-15)


def test_nrbp_family_by_hand():
    v = values(Scorer.prepare(HAND), RUN)
    assert v["NRBP"] == 0.3515625  # (1 + .25 + .125 + .03125) * (1 - .5 * .5) / 3
    assert v["nNRBP"] == pytest.approx(0.3515625 / ((2 + .5 + .125 + .0625) * .25), abs=1e-15)


def test_intent_aware_family_by_hand():
    v = values(Scorer.prepare(HAND), RUN)
    ap = [(1 / 3 + 2 / 4) / 2, (1 / 1 + 2 / 4) / 2, (1 / 6) / 1]
    assert v["MAP-IA"] == pytest.approx(sum(ap) / 3, abs=1e-15)
    assert (v["P-IA@5"], v["P-IA@10"], v["P-IA@20"]) == (4 / 15, 5 / 30, 5 / 60)
    assert (v["strec@5"], v["strec@10"], v["strec@20"]) == (2 / 3, 1.0, 1.0)


def test_alpha_and_beta_change_the_novelty_measures_as_by_hand():
    v = values(Scorer.prepare(HAND, alpha=1.0, beta=1.0), RUN)
    # α = 1: a subtopic counts once. Gains 1, 0, 1, 0 (s1 and s2 seen), 0, 1.
    assert v["NRBP"] == 1.0  # (1 + 1 + 1) * (1 - 0 * 1) / 3
    assert v["ERR-IA@5"] == pytest.approx((1 + 1 / 3) / 3, abs=1e-15)
    assert v["MAP-IA"] == values(Scorer.prepare(HAND), RUN)["MAP-IA"]  # no α in MAP-IA


def test_undefined_nnrbp_is_zero_and_flagged():
    scorer = Scorer.prepare(HAND, alpha=0.0, beta=1.0)  # 1 - (1 - α)β = 0: ideal NRBP 0
    assert scorer.undefined.tolist() == [True]
    assert values(scorer, RUN)["nNRBP"] == 0.0
    empty = Scorer.prepare(judgments([set(), set()], 1))  # no relevant subtopic
    assert empty.undefined.tolist() == [True]
    assert set(values(empty, [0, 1]).values()) == {0.0}


def test_greedy_ideal_breaks_ties_towards_the_larger_docno():
    ideal = ideal_ranking(HAND, 0.5)
    assert [x.tolist() for x in ideal] == [[0, 0, 0, 0], [0, 1, 2, 3], [1, 3, 2, 0]]


def test_a_run_can_beat_the_greedy_ideal():
    """Why "a perfect ranking scores 1" is tested on the greedy ideal itself: ndeval normalises
    by a greedy ranking, which is not optimal (golden topic 4 shows ndeval printing > 1)."""
    coll = judgments([{2}, {2, 3}, {0, 2}, {1, 3}, {0}, {1, 2}], 4)
    v = values(Scorer.prepare(coll), [2, 3, 1, 4, 5, 0])
    assert v["alpha-nDCG@5"] > 1 and v["nERR-IA@5"] > 1 and v["nNRBP"] > 1


# ---------------------------------------------------------------- properties
def slow(subs_of: dict[str, set[int]], ranking: list[str], alpha: float, beta: float,
         max_docs: int | None) -> list[float]:
    """ndeval's 21 values for one topic, restated literally (one position at a time)."""
    nrel = {}
    for subs in subs_of.values():
        for s in subs:
            nrel[s] = nrel.get(s, 0) + 1
    order = sorted(nrel)
    n_sub = len(order)
    if n_sub == 0:
        return [0.0] * 21
    ranking = ranking[:max_docs] if max_docs else ranking

    def gains(docs):
        g, out = {s: 1.0 for s in order}, []
        for d in docs:
            x = 0.0
            for s in order:
                if s in subs_of.get(d, ()):
                    x += g[s]
                    g[s] *= 1 - alpha
            out.append(x)
        return out

    def series(docs):
        sc = gains(docs) + [0.0] * 20
        dcg, err, gain = [], [], float(n_sub)
        run_dcg = run_err = best_dcg = best_err = 0.0
        for i in range(20):
            disc = 1.0 if i == 0 else math.log(2.0) / math.log(i + 2.0)
            run_dcg += sc[i] * disc
            run_err += sc[i] / (i + 1)
            best_dcg += gain * disc
            best_err += gain / (i + 1)
            gain *= 1 - alpha
            dcg.append(run_dcg / best_dcg)
            err.append(run_err / best_err)
        total, decay = 0.0, 1.0
        for x in gains(docs):
            total += x * decay
            decay *= beta
        return err, dcg, total * ((1 - (1 - alpha) * beta) / n_sub)

    left, ideal, g = sorted(subs_of), [], {s: 1.0 for s in order}
    while left:
        score = {d: sum(g[s] for s in order if s in subs_of[d]) for d in left}
        pick = max(left, key=lambda d: (score[d], d.encode()))
        ideal.append(pick)
        left.remove(pick)
        for s in subs_of[pick]:
            g[s] *= 1 - alpha
    err, dcg, nrbp = series(ranking)
    i_err, i_dcg, i_nrbp = series(ideal)
    n_err = [e / ie if d else 0.0 for e, ie, d in zip(err, i_err, dcg)]
    n_dcg = [d / idl if d else 0.0 for d, idl in zip(dcg, i_dcg)]
    mapia = 0.0
    seen = {s: 0 for s in order}
    ap = {s: 0.0 for s in order}
    pairs, covered, p_ia, strec = 0, set(), [], []
    for i, d in enumerate(ranking):
        for s in order:
            if s in subs_of.get(d, ()):
                seen[s] += 1
                ap[s] += seen[s] / (i + 1)
    for s in order:
        mapia += ap[s] / nrel[s]
    for i in range(20):
        d = ranking[i] if i < len(ranking) else None
        pairs += len(subs_of.get(d, ()))
        covered |= subs_of.get(d, set())
        p_ia.append(pairs / ((i + 1) * n_sub))
        strec.append(len(covered) / n_sub)
    at = [4, 9, 19]
    return ([err[i] for i in at] + [n_err[i] for i in at] + [dcg[i] for i in at]
            + [n_dcg[i] for i in at] + [nrbp, nrbp / i_nrbp if i_nrbp else 0.0, mapia / n_sub]
            + [p_ia[i] for i in at] + [strec[i] for i in at])


DOCS = ["a", "b", "c", "d10", "d2", "e", "f", "g", "h"]
PARAMS = st.sampled_from([0.0, 0.3, 0.5, 0.5, 0.7, 1.0, 0.123])


@st.composite
def topics(draw):
    """Judged docs with subtopic sets (ids 1..5), a ranking (with unjudged docs), α, β, -M."""
    judged = draw(st.lists(st.sampled_from(DOCS), unique=True, min_size=1, max_size=8))
    subs_of = {d: draw(st.sets(st.integers(1, 5), max_size=3)) for d in judged}
    ranking = draw(st.permutations(DOCS + ["u1", "u2", "u3"]))[:draw(st.integers(1, 12))]
    return (subs_of, ranking, draw(PARAMS), draw(PARAMS),
            draw(st.sampled_from([None, None, 2, 5, 30])))


def write_topic(tmp, subs_of, ranking):
    lines = [f"7 {s} {d} 1\n" for d, subs in subs_of.items() for s in sorted(subs)]
    lines += [f"7 1 {d} 0\n" for d, subs in subs_of.items() if not subs]
    (tmp / "q").write_text("".join(lines))
    (tmp / "r").write_text("".join(f"7 Q0 {d} {i + 1} 0 t\n" for i, d in enumerate(ranking)))
    return str(tmp / "q"), str(tmp / "r")


SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.mark.slow
@settings(SETTINGS, max_examples=120)
@given(topics())
def test_equals_literal_restatement_exactly(tmp_path, topic):
    subs_of, ranking, alpha, beta, max_docs = topic
    q, r = write_topic(tmp_path, subs_of, ranking)
    res = ndeval_task.run(q, r, NdevalOptions(alpha, beta, max_docs=max_docs)).results
    got = [res.value(name, "7", "t") for name in NAMES]
    assert got == slow(subs_of, ranking, alpha, beta, max_docs)  # bit for bit


@st.composite
def collections(draw):
    """2-4 topics of different depths and widths (a topic may have up to 40 subtopics, a dozen
    judged documents, rankings past DEPTH), numbered 1, 20, 300, 4000 (ndeval's order)."""
    out = {}
    for number in [1, 20, 300, 4000][:draw(st.integers(2, 4))]:
        names = [f"{d}-{number}" for d in DOCS] + [f"deep-{number}-{k}" for k in range(6)]
        judged = draw(st.lists(st.sampled_from(names), unique=True, min_size=1, max_size=14))
        top = draw(st.sampled_from([3, 5, 12, 40]))
        subs_of = {d: draw(st.sets(st.integers(1, top), max_size=top)) for d in judged}
        unjudged = [f"u{k}" for k in range(draw(st.sampled_from([0, 10, 50])))]
        ranking = draw(st.permutations(names + unjudged))[:draw(st.integers(1, 80))]
        out[number] = (subs_of, ranking)
    return out, draw(PARAMS), draw(PARAMS)


@pytest.mark.slow
@settings(SETTINGS, max_examples=80)
@given(collections())
def test_topics_of_every_shape_together_equal_the_literal_restatement(tmp_path, drawn):
    """Topics are scored side by side, in groups by the room they need (the greedy ideal by
    subtopics, then over the topics that still have items; the measures by list length and
    subtopics): each topic's values are the one-topic restatement's, bit for bit, whatever
    the other topics' depths and widths."""
    coll, alpha, beta = drawn
    lines = [f"{n} {s} {d} 1\n" for n, (subs_of, _) in coll.items()
             for d, subs in subs_of.items() for s in sorted(subs)]
    lines += [f"{n} 1 {d} 0\n" for n, (subs_of, _) in coll.items()
              for d, subs in subs_of.items() if not subs]
    (tmp_path / "q").write_text("".join(lines))
    (tmp_path / "r").write_text("".join(f"{n} Q0 {d} {i + 1} 0 t\n"
                                        for n, (_, ranking) in coll.items()
                                        for i, d in enumerate(ranking)))
    res = ndeval_task.run(str(tmp_path / "q"), str(tmp_path / "r"),
                          NdevalOptions(alpha, beta)).results
    import rpp_cli.measures.diversity as diversity

    bound = diversity._ROOM_ELEMENTS
    try:
        diversity._ROOM_ELEMENTS = 1  # every topic a batch of its own
        alone = ndeval_task.run(str(tmp_path / "q"), str(tmp_path / "r"),
                                NdevalOptions(alpha, beta)).results
    finally:
        diversity._ROOM_ELEMENTS = bound
    assert list(alone.rows()) == list(res.rows())
    for n, (subs_of, ranking) in coll.items():
        if not any(subs_of.values()):
            continue  # not a topic to ndeval: no relevant line
        got = [res.value(name, str(n), "t") for name in NAMES]
        assert got == slow(subs_of, ranking, alpha, beta, None), n


@pytest.mark.slow
@SETTINGS
@given(topics())
def test_bounds(tmp_path, topic):
    """ERR-IA, alpha-DCG and NRBP are normalised by an upper bound (every subtopic at every
    rank), so they lie in [0, 1]; so do MAP-IA, P-IA and strec. The n- measures are >= 0 only
    (see test_a_run_can_beat_the_greedy_ideal)."""
    subs_of, ranking, alpha, beta, max_docs = topic
    q, r = write_topic(tmp_path, subs_of, ranking)
    res = ndeval_task.run(q, r, NdevalOptions(alpha, beta, max_docs=max_docs)).results
    for name in NAMES:
        v = res.value(name, "7", "t")
        assert v >= 0
        if name not in NORMALISED:
            assert v <= 1 + 1e-12, name


@pytest.mark.slow
@SETTINGS
@given(topics())
def test_the_greedy_ideal_ranking_scores_one(tmp_path, topic):
    """The property that holds for ndeval's normalised measures: its own ideal ranking, taken
    as a run, scores exactly 1 (a better ranking may exist and score more)."""
    subs_of, _, alpha, beta, _ = topic
    if not any(subs_of.values()):
        return
    left, ideal, g = sorted(subs_of), [], {s: 1.0 for s in range(1, 6)}
    while left:
        pick = max(left, key=lambda d: (sum(g[s] for s in sorted(subs_of[d])), d.encode()))
        ideal.append(pick)
        left.remove(pick)
        for s in subs_of[pick]:
            g[s] *= 1 - alpha
    q, r = write_topic(tmp_path, subs_of, ideal)
    res = ndeval_task.run(q, r, NdevalOptions(alpha, beta)).results
    names = [n for n in NORMALISED if n != "nNRBP" or (1 - (1 - alpha) * beta) != 0]
    assert [res.value(n, "7", "t") for n in names] == [1.0] * len(names)


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.booleans(), min_size=1, max_size=9), st.permutations(DOCS), PARAMS, PARAMS)
def test_one_subtopic_greedy_is_optimal(tmp_path, relevant, order, alpha, beta):
    """With one subtopic the greedy ideal is optimal: every ranking scores <= 1, and any
    ranking with all relevant items first scores exactly 1."""
    subs_of = {d: ({1} if rel else set()) for d, rel in zip(DOCS, relevant)}
    if not any(relevant):
        subs_of["a"] = {1}
    q, r = write_topic(tmp_path, subs_of, order)
    res = ndeval_task.run(q, r, NdevalOptions(alpha, beta)).results
    names = [n for n in NORMALISED if n != "nNRBP" or (1 - (1 - alpha) * beta) != 0]
    assert all(res.value(n, "7", "t") <= 1 + 1e-12 for n in names)
    best = sorted(order, key=lambda d: not subs_of.get(d))  # relevant first, any order
    q, r = write_topic(tmp_path, subs_of, best)
    res = ndeval_task.run(q, r, NdevalOptions(alpha, beta)).results
    assert [res.value(n, "7", "t") for n in names] == [1.0] * len(names)


# ---------------------------------------------------------------- rpp eval vs ndeval
def golden_rows(path) -> dict[tuple[str, str], float]:
    rows = list(csv.reader(open(path)))
    return {(name, row[1]): float(x) for row in rows[1:-1] for name, x in zip(rows[0][2:], row[2:])}


@pytest.mark.parametrize("with_qrels", [True, False])
def test_eval_per_query_values_equal_ndeval(with_qrels):
    """Every per-query value of every diversity measure, every demo run, against ndeval
    -traditional (rpp eval orders by score, then docno descending, as -traditional does)."""
    args = ["eval", "-q", "--precision", "10", "--subtopics", DEMO / "qrels.subtopics"]
    args += [DEMO / "qrels"] if with_qrels else []
    for name in NAMES:
        args += ["-m", name]
    res = rpp(*args, *RUNS)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    compared = 0
    for run in RUNS:
        for (name, qid), expected in golden_rows(GOLDEN / f"demo.{run.name}.traditional.csv"
                                                 ).items():
            if qid == "999":  # the query nobody judged: ndeval prints zeros, rpp ignores it
                continue
            assert got[(name, qid, run.name)] == pytest.approx(expected, abs=5.1e-7)
            compared += 1
    assert compared == 21 * (6 * 25 - 2)  # bm25 skips two queries


def test_eval_missing_query_scores_zero_and_all_is_the_mean():
    ctx = eval_task.run(str(DEMO / "qrels"), [str(DEMO / "runs" / "bm25")],
                        eval_task.EvalRequest(("alpha-nDCG@20",), per_query=True),
                        Options(subtopics=str(DEMO / "qrels.subtopics"))).extras["context"]
    per_query = ctx.metrics["alpha-nDCG@20"][:, 0]
    assert per_query[ctx.collection.qids.index("210")] == 0.0
    assert ctx.results.value("alpha-nDCG@20", "all", "bm25") == pytest.approx(per_query.mean())

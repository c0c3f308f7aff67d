"""`rpp eval --subtopics`: ST-RPP by hand (contract §3-4), against a literal contract
implementation, the other measures unaffected, QRELS omitted, defaults and errors."""
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rpp_cli.errors import InputError
from rpp_cli.settings import Options
from rpp_cli.tasks import eval as eval_task

from .conftest import DEMO, parse_lines, rpp, write_qrels, write_run
from .io.test_readers import one_error_line

NONREL = [f"n{i}" for i in range(1, 9)]


def write_subtopics(path, rows):
    """``rows`` = (qid, subtopic, docno, grade)."""
    path.write_text("".join(f"{q} {s} {d} {g}\n" for q, s, d, g in rows))
    return path


@pytest.fixture
def disagree(tmp_path):
    """q1: s1 = {a}, s2 = {b}; c is relevant (main qrels) to no subtopic. A finds c, a early
    and b at 9; B finds a, b early and c at 10. q2: subtopic 2 has no relevant item."""
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 1),
                                         ("q2", "d", 1), ("q2", "e", 1)])
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q1", 1, "b", 0),
                                           ("q1", 2, "b", 1), ("q1", 2, "c", 0),
                                           ("q2", 1, "d", 1), ("q2", 2, "e", 0),
                                           ("q2", 2, "d", 0)])
    a = write_run(tmp_path / "A", {"q1": ["c", "a"] + NONREL[:6] + ["b"], "q2": ["e", "d"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["a", "b"] + NONREL[:7] + ["c"], "q2": ["d", "e"]}, "B")
    return q, s, a, b


def test_st_rpp_and_rpp_disagree_in_sign(disagree):
    q, s, a, b = disagree
    res = rpp("eval", "-q", "--precision", "12", "--subtopics", s, q, a, b)
    got = parse_lines(res.out)
    # RPP: one population {a, b, c}; f^A = (1, 2, 9), f^B = (1, 2, 10): only level 3 differs.
    w = [1 / math.log2(i + 1) for i in (1, 2, 3)]
    assert got[("rpp", "q1", "A", "B")] == pytest.approx(1 / 3, abs=1e-12)
    assert got[("dcgrpp", "q1", "A", "B")] == pytest.approx(w[2] / sum(w), abs=1e-12)
    assert got[("invrpp", "q1", "A", "B")] == pytest.approx(2 / 11, abs=1e-12)
    # ST-RPP: s1 (m=1) prefers B (2 vs 1), s2 (m=1) prefers B (9 vs 2), t* (m=3) as RPP;
    # p(P) = 1/5, 1/5, 3/5.
    assert got[("st-rpp", "q1", "A", "B")] == pytest.approx(-2 / 5 + 3 / 5 / 3, abs=1e-12)
    assert got[("st-dcgrpp", "q1", "A", "B")] == pytest.approx(
        -2 / 5 + 3 / 5 * w[2] / sum(w), abs=1e-12)
    assert got[("st-invrpp", "q1", "A", "B")] == pytest.approx(-2 / 5 + 3 / 5 * 2 / 11,
                                                               abs=1e-12)
    assert got[("st-rpp", "q1", "B", "A")] == -got[("st-rpp", "q1", "A", "B")]


def test_subtopic_without_relevant_item_is_no_population(disagree):
    q, s, a, b = disagree
    res = rpp("eval", "-q", "--precision", "12", "--subtopics", s, q, a, b)
    got = parse_lines(res.out)
    # q2: s1 = {d} prefers B; t* = {d, e} ties (1, 2 both); subtopic 2 counts for nothing.
    assert got[("rpp", "q2", "A", "B")] == 0.0
    for m in ("st-rpp", "st-dcgrpp", "st-invrpp"):
        assert got[(m, "q2", "A", "B")] == pytest.approx(-1 / 3, abs=1e-12)
        assert got[(m + "_win", "q2", "A")] == pytest.approx(-1 / 3, abs=1e-12)
    assert got[("st-rpp", "all", "A", "B")] == pytest.approx((-1 / 5 - 1 / 3) / 2, abs=1e-12)
    # ndeval's S counts subtopics with a relevant item only: A covers the one subtopic of q2.
    assert got[("strec@20", "q2", "A")] == 1.0
    assert got[("strec@20", "q1", "A")] == 1.0


def test_subtopic_only_items_join_st_rpp_but_not_graded_measures(tmp_path):
    """f is relevant to subtopic 1 but judged 0 in the main qrels."""
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1), ("q1", "b", 1), ("q1", "c", 1),
                                         ("q1", "f", 0)])
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q1", 1, "f", 1),
                                           ("q1", 2, "b", 1)])
    a = write_run(tmp_path / "A", {"q1": ["f", "a", "b", "c"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["a", "b", "c", "f"]}, "B")
    base = ["-m", "rpp", "-m", "dcgrpp", "-m", "invrpp", "-m", "asl", "-m", "map"]
    plain = rpp("eval", "-q", "--precision", "12", *base, q, a, b)
    with_sub = rpp("eval", "-q", "--precision", "12", *base, "-m", "st-rpp",
                   "--subtopics", s, q, a, b)
    assert set(plain.out.splitlines()) < set(with_sub.out.splitlines())
    got = parse_lines(with_sub.out)
    assert got[("rpp", "q1", "A", "B")] == -1.0
    # s1 = {a, f}: (1, 2) vs (1, 4) -> +1/2; s2 = {b}: 3 vs 2 -> -1; t* = {a, b, c}: -1.
    assert got[("st-rpp", "q1", "A", "B")] == pytest.approx(2 / 6 / 2 - 1 / 6 - 3 / 6,
                                                            abs=1e-12)


def test_items_relevant_only_in_subtopic_qrels_count_in_the_corpus_size(tmp_path):
    """contract §2: n = |rankings ∪ relevant items|; y is relevant to subtopic 1 only (an
    item of ST-RPP), z judged non-relevant and retrieved by no run: not counted."""
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q1", 1, "y", 1),
                                           ("q1", 2, "z", 0)])
    a = write_run(tmp_path / "A", {"q1": ["x"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["a"]}, "B")
    plain = parse_lines(rpp("eval", "-m", "asl", q, a, b).out)
    with_sub = parse_lines(rpp("eval", "-m", "asl", "--subtopics", s, q, a, b).out)
    assert plain[("asl", "all", "A")] == 2  # n = |{x, a}|: a sits at n - 1 + 1
    assert with_sub[("asl", "all", "A")] == 3  # n = |{x, a, y}|


def test_qrels_omitted_or_dash_uses_the_largest_subtopic_grade(tmp_path):
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q1", 2, "a", 3),
                                           ("q1", 0, "b", 2), ("q1", 1, "c", -2)])
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 3), ("q1", "b", 2), ("q1", "c", -2)])
    a = write_run(tmp_path / "A", {"q1": ["c", "b", "a"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["a", "c", "b"]}, "B")
    explicit = rpp("eval", "-q", "--subtopics", s, q, a, b)
    assert explicit.code == 0
    assert rpp("eval", "-q", "--subtopics", s, a, b).out == explicit.out
    assert rpp("eval", "-q", "--subtopics", s, "-", a, b).out == explicit.out
    one_run = rpp("eval", "-m", "map", "--precision", "10", "--subtopics", s, a)  # a run
    assert parse_lines(one_run.out)[("map", "all", "A")] == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_qrels_told_from_a_run_by_its_first_window(tmp_path, monkeypatch):
    """With QRELS omitted, the first file is told from a run by its first data line, read from
    its first window (a run of gigabytes was read whole, and kept, to tell): past comment lines
    that fill windows, with a bad line far after the first window unread until the run is."""
    import rpp_cli.core.table as table

    monkeypatch.setattr(table, "WINDOW_BYTES", 64)
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q1", 2, "c", 1)])
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1), ("q1", "c", 1)])
    a, b = tmp_path / "A", tmp_path / "B"
    a.write_text("# a comment line that fills a 64-byte window on its own, and more\n" * 3
                 + "q1 Q0 c 1 2 A\nq1 Q0 a 2 1 A\n")
    b.write_text("q1 Q0 a 1 2 B\nq1 Q0 c 2 1 B\n")
    omitted = rpp("eval", "-q", "--subtopics", s, a, b)
    assert omitted.code == 0 and omitted.out == rpp("eval", "-q", "--subtopics", s, q, a, b).out
    more = "".join(f"q1 Q0 z{i} {i + 3} 0.{9 - i} A\n" for i in range(8))  # windows on
    a.write_text(a.read_text() + more + "q1 Q0 x 3 0.05 A extra\n")  # named by the run's reading
    one_error_line(rpp("eval", "--subtopics", s, a, b),
                   r".*/A:14: expected 5 or 6 fields \(run: .*\), found 7")


def test_defaults_with_subtopics():
    res = rpp("eval", "--subtopics", DEMO / "qrels.subtopics", DEMO / "qrels",
              DEMO / "runs" / "bm25", DEMO / "runs" / "dpr")
    measures = list(dict.fromkeys(line.split("\t")[0].strip() for line in res.out.splitlines()))
    assert measures == ["rpp", "rpp_win", "dcgrpp", "dcgrpp_win", "invrpp", "invrpp_win", "map",
                        "ndcg", "recip_rank", "P_10", "asl", "st-rpp", "st-rpp_win", "st-dcgrpp",
                        "st-dcgrpp_win", "st-invrpp", "st-invrpp_win", "ERR-IA@20",
                        "alpha-nDCG@20", "MAP-IA", "strec@20"]


def test_nan_choice_is_noted(tmp_path):
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1), ("q2", "b", 1)])
    s = write_subtopics(tmp_path / "sub", [("q1", 1, "a", 1), ("q2", 1, "b", 0)])
    a = write_run(tmp_path / "A", {"q1": ["a"], "q2": ["b"]}, "A")
    res = rpp("eval", "-q", "-m", "nNRBP", "--subtopics", s, q, a)
    assert parse_lines(res.out)[("nNRBP", "q2", "A")] == 0.0
    assert ("rpp: note: nNRBP is 0/0 for 1 query (no relevant subtopic, or ideal NRBP 0): "
            "ndeval prints -nan, rpp prints 0") in res.err.splitlines()


def test_subtopic_measures_need_subtopics(tmp_path):
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    a = write_run(tmp_path / "A", {"q1": ["a"]}, "A")
    b = write_run(tmp_path / "B", {"q1": ["a"]}, "B")
    one_error_line(rpp("eval", "-m", "st-invrpp", q, a, b),
                   r"ST-RPP \(st-rpp, st-dcgrpp, st-invrpp\) needs subtopic qrels "
                   r"\(--subtopics FILE\)")
    one_error_line(rpp("eval", "-m", "alpha-nDCG@20", q, a),
                   r"measure 'alpha-nDCG@20' needs subtopic qrels \(--subtopics FILE\)")
    one_error_line(rpp("eval", "--subtopics", q, q), r"missing RUN\.\.\. arguments")
    one_error_line(rpp("eval", q), r"missing RUN\.\.\. arguments")


# ---------------------------------------------------------------- against a literal contract
DOCS = ["a", "b", "c", "d10", "d2", "e"]
QIDS = ["1", "2"]
DISCOUNTS = {"st-rpp": lambda i: 1.0, "st-dcgrpp": lambda i: 1 / math.log2(i + 1),
             "st-invrpp": lambda i: 1 / i}


@st.composite
def collections(draw):
    """Main qrels {q: {d: g}}, subtopic qrels [(q, t, d, g)] and 2-3 runs {q: [docs]}."""
    qrels = {q: {d: draw(st.integers(-1, 2)) for d in
                 draw(st.lists(st.sampled_from(DOCS), unique=True, max_size=5))} for q in QIDS}
    qrels["1"]["a"] = 1
    sub = [(q, t, d, draw(st.integers(-2, 1))) for q in QIDS + ["3"] for t in (1, 2, 3)
           for d in draw(st.lists(st.sampled_from(DOCS + ["x"]), unique=True, max_size=4))]
    runs = [{q: draw(st.permutations(DOCS + ["y"]))[:draw(st.integers(0, 7))] for q in QIDS}
            for _ in range(draw(st.integers(2, 3)))]
    for run in runs:
        run["1"] = run["1"] or ["a"]  # every run shares query 1 with the qrels
    return qrels, sub, runs


def slow_st_rpp(qrels, sub, runs):
    """contract §2-4 taken literally, one query, pair, population and level at a time."""
    out = {}
    for q in QIDS:
        rel = [d for d, g in qrels[q].items() if g > 0]
        if not rel:
            continue
        pops = [sorted({d for qq, tt, d, g in sub if qq == q and tt == t and g > 0})
                for t in (1, 2, 3)]
        pops = [p for p in pops if p] + [rel]
        relevant = {d for pop in pops for d in pop}  # to a subtopic or in the qrels
        n = len(relevant | {d for run in runs for d in run[q]})

        def f(run, pop):
            got = sorted(run[q].index(d) + 1 for d in pop if d in run[q])
            return got + [n - len(pop) + i for i in range(len(got) + 1, len(pop) + 1)]

        for name, disc in DISCOUNTS.items():
            for a, ra in enumerate(runs):
                for b, rb in enumerate(runs):
                    value = 0.0
                    for pop in pops:
                        w = [disc(i) for i in range(1, len(pop) + 1)]
                        signs = [np.sign(y - x) for x, y in zip(f(ra, pop), f(rb, pop))]
                        value += (len(pop) / sum(map(len, pops))
                                  * sum(wi * s for wi, s in zip(w, signs)) / sum(w))
                    out[(name, q, a, b)] = value
    return out


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@pytest.mark.slow
@given(collections())
def test_st_rpp_matches_literal_spec(tmp_path, coll):
    qrels, sub, runs = coll
    q = write_qrels(tmp_path / "qrels", [(qq, d, g) for qq, docs in qrels.items()
                                         for d, g in docs.items()] or [("1", "a", 1)])
    s = write_subtopics(tmp_path / "sub", sub or [("1", 1, "a", 0)])
    paths = [write_run(tmp_path / f"r{i}", {qq: docs for qq, docs in run.items() if docs},
                       f"r{i}") for i, run in enumerate(runs)]
    evaluate = functools.partial(eval_task.run, str(q), [str(p) for p in paths],
                                 eval_task.EvalRequest(tuple(DISCOUNTS), per_query=True),
                                 Options(subtopics=str(s)))
    judged = {qq for qq, *_ in sub or [("1",)]}
    if not judged & {qq for qq, docs in qrels.items() if any(g > 0 for g in docs.values())}:
        with pytest.raises(InputError, match="shares no evaluated query with the qrels"):
            evaluate()  # subtopic qrels of another collection
        return
    ctx = evaluate().extras["context"]
    expected = slow_st_rpp(qrels, sub, runs)
    evaluated = [ctx.collection.qids[q] for q in ctx.collection.evaluated]  # the tensors' rows
    for (name, qid, a, b), value in expected.items():
        qi = evaluated.index(qid)
        assert ctx.tensors[name][qi, a, b] == pytest.approx(value, abs=1e-9)
    assert len(expected) == 3 * len(ctx.collection.evaluated) * len(runs) ** 2


def test_compare_and_meta_take_subtopics():
    """compare and meta accept --subtopics (Tables 2b-4b of the paper): ST-RPP and ndeval's
    measures join the defaults, QRELS may be omitted, and compare's effect is eval's mean."""
    from .conftest import DEMO, parse_lines, rpp

    runs = [DEMO / "runs" / "monot5", DEMO / "runs" / "bm25"]
    sub = DEMO / "qrels.subtopics"
    ev = parse_lines(rpp("eval", "--subtopics", sub, DEMO / "qrels", *runs).out)
    cmp = rpp("compare", "--test", "ttest", "--subtopics", sub, DEMO / "qrels", *runs)
    assert cmp.code == 0, cmp.err
    got = parse_lines(cmp.out)
    assert got[("st-rpp", "all", "monot5", "bm25")] == ev[("st-rpp", "all", "monot5", "bm25")]
    assert ("alpha-nDCG@20_diff", "all", "monot5", "bm25") in got
    no_qrels = rpp("compare", "--test", "ttest", "-m", "st-rpp", "--subtopics", sub, *runs)
    assert no_qrels.code == 0, no_qrels.err
    meta = rpp("meta", "--analysis", "power", "--permutations", "100", "-m", "st-rpp",
               "-m", "alpha-nDCG@20", "--subtopics", sub, DEMO / "qrels", *runs)
    assert meta.code == 0, meta.err
    assert {k[:3] for k in parse_lines(meta.out)} >= {("power_ttest", "all", "st-rpp"),
                                                       ("power_ttest", "all", "alpha-nDCG@20")}


def test_query_without_main_relevant_item_but_subtopic_relevant_ones(tmp_path):
    """Query 2 judges a as 0 in the main qrels but a is relevant to its subtopic 2: rpp's
    measures skip query 2 (no relevant item, contract §1), trec_eval's map keeps it (0):
    map(A) = (1 + 0) / 2 = 0.5; st-rpp on query 1 only: both place a first, 0."""
    q = write_qrels(tmp_path / "qrels", [("1", "a", 1), ("2", "a", 0)])
    s = write_subtopics(tmp_path / "sub", [("2", 2, "a", 1), ("1", 1, "a", 1)])
    runs = [write_run(tmp_path / t, {"1": ["a"], "2": ["a"]}, t) for t in ("A", "B")]
    res = rpp("eval", "-q", "-m", "st-rpp", "-m", "map", "--subtopics", s, q, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    assert got[("map", "all", "A")] == 0.5 and ("st-rpp", "2", "A", "B") not in got
    assert got[("st-rpp", "1", "A", "B")] == 0


@pytest.mark.parametrize("sub", ["\u00b2", "\u2462", "\u0661"])
def test_a_subtopic_id_of_other_digits_is_a_token(tmp_path, sub):
    """Subtopic ids are any token (contract §1): ² and ③ pass str.isdigit but not int(),
    which made every subtopic command a traceback; ١ is no number to ndeval either. They
    sort after the numeric ids, by bytes."""
    qrels = write_qrels(tmp_path / "q", [("106_1", "clueweb12-0000wb-00-00001", 1),
                                         ("106_1", "MARCO_D2", 2)])
    subs = tmp_path / "s"
    subs.write_text(f"106_1 {sub} clueweb12-0000wb-00-00001 1\n106_1 2 MARCO_D2 1\n")
    a = write_run(tmp_path / "a", {"106_1": ["clueweb12-0000wb-00-00001", "MARCO_D2"]}, "a")
    b = write_run(tmp_path / "b", {"106_1": ["MARCO_D2", "clueweb12-0000wb-00-00001"]}, "b")
    res = rpp("levels", "--subtopics", subs, qrels, a, b)
    assert res.code == 0, res.err
    labels = [line.split("\t")[4] for line in res.out.splitlines()
              if line.split("\t")[1] == "106_1"]
    assert labels[:2] == ["2", sub]  # numeric first, then the token
    res = rpp("eval", "-m", "st-rpp", "-m", "alpha-nDCG@20", "--subtopics", subs, qrels, a, b)
    assert res.code == 0 and "Traceback" not in res.err


def test_dash_as_qrels_with_subtopics_says_stdin_is_not_read(tmp_path):
    """With --subtopics, '-' as QRELS is no QRELS (contract); qrels piped there were ignored
    without a word (map 0.3333 against the file's 0.2500): a note says so."""
    s = write_subtopics(tmp_path / "sub", [("106_1", 1, "a", 1), ("106_1", 2, "c", 1)])
    q = write_qrels(tmp_path / "qrels", [("106_1", "a", 1), ("106_1", "c", 0)])
    a = write_run(tmp_path / "A", {"106_1": ["c", "a"]}, "A")
    res = rpp("eval", "-m", "map", "--subtopics", s, "-", a, stdin=q.read_text())
    assert res.code == 0
    assert ("rpp: note: '-' as QRELS with --subtopics means no QRELS (each item's grade is its "
            "largest over the subtopic qrels): standard input is not read; give the qrels file "
            "by name to use it\n") in res.err
    assert "standard input" not in rpp("eval", "-m", "map", "--subtopics", s, q, a).err


def test_a_query_relevant_only_in_the_subtopic_qrels_is_noted(tmp_path):
    """Query 2031's items are relevant to subtopics but graded 0 in QRELS: QRELS decides the
    evaluated queries, so the subtopic measures skipped it without a word (ndeval counts it)."""
    q = write_qrels(tmp_path / "qrels", [("106_1", "a", 1), ("2031", "c", 0), ("2031", "d", 0)])
    s = write_subtopics(tmp_path / "sub", [("106_1", 1, "a", 1), ("2031", 1, "c", 1),
                                           ("2031", 2, "d", 1)])
    a = write_run(tmp_path / "A", {"106_1": ["a"], "2031": ["c", "d"]}, "A")
    b = write_run(tmp_path / "B", {"106_1": ["a"], "2031": ["d", "c"]}, "B")
    res = rpp("eval", "-m", "st-rpp", "--subtopics", s, q, a, b)
    assert res.code == 0
    assert (f"rpp: note: 1 query has items relevant to a subtopic but none relevant in {q} "
            "(2031): the QRELS decides which queries are evaluated") in res.err
    assert "none relevant in" not in rpp("eval", "-m", "st-rpp", "--subtopics", s, a, b).err


def test_kept_subtopic_index_is_the_literal_subset():
    """SubtopicIndex.kept: each subtopic's members that are kept, renumbered in item order;
    a subtopic left empty is gone, its name too (what a judged fraction leaves)."""
    from rpp_cli.populations import Populations, SubtopicIndex

    rng = np.random.default_rng(7)
    for _ in range(200):
        n_queries, n_items = int(rng.integers(1, 4)), int(rng.integers(1, 12))
        item_query = np.sort(rng.integers(0, n_queries, n_items))
        segs, names = [], []
        for q in range(n_queries):
            items = np.flatnonzero(item_query == q)
            for t in range(int(rng.integers(0, 3))):
                chosen = sorted(rng.choice(items, int(rng.integers(1, len(items) + 1)),
                                           replace=False).tolist()) if len(items) else []
                if chosen:
                    segs.append((q, chosen))
                    names.append(f"{q}.{t}")
        index = SubtopicIndex(Populations(
            np.array([i for _, m in segs for i in m], dtype=np.int64),
            np.array([k for k, (_, m) in enumerate(segs) for _ in m], dtype=np.int64),
            np.array([q for q, _ in segs], dtype=np.int64)), names, n_queries)
        keep = rng.random(n_items) < 0.6
        new = {old: k for k, old in enumerate(np.flatnonzero(keep).tolist())}
        want = [(q, [new[i] for i in m if keep[i]], name)
                for (q, m), name in zip(segs, names) if any(keep[i] for i in m)]
        got = index.kept(keep)
        members = [got.pops.member_item[got.pops.member_seg == k].tolist()
                   for k in range(len(got.names))]
        assert list(zip(got.pops.seg_query.tolist(), members, got.names)) == want


def test_meta_judged_fractions_with_subtopics():
    """rpp meta --judged-fractions with subtopic qrels: a dropped judgment leaves every
    subtopic too (it was an IndexError, exit 70)."""
    from .conftest import DEMO, rpp

    runs = [DEMO / "runs" / r for r in ("bm25", "dpr", "monot5")]
    res = rpp("meta", "-Q", "--subtopics", DEMO / "qrels.subtopics", "--analysis", "robustness",
              "--judged-fractions", "0.5", "--judged-samples", "2", "--samples", "5",
              DEMO / "qrels", *runs)
    assert res.code == 0, res.err
    assert "robust_judged_0.50    \tall\tst-rpp\t" in res.out

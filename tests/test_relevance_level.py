"""``-l L`` keeps trec_eval's query set for its measures (contract §6).

trec_eval ``-c -l L`` averages over every query of the qrels, even those with no item of grade
>= L; rpp's own measures (rpp, asl, ...) need a relevant item and skip the others. The golden
outputs in tests/golden/levels were written by trec_eval 9.0.8 itself (see the README there).
"""
from __future__ import annotations

import pytest

from .conftest import ROOT, parse_lines, rpp, write_qrels, write_run
from .realistic import generate, write_collection

GOLDEN = ROOT / "tests" / "golden" / "levels"
RUNS = ("bm25", "dpr", "splade")
MEASURES = ("num_q", "map", "P.5", "ndcg_cut.10", "recip_rank", "bpref")


def _trec_eval_lines(path) -> dict[tuple[str, str], str]:
    """trec_eval's output -> {(measure, qid): value text}."""
    out = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split("\t")
        out[(name.strip(), qid)] = value
    return out


def _rpp_lines(text: str) -> dict[tuple[str, str, str], str]:
    """rpp's text (one run column) -> {(measure, qid, run): value text}."""
    out = {}
    for line in text.splitlines():
        fields = line.split("\t")
        out[(fields[0].strip(), fields[1], fields[2])] = fields[-1]
    return out


@pytest.mark.parametrize("suffix,level", [("c", None), ("c_l2", "2"), ("c_l3", "3"),
                                          ("c_l4", "4")])
def test_baselines_are_trec_eval_c_under_every_level(suffix: str, level: str | None) -> None:
    """Per query and in ``all``, each run's values print as trec_eval -c [-l L] prints them;
    queries a run lacks (trec_eval -q prints no line for them) are 0 in rpp. At -l 4, above
    every grade, no query has a relevant item: trec_eval still prints its measures (map 0,
    ndcg_cut.10 from the grades), and so does rpp, with a note."""
    args = ["eval", "-q", "--compat", "9.0.8", *(["-l", level] if level else [])]
    for m in MEASURES:
        args += ["-m", m]
    res = rpp(*args, GOLDEN / "qrels", *(GOLDEN / r for r in RUNS))
    assert res.code == 0, res.err
    assert ("no query has a relevant item at level 4" in res.err) == (level == "4")
    got = _rpp_lines(res.out)
    qrels_qids = {line.split()[0] for line in (GOLDEN / "qrels").read_text().splitlines()}
    for run in RUNS:
        want = _trec_eval_lines(GOLDEN / f"{run}_{suffix}.out")
        assert want[("num_q", "all")] == "52"
        mine = {(m, q): v for (m, q, r), v in got.items() if r == run}
        for key, value in want.items():
            assert mine[key] == (value if key[0] != "num_q" else "52"), (run, key)
        extra = {k: v for k, v in mine.items() if k not in want}
        assert {q for _, q in extra} == qrels_qids - {q for _, q in want}
        assert set(extra.values()) == {"0.0000"}


def test_level_changes_no_baseline_query_set_but_the_preference_one() -> None:
    """map over all 52 queries at every level; rpp per-query lines only for the queries with a
    relevant item at the level (19 at -l 3), and a note says so with both counts."""
    res = rpp("eval", "-q", "-l", "3", "-m", "rpp", "-m", "map", GOLDEN / "qrels",
              *(GOLDEN / r for r in RUNS))
    assert res.code == 0, res.err
    got = _rpp_lines(res.out)
    assert len({q for (m, q, _) in got if m == "map" and q != "all"}) == 52
    top = {line.split()[0] for line in (GOLDEN / "qrels").read_text().splitlines()
           if float(line.split()[3]) >= 3}
    assert {q for (m, q, _) in got if m == "rpp_win" and q != "all"} == top
    assert len(top) == 19
    assert ("rpp's measures (rpp) average over the 19 queries with a relevant item (grade >= 3), "
            "trec_eval's (map) over all 52 queries of the qrels, as trec_eval -c does") in res.err


def test_no_note_when_the_query_sets_agree(tmp_path) -> None:
    q = write_qrels(tmp_path / "qrels", [("1", "a", 1), ("2", "b", 2)])
    runs = [write_run(tmp_path / t, {"1": ["a", "b"], "2": ["b"]}, t) for t in ("x", "y")]
    res = rpp("eval", "-m", "rpp", "-m", "map", q, *runs)
    assert res.code == 0 and "trec_eval -c" not in res.err


@pytest.mark.parametrize("level", ["1", "2", "3"])
def test_ir_measures_level_and_dash_l_agree(level: str) -> None:
    """``-l L -m AP`` and ``-m 'AP(rel=L)'`` (no -l) print the same numbers, trec_eval's."""
    runs = [GOLDEN / r for r in RUNS]
    by_l = rpp("eval", "-q", "--compat", "9.0.8", "-l", level, "-m", "AP", "-m", "P@5",
               GOLDEN / "qrels", *runs)
    by_rel = rpp("eval", "-q", "--compat", "9.0.8", "-m", f"AP(rel={level})", "-m",
                 f"P(rel={level})@5", GOLDEN / "qrels", *runs)
    assert by_l.code == by_rel.code == 0
    rename = {f"AP(rel={level})": "AP", f"P(rel={level})@5": "P@5"}
    a = _rpp_lines(by_l.out)
    b = {(rename[m], q, r): v for (m, q, r), v in _rpp_lines(by_rel.out).items()}
    assert a == b and len(a) == 2 * 3 * 53
    if level != "1":
        want = _trec_eval_lines(GOLDEN / f"dpr_c_l{level}.out")
        assert a[("AP", "all", "dpr")] == want[("map", "all")]


def _seeds(level: int, count: int) -> list[tuple[int, int]]:
    """(level, seed) of the first ``count`` realistic collections with an item of grade >= level
    (with none, rpp refuses: nothing to evaluate)."""
    seeds = (s for s in range(1000)
             if any(g >= level for q in generate(s).qrels.values() for g in q.values()))
    return [(level, next(seeds)) for _ in range(count)]


@pytest.mark.parametrize("level,seed", _seeds(2, 15) + _seeds(3, 15))
def test_map_equals_pytrec_eval_over_every_qrels_query(tmp_path, seed: int, level: int) -> None:
    """On realistic collections, rpp's map under ``-l L`` is pytrec_eval's AP at relevance
    level L, averaged over every query of the qrels (0 where the run has none)."""
    import pytrec_eval

    coll = generate(seed)
    qrels_path, run_paths = write_collection(coll, tmp_path, "mixed")
    res = rpp("eval", "-q", "--compat", "9.0.8", "--precision", "12", "-l", str(level),
              "-m", "map",
              *[x for t in coll.tags for x in ("--name", t)], qrels_path, *run_paths)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    evaluator = pytrec_eval.RelevanceEvaluator(coll.qrels, {"map"}, relevance_level=level)
    for tag, run in zip(coll.tags, coll.runs):
        per_query = evaluator.evaluate({q: dict(docs) for q, docs in run.items()
                                        if q in coll.qrels})
        values = [per_query.get(q, {"map": 0.0})["map"] for q in coll.qrels]
        for q in coll.qrels:
            assert got[("map", q, tag)] == pytest.approx(per_query.get(q, {"map": 0.0})["map"],
                                                         abs=1e-12)
        assert got[("map", "all", tag)] == pytest.approx(sum(values) / len(values), abs=1e-12)


def test_query_with_only_negative_grades_is_evaluated_as_trec_eval_does(tmp_path) -> None:
    """trec_eval 9.0.8 evaluates a query whose every grade is negative when it is not the first
    it evaluates (its documents are "in the pool, not judged", none is relevant), stops on it
    when it is ("Can't calculate measure", exit 4), and crashes when its grades are all below
    -1; rpp evaluates it as in the first case, whatever its place and grades, and says so.
    Query 1 (grade -2, first): 2 retrieved, no relevant: AP 0, utility -2; query 2: AP = 1
    and utility 1 (its one retrieved item relevant); all: map (0 + 1) / 2 = 0.5, num_ret
    2 + 1 = 3, utility (-2 + 1) / 2 = -0.5, gm_map exp((log 1e-5 + log 1) / 2) = 0.0032 (a
    query scored 0 in the log domain would have given 1)."""
    q = write_qrels(tmp_path / "qrels", [("1", "a", -2), ("2", "b", 1)])
    runs = [write_run(tmp_path / t, {"1": ["a", "c"], "2": ["b"]}, t) for t in ("x", "y")]
    res = rpp("eval", "-q", "-m", "map", "-m", "num_ret", "-m", "utility", "-m", "gm_map",
              "-m", "rpp", q, *runs)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    assert got[("map", "1", "x")] == 0 and got[("map", "2", "x")] == 1
    assert got[("num_ret", "1", "x")] == 2 and got[("utility", "1", "x")] == -2
    assert got[("map", "all", "x")] == 0.5 and got[("num_ret", "all", "y")] == 3
    assert got[("utility", "all", "y")] == -0.5 and got[("gm_map", "all", "y")] == 0.0032
    assert ("1 query with only negative grades (1): no document is relevant there, and rpp "
            "evaluates them as trec_eval does where it can") in res.err
    assert ("rpp_win", "1", "x") not in got and ("rpp_win", "2", "x") in got


def test_meta_studies_one_query_set_and_compare_caption_names_both() -> None:
    """rpp meta compares measures on one query set: the 19 queries with a grade-3 item (a
    note says so); compare's paper caption names both counts; check gates each measure."""
    runs = [GOLDEN / r for r in RUNS]
    meta = rpp("meta", "-l", "3", "--analysis", "ties,agreement", "-m", "rpp", "-m", "map",
               GOLDEN / "qrels", *runs)
    assert meta.code == 0, meta.err
    assert ("meta studies every measure on the 19 queries with a relevant item (trec_eval's "
            "and ir_measures' measures alone average over 52)") in meta.err
    paper = rpp("compare", "-l", "3", "--view", "paper", "--format", "markdown", "--test",
                "ttest", "-m", "rpp", "-m", "map", GOLDEN / "qrels", *runs)
    assert paper.code == 0, paper.err
    assert ("Mean over 19 queries with a relevant item (trec_eval's and ir_measures' "
            "measures: all 52 queries of the qrels)") in paper.out
    only_map = rpp("compare", "-l", "3", "--view", "paper", "--format", "markdown", "--test",
                   "ttest", "-m", "map", GOLDEN / "qrels", *runs)
    assert "Mean over 52 queries" in only_map.out


@pytest.mark.parametrize("args", [[], ["-m", "map", "-m", "asl"], ["-m", "rpp"]])
def test_no_relevant_item_is_an_error_for_rpps_own_measures(args: list[str]) -> None:
    """rpp's own measures compare where users reach relevant items: with none at the level
    there is nothing to compare (exit 2), whatever trec_eval's measures beside them."""
    res = rpp("eval", "-l", "4", *args, GOLDEN / "qrels", *(GOLDEN / r for r in RUNS))
    assert (res.code, res.out) == (2, "")
    assert res.err == f"rpp: {GOLDEN / 'qrels'}: no query has a relevant item at level 4\n"


def test_a_gate_on_no_relevant_item_is_refused() -> None:
    """rpp check -m map at a level above every grade: map is 0 for every run, a gate that
    could not fail; refused, not passed."""
    res = rpp("check", "-l", "4", "-m", "map", GOLDEN / "qrels", "--baseline",
              GOLDEN / "bm25", GOLDEN / "dpr")
    assert (res.code, res.out) == (2, "")
    assert "no query has a relevant item at level 4" in res.err

"""Baselines: every value equals pytrec_eval's on the same input; trec_eval's -m syntax."""
from __future__ import annotations

import math

import pytest
import pytrec_eval

from rpp_cli.errors import InputError
from rpp_cli.measures import pytrec_adapter, resolve, trec, trec_names

from ..conftest import DEMO, parse_lines, rpp

RUNS = sorted((DEMO / "runs").iterdir())


def reference(run_path, measures, level=1):
    """pytrec_eval straight from the files, the way its README shows."""
    with open(DEMO / "qrels") as f:
        qrels = pytrec_eval.parse_qrel(f)
    with open(run_path) as f:
        run = pytrec_eval.parse_run(f)
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)


@pytest.mark.parametrize("measures,level", [
    (["map", "ndcg", "recip_rank", "P.10"], None),
    (["P.5,10,20", "ndcg_cut.10,20", "recall.100", "bpref", "Rprec", "success.1,5"], None),
    (["map", "ndcg_cut.10", "P.5"], 2),
])
def test_per_query_values_equal_pytrec_eval(measures, level):
    args = ["eval", "-q", "--precision", "12"] + [a for m in measures for a in ("-m", m)]
    if level:
        args += ["-l", str(level)]
    res = rpp(*args, DEMO / "qrels", *RUNS)
    assert res.code == 0, res.err
    got = parse_lines(res.out)
    names = sorted({k[0] for k in got})
    assert names and not any(n.startswith("rpp") for n in names)
    for path in RUNS:
        want = reference(path, set(measures), level or 1)
        tag = open(path).readline().split()[5]
        for (name, qid, run), value in got.items():
            if run != tag:
                continue
            if qid == "all":
                per_query = [got[(name, q, run)] for q in {k[1] for k in got} - {"all"}]
                assert value == pytest.approx(sum(per_query) / len(per_query), abs=1e-11)
            elif qid in want:
                assert value == pytest.approx(want[qid][name], abs=1e-11), (name, qid, run)
            else:  # judged query the run skipped: scored as an empty ranking (trec_eval -c)
                assert value == 0.0


def test_missing_query_counts_as_empty_ranking():
    """bm25 skips queries 210 and 220: map there is 0 and `all` averages over all 25."""
    res = rpp("eval", "-q", "-m", "map", "--precision", "12", DEMO / "qrels", DEMO / "runs/bm25")
    got = parse_lines(res.out)
    assert got[("map", "210", "bm25")] == 0.0
    per_query = [v for (m, q, r), v in got.items() if q != "all"]
    assert len(per_query) == 25
    assert got[("map", "all", "bm25")] == pytest.approx(sum(per_query) / 25, abs=1e-11)


def test_sums_and_geometric_means_aggregate_like_trec_eval():
    res = rpp("eval", "-q", "-m", "num_rel_ret", "-m", "gm_map", "-m", "map", "--precision", "10",
              DEMO / "qrels", DEMO / "runs/monot5")
    got = parse_lines(res.out)
    rel_ret = [v for (m, q, r), v in got.items() if m == "num_rel_ret" and q != "all"]
    assert got[("num_rel_ret", "all", "monot5")] == sum(rel_ret)
    aps = [v for (m, q, r), v in got.items() if m == "map" and q != "all"]
    gm = math.exp(sum(math.log(max(a, 1e-5)) for a in aps) / len(aps))
    assert got[("gm_map", "all", "monot5")] == pytest.approx(gm, abs=1e-9)
    assert not any(m == "gm_map" and q != "all" for (m, q, r) in got)  # as trec_eval


def test_default_measures_and_exact_selection():
    assert [m.name for m in resolve(None)] == ["rpp", "dcgrpp", "invrpp", "map", "ndcg",
                                               "recip_rank", "P.10", "asl"]
    assert [m.name for m in resolve(["rpp"])] == ["rpp"]
    assert [m.name for m in resolve(["P_10", "ndcg_cut.10"])] == ["P.10", "ndcg_cut.10"]


@pytest.mark.parametrize("spec,names", [
    ("P.5,10", ["P_5", "P_10"]),
    ("P.10,5", ["P_5", "P_10"]),
    ("iprec_at_recall..10,.20", ["iprec_at_recall_0.10", "iprec_at_recall_0.20"]),
    ("Rprec_mult.0.5", ["Rprec_mult_0.50"]),
    ("success.1,5", ["success_1", "success_5"]),
    ("utility.2,-1,0,0", ["utility_2,-1,0,0"]),
    ("ndcg.1=3,2=9", ["ndcg_1=3,2=9"]),
    ("map", ["map"]),
])
def test_trec_eval_parameter_syntax(spec, names):
    (req,) = trec_names.parse([spec])
    assert req.output_names() == names


def test_nicknames_and_first_params_win():
    names = [r.base for r in trec_names.parse(["official"])]
    assert names[:3] == ["runid", "num_q", "num_ret"] and "P" in names
    assert [r.spec for r in trec_names.parse(["P.5", "P.10"])] == ["P.5"]


@pytest.mark.parametrize("spec", ["P.0", "P.abc", "P.5,5", "ndcg.1", "utility.1,2", "map.5",
                                  "nosuch", "P."])
def test_malformed_measures_are_input_errors_not_crashes(spec):
    with pytest.raises(InputError):
        resolve([spec])
    res = rpp("eval", "-m", spec, DEMO / "qrels", DEMO / "runs/bm25")
    assert res.code == 2
    assert res.err.count("\n") == 1 and res.err.startswith("rpp: ")


def test_measures_print_in_the_order_named():
    res = rpp("eval", "-m", "map", "-m", "rpp", "-m", "P.1", DEMO / "qrels", *RUNS[:2])
    names = list(dict.fromkeys(line.split("\t")[0].strip() for line in res.out.splitlines()))
    assert names == ["map", "rpp", "rpp_win", "P_1"]


def test_docnos_that_are_not_utf8_reach_pytrec_eval_safely(tmp_path):
    """pytrec_eval crashes on invalid UTF-8; such names are passed hex-encoded (byte order
    kept, so trec_eval's tie-breaking by docno is the same)."""
    (tmp_path / "qrels").write_bytes(b"q1 0 d\xff1 1\nq1 0 d2 0\nq1 0 abc 1\n")
    (tmp_path / "A").write_bytes(b"q1 Q0 d\xff1 1 2.0 A\nq1 Q0 d2 2 1.0 A\n")
    (tmp_path / "B").write_bytes(b"q1 Q0 d2 1 2.0 B\nq1 Q0 abc 2 2.0 B\n")
    res = rpp("eval", "-m", "map", tmp_path / "qrels", tmp_path / "A", tmp_path / "B")
    assert res.code == 0
    got = parse_lines(res.out)
    assert got[("map", "all", "A")] == 0.5  # d\\xff1 first: AP = (1/1) / 2
    assert got[("map", "all", "B")] == 0.25  # tie: d2 before abc (docno descending)


def test_passes_one_per_level_cutoffs_merge_other_parameters_clash():
    T = trec_names.TrecRequest
    passes, where = trec.plan_passes([
        (T("P", "5"), 1), (T("P", "10"), 1), (T("map"), 1), (T("P", "5"), 2),
        (T("ndcg", "1=0,2=5"), 1), (T("ndcg"), 1), (T("P"), 1),
        (T("iprec_at_recall", "0.1"), 1), (T("iprec_at_recall", "0.100001"), 1)])
    assert [(p.level, p.params) for p in passes] == [
        (1, {"P": "5,10,15,20,30,100,200,500,1000", "map": None, "ndcg": "1=0,2=5",
             "iprec_at_recall": "0.1"}),
        (2, {"P": "5"}),
        (1, {"ndcg": None, "iprec_at_recall": "0.100001"})]  # both print iprec_at_recall_0.10
    assert where == [0, 0, 0, 1, 0, 2, 0, 0, 2]


def test_all_pytrec_eval_measures_of_a_command_share_one_pass_per_level(monkeypatch):
    """trec names and ir_measures' names, with and without a level: one engine map over the
    shards of queries (5 queries each: 5 shards of the demo's 25), and on each shard two
    evaluators (levels 1 and 2); the values are those of separate commands."""
    made, maps = [], []
    real_evaluator, real_current = trec.Evaluator, trec.current

    class Recording:
        """The command's engine, noting each map's label."""

        def __init__(self, engine) -> None:
            self.engine, self.workers = engine, engine.workers

        def imap(self, fn, shards, label=None):
            maps.append((label, len(shards)))
            return self.engine.imap(fn, shards, label)

    monkeypatch.setattr(trec, "Evaluator", lambda *a, **k: made.append(a[2]) or
                        real_evaluator(*a, **k))
    monkeypatch.setattr(trec, "current", lambda: Recording(real_current()))
    monkeypatch.setenv("RPP_SHARD_QUERIES", "5")
    names = ["map", "AP", "nDCG@10", "P@5", "P.10", "P(rel=2)@5", "AP(rel=2)", "R@100",
             "recip_rank", "RR", "Success@10", "gm_map", "num_rel_ret"]
    runs = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr", DEMO / "runs" / "monot5"]
    args = ["eval", "-q", "-j", "1", "--precision", "17", DEMO / "qrels", *runs]
    together = parse_lines(rpp(*args[:6], *(a for n in names for a in ("-m", n)),
                               *args[6:]).out)
    assert maps == [("trec_eval measures", 5)] and sorted(made) == [1] * 5 + [2] * 5
    apart = {}
    for name in names:
        apart |= parse_lines(rpp(*args[:6], "-m", name, *args[6:]).out)
    assert together == apart


@pytest.mark.parametrize("n_codes, kind", [(0, "int8"), (127, "int8"), (128, "int16"),
                                           (32767, "int16"), (32768, "int32"),
                                           ((1 << 31) - 1, "int32"), (1 << 31, "int64")])
def test_a_shard_codes_rows_in_the_narrowest_type(n_codes, kind):
    """0..n_codes (n_codes marks an unjudged row) fit, and nothing narrower would hold them."""
    assert trec.code_type(n_codes) == kind


def test_the_bridge_names_documents_within_their_query():
    """pytrec_eval matches a run's documents with the judgments query by query, so a name is
    unique within its query only: a judged document is its index among its query's judgments
    (the same string in the qrels and in every run), any other document ``u`` and its
    position. A code without a grade (NaN) reaches pytrec_eval as unjudged; a negative grade
    as -1 (trec_eval reads every negative grade alike, "in the pool, not judged", and sizes a
    query's table of grades by its largest + 1: a query of grades below -1 would crash it).
    Worked by hand."""
    import numpy as np

    nan = float("nan")
    # judged codes 0..5: their queries and grades; query 2's grades are all negative
    bridge = pytrec_adapter.Bridge(np.array([1, 0, 1, 0, 2, 2]),
                                   np.array([2.0, 0.0, nan, 1.0, -1.0, -2.0]), 3)
    assert bridge.qrels == {"0": {"0": 0, "1": 1}, "1": {"0": 2}, "2": {"0": -1, "1": -1}}
    # rows in trec_eval's order: query 0 ranks codes 3, 1 and 7 (7: no judgment at all),
    # query 1 ranks 2 (NaN grade) and 0, query 2 ranks 4 (negative only)
    run = bridge.run(np.array([0, 3, 5, 6]), np.array([3, 1, 7, 2, 0, 4]))
    assert run == {"0": {"1": -1.0, "0": -2.0, "u2": -3.0}, "1": {"u0": -1.0, "0": -2.0},
                   "2": {"0": -1.0}}
    # no judged code at all: every row is unjudged (codes narrowed to int8, as shards send them)
    empty = pytrec_adapter.Bridge(np.array([], dtype=np.int64), np.array([]), 1)
    assert empty.qrels == {"0": {}}
    assert empty.run(np.array([0, 2]), np.array([0, 0], dtype=np.int8)) == {
        "0": {"u0": -1.0, "u1": -2.0}}


@pytest.mark.parametrize("depth", [1, 61, 62, 63, 3844, 3845, 238_329])
def test_unjudged_names_sort_as_their_ranks(depth):
    """``u`` and the rank in base 62 of one width: distinct, in byte order as the ranks, and
    never a judged name (those are decimal digits)."""
    names = pytrec_adapter.ranked_names(depth)
    assert len(names) == len(set(names)) == depth
    assert sorted(names, key=lambda n: n.encode()) == names
    assert len({len(n) for n in names}) == 1 and all(n[0] == "u" for n in names)
    width = 1 if depth <= 62 else 2 if depth <= 3844 else 3 if depth <= 238_328 else 4
    assert names[0] == "u" + "0" * width


def test_unjudged_names_in_a_two_digit_alphabet(monkeypatch):
    """The names by hand, with base 2 standing in for base 62: one width for all, the
    first ``depth`` names of that width in order."""
    monkeypatch.setattr(pytrec_adapter, "DIGITS", "01")
    assert pytrec_adapter.ranked_names(5) == ["u000", "u001", "u010", "u011", "u100"]
    assert pytrec_adapter.ranked_names(4) == ["u00", "u01", "u10", "u11"]


@pytest.mark.parametrize("seed", [3, 11])
def test_a_shard_evaluates_alike_in_every_code_type(tmp_path, seed):
    """A shard's values do not depend on the integer type its rows' codes travel in."""
    import numpy as np

    from rpp_cli.pipeline import load
    from rpp_cli.settings import Options

    from ..realistic import generate, write_collection

    qrels, runs = write_collection(generate(seed), tmp_path, "mixed", seed)
    coll = load(str(qrels), [str(r) for r in runs], Options(), [])
    wanted = resolve(["map", "ndcg", "P.5", "num_ret"])
    passes, _ = trec.plan_passes([(m.trec, 1) for m in wanted])
    _, shards = trec.trec_shards(coll.judged, coll.runs)
    for i in range(len(shards)):
        shard = shards[i]
        want = trec.evaluate_shard(shard, passes)
        for kind in (np.int16, np.int32, np.int64):
            wide = trec.TrecShard(shard.n_queries, shard.query, shard.grade,
                                  [(b, d.astype(kind)) for b, d in shard.runs])
            for got, expected in zip(trec.evaluate_shard(wide, passes), want):
                assert got.tolist() == expected.tolist()

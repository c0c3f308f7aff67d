"""The parts of ``rpp trec-eval`` on their own: trec_eval's ``-m`` syntax, its ranking rule,
relstring, aggregation and printf formats (values worked out by hand from trec_eval's C)."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.errors import InputError
from rpp_cli.measures import trec_table
from rpp_cli.measures.pytrec_adapter import evaluate
from rpp_cli.measures.trec import aggregate
from rpp_cli.measures.trec_names import TrecRequest, c_atof, parse, validate
from rpp_cli.errors import TREC_EVAL_USAGE
from rpp_cli.tasks.trec_eval.flow import (parse_measures, pytrec_eval_input, rank,
                                          relstrings)
from rpp_cli.tasks.trec_eval.reader import read_judgments, read_retrieved
from rpp_cli.tasks.trec_eval.writer import c_float


# -- measure syntax -------------------------------------------------------------------------

def test_first_params_win_and_cutoffs_sort() -> None:
    assert parse(["P.10,5", "P.3"]) == [TrecRequest("P", "10,5")]
    assert parse(["P.10,5"])[0].output_names() == ["P_5", "P_10"]
    assert parse(["P", "P.10"]) == [TrecRequest("P", "10")]
    p = [r for r in parse(["all_trec", "P.7"]) if r.base == "P"]
    assert p == [TrecRequest("P", "7")]
    assert parse(["ndcg_cut.10,20,23.4"])[0].output_names() == [
        "ndcg_cut_10", "ndcg_cut_20", "ndcg_cut_23"]


def test_nickname_params_are_ignored() -> None:
    assert parse(["official.5"]) == parse(["official"])
    assert [r.base for r in parse(["set.1"])] == trec_table.NICKNAMES["set"]


def test_trec_eval_order_not_command_line_order() -> None:
    bases = [r.base for r in parse_measures(("P", "map", "relstring", "runid", "ndcg"))]
    assert bases == ["runid", "map", "P", "relstring", "ndcg"]
    assert [r.base for r in parse_measures(())] == trec_table.NICKNAMES["official"]


def test_output_names_as_trec_eval_prints_them() -> None:
    names = [n for r in parse(["Rprec_mult.1000,123456.5", "iprec_at_recall.-0.5,.1",
                               "set_F.0.5", "utility", "relstring.20.5", "ndcg.1=3,2=9",
                               "11pt_avg..25,.5", "success"]) for n in r.output_names()]
    assert names == ["Rprec_mult_1000.00", "Rprec_mult_123456.5", "iprec_at_recall_-0.50",
                     "iprec_at_recall_0.10", "set_F_0.5", "utility", "relstring_20.5",
                     "ndcg_1=3,2=9", "11pt_avg_.25,.5", "success_1", "success_5", "success_10"]


@pytest.mark.parametrize("params", ["=", "1=abc", "a=1,b=2", "1=3,2=9,4=4.5"])
def test_pair_params_trec_eval_accepts(params: str) -> None:
    validate(TrecRequest("ndcg", params))


@pytest.mark.parametrize("params", ["1", "1=2,3", "1=2=3", "1=2,,3=4", "1=2,", ",1=2"])
def test_pair_params_trec_eval_rejects(params: str) -> None:
    with pytest.raises(InputError, match="level=gain pairs"):
        validate(TrecRequest("ndcg", params))


def test_unknown_names_are_usage_errors_for_trec_eval_only() -> None:
    with pytest.raises(InputError) as err:
        parse_measures(("P_10",))
    assert err.value.exit_code == TREC_EVAL_USAGE
    assert parse(["P_10"]) == [TrecRequest("P", "10")]  # rpp eval's shorthand
    with pytest.raises(InputError) as err:
        parse(["foo"])
    assert err.value.exit_code == 2


@pytest.mark.parametrize("text,value", [("5", 5.0), (".25", 0.25), ("5x", 5.0), ("abc", 0.0),
                                        ("", 0.0), ("-1e2z", -100.0), ("20.5", 20.5),
                                        ("1e400", math.inf), ("-Infinity", -math.inf),
                                        ("INF,", math.inf), ("0x1p-1", 0.5),
                                        ("-0x1.8p3", -12.0), ("0x.8", 0.5), ("+0x10z", 16.0),
                                        ("0x", 0.0), ("0x1p99999", math.inf), ("1e", 1.0),
                                        ("\u0661", 0.0), ("\u00b2", 0.0)])
def test_c_atof(text: str, value: float) -> None:
    assert c_atof(text) == value


def test_c_atof_reads_nan_as_c_does() -> None:
    """atof("nan") is NaN in C: a parameter reading as NaN is then refused, not taken as 0."""
    assert math.isnan(c_atof("nan")) and math.isnan(c_atof("-NaN(1)"))


# -- aggregation and formats ----------------------------------------------------------------

def test_aggregate_by_hand() -> None:
    ap = np.array([0.5, 0.25])
    assert aggregate("map", ap) == 0.375
    assert aggregate("map", ap, n_queries=4) == 0.1875  # -c: missing queries add 0
    assert aggregate("num_ret", np.array([10.0, 7.0]), n_queries=4) == 17.0
    assert aggregate("num_q", ap, n_queries=4) == 4.0
    logs = np.log(np.maximum(ap, 1e-5))
    assert aggregate("gm_map", logs) == pytest.approx(math.sqrt(0.5 * 0.25), rel=1e-15)
    assert aggregate("gm_map", logs, n_queries=3) == pytest.approx(
        (0.5 * 0.25 * 1e-5) ** (1 / 3), rel=1e-12)


def test_aggregate_adds_in_query_order() -> None:
    """trec_eval's running += : 1e16 + 1 rounds back to 1e16 (a compensated sum gives 1)."""
    assert aggregate("num_ret", np.array([1e16, 1.0, -1e16])) == 0.0


def test_c_float_nan_keeps_its_sign() -> None:
    nan = float("nan")
    assert c_float(nan) == "   nan"
    assert c_float(-nan) == "  -nan"
    assert c_float(0.0 / 1.0) == "0.0000" and c_float(-0.0) == "-0.0000"
    assert c_float(12345.678) == "12345.6780"


@given(st.floats(allow_nan=False))
def test_c_float_is_printf_for_numbers(x: float) -> None:
    assert c_float(x) == "%6.4f" % x


# -- ranking and relstring ------------------------------------------------------------------

def _files(tmp, qrels_rows, run_rows, runid: str = "t", as_float: bool = True):
    """(Judgments, Retrieved) read back from files holding (qid, docno, grade/score) rows;
    scores as C floats (trec_eval 9.0.8) unless ``as_float`` is False (10.0: doubles)."""
    with open(f"{tmp}/q", "w") as f:
        f.writelines(f"{q} 0 {d} {g}\n" for q, d, g in qrels_rows)
    with open(f"{tmp}/r", "w") as f:
        f.writelines(f"{q} Q0 {d} 1 {s!r} {runid}\n" for q, d, s in run_rows)
    return read_judgments(f"{tmp}/q"), read_retrieved(f"{tmp}/r", as_float)


def _play(tmp):
    """trec_eval's notes example: qid 10 with a three-way score tie, qid 5 without qrels."""
    return _files(tmp, [("10", "d1", 2), ("10", "d2", 1), ("10", "d3", 0), ("10", "d4", 1),
                        ("10", "d9", 2), ("3", "b1", -1)],
                  [("10", "d1", 5.0), ("10", "d2", 4.0), ("10", "d3", 4.0), ("10", "d4", 4.0),
                   ("10", "dx", 3.5), ("10", "d9", 1.0), ("5", "e1", 1.0), ("3", "b1", 2.0)],
                  "runLAST")


def test_relstring_by_hand(tmp_path) -> None:
    """d1(2), then the tie d4(1) d3(0) d2(1) in reverse docno order, dx unjudged, d9(2)."""
    ranked = rank(*_play(tmp_path), None, "q", "r")
    assert ranked.qids == ["10", "3"]
    assert relstrings(ranked, 10, False) == ["2101-2", "."]
    assert relstrings(ranked, 4.9, False) == ["2101", "."]
    assert relstrings(ranked, -3, False) == ["", ""]
    # trec_eval's (long) of a length past a long's range is LONG_MIN on x86: nothing
    assert relstrings(ranked, 1e19, False) == relstrings(ranked, -1e300, False) == ["", ""]
    assert relstrings(ranked, 9.2e18, False) == ["2101-2", "."]
    assert relstrings(ranked, 10, True) == ["21012", ""]  # -J drops unjudged docs
    assert relstrings(rank(*_play(tmp_path), 2, "q", "r"), 10, False) == ["21", "."]  # -M 2


@pytest.mark.parametrize("as_float,ranked", [(True, "2143"), (False, "1234")])
def test_float32_scores_tie(tmp_path, as_float: bool, ranked: str) -> None:
    """16777217 and 16777216 are one C float; so are 1.0000000001 and 1.0: trec_eval 9.0.8
    orders them by docno; 10.0 keeps doubles, which differ."""
    j, r = _files(tmp_path, [("q", "a", 1), ("q", "b", 2), ("q", "c", 3), ("q", "d", 4)],
                  [("q", "a", 16777217.0), ("q", "b", 16777216.0), ("q", "c", 1.0000000001),
                   ("q", "d", 1.0)], as_float=as_float)
    assert relstrings(rank(j, r, None, "q", "r"), 10, False) == [ranked]


queries = st.sampled_from(["1", "2", "10", "a"])
docnos = st.sampled_from([f"d{i}" for i in range(12)])
scores = st.sampled_from([0.0, -0.0, 1.0, 1.0000000001, 2.5, 16777216.0, 16777217.0, -3.0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(queries, docnos, scores), min_size=1, max_size=40,
                unique_by=lambda t: (t[0], t[1])),
       st.lists(st.tuples(queries, docnos, st.integers(-1, 12)), min_size=1, max_size=30,
                unique_by=lambda t: (t[0], t[1])),
       st.one_of(st.none(), st.integers(0, 6)))
def test_ranking_is_trec_evals_sort(run_rows, qrels_rows, max_retrieved) -> None:
    """Per query (trec_eval 9.0.8: those with results and judgments): C-float score desc,
    docno desc (bytes), top -M; grades joined by docno."""
    import tempfile

    common = {q for q, _, _ in run_rows} & {q for q, _, _ in qrels_rows}
    with tempfile.TemporaryDirectory() as tmp:
        j, r = _files(tmp, qrels_rows, run_rows)
    if not common:
        with pytest.raises(InputError):
            rank(j, r, max_retrieved, "q", "r", "9.0.8")
        return
    top = {q: max(g for qq, _, g in qrels_rows if qq == q) for q in common}
    if top[min(common)] < 0 or min(top.values()) <= -2:
        with pytest.raises(InputError, match="only negative grades"):
            rank(j, r, max_retrieved, "q", "r", "9.0.8")
        return
    ranked = rank(j, r, max_retrieved, "q", "r", "9.0.8")
    assert ranked.qids == sorted(common)
    grades = {(q, d): g for q, d, g in qrels_rows}
    for i, q in enumerate(ranked.qids):
        docs = sorted(((np.float32(s), d) for qq, d, s in run_rows if qq == q), reverse=True)
        docs = docs[:max_retrieved] if max_retrieved is not None else docs
        got = ranked.docs.strings(ranked.doc[ranked.bounds[i]:ranked.bounds[i + 1]])
        assert [x.decode() for x in got] == [d for _, d in docs]
        want_rel = [grades.get((q, d), -1) for _, d in docs]
        want_rel = [g if g >= 0 or (q, d) not in grades else -2
                    for g, (_, d) in zip(want_rel, docs)]
        assert ranked.rel[ranked.bounds[i]:ranked.bounds[i + 1]].tolist() == want_rel
        lo, hi = ranked.judged_bounds[i], ranked.judged_bounds[i + 1]
        judged = dict(zip((x.decode() for x in ranked.docs.strings(ranked.judged_doc[lo:hi])),
                          ranked.judged_grade[lo:hi].tolist()))
        assert judged == {d: g for (qq, d), g in grades.items() if qq == q}
    qrels, run, _ = pytrec_eval_input(ranked)
    for i in range(len(ranked.qids)):  # the ranking by position, judged docs by code
        keys, values = list(run[str(i)]), list(run[str(i)].values())
        assert keys == [str(c) for c in ranked.doc[ranked.bounds[i]:ranked.bounds[i + 1]]]
        assert values == [-(k + 1.0) for k in range(len(keys))]
        assert [k in qrels[str(i)] for k in keys] == [
            r != -1 for r in ranked.rel[ranked.bounds[i]:ranked.bounds[i + 1]].tolist()]


# -- pytrec_eval bridge ---------------------------------------------------------------------

def test_empty_ranking_first_does_not_crash_pytrec_eval() -> None:
    """An empty ranking evaluated first made pytrec_eval segfault with bpref + map."""
    got = evaluate({"3": {"a": 1}, "10": {"b": 1}}, {"3": {}, "10": {"b": 1.0}},
                   parse(["bpref", "map", "num_ret"]))
    assert got == {"3": {"bpref": 0.0, "map": 0.0, "num_ret": 0.0},
                   "10": {"bpref": 1.0, "map": 1.0, "num_ret": 1.0}}


def test_utility_with_num_docs_in_coll_by_hand() -> None:
    """retrieved a(rel) x(nonrel) y(unjudged); rel b not retrieved; N = 100:
    2*1 - 1*2 + 0.5*1 + 0.25*(100 + 1 - 3 - 2) = 24.5; without -N (N = 0) it is -0.5."""
    run = {"q": {"a": 3.0, "x": 2.0, "y": 1.0}}
    qrels = {"q": {"a": 1, "b": 1, "x": 0}}
    got = evaluate(qrels, run, parse(["utility.2,-1,0.5,0.25"]), num_docs_in_coll=100)
    assert got["q"]["utility_2,-1,0.5,0.25"] == 24.5
    got = evaluate(qrels, run, parse(["utility.2,-1,0.5,0.25"]))
    assert got["q"]["utility_2,-1,0.5,0.25"] == -0.5


@pytest.mark.parametrize("measure", ["P.\u0661", "P.1,\u0662", "ndcg_cut.\uff15", "recall.\uff110"])
def test_cutoffs_in_other_digits_are_refused_before_pytrec_eval(measure) -> None:
    """C's atol reads Arabic-Indic or fullwidth digits as 0 (trec_eval: "Cannot initialize
    measure"); Python's int took them, and pytrec_eval then aborted the process (SIGABRT)."""
    with pytest.raises(InputError, match="cutoffs must be positive integers"):
        parse([measure])


def test_a_measure_name_is_padded_to_22_bytes(tmp_path) -> None:
    """printf's %-22s counts bytes: ndcg.١=٣ (UTF-8 parameters) is padded as trec_eval pads."""
    from rpp_cli.results import Results
    from rpp_cli.tasks.trec_eval import TrecEvalOutput
    from rpp_cli.tasks.trec_eval.writer import lines

    results = Results(["1"], ["r"])
    results.add("ndcg_\u0661=\u0663", -1, 0, [0.5])
    long = "ndcg_" + "\U0001f600" * 8 + "=3"  # 39 bytes: printf pads nothing (it crashed here)
    results.add(long, -1, 0, [0.5])
    first, second = lines(TrecEvalOutput(results, {}))
    assert first.encode().split(b"\t")[0] == "ndcg_\u0661=\u0663".encode().ljust(22)
    assert second.split("\t")[0] == long

"""The Python API: the commands as functions over paths or dicts, the same numbers as the CLI."""
from __future__ import annotations

import gzip
import re
import subprocess
import sys

import pytest

import rpp_cli
from rpp_cli.errors import InputError

from .conftest import DEMO, ROOT, demo_dicts, doc_section, parse_lines, rpp
from .realistic import generate, write_collection

RUNS = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr", DEMO / "runs" / "monot5"]


def _dicts():
    """The demo collection as ranx / pytrec_eval dicts."""
    return demo_dicts(RUNS)


def test_the_api_names_are_the_api_whatever_loaded_first():
    """The package loads its API names on first use; a module of the package with one of
    those names would shadow it (``rpp_cli.evaluate`` the module) once anything imported it.
    Checked in a fresh interpreter that loads the whole CLI first."""
    package = ROOT / "rpp_cli"
    assert set(rpp_cli.__all__) <= set(dir(rpp_cli))
    assert not [n for n in rpp_cli.__all__ if (package / f"{n}.py").exists()
                or (package / n).is_dir()]
    script = ("import rpp_cli.cli, rpp_cli.commands, rpp_cli.pipeline, rpp_cli.tasks.meta, "
              "rpp_cli; "
              "print(*(f'{n}:{type(getattr(rpp_cli, n)).__name__}' for n in rpp_cli.__all__))")
    res = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=60)
    assert res.stdout == ("evaluate:function compare:function meta:function levels:function "
                          "check:function Check:type MetaOptions:type Results:type InputError:type RppNote:type "
                          "__version__:str\n"), res.stderr


def test_dicts_give_the_cli_numbers():
    qrels, runs = _dicts()
    got = rpp_cli.evaluate(qrels, runs, per_query=True)
    cli = parse_lines(rpp("eval", "-q", "--precision", "17", DEMO / "qrels", *RUNS).out)
    records = got.records()
    assert len(records) == len(cli)
    for r in records:
        key = (r["measure"], r["qid"], r["run"]) + ((r["other"],) if r["other"] else ())
        assert abs(cli[key] - r["value"]) < 1e-12, key


def test_paths_and_compare_and_meta():
    res = rpp_cli.evaluate(str(DEMO / "qrels"), [str(p) for p in RUNS], ["rpp"])
    assert {r["run"] for r in res.records()} == {"bm25", "dpr", "monot5"}
    tests = rpp_cli.compare(DEMO / "qrels", RUNS, ["map"], test="ttest").records()
    assert {r["measure"] for r in tests} == {"map_diff", "map_p"}
    meta = rpp_cli.meta(DEMO / "qrels", RUNS, ["rpp", "map"],
                        options=rpp_cli.MetaOptions(analyses=("agreement",)))
    assert any(r["measure"] == "agreement_tau" for r in meta.records())


def test_run_names_as_on_the_command_line(tmp_path):
    """contract §1 in the API: a path is named by its file name (or tag, ``names_from``), an
    in-memory run by its key, ``run<i>`` in a list (i: its place); runs that share a file name
    by the shortest trailing part of their paths that tells them apart; a clash is an
    error."""
    renamed = tmp_path / "first.run.gz"
    renamed.write_bytes(gzip.compress(RUNS[0].read_bytes()))  # bm25
    qrels, runs = _dicts()

    def names(runs, **kwargs) -> list[str]:
        res = rpp_cli.evaluate(DEMO / "qrels", runs, ["map"], **kwargs)
        return [r["run"] for r in res.records()]

    assert names([renamed, RUNS[1]]) == ["first.run", "dpr"]
    assert names([renamed, RUNS[1]], names_from="tag") == ["bm25", "dpr"]
    assert names([renamed, runs["monot5"]]) == ["first.run", "run1"]
    assert names([runs["dpr"], runs["monot5"]]) == ["run0", "run1"]
    assert names({"x": runs["dpr"], "y": runs["monot5"]}, names_from="tag") == ["x", "y"]
    assert names([renamed, runs["dpr"]], names=["A", "B"]) == ["A", "B"]
    with pytest.raises(InputError,
                       match=r"names_from: expected one of file, stem, tag \(got 'tags'\)"):
        names([renamed], names_from="tags")
    (tmp_path / "other").mkdir()
    twin = tmp_path / "other" / "first.run"
    twin.write_bytes(RUNS[1].read_bytes())
    assert names([renamed, twin]) == [f"{tmp_path.name}/first.run", "other/first.run"]
    assert names([renamed, twin], names_from="stem") == [f"{tmp_path.name}/first", "other/first"]
    with pytest.raises(InputError, match=r"are both named 'bm25'"):
        rpp_cli.compare(DEMO / "qrels", [renamed, RUNS[0]], ["map"], names_from="tag")


def test_bad_dicts_are_input_errors():
    """An id no TREC file can hold (whitespace) is refused, naming it; it could otherwise add
    a judgment (a newline) or change an id (a leading space) without a word."""
    with pytest.raises(InputError, match="qrels: 'doc with space' is empty or holds whitespace"):
        rpp_cli.evaluate({"q1": {"doc with space": 1}}, {"a": {"q1": {"d": 1.0}}})
    with pytest.raises(InputError, match=r"run a: 'd 0 1\\nq1 Q0 e' is empty or holds"):
        rpp_cli.evaluate({"q1": {"d": 1}}, {"a": {"q1": {"d 0 1\nq1 Q0 e": 1.0}}})
    with pytest.raises(InputError, match="qrels: ' d' is empty or holds whitespace"):
        rpp_cli.evaluate({"q1": {" d": 1}}, {"a": {"q1": {"d": 1.0}}})
    with pytest.raises(InputError, match="qrels: '' is empty"):
        rpp_cli.evaluate({"q1": {"": 1}}, {"a": {"q1": {"d": 1.0}}})
    with pytest.raises(InputError, match="shares no query"):
        rpp_cli.evaluate({"q1": {"d": 1}}, {"a": {"q9": {"d": 1.0}}, "b": {"q1": {"d": 1.0}}})


def test_to_pandas_says_what_it_needs():
    res = rpp_cli.evaluate(*_dicts(), measures=["map"])
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pip install pandas"):
            res.to_pandas()
    else:
        frame = res.to_pandas()
        assert list(frame.columns) == ["measure", "qid", "run", "other", "value"]
        assert len(frame) == len(res.records())


def test_the_api_page_example_runs(monkeypatch, capsys):
    code = re.search(r"```python\n(.*?)```", doc_section("Python API"), re.S).group(1)
    monkeypatch.chdir(ROOT)
    exec(compile(code, "docs/api.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    # q1 and q2: dense places every relevant item above bm25 does, so RPP(bm25, dense) = -1
    assert out[0] == "rpp bm25 dense -1.0"
    assert out[-1] == "104 [True, True]"  # 26 x (2 rpp + 2 rpp_win) rows; both p < 0.05


def test_the_readme_example_runs(monkeypatch, capsys):
    """The README's short example: one query, relevant d1 (grade 2) and d3 (grade 1), n = 3.
    bm25 ranks d2, d1 and misses d3 (worst case: position 3); dense ranks d1, d3. Populations
    >=1 {d1, d3}: bm25 at 2, 3 vs dense 1, 2, both levels dense's; >=2 {d1}: 2 vs 1, dense's.
    RPP(bm25, dense) = (2 * -1 + 1 * -1) / 3 = -1; map: bm25 (1/2) / 2 = 0.25, dense 1.0."""
    text = (ROOT / "README.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.S)
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out == ["rpp bm25 dense -1.0", "rpp dense bm25 1.0", "rpp_win bm25 None -1.0",
                   "rpp_win dense None 1.0", "map bm25 None 0.25", "map dense None 1.0"]


def _frames(qrels: dict, runs: dict, qid: str = "query_id", grade: str = "relevance"):
    """ir_measures' DataFrames (ranx's with ``qid="q_id", grade="score"``) of dicts."""
    import pandas as pd

    q = pd.DataFrame([(a, d, g) for a, docs in qrels.items() for d, g in docs.items()],
                     columns=[qid, "doc_id", grade])
    r = {name: pd.DataFrame([(a, d, s, 0) for a, docs in run.items() for d, s in docs.items()],
                            columns=["query_id", "doc_id", "score", "rank"])
         for name, run in runs.items()}
    return q, r


def test_dataframes_give_the_file_numbers(tmp_path):
    """ir_measures' and ranx's DataFrames of a realistic collection (UTF-8 ids, string qids,
    tied, tiny and large scores, negative grades) give every value the files give."""
    for seed in (3, 11, 17):
        coll = generate(seed)
        qrels_path, run_paths = write_collection(coll, tmp_path / str(seed), "mixed")
        files = rpp_cli.evaluate(qrels_path, run_paths, ["rpp", "map", "RR@10", "ERR@20"],
                                 per_query=True, names=coll.tags).records()
        runs = {tag: {q: dict(docs) for q, docs in run.items()}
                for tag, run in zip(coll.tags, coll.runs)}
        for qid, grade in (("query_id", "relevance"), ("q_id", "score")):
            q, r = _frames(coll.qrels, runs, qid, grade)
            got = rpp_cli.evaluate(q, r, ["rpp", "map", "RR@10", "ERR@20"], per_query=True)
            assert got.records() == files, seed


def test_dataframe_errors_name_the_columns():
    import pandas as pd

    qrels, runs = _frames({"q1": {"d": 1}}, {"a": {"q1": {"d": 1.0}}})
    with pytest.raises(InputError, match="qrels: a DataFrame needs the columns query_id "
                                         "\\(or q_id\\), doc_id and relevance or score; it "
                                         "has qid, docno, label"):
        rpp_cli.evaluate(pd.DataFrame({"qid": ["q1"], "docno": ["d"], "label": [1]}), runs)
    with pytest.raises(InputError, match="run a: a DataFrame needs .* doc_id and score"):
        rpp_cli.evaluate(qrels, {"a": runs["a"].drop(columns="score")})
    with pytest.raises(InputError, match="both query_id and q_id"):
        rpp_cli.evaluate(qrels.assign(q_id="q1"), runs)
    with pytest.raises(InputError, match="run a: 'd x' is empty or holds whitespace"):
        rpp_cli.evaluate(qrels, {"a": runs["a"].assign(doc_id="d x")})
    bad = runs["a"].assign(score=float("nan"))
    with pytest.raises(InputError, match="score 'nan' is not a finite number"):
        rpp_cli.evaluate(qrels, {"a": bad, "b": runs["a"]})


@pytest.mark.parametrize("score", ["x", True, None])
def test_a_run_dict_score_that_is_not_a_number_is_an_input_error(score):
    with pytest.raises(InputError, match=f"run a: score {re.escape(repr(score))} of query q1, "
                                         "document d1 is not a number"):
        rpp_cli.evaluate({"q1": {"d1": 1}}, {"a": {"q1": {"d1": score}}, "b": {"q1": {"d1": 1}}})


def test_a_run_dict_score_may_be_numeric_text_or_an_integer():
    got = rpp_cli.evaluate({"q1": {"d1": 1, "d2": 0}}, {"a": {"q1": {"d1": "2.5", "d2": 3}},
                                                        "b": {"q1": {"d1": 1.0}}}, "map")
    assert [r["value"] for r in got.records()] == [0.5, 1.0]


def test_a_measure_name_is_one_measure():
    qrels, runs = _dicts()
    one = rpp_cli.evaluate(qrels, runs, "map").records()
    assert {r["measure"] for r in one} == {"map"}
    assert one == rpp_cli.evaluate(qrels, runs, ["map"]).records()
    with pytest.raises(InputError, match="measures: expected a name or a list of names"):
        rpp_cli.evaluate(qrels, runs, [1])


def test_repr_is_a_short_summary():
    res = rpp_cli.evaluate(*_dicts(), per_query=True)
    text = repr(res)
    assert len(text) < 300 and len(res) > 1000
    assert text.startswith(f"<rpp Results: {len(res):,} rows; 3 runs (bm25, dpr, monot5); "
                           "25 queries; 11 measure outputs (rpp, rpp_win, dcgrpp, ")


def test_wide_table_and_preference_matrix():
    """to_pandas(wide=True): the `all` value of each per-run measure, runs x measures;
    matrix(): RPP(a, b) at row a, column b, NaN on the diagonal, antisymmetric."""
    import numpy as np

    res = rpp_cli.evaluate(*_dicts(), ["rpp", "map", "nDCG@10"], per_query=True)
    summary = {(r["measure"], r["run"], r["other"]): r["value"] for r in res.records()
               if r["qid"] == "all"}
    wide = res.to_pandas(wide=True)
    assert list(wide.index) == ["bm25", "dpr", "monot5"]
    assert list(wide.columns) == ["rpp_win", "map", "nDCG@10"]
    assert all(wide.loc[run, m] == summary[(m, run, None)] for run in wide.index
               for m in wide.columns)
    matrix = res.matrix()
    assert list(matrix.index) == list(matrix.columns) == ["bm25", "dpr", "monot5"]
    assert np.isnan(np.diag(matrix.to_numpy())).all()
    assert all(matrix.loc[a, b] == summary[("rpp", a, b)] == -matrix.loc[b, a]
               for a in matrix.index for b in matrix.columns if a != b)
    per_query = res.matrix("rpp", qid="201")
    assert per_query.loc["bm25", "dpr"] == res.value("rpp", "201", "bm25", "dpr")
    with pytest.raises(KeyError, match="no pair measure 'map'"):
        res.matrix("map")
    with pytest.raises(KeyError, match="no rpp values for query 'nope'"):
        res.matrix("rpp", qid="nope")


def test_meta_is_the_function_and_tasks_meta_the_module():
    import importlib

    assert callable(rpp_cli.meta) and rpp_cli.meta.__module__ == "rpp_cli.api"
    module = importlib.import_module("rpp_cli.tasks.meta")
    assert module.MetaOptions is rpp_cli.MetaOptions and rpp_cli.meta is rpp_cli.api.meta


def test_every_name_the_readme_uses_is_importable_from_rpp_cli():
    """`from rpp_cli import X` and `rpp_cli.X` in the Python blocks of the README and the API
    page (docs/api.md), and the API names their prose shows in code (`rpp_cli.X(`,
    `MetaOptions(`)."""
    text = "\n".join((ROOT / page).read_text() for page in ("README.md", "docs/api.md"))
    code = "\n".join(re.findall(r"```python\n(.*?)```", text, re.S))
    names = set(re.findall(r"\brpp_cli\.([A-Za-z_]\w*)", code))
    for group in re.findall(r"from rpp_cli import \(?([\w\s,]+)\)?", code):
        names |= {n.strip() for n in group.split(",") if n.strip()}
    names |= set(re.findall(r"`rpp_cli\.(\w+)\(", text)) | set(re.findall(r"`?(MetaOptions)\(",
                                                                            text))
    assert {"evaluate", "compare", "meta", "MetaOptions"} <= names
    missing = [n for n in sorted(names) if not hasattr(rpp_cli, n) or n not in rpp_cli.__all__]
    assert not missing, f"README/API page names not importable from rpp_cli: {missing}"


@pytest.mark.parametrize("seed", [-1, 1.5, 1 << 63, True, "7"])
def test_a_bad_seed_is_rpps_error_not_numpys(seed):
    """compare and meta check the seed as --seed does (0 .. 2^63 - 1), with one message."""
    message = re.escape(f"seed must be a whole number from 0 to 2^63 - 1 (got {seed!r})")
    with pytest.raises(InputError, match=message):
        rpp_cli.compare(DEMO / "qrels", RUNS, "map", seed=seed, permutations=10)
    with pytest.raises(InputError, match=message):
        rpp_cli.meta(DEMO / "qrels", RUNS, "map", options=rpp_cli.MetaOptions(seed=seed))
    assert rpp_cli.compare(DEMO / "qrels", RUNS, "map", seed=(1 << 63) - 1,
                           permutations=10).runs == [r.name for r in RUNS]


_Q = {"q1": {"d1": 1}, "q2": {"d2": 1}}
_R = {"a": {"q1": {"d1": 1.0}, "q2": {"d2": 1.0}}, "b": {"q1": {"d1": 2.0}, "q2": {"d9": 1.0}}}


@pytest.mark.parametrize("call,message", [
    (lambda: rpp_cli.compare(_Q, _R, permutations=0),
     "permutations must be a whole number from 1 to 10,000,000 (got 0)"),
    (lambda: rpp_cli.compare(_Q, _R, permutations=-5),
     "permutations must be a whole number from 1 to 10,000,000 (got -5)"),
    (lambda: rpp_cli.compare(_Q, _R, permutations=1.5),
     "permutations must be a whole number from 1 to 10,000,000 (got 1.5)"),
    (lambda: rpp_cli.compare(_Q, _R, test="bogus"),
     "unknown test 'bogus' (choose from ttest, randomization, hsd, wilcoxon, sign)"),
    (lambda: rpp_cli.compare(_Q, _R, correction="bogus"),
     "unknown correction 'bogus' (choose from none, bonferroni, holm, bh, by)"),
    (lambda: rpp_cli.meta(_Q, _R, options=rpp_cli.MetaOptions(permutations=0)),
     "permutations must be a whole number from 1 to 10,000,000 (got 0)"),
    (lambda: rpp_cli.meta(_Q, _R, options=rpp_cli.MetaOptions(samples=-1)),
     "samples must be a whole number from 1 to 10,000,000 (got -1)"),
    (lambda: rpp_cli.evaluate(_Q, _R, level="2"), "level: expected a number (got '2')"),
    (lambda: rpp_cli.evaluate(_Q, _R, corpus_size=10.5),
     "corpus_size: expected a positive integer (got 10.5)"),
    (lambda: rpp_cli.evaluate(_Q, _R, jobs="2"), "jobs: expected a positive integer (got '2')"),
    (lambda: rpp_cli.evaluate(_Q, _R, max_docs=True),
     "max_docs: expected a positive integer (got True)"),
    (lambda: rpp_cli.evaluate(_Q, _R, names="xy"),
     "names: expected a list of names, one per run (got 'xy')"),
    (lambda: rpp_cli.evaluate({"q1": [("d1", 1)]}, _R),
     "qrels: query 'q1' holds list, not a dict: expected {qid: {docno: grade}}"),
    (lambda: rpp_cli.evaluate(_Q, {"a": {"q1": {"d1": 10 ** 400}}}),
     f"run a: score {10 ** 400!r} of query q1, document d1 is not a number a double holds"),
    (lambda: rpp_cli.evaluate({"q\ud8001": {"d1": 1}}, _R),
     "qrels: '\\ud800' is not text (a lone surrogate)"),
    (lambda: rpp_cli.evaluate(_R, _Q),
     "qrels: query 'a', document 'q1' holds a dict, not a grade: expected {qid: {docno: "
     "grade}} (runs given where the qrels belong? the qrels come first)"),
    (lambda: rpp_cli.evaluate(_Q, {"a": {"q1": [("d1", 1.0)]}}),
     "run run: query 'a', document 'q1' holds a list, not a score: expected {qid: {docno: "
     "score}}, or {name: {qid: {docno: score}}} for several runs"),
    (lambda: rpp_cli.evaluate(_Q, {}), "runs: no run given"),
    (lambda: rpp_cli.evaluate(_Q, {**_R, "c": {"q1": {"d1": float("inf")}}}),
     "run c, row 1: score 'inf' is not a finite number"),
    (lambda: rpp_cli.evaluate(_Q, _R, names=["x", "x"]),
     "runs run a and run b are both named 'x': name every run with names= (once per run, in "
     "order), or by tags with names_from='tag'"),
    (lambda: rpp_cli.meta(_Q, _R, options=rpp_cli.MetaOptions(analyses="power,bogus")),
     "unknown analysis 'bogus' (choose from power,ties,agreement,robustness,predictive,widths)"),
])
def test_api_arguments_the_command_line_refuses_are_input_errors(call, message):
    """What the command line's options refuse, the API refuses with the same kind of error
    (0 permutations gave p = 1 and -5 gave p = -0.25; other values were Python's TypeError,
    ValueError, OverflowError, AttributeError or UnicodeEncodeError)."""
    with pytest.raises(rpp_cli.InputError) as err:
        call()
    assert str(err.value) == message


def test_a_failed_call_keeps_none_of_its_inputs():
    """In-memory inputs wait for the reader; a call that fails before reading them (a bad
    measure name) drops them instead of holding them for the life of the process."""
    from rpp_cli.core import table

    before = len(table._AGAIN)
    for _ in range(3):
        with pytest.raises(rpp_cli.InputError):
            rpp_cli.evaluate(_Q, _R, measures=["nosuch"])
    assert len(table._AGAIN) == before


def _ir_measures_rows(nested: dict, value: str) -> list:
    """``{qid: {docno: x}}`` as ir_measures' named tuples (Qrel or ScoredDoc)."""
    import collections

    fields = ("query_id", "doc_id", value) + (("iteration",) if value == "relevance" else ())
    row = collections.namedtuple("Qrel" if value == "relevance" else "ScoredDoc", fields)
    return [row(q, d, x, *(["0"] if value == "relevance" else []))
            for q, docs in nested.items() for d, x in docs.items()]


class _RanxLike:
    """What ranx's Qrels and Run offer rpp: ``to_dict()``."""

    def __init__(self, nested: dict) -> None:
        self._nested = nested

    def to_dict(self) -> dict:
        return self._nested


def test_ranx_and_ir_measures_objects_and_name_to_path_dicts_are_taken(tmp_path):
    """ranx Qrels/Run (to_dict), ir_measures' qrels and run iterables (named tuples, a
    generator too) and ``{name: path}`` give the numbers the same data gives as dicts."""
    qrels, runs = demo_dicts()
    names = sorted(runs)[:2]
    want = rpp_cli.evaluate(qrels, {n: runs[n] for n in names}, ["map", "rpp"], notes=[])
    as_ranx = rpp_cli.evaluate(_RanxLike(qrels), {n: _RanxLike(runs[n]) for n in names},
                               ["map", "rpp"], notes=[])
    as_rows = rpp_cli.evaluate(iter(_ir_measures_rows(qrels, "relevance")),
                               {n: (r for r in _ir_measures_rows(runs[n], "score"))
                                for n in names}, ["map", "rpp"], notes=[])
    paths = {n: write_run_dict(tmp_path / f"file {n}", runs[n]) for n in names}
    as_paths = rpp_cli.evaluate(qrels, paths, ["map", "rpp"], notes=[])
    for got in (as_ranx, as_rows, as_paths):
        assert got.records() == want.records()
    one = rpp_cli.evaluate(_ir_measures_rows(qrels, "relevance"),
                           _ir_measures_rows(runs[names[0]], "score"), ["map"], notes=[])
    assert [r["value"] for r in one.records()] == \
        [r["value"] for r in want.records() if r["measure"] == "map"][:1]


def write_run_dict(path, run: dict):
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, docs in run.items()
                            for d, s in docs.items()))
    return path


def test_notes_are_warnings_unless_a_list_is_given():
    """Without ``notes=`` a notebook still sees the notes, as RppNote warnings; with a list
    they go there and nothing is warned; a failed call keeps those gathered before."""
    with pytest.warns(rpp_cli.RppNote, match="judged queries not in the run"):
        rpp_cli.evaluate(DEMO / "qrels", RUNS[:2], ["map"])
    import warnings

    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rpp_cli.evaluate(DEMO / "qrels", RUNS[:2], ["map"], notes=notes)
    assert any("judged queries not in the run" in n for n in notes)
    failed: list[str] = []  # the grid is checked once the runs are read and noted
    with pytest.raises(InputError, match="--query-counts: 999 is not between 1 and 25"):
        rpp_cli.meta(DEMO / "qrels", RUNS[:2], ["map"], notes=failed, options=rpp_cli.MetaOptions(
            analyses=("robustness",), query_counts=(999,)))
    assert any("judged queries not in the run" in n for n in failed)


def test_levels_is_a_function_with_the_jsonl_lines_as_dicts():
    """rpp_cli.levels gives what ``rpp levels --format jsonl`` prints, line for line."""
    import json

    got = rpp_cli.levels(DEMO / "qrels", RUNS[:2], query="201", notes=[])
    res = rpp("levels", "--format", "jsonl", "--query", "201", "--precision", "17",
              DEMO / "qrels", *RUNS[:2])
    want = [json.loads(line) for line in res.out.splitlines()]
    assert [{**g, "value": None} for g in got] == [{**w, "value": None} for w in want]
    assert [g["value"] for g in got] == pytest.approx([w["value"] for w in want], rel=1e-15)
    assert len(got) > 10 and all(type(g["value"]) is int for g in got[:10])  # signs


def test_compare_gives_the_intervals_the_command_prints():
    """rpp_cli.compare(ci=...) adds the interval rows and effect sizes rpp compare --ci does."""
    got = rpp_cli.compare(DEMO / "qrels", RUNS[:2], ["map", "rpp"], test="ttest", ci=0.9,
                          notes=[])
    cli = parse_lines(rpp("compare", "--test", "ttest", "--ci", "0.9", "-m", "map", "-m", "rpp",
                          "--precision", "17", DEMO / "qrels", *RUNS[:2]).out)
    records = {(r["measure"], r["qid"], r["run"], r["other"]): r["value"] for r in got.records()}
    assert {k[0] for k in records} >= {"map_ci_low", "map_ci_high", "map_d", "rpp_ci_low"}
    assert records.keys() == cli.keys()
    for key, value in records.items():
        assert value == pytest.approx(cli[key], rel=1e-12, abs=1e-15), key


def test_trec_eval_release_is_a_keyword():
    """trec_eval="9.0.8" is --compat 9.0.8: iprec_at_recall's 9.0.8 cutoffs; a release rpp
    does not follow is an InputError naming the keyword."""
    def values(**kwargs) -> list[float]:
        got = rpp_cli.evaluate(DEMO / "qrels", RUNS[:1], ["iprec_at_recall.0.30"],
                               per_query=True, notes=[], **kwargs)
        return [r["value"] for r in got.records()]

    for release in ("10.0", "9.0.8"):
        cli = parse_lines(rpp("eval", "-q", "--compat", release, "--precision", "17",
                              "-m", "iprec_at_recall.0.30", DEMO / "qrels", RUNS[0]).out)
        assert values(trec_eval=release) == pytest.approx(list(cli.values()), abs=1e-15)
    assert values(trec_eval="9.0.8") != values()
    with pytest.raises(InputError, match=r"trec_eval= '9': expected a trec_eval release"):
        values(trec_eval="9")


def test_notes_name_in_memory_inputs_as_the_caller_did():
    """A note about in-memory qrels (a DataFrame judging a pair twice) names them ``qrels``,
    not the reader's ``<qrels #N>``, and advises the API's keyword, not the option."""
    import pandas as pd
    qrels = pd.DataFrame({"query_id": ["106_1", "106_1", "7"],
                          "doc_id": ["LA-0012|x", "LA-0012|x", "d%é"], "relevance": [1, 2, 2]})
    runs = {"bm25 v2": {"106_1": {"LA-0012|x": 2.0, "d9": 1.0}, "7": {"d%é": 1.0}}}
    notes: list[str] = []
    rpp_cli.evaluate(qrels, runs, ["map"], notes=notes)
    said = [n for n in notes if "judged on an earlier line" in n]
    assert said == ["qrels: 1 line judges a (query, docno) pair judged on an earlier line: each "
                    "pair keeps its largest grade (trec_eval refuses such qrels); subtopic qrels "
                    "(qid subtopic docno grade) go with subtopics="], notes
    assert not any("#" in n or "<" in n for n in notes), notes

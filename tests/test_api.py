"""The Python API: the commands as functions over paths or dicts, the same numbers as the CLI."""
from __future__ import annotations

import gzip
import re

import pytest

import rpp_cli
from rpp_cli.errors import InputError

from .conftest import DEMO, ROOT, doc_section, parse_lines, rpp

RUNS = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr", DEMO / "runs" / "monot5"]


def _dicts():
    """The demo collection as ranx / pytrec_eval dicts."""
    qrels: dict = {}
    for line in (DEMO / "qrels").read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = int(g)
    runs: dict = {}
    for path in RUNS:
        run: dict = {}
        for line in path.read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
        runs[path.name] = run
    return qrels, runs


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
                        options=rpp_cli.meta.__globals__["MetaOptions"](analyses=("agreement",)))
    assert any(r["measure"] == "agreement_tau" for r in meta.records())


def test_run_names_as_on_the_command_line(tmp_path):
    """contract §1 in the API: a path is named by its file name (or tag, ``names_from``), an
    in-memory run by its key, ``run<i>`` in a list (i: its place); a clash is an error."""
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
    with pytest.raises(InputError, match=r"names_from: expected one of file, tag \(got 'tags'\)"):
        names([renamed], names_from="tags")
    (tmp_path / "other").mkdir()
    clash = tmp_path / "other" / "first.run"
    clash.write_bytes(RUNS[1].read_bytes())
    with pytest.raises(InputError, match=r"are both named 'first.run'"):
        rpp_cli.compare(DEMO / "qrels", [renamed, clash], ["map"])


def test_bad_dicts_are_input_errors():
    with pytest.raises(InputError, match="expected 4 fields"):
        rpp_cli.evaluate({"q1": {"doc with space": 1}}, {"a": {"q1": {"d": 1.0}}})
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

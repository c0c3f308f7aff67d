"""Every command's --help fits a screen (40 lines at 80 columns): the input options the
evaluating commands share are named in one line there and described once, by `rpp help
inputs`, and they work as before."""
from __future__ import annotations

import pytest

from rpp_cli.cli import cli
from rpp_cli.options import input_params

from .conftest import DEMO, rpp

EVALUATING = ["eval", "compare", "check", "meta", "levels"]


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_help_is_at_most_40_lines_at_80_columns(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    res = rpp(name, "--help")
    assert res.code == 0
    lines = res.out.splitlines()
    assert len(lines) <= 40, (name, len(lines))


@pytest.mark.parametrize("name", EVALUATING)
def test_the_input_options_are_one_line_that_points_to_rpp_help_inputs(name, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    text = " ".join(rpp(name, "--help").out.split())
    assert ("Input options: -l, --corpus-size, --dedup, -j, --dask, --dask-timeout, --name, "
            "--names-from, -M, --binary, --compat, -Q (rpp help inputs).") in text
    for described in ("Relevance level", "Dask cluster", "pref_eval --topk", "No notes"):
        assert described not in text


def test_rpp_help_inputs_describes_each_input_option(monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    res = rpp("help", "inputs")
    assert res.code == 0
    text = " ".join(res.out.split())
    names = [max(p.opts, key=len) for p in input_params()]
    assert names == ["--level", "--jobs", "--dask", "--dask-timeout", "--corpus-size", "--dedup",
                     "--name", "--names-from", "--max-docs", "--binary", "--compat", "--quiet"]
    for described in ("Relevance level: grade >= L is relevant", "Dask cluster",
                      "pref_eval --topk", "as pref_eval reads them", "No notes"):
        assert described in text
    assert len(res.out.splitlines()) <= 60


def test_rpp_help_command_is_its_help_and_a_bad_topic_is_one_line():
    assert rpp("help", "compare").out == rpp("compare", "--help").out
    assert rpp("help").out == rpp("--help").out
    res = rpp("help", "nope")
    assert res.code == 2 and res.out == "" and len(res.err.splitlines()) == 1
    assert "no help topic 'nope': inputs, or one of the commands" in res.err


def test_format_and_precision_say_only_what_is_true():
    """check prints no run x run matrices; jsonl and csv print p-values in full."""
    for name in ("check", "compare", "eval", "meta"):
        text = " ".join(rpp(name, "--help").out.split())
        assert "run x run" not in text and "the same in every format" not in text
        assert "Decimals printed (jsonl and csv print p-values in full)" in text


def test_hidden_input_options_still_work():
    """Hidden from the help, not from the parser: the same numbers as before."""
    runs = [DEMO / "runs" / "bm25", DEMO / "runs" / "dpr"]
    res = rpp("eval", "-Q", "-m", "map", "-l", "2", "-M", "5", "--names-from", "tag",
              "--compat", "9.0.8", "-j", "1", DEMO / "qrels", *runs)
    assert res.code == 0 and res.err == ""
    assert res.out.startswith("map                   \tall\t")

"""Dicts and DataFrames in the Python API give exactly what the same TREC text gives from
files (one semantics: the dict path writes text for the file reader), whatever the ids and
scores; their text is built a column at a time (rpp_cli/api_text.py), its scores exact
hexadecimal floats."""
from __future__ import annotations

import math

import numpy as np
import pytest

import rpp_cli
from rpp_cli import api_text
from rpp_cli.core.table import remember
from rpp_cli.errors import InputError
from rpp_cli.io.runs import read_run

from .conftest import write_qrels
from .realistic import generate, write_collection

# every measure that needs no subtopic qrels: rpp's families, trec_eval's, ir_measures'
MEASURES = ["rpp", "dcgrpp", "invrpp", "asl", "lexiprecision", "rrlexiprecision", "lexirecall",
            "oi", "dcgoi", "tdi", "dcgtdi", "rbp.0.8", "all_trec", "RR@10", "Judged@10", "ERR@20"]


def _evaluate(qrels, runs, **kwargs) -> list[dict]:
    return rpp_cli.evaluate(qrels, runs, MEASURES, per_query=True, notes=[], **kwargs).records()


@pytest.mark.parametrize("seed,chunk", [(2, 1 << 14), (5, 1 << 14), (13, 7), (21, 1)])
def test_dicts_and_frames_give_the_files_values_exactly(tmp_path, monkeypatch, seed, chunk):
    """A realistic collection (UTF-8 and URL-like docnos of 1-100 bytes, string qids, tied,
    tiny, large and negative scores, the files' scores written as 1e-3, 2.5E+2, 7.) as
    files, as dicts and as ir_measures DataFrames, their text made ``chunk`` rows at a
    time: every measure's every value the same double."""
    import pandas as pd

    monkeypatch.setattr(api_text, "CHUNK_ROWS", chunk)
    coll = generate(seed)
    qrels_path, run_paths = write_collection(coll, tmp_path, "ugly")
    files = _evaluate(qrels_path, run_paths, names=coll.tags)
    runs = {tag: {q: dict(docs) for q, docs in run.items()}
            for tag, run in zip(coll.tags, coll.runs)}
    assert _evaluate(coll.qrels, runs) == files
    frames = {tag: pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs],
                                columns=["query_id", "doc_id", "score"])
              for tag, run in zip(coll.tags, coll.runs)}
    assert _evaluate(coll.qrels, frames) == files


def _write_run(path, run: dict, texts: dict | None = None):
    """A run file of ``{qid: {docno: score}}``; ``texts[score]``: how the file writes it."""
    texts = texts or {}
    path.write_text("".join(f"{q} Q0 {d} 0 {texts.get(s, repr(s))} t\n"
                            for q, docs in run.items() for d, s in docs.items()),
                    encoding="utf-8")
    return path


def test_hostile_ids_ties_and_scores_that_print_otherwise(tmp_path):
    """Ids with | % \\ ' = and UTF-8 (4-byte emoji, combining marks, a 3,000-byte docno),
    qids 106_1 and 007, scores the file writes otherwise than repr (1e-05 as 0.00001, 100.0
    as 1e2, -0.0 as -0, the smallest subnormal, the largest double, an int, numpy's float32)
    and ties broken by docno bytes: the dict gives the file's values."""
    long_doc = "clueweb09-" + "ü" * 1495
    qrels = {"106_1": {"a|b": 2, "50%": 1, "😀x": 1, "e\u0301": 0, long_doc: 1},
             "007": {"=cmd": 1, "x\\y": 1, "'q": 0, "d7": 2}}
    scores = {"a|b": 1e-05, "50%": 1e-05, "😀x": 100.0, "e\u0301": -0.0, long_doc: 5e-324,
              "zz": 1.7976931348623157e308, "=cmd": 3, "x\\y": np.float32(0.1), "'q": 3,
              "d7": -2.5}
    run_a = {"106_1": {d: scores[d] for d in ("a|b", "50%", "😀x", "e\u0301", long_doc, "zz")},
             "007": {d: scores[d] for d in ("=cmd", "x\\y", "'q", "d7")}}
    run_b = {"007": {"d7": 9.0, "=cmd": 9.0, "x\\y": 9.0}, "106_1": {"zz": 1.0, "a|b": 1.0}}
    texts = {1e-05: "0.00001", 100.0: "1e2", -0.0: "-0", 5e-324: "4.9406564584124654e-324",
             3: "3", scores["x\\y"]: repr(float(scores["x\\y"]))}
    qrels_path = write_qrels(tmp_path / "qrels", [(q, d, g) for q, docs in qrels.items()
                                                  for d, g in docs.items()])
    paths = [_write_run(tmp_path / "a", run_a, texts), _write_run(tmp_path / "b", run_b)]
    files = _evaluate(qrels_path, paths, names=["a", "b"])
    assert _evaluate(qrels, {"a": run_a, "b": run_b}) == files
    assert len(files) > 100


@pytest.mark.parametrize("score,message", [
    (math.nan, "run a, row 2: score 'nan' is not a finite number"),
    (-math.inf, "run a, row 2: score '-inf' is not a finite number"),
    ("1e999", "run a, row 2: score 'inf' is not a finite number"),
])
def test_a_score_that_is_not_finite_is_the_readers_error_at_its_row(score, message):
    """A file refuses nan and inf at their line; a dict at its row (in dict order)."""
    run = {"q1": {"d1": 1.0, "d2": score, "d3": 0.5}}
    with pytest.raises(InputError) as err:
        rpp_cli.evaluate({"q1": {"d1": 1}}, {"a": run, "b": {"q1": {"d1": 1.0}}}, "map")
    assert str(err.value) == message


@pytest.mark.parametrize("docno", ["d 1", "d\t1", "d\n1", "d\r1", "", "d\x011"])
def test_a_docno_no_file_can_hold_is_named_where_the_text_is_built_at_once(docno):
    """The column-at-a-time text finds a docno that is no field (whitespace, empty, the
    separator of its join) and the row-at-a-time text names it, as before."""
    run = {"q1": {"d0": 2.0, docno: 1.0}}
    with pytest.raises(InputError, match="run a: .* is empty or holds whitespace"):
        rpp_cli.evaluate({"q1": {"d0": 1}}, {"a": run, "b": {"q1": {"d0": 1.0}}}, "map")
    assert api_text.nested_rows(["q1"], list(run.values()), " Q0 ", api_text.hex_block(
        np.array([2.0, 1.0]), b"a")) is None


def test_a_qid_no_file_can_hold_is_an_error_and_a_name_with_a_space_is_not():
    """An empty qid or one with a space is refused (naming it); a run named by a key with a
    space (no tag can hold it) keeps that name."""
    for qid in ("", "q 1"):
        with pytest.raises(InputError, match="is empty or holds whitespace"):
            rpp_cli.evaluate({"q1": {"d0": 1}}, {"a": {qid: {"d0": 1.0}}, "b": {}}, "map")
    got = rpp_cli.evaluate({"q1": {"d0": 1, "d1": 0}}, {"my run": {"q1": {"d1": 2.0, "d0": 1.0}},
                                                        "b": {"q1": {"d0": 1.0}}}, "map",
                           notes=[])
    assert [(r["run"], r["value"]) for r in got.records()] == [("my run", 0.5), ("b", 1.0)]


def test_hex_scores_read_back_as_the_same_doubles():
    """Every finite double, zeros of both signs, subnormals, the extremes and random bit
    patterns, written by hex_block, parse back bit for bit (float.fromhex, and the reader's
    strtod), at one width."""
    rng = np.random.default_rng(7)
    edges = [0.0, -0.0, 5e-324, -5e-324, 2.2250738585072014e-308, 2.225073858507201e-308,
             1.7976931348623157e308, -1.7976931348623157e308, 1e-05, 0.1, 1.0, 3.0, -2.5]
    bits = rng.integers(0, 2 ** 64, 20000, dtype=np.uint64).view(np.float64)
    values = np.concatenate([edges, bits[np.isfinite(bits)]])
    block = api_text.hex_block(values, b"tag")
    rows = [bytes(row).decode("ascii") for row in block]
    assert rows[2] == " 0 +0x0.0000000000001p-1022 tag\n"
    assert rows[10] == " 0 +0x1.0000000000000p+0000 tag\n"
    assert {len(r) for r in rows} == {3 + api_text.HEX_WIDTH + 5}
    parsed = np.array([float.fromhex(r.split()[1]) for r in rows])
    assert (parsed.view(np.uint64) == values.view(np.uint64)).all()
    remember("<hex test>", b"".join(b"q Q0 d%d" % i + bytes(row) for i, row in enumerate(block)))
    assert (read_run("<hex test>").score.view(np.uint64) == values.view(np.uint64)).all()


@pytest.mark.parametrize("chunk", [1, 2, 3, 1 << 14])
def test_text_built_at_once_is_the_row_at_a_time_text(monkeypatch, chunk):
    """rows() and nested_rows() against the literal text: a line per row, one space
    between fields, whatever rows a chunk holds (a query of no row among them)."""
    monkeypatch.setattr(api_text, "CHUNK_ROWS", chunk)
    qids, docs = ["106_1", "empty", "q-α"], [["d1", "東京"], [], ["x|y"]]
    nested = {q: dict.fromkeys(d, 0.0) for q, d in zip(qids, docs)}
    block = api_text.hex_block(np.array([1.5, -1.0, 2.0 ** -1074]), None)
    tails = [bytes(r).decode() for r in block]
    literal = "".join(f"{q} Q0 {d}{t}" for (q, d), t in zip(
        [(q, d) for q, ds in zip(qids, docs) for d in ds], tails)).encode()
    assert api_text.nested_rows(qids, list(nested.values()), " Q0 ", block) == literal
    assert api_text.nested_rows(qids, docs, " Q0 ", block) == literal  # lists too
    assert api_text.rows([["106_1", "106_1", "q-α"], b" Q0 ", ["d1", "東京", "x|y"], block],
                         3) == literal
    assert api_text.rows([[], b" ", [], b"\n"], 0) == b""
    assert api_text.token("bm25") == b"bm25" and api_text.token("my run") is None
    assert api_text.int_block([2, -1, 10]).tobytes() == b"  2\n -1\n 10\n"
    assert api_text.int_block([3, 2 ** 40, -(2 ** 40)]).tobytes().split() == \
        [b"3", str(2 ** 40).encode(), str(-(2 ** 40)).encode()]
    assert api_text.int_block([2 ** 70]) is None


def test_a_dataframe_whose_queries_interleave_gives_its_files_values(tmp_path):
    """ir_measures' rows need not list a query's rows together: rows of 106_1 and 7 in turn
    (stretches of one row) give what the same lines in a file give."""
    import pandas as pd

    rows = [("106_1", "d1", 3.0), ("7", "d1", 2.0), ("106_1", "é2", 2.0), ("7", "x|y", 9.5),
            ("106_1", "d3", 0.25), ("7", "d3", 1e-05)]
    qrels = {"106_1": {"d1": 1, "d3": 2}, "7": {"x|y": 1, "d1": 0}}
    path = tmp_path / "run"
    path.write_text("".join(f"{q} Q0 {d} 0 {s!r} t\n" for q, d, s in rows), encoding="utf-8")
    other = {"7": {"d1": 1.0}, "106_1": {"d3": 1.0}}
    files = _evaluate(qrels, {"a": path, "b": other})
    frame = pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])
    assert _evaluate(qrels, {"a": frame, "b": other}) == files
    assert len(files) > 50

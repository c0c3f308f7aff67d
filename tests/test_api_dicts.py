"""Dicts and DataFrames in the Python API give exactly what the same TREC text gives from
files (one semantics: the dict path writes text for the file reader), whatever the ids and
scores; their text is built a column at a time (rpp_cli/api_text.py), its scores short
decimals or exact hexadecimal floats, by the reader that reads it, and a call's error is the
one it gave when every text was built before reading."""
from __future__ import annotations

import math
import threading

import numpy as np
import pytest

import rpp_cli
from rpp_cli import api_text
from rpp_cli.core.table import remember
from rpp_cli.errors import InputError
from rpp_cli.io.runs import read_run

from .conftest import tiered, write_qrels
from .realistic import generate, write_collection
from .test_api import _RanxLike, _ir_measures_rows

# every measure that needs no subtopic qrels: rpp's families, trec_eval's, ir_measures'
MEASURES = ["rpp", "dcgrpp", "invrpp", "asl", "lexiprecision", "rrlexiprecision", "lexirecall",
            "oi", "dcgoi", "tdi", "dcgtdi", "rbp.0.8", "all_trec", "RR@10", "Judged@10", "ERR@20"]


def _evaluate(qrels, runs, **kwargs) -> list[dict]:
    return rpp_cli.evaluate(qrels, runs, MEASURES, per_query=True, notes=[], **kwargs).records()


@pytest.mark.parametrize("seed,chunk", tiered([(2, 1 << 14), (5, 1 << 14), (13, 7),
                                               (21, 1)]))
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


def test_short_decimal_scores_read_back_as_the_same_doubles():
    """Scores with a few decimals (as read from text: 8.3, -0.25, 1e-05, ties, -0.0, 15
    digits) are written as short decimals that the reader parses back bit for bit; scores
    that have none within 15 digits (a float32 widened, 0.1 + 0.2, subnormals) keep the
    exact hexadecimal form. Either way the run reads back as the same doubles."""
    rng = np.random.default_rng(11)
    decimal = [np.array([8.3, 8.3, -0.25, 1e-05, 0.0, -0.0, 12.5]),
               np.array([999999999999999.0, -3.0]), np.array([99999.99999, 1e-05]),
               np.round(rng.normal(size=5000) * 50, 4), rng.integers(-9, 10 ** 9, 300) * 1.0,
               np.array([1e-22, 0.5e-21]), np.array([7.0])]
    exact_only = [np.float32(rng.random(300)).astype(np.float64), np.array([0.1 + 0.2]),
                  np.array([5e-324, 1.0]), np.array([1e15 + 1.0]), np.array([1e-22, 1.0]),
                  np.array([999999999999999.0, 0.5])]  # 16 digits at one decimal
    for values in decimal + exact_only:
        block = api_text.score_block(values, b"t")
        rows = [bytes(row).decode("ascii") for row in block]
        assert all(r.startswith(" 0 ") and r.endswith(" t\n") for r in rows)
        assert any("0x" in r for r in rows) == any(values is v for v in exact_only)
        remember("<decimal test>", b"".join(b"106_1 Q0 d%d" % i + bytes(row)
                                            for i, row in enumerate(block)))
        assert (read_run("<decimal test>").score.view(np.uint64) ==
                values.view(np.uint64)).all()
    assert bytes(api_text.score_block(np.array([8.3, -0.25, 10.0]), None)[1]) == \
        b" 0 -00.25\n"


def _shapes(coll, run_paths, turn: int) -> tuple[list, dict]:
    """The collection's qrels in each in-memory shape, and its runs as ``{tag: run}`` with
    every shape among them (run i in shape i + ``turn``): a path, a dict, a DataFrame, a
    ranx-like object, ir_measures' rows (a generator)."""
    import pandas as pd

    qrels = [coll.qrels, pd.DataFrame(coll.judgments, columns=["query_id", "doc_id", "relevance"]),
             _RanxLike(coll.qrels), iter(_ir_measures_rows(coll.qrels, "relevance"))]

    def shape(i: int, run: dict, path):
        nested = {q: dict(docs) for q, docs in run.items()}
        return [path, nested,
                pd.DataFrame([(q, d, s) for q, docs in run.items() for d, s in docs],
                             columns=["query_id", "doc_id", "score"]),
                _RanxLike(nested), iter(_ir_measures_rows(nested, "score"))][i % 5]
    runs = {tag: shape(i + turn, run, path)
            for i, (tag, run, path) in enumerate(zip(coll.tags, coll.runs, run_paths))}
    return qrels, runs


@pytest.mark.parametrize("seed", tiered([3, 8, 17, 29]))
def test_every_shape_made_as_it_is_read_gives_the_files_values(tmp_path, seed):
    """Texts made by the reader as it reads them: qrels as a dict, a DataFrame (with its
    pairs judged twice), a ranx object and ir_measures rows, each with runs of every shape
    in one call (paths among dicts, DataFrames, ranx objects and ir_measures rows; one run's
    scores float32s widened, written in hexadecimal), give exactly the files' values, with
    one reader thread or several."""
    coll = generate(seed)
    coll.runs[-1] = {q: [(d, float(np.float32(s / 3))) for d, s in docs]
                     for q, docs in coll.runs[-1].items()}
    qrels_path, run_paths = write_collection(coll, tmp_path, "mixed")
    files = _evaluate(qrels_path, run_paths, names=coll.tags)
    for turn in range(4):
        for jobs in (1, 2):
            qrels, runs = _shapes(coll, run_paths, turn)
            assert _evaluate(qrels[turn], runs, jobs=jobs) == files
    assert len(files) > 100


_GOOD_QRELS = {"106_1": {"d1": 1, "é2": 2, "x|y": 0}, "7": {"d1": 1, "50%": 1}}
_GOOD_RUN = {"106_1": {"d1": 1.5, "é2": 2.25, "x|y": 0.5}, "7": {"50%": 3.0, "d1": 1e-05}}
_SPACE_RUN = {"106_1": {"d1": 1.0, "doc 2": 0.5}}  # its text cannot be made
_WORD_RUN = {"7": {"d1": "high"}}  # nor this one's
_NAN_RUN = {"106_1": {"d1": 1.0, "é2": math.nan}}  # made; the reader refuses it


@pytest.mark.parametrize("qrels,runs,kwargs,message", [
    ({"106_1": {"d 1": 1}}, {"a": _GOOD_RUN, "b": _SPACE_RUN}, {},
     "run b: 'doc 2' is empty or holds whitespace: an id or a value in TREC text is one token"),
    (_GOOD_QRELS, {"a": _WORD_RUN, "b": _SPACE_RUN}, {},
     "run a: score 'high' of query 7, document d1 is not a number a double holds"),
    (_GOOD_QRELS, {"a": _NAN_RUN, "b": _SPACE_RUN}, {},
     "run b: 'doc 2' is empty or holds whitespace: an id or a value in TREC text is one token"),
    ({"106_1": {"d1": "high"}}, {"a": _GOOD_RUN, "b": _WORD_RUN}, {},
     "run b: score 'high' of query 7, document d1 is not a number a double holds"),
    ({"106_1": {"d1": "high"}}, {"a": _NAN_RUN, "b": _GOOD_RUN}, {},
     "qrels, row 1: grade 'high' is not a finite number"),
    (_GOOD_QRELS, {"a": _GOOD_RUN, "b": _SPACE_RUN}, {"measures": ["nosuch"]},
     "run b: 'doc 2' is empty or holds whitespace: an id or a value in TREC text is one token"),
    (_GOOD_QRELS, {"a": _GOOD_RUN, "b": _SPACE_RUN}, {"level": "2"},
     "run b: 'doc 2' is empty or holds whitespace: an id or a value in TREC text is one token"),
    ({"106_1": {"d 1": 1}}, {"a": _GOOD_RUN, "b": _GOOD_RUN}, {"level": "2"},
     "level: expected a number (got '2')"),
    (_GOOD_QRELS, {"a": _GOOD_RUN, "b": _SPACE_RUN}, {"names": ["x", "x"]},
     "run b: 'doc 2' is empty or holds whitespace: an id or a value in TREC text is one token"),
    (_GOOD_QRELS, [_GOOD_RUN, _WORD_RUN, {"7": [("d1", 1.0)]}], {},
     "run run1: score 'high' of query 7, document d1 is not a number a double holds"),
    ({"106_1": {"d1": {"x": 1}}}, {"a": {"7": {"d1": "x"}}, "b": _GOOD_RUN}, {},
     "run a: score 'x' of query 7, document d1 is not a number a double holds"),
])
def test_of_two_bad_inputs_the_error_is_the_one_made_first_before(qrels, runs, kwargs, message):
    """Each text is made as the reader reads it (the qrels first), yet a call names what it
    named when every text was made before reading, runs first, in order: a text that cannot
    be made before a later one, before the reader's own errors, an option's, a measure's or
    the names'; and no note or warning of the reading that ran first."""
    notes: list[str] = []
    with pytest.raises(InputError) as err:
        rpp_cli.evaluate(qrels, runs, **{"measures": "map", "notes": notes, **kwargs})
    assert str(err.value) == message
    assert notes == []


def test_a_text_that_cannot_be_made_tells_no_note_of_what_was_read_first():
    """DataFrame qrels that judge a pair twice give a note when read; a run whose text
    cannot be made after them fails the call without that note or its warning, as when the
    text was made before the qrels were read; with good runs the note comes."""
    import warnings

    import pandas as pd

    qrels = pd.DataFrame([("7", "d1", 1), ("7", "d1", 2), ("106_1", "d1", 1)],
                         columns=["query_id", "doc_id", "relevance"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(InputError, match="run b: 'doc 2' is empty"):
            rpp_cli.evaluate(qrels, {"a": _GOOD_RUN, "b": _SPACE_RUN}, "map")
    assert caught == []
    notes: list[str] = []
    rpp_cli.evaluate(qrels, {"a": _GOOD_RUN, "b": _GOOD_RUN}, "map", notes=notes)
    assert any("judged on an earlier line" in note for note in notes)


def test_what_no_reader_took_is_made_for_its_error_and_forgotten():
    """``check`` reads the baseline and the candidates only: another run's text is still
    made (its error is the call's, as before) and forgotten; so is every text of a call that
    fails before reading, and of one the reader stopped."""
    from rpp_cli.core import table

    before = set(table._AGAIN)
    runs = {"base": _GOOD_RUN, "a": {**_GOOD_RUN, "7": {"d1": 9.0}}, "other": _SPACE_RUN}
    with pytest.raises(InputError, match="run other: 'doc 2' is empty or holds whitespace"):
        rpp_cli.check(_GOOD_QRELS, runs, baseline="base", candidates=["a"], measures="map",
                      permutations=20, notes=[])
    runs["other"] = _GOOD_RUN
    found = rpp_cli.check(_GOOD_QRELS, runs, baseline="base", candidates=["a"], measures="map",
                          max_drops={"map": 1.0}, permutations=20, notes=[])
    assert {verdict["candidate"] for verdict in found.verdicts} == {"a"}
    for measures, bad in ((["nosuch"], _GOOD_RUN), ("map", _NAN_RUN)):
        with pytest.raises(InputError):
            rpp_cli.evaluate(_GOOD_QRELS, {"a": bad, "b": _GOOD_RUN, "c": _GOOD_RUN}, measures,
                             jobs=1, notes=[])
    assert set(table._AGAIN) == before


def test_each_text_is_made_by_the_reader_that_reads_it(monkeypatch, tmp_path):
    """The text of run k is made in the thread that reads run k, when it reads it: with one
    reader, run 2's text is made after run 1 is read (only one text is held at a time);
    with two, each in its reader's thread; with no thread at all (an address-space limit),
    in the caller's. The values are the files' each way."""
    from rpp_cli import api_inputs, collection
    from rpp_cli.engine import threads

    coll = generate(4)
    qrels_path, run_paths = write_collection(coll, tmp_path, "plain")
    files = _evaluate(qrels_path, run_paths, names=coll.tags)
    runs = {tag: {q: dict(docs) for q, docs in run.items()}
            for tag, run in zip(coll.tags, coll.runs)}
    events: list[tuple] = []
    made, load = api_inputs._run_lines, collection.load_run

    def making(name, run, columns):
        events.append(("made", name, threading.get_ident()))
        return made(name, run, columns)

    def loading(r, *args, **kwargs):
        events.append(("reading", coll.tags[r], threading.get_ident()))
        loaded = load(r, *args, **kwargs)
        events.append(("read", coll.tags[r], threading.get_ident()))
        return loaded

    monkeypatch.setattr(api_inputs, "_run_lines", making)
    monkeypatch.setattr(collection, "load_run", loading)
    assert _evaluate(coll.qrels, runs, jobs=1) == files
    assert events == [(what, tag, threading.get_ident()) for tag in coll.tags
                      for what in ("reading", "made", "read")]
    for jobs, inline in ((2, False), (2, True)):
        events.clear()
        monkeypatch.setattr(threads, "_INLINE", [inline])
        assert _evaluate(coll.qrels, runs, jobs=jobs) == files
        reader = {tag: ident for what, tag, ident in events if what == "reading"}
        assert sorted(reader) == sorted(coll.tags)
        assert [(tag, ident) for what, tag, ident in events if what == "made"] == \
            [(tag, reader[tag]) for tag in coll.tags] if inline else \
            sorted((tag, reader[tag]) for what, tag, _ in events if what == "made")
        assert (set(reader.values()) == {threading.get_ident()}) == inline

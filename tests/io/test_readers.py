"""Readers (contract §1): every bad input is one line on stderr, exit 2, naming file and line."""
from __future__ import annotations

import gzip
import itertools
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.errors import InputError
from rpp_cli.io.runs import file_name, name_runs, read_run

from ..conftest import DEMO, parse_lines, rpp, write_qrels, write_run

QRELS_ROWS = [("q1", "a", 1), ("q1", "b", 0), ("q2", "c", 2)]


@pytest.fixture
def good(tmp_path):
    q = write_qrels(tmp_path / "qrels", QRELS_ROWS)
    r = write_run(tmp_path / "r1", {"q1": ["a", "b"], "q2": ["c"]}, "one")
    r2 = write_run(tmp_path / "r2", {"q1": ["b", "a"], "q2": ["x", "c"]}, "two")
    return q, r, r2


def one_error_line(res, pattern: str, code: int = 2) -> None:
    """One ``rpp: ...`` line matching ``pattern`` on stderr, nothing on stdout, exit ``code``
    (2, or 1 for rpp ndeval, which exits as ndeval does)."""
    assert res.code == code, (res.code, res.out, res.err)
    assert res.out == ""
    lines = res.err.splitlines()
    assert len(lines) == 1, res.err
    assert "Traceback" not in res.err
    assert re.fullmatch(r"rpp: " + pattern, lines[0]), lines[0]


def test_missing_file(good, tmp_path):
    q, r, _ = good
    one_error_line(rpp("eval", q, tmp_path / "nope.run"), r".*/nope\.run: no such file")
    one_error_line(rpp("eval", tmp_path / "nope.qrels", r), r".*/nope\.qrels: no such file")


def test_directory_given_as_file(good, tmp_path):
    q, _, _ = good
    one_error_line(rpp("eval", q, tmp_path), r".*: is a directory, not a file")


def test_empty_file(good, tmp_path):
    q, r, _ = good
    (tmp_path / "empty").write_text("")
    one_error_line(rpp("eval", q, r, tmp_path / "empty"), r".*/empty: empty file: no run.*")
    (tmp_path / "comments").write_text("# only a comment\n\n")
    one_error_line(rpp("eval", tmp_path / "comments", r), r".*/comments: empty file.*")


def test_binary_garbage(good, tmp_path):
    q, r, _ = good
    (tmp_path / "junk").write_bytes(bytes(range(256)) * 4)
    one_error_line(rpp("eval", q, r, tmp_path / "junk"), r".*/junk:1: not a text file.*")


def test_too_few_fields_names_the_line(good, tmp_path):
    q, r, _ = good
    bad = tmp_path / "bad"
    bad.write_text("q1 Q0 a 1 2.0 t\n# comment\n\nq1 Q0 b 2\n")
    one_error_line(rpp("eval", q, bad), r".*/bad:4: expected 5 or 6 fields \(run: .*\), found 4")
    bad.write_text("q1 0 a 1\nq1 0 b 1 extra\n")
    one_error_line(rpp("eval", bad, r), r".*/bad:2: expected 4 fields \(qrels: .*\), found 5")


@pytest.mark.parametrize("score", ["high", "inf", "-inf", "nan", "1.0.0"])
def test_bad_scores(good, tmp_path, score):
    q, r, _ = good
    bad = tmp_path / "bad"
    bad.write_text(f"q1 Q0 a 1 2.0 t\nq1 Q0 b 2 {score} t\n")
    one_error_line(rpp("eval", q, bad),
                   rf".*/bad:2: score '{re.escape(score)}' is not a finite number")


def test_non_numeric_grade(good, tmp_path):
    _, r, _ = good
    bad = tmp_path / "qrels.bad"
    bad.write_text("q1 0 a 1\nq1 0 b high\n")
    one_error_line(rpp("eval", bad, r), r".*/qrels\.bad:2: grade 'high' is not a finite number")


def test_duplicate_docno_is_an_error_unless_dedup(good, tmp_path):
    q, _, r2 = good
    dup = tmp_path / "dup"
    dup.write_text("q1 Q0 a 1 3.0 d\nq1 Q0 b 2 2.0 d\nq1 Q0 a 3 5.0 d\n")
    one_error_line(rpp("eval", q, dup, r2),
                   r".*/dup:3: docno 'a' repeated in query q1 \(first at line 1\); use --dedup.*")
    res = rpp("eval", "--dedup", "-m", "P.1", q, dup, r2)
    assert res.code == 0
    assert "1 repeated docno dropped, kept the best-scored copy" in res.err
    assert parse_lines(res.out)[("P_1", "all", "dup")] == 0.5  # a (5.0) first in q1


def test_run_sharing_no_query(good, tmp_path):
    q, r, _ = good
    other = write_run(tmp_path / "other", {"q9": ["a"]}, "other")
    one_error_line(rpp("eval", q, r, other), r".*/other: shares no query with the qrels.*")


@pytest.mark.slow
def test_bad_line_deep_in_large_gzip_file(good, tmp_path):
    q, _, r2 = good
    big = tmp_path / "big.run"  # no .gz suffix: detected by magic bytes
    lines = [f"q1 Q0 doc{i} {i + 1} {-i} big\n" for i in range(200_000)]
    lines[151_234] = "q1 Q0 broken 3\n"
    with gzip.open(big, "wt") as f:
        f.write("".join(lines))
    one_error_line(rpp("eval", q, big, r2), r".*/big\.run:151235: expected 5 or 6 fields.*")


def test_corrupt_gzip(good, tmp_path):
    q, r, _ = good
    bad = tmp_path / "bad.gz"
    lines = b"".join(b"q1 Q0 d%d 1 1 t\n" % i for i in range(100))  # (no repeat in the
    bad.write_bytes(gzip.compress(lines)[:60])  # lines read before the cut, which come first)
    one_error_line(rpp("eval", q, r, bad), r".*/bad\.gz: corrupt gzip data.*")


def test_gzip_plain_stdin_comments_and_crlf_give_the_same_numbers(good, tmp_path):
    q, r, r2 = good
    want = rpp("eval", "-q", "--names-from", "tag", q, r, r2).out  # the same names: the tags
    gz = tmp_path / "r1.txt"
    gz.write_bytes(gzip.compress(r.read_bytes()))
    crlf = tmp_path / "r2.crlf"
    crlf.write_bytes(b"# a comment\r\n\r\n" + r2.read_bytes().replace(b"\n", b"\r\n"))
    assert rpp("eval", "-q", "--names-from", "tag", q, gz, crlf).out == want
    assert rpp("eval", "-q", "--names-from", "tag", q, "-", r2, stdin=r.read_text()).out == want


def test_stdin_only_once(good):
    q, _, _ = good
    one_error_line(rpp("eval", q, "-", "-", stdin="q1 Q0 a 1 1 t\n"),
                   r"-: standard input can be read only once")


def test_bad_options(good):
    q, r, r2 = good
    one_error_line(rpp("eval", "-l", "0", q, r, r2),
                   r"relevance level must be a finite number > 0 \(got 0\)")
    one_error_line(rpp("eval", "--corpus-size", "1", q, r, r2),
                   r"--corpus-size 1 is smaller than the 2 distinct items of query q1")


@pytest.fixture
def named(tmp_path):
    """Runs whose tags and file names collide in different ways (x/same and y/same share a
    file name; x/same, x/c.run.gz and y/same share a tag)."""
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    paths = {"a": write_run(tmp_path / "x" / "same", {"q": ["a"]}, "tag1"),
             "b": write_run(tmp_path / "y" / "same", {"q": ["a"]}, "tag1"),
             "c": write_run(tmp_path / "x" / "c.run.gz", {"q": ["a"]}, "tag1", gz=True),
             "d": write_run(tmp_path / "d.run", {"q": ["a"]}, "solo"),
             "e": write_run(tmp_path / "e.run", {"q": ["a"]}, "other")}
    return {k: read_run(str(p)) for k, p in paths.items()}


NAMES = {"file": dict(a="same", b="same", c="c.run", d="d.run", e="e.run"),
         "tag": dict(a="tag1", b="tag1", c="tag1", d="solo", e="other")}


@pytest.mark.parametrize("source", ["file", "tag"])
def test_a_run_name_never_depends_on_the_other_runs(named, source):
    """Every set of runs whose names differ: each run gets the name it has alone."""
    for k in range(1, len(named) + 1):
        for keys in itertools.combinations(sorted(named), k):
            expected = [NAMES[source][key] for key in keys]
            if len(set(expected)) == len(expected):
                assert name_runs([named[key] for key in keys], source=source) == expected


@pytest.mark.parametrize("path, name", [
    ("runs/bm25.run.gz", "bm25.run"), ("bm25.gz.run", "bm25.gz.run"), ("run.GZ", "run.GZ"),
    (".gz", ".gz"), ("a.gz.gz", "a.gz"), ("-", "-"), ("/abs/dir/T5-P(zs)", "T5-P(zs)")])
def test_file_name_is_the_base_name_less_gz(path, name):
    assert file_name(path) == name


def test_given_names_win(named):
    assert name_runs([named["a"], named["b"]], ("old", "new")) == ["old", "new"]
    assert name_runs([named["a"], named["b"]], ("old", None)) == ["old", "same"]  # the API's


def _qrels_and(named):
    return write_qrels(Path(named["a"].path).parent.parent / "qrels", [("q", "a", 1)])


def test_two_runs_with_one_name_are_an_error_naming_both(named):
    q = _qrels_and(named)
    a, b, c, d = (named[k].path for k in "abcd")
    shared = rpp("eval", "-m", "map", q, d, a, b)  # a file name shared: a path part more
    assert [line.split("\t")[2] for line in shared.out.splitlines()] == ["d.run", "x/same",
                                                                          "y/same"]
    one_error_line(rpp("eval", "--names-from", "tag", q, d, a, c),
                   rf"runs {re.escape(a)} and {re.escape(c)} are both named 'tag1': name "
                   r"every run with --name \(once per run, in order\), or by file names with "
                   r"--names-from file")
    one_error_line(rpp("eval", q, a, d, a),
                   rf"{re.escape(a)} is given twice: give each run once, or name each copy "
                   r"with --name")
    for way_out in (("--name", "A", "--name", "B"), ("--names-from", "tag")):
        res = rpp("eval", "-m", "map", *way_out, q, d, a)
        assert res.code == 0 and "Traceback" not in res.err
    named_twice = rpp("eval", "-m", "map", "--name", "A", "--name", "B", q, a, a)
    assert [line.split("\t")[2] for line in named_twice.out.splitlines()] == ["A", "B"]


def test_names_from_tag_needs_a_tag(tmp_path):
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    tagged = write_run(tmp_path / "tagged", {"q1": ["a"]}, "t")
    (tmp_path / "untagged").write_text("# no tag below\nq1 Q0 a 1 2\n")
    one_error_line(rpp("eval", "--names-from", "tag", q, tagged, tmp_path / "untagged"),
                   r".*/untagged: no tag \(6th field of the first line\) to name the run "
                   r"by: name it with --name, or by file names \(--names-from file\)")
    assert rpp("eval", q, tagged, tmp_path / "untagged").code == 0
    usage = rpp("eval", "--names-from", "title", q, tagged)
    assert usage.code == 2 and "'title' is not one of 'file', 'stem', 'tag'" in usage.err


@pytest.mark.parametrize("tag", ["evil\tmap", "\x1b[31mred", "a\u200bb"])
def test_a_run_name_cannot_forge_output(tmp_path, tag):
    """A name is printable text: no tab (a field), no newline (a line), no escape, no
    invisible format character."""
    good = write_run(tmp_path / "good", {"q1": ["a"]}, "good")
    bad = tmp_path / "bad"
    bad.write_bytes(f"q1 Q0 a 1 2 {tag}\n".encode())
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    res = rpp("eval", "--names-from", "tag", q, good, bad)
    if "\t" in tag:  # the tab splits the tag: 7 fields
        one_error_line(res, r".*/bad:1: expected 5 or 6 fields.*")
    elif "\x1b" in tag:  # a control byte: not a text file at all
        one_error_line(res, r".*/bad:1: not a text file: control byte 0x1b; .*")
    else:
        one_error_line(res, r".*/bad: run name .* is not printable text \(a tab, a newline or "
                            r"another control character\); set names with --name")
        assert "\x1b" not in res.err
        ok = rpp("eval", "-m", "map", "--name", "A", "--name", "B", q, good, bad)
        assert ok.code == 0 and ok.out.splitlines()[1].split("\t")[2] == "B"


def test_a_file_name_cannot_forge_output(tmp_path):
    """A file name holding a newline and tabs would print a fake line; it is refused, naming
    the file."""
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    good = write_run(tmp_path / "good", {"q1": ["a"]}, "same")
    evil = write_run(tmp_path / "evil\nmap   \tall\tfaker\t0.9999", {"q1": ["a"]}, "same")
    res = rpp("eval", "-m", "map", q, good, evil)
    assert res.code == 2 and res.out == "" and len(res.err.splitlines()) == 1
    assert "faker" in res.err and "\\n" in res.err  # shown escaped, on one line


def test_name_must_be_given_for_every_run(tmp_path, good):
    q, r, r2 = good
    one_error_line(rpp("eval", "--name", "x", q, r, r2),
                   r"--name given once for 2 runs: name every run, in order")


def test_fixture_collection_reads_cleanly():
    res = rpp("eval", "-m", "rpp", DEMO / "qrels", *sorted((DEMO / "runs").iterdir()))
    assert res.code == 0
    assert "queries not in the qrels, ignored: 1 of monot5\n" in res.err


DOCNO = st.text(alphabet="abcXYZ019-_.é", min_size=1, max_size=30)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["1", "10", "2", "q7", "106_1"]), DOCNO,
                          st.floats(-1e6, 1e6, allow_nan=False)), min_size=1, max_size=40),
       st.booleans(), st.sampled_from([" ", "\t", " \t", "\t  "]), st.booleans(),
       st.booleans())
def test_one_reader_for_every_layout(rows, with_tag, sep, crlf, bom):
    """Any run of spaces and tabs separates fields; CRLF and a leading BOM change nothing."""
    import tempfile

    lines = [sep.join([q, "Q0", d, str(i + 1), repr(s)] + (["tag"] if with_tag else []))
             for i, (q, d, s) in enumerate(rows)]
    raw = (("\r\n" if crlf else "\n").join(lines) + "\n").encode()
    with tempfile.NamedTemporaryFile() as f:
        f.write((b"\xef\xbb\xbf" if bom else b"") + raw)
        f.flush()
        run = read_run(f.name)
        assert [run.qid_values[c].decode() for c in run.qid_codes] == [q for q, _, _ in rows]
        assert [run.docno.text(i) for i in range(len(rows))] == [d for _, d, _ in rows]
        assert run.score.tolist() == [s for _, _, s in rows]
        assert run.tag == ("tag" if with_tag else None)
        assert [run.line(i) for i in range(len(rows))] == list(range(1, len(rows) + 1))


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab-09", max_size=13),
       st.lists(st.tuples(st.text(alphabet="ab-09\xe9", min_size=0, max_size=20),
                          st.sampled_from([0.5, 1.0, 2.0])), min_size=1, max_size=30))
def test_ranking_is_score_then_docno_bytes_descending(prefix, rows):
    """Shared prefixes of any length (docnos of one collection): ties go by bytes, descending."""
    from rpp_cli.core import column_of, rank_rows

    texts = [(prefix + s) or "x" for s, _ in rows]
    scores = np.array([sc for _, sc in rows])
    order = rank_rows(column_of([t.encode() for t in texts]), np.zeros(len(rows), dtype=np.int64),
                      scores, 1)
    want = sorted(range(len(rows)), key=lambda i: (-scores[i], [-b for b in texts[i].encode()] +
                                                    [1], i))
    assert [(scores[i], texts[i]) for i in order] == [(scores[i], texts[i]) for i in want]


@pytest.fixture
def renamed_demo(tmp_path):
    """Two demo runs under file names other than their tags (bm25, monot5): one gzipped."""
    first = tmp_path / "first.run.gz"
    first.write_bytes(gzip.compress((DEMO / "runs" / "bm25").read_bytes()))
    second = tmp_path / "second"
    second.write_bytes((DEMO / "runs" / "monot5").read_bytes())
    return first, second


COMMANDS = {  # how each command that evaluates runs takes QRELS and two runs
    "eval": lambda q, a, b: ("eval", "-m", "map", q, a, b),
    "compare": lambda q, a, b: ("compare", "-m", "map", "--test", "ttest", q, a, b),
    "check": lambda q, a, b: ("check", "-m", "map", "--test", "ttest", q, a, "--baseline", b),
    "levels": lambda q, a, b: ("levels", "-n", q, a, b),
    "meta": lambda q, a, b: ("meta", "--analysis", "agreement", "-m", "map", "-m", "rpp", q, a, b),
}


def printed_names(res) -> set[str]:
    """The run and other fields of every output line (less rpp levels' population, level and
    positions), and the run of every verdict line."""
    rows = [line.split("\t") for line in res.out.splitlines()]
    verdicts = [line.split("\t")[1] for line in res.err.splitlines()
                if line.startswith(("PASS", "FAIL"))]
    return {f for row in rows for f in row[2:-1]
            if not (f.startswith(">=") or f.isdigit())} | set(verdicts)


@pytest.mark.parametrize("command", [c for c in COMMANDS if c != "meta"])
def test_every_command_names_runs_by_file_or_by_tag(renamed_demo, command):
    """contract §1 in every command: file names less .gz by default, tags with
    --names-from tag, --name over both."""
    first, second = renamed_demo
    args = COMMANDS[command](DEMO / "qrels", first, second)
    by_file, by_tag = rpp(*args), rpp(args[0], "--names-from", "tag", *args[1:])
    given = rpp(args[0], "--name", "A", "--name", "B", *args[1:])
    ok = 1 if command == "check" else 0  # bm25 fails the gate against monot5
    assert (by_file.code, by_tag.code, given.code) == (ok, ok, ok), by_file.err + by_tag.err
    assert printed_names(by_file) == {"first.run", "second"}
    assert printed_names(by_tag) == {"bm25", "monot5"}
    assert printed_names(given) == {"A", "B"}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_names_runs_apart_or_refuses_one_name_for_two(tmp_path, command):
    """Two runs sharing a file name are named by their folders in every command; two runs
    sharing a tag, named by tags, are an error naming both files and the way out."""
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    a, b = tmp_path / "x" / "bm25", tmp_path / "y" / "bm25.gz"
    a.write_bytes((DEMO / "runs" / "bm25").read_bytes())
    b.write_bytes(gzip.compress((DEMO / "runs" / "bm25").read_bytes()))
    args = COMMANDS[command](DEMO / "qrels", a, b)
    apart = rpp(*args)
    assert apart.code == 0, apart.err
    if command != "meta":  # meta's lines name measures, not runs
        assert {"x/bm25", "y/bm25"} <= {f for line in apart.out.splitlines()
                                        for f in line.split("\t")}
    first, second = (b, a) if command == "check" else (a, b)  # check reads the baseline first
    one_error_line(rpp(args[0], "--names-from", "tag", *args[1:]),
                   rf"runs {re.escape(str(first))} and {re.escape(str(second))} are both named "
                   r"'bm25': .* or by file names with --names-from file")


@pytest.mark.parametrize("first_lines", [10, 60_000, 100_000, 140_000])
def test_gzip_members_are_read_once_each(tmp_path, first_lines):
    """A gzip file of two members (pigz, bgzip and ``cat a.gz b.gz`` write such files) reads
    as their two texts one after the other, also when the first member inflates to more than
    the 1 MiB a read returns at once and ends with input left over (the bytes of the second
    member were once read twice: 2,000,000 + 43,780 bytes came out as 2,087,560)."""
    from rpp_cli.core.source import source_chunks
    first = b"".join(b"q%d Q0 d%d 1 1.0 x\n" % (i, i) for i in range(first_lines))
    second = b"".join(b"t%d Q0 e%d 1 1.0 x\n" % (i, i) for i in range(2000))
    path = tmp_path / "two.gz"
    path.write_bytes(gzip.compress(first) + gzip.compress(second))
    assert b"".join(source_chunks(str(path), 1 << 40)) == first + second


def _gzip_reads(data: bytes, chunk: int, monkeypatch, tmp_path) -> bytes | str:
    """What source_chunks makes of ``data`` read ``chunk`` bytes at a time: the text, or the
    InputError's message."""
    from rpp_cli.core import source

    monkeypatch.setattr(source, "CHUNK", chunk)
    path = tmp_path / "x.gz"
    path.write_bytes(data)
    try:
        return b"".join(source.source_chunks(str(path), 1 << 40))
    except InputError as err:
        return err.message


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 7, 64, 1 << 20])
def test_gzip_members_and_padding_wherever_the_reads_cut_them(tmp_path, monkeypatch, chunk):
    """Members one after another, then zero padding, read the same at every read size: a
    member that ended one byte before a read's end left the next member's magic cut in two
    ("garbage after the end"), and padding that crossed a read was taken for a member
    ("incorrect header check"). Garbage after the end, or a member cut short, is an error at
    every read size."""
    texts = [b"106_1 Q0 clueweb12-0000wb-00-0000%d 1 1.5 x\n" % i * (i + 1) for i in range(4)]
    members = [gzip.compress(t, mtime=0) for t in texts]
    whole = b"".join(texts)
    for k in range(len(members[0]) + 2):  # the first member padded at k places, each boundary
        padded = members[0] + members[1] + b"\0" * k
        assert _gzip_reads(padded, chunk, monkeypatch, tmp_path) == texts[0] + texts[1]
    assert _gzip_reads(b"".join(members), chunk, monkeypatch, tmp_path) == whole
    assert _gzip_reads(b"".join(members) + b"\0" * 9, chunk, monkeypatch, tmp_path) == whole
    for tail, message in [(b"\0\0x", "garbage after the end"), (b"x", "garbage after the end"),
                          (b"\x1f", "truncated"), (members[2][:-3], "truncated")]:
        got = _gzip_reads(b"".join(members) + tail, chunk, monkeypatch, tmp_path)
        assert got == f"corrupt gzip data ({message})", (tail, got)


@pytest.mark.parametrize("seed", [1, 7, 23])
def test_qrels_dictionary_is_the_one_built_from_the_judgments(tmp_path, seed):
    """The dictionary of qrels read (a new one each call) and one of qrels made from the
    judgments alone hold the same (query, docno) -> code entries: codes 0..J-1 in judgment
    order, keyed by the query's place in trec_eval order; realistic qrels (mixed docnos,
    string qids, gzip)."""
    from rpp_cli.io.qrels import Qrels, read_qrels, sort_qids

    from ..realistic import generate, write_collection

    qrels_path, _ = write_collection(generate(seed), tmp_path, "mixed", seed)
    qrels = read_qrels(str(qrels_path))
    first, again = qrels.dictionary(), qrels.dictionary()
    bare = Qrels(qrels.path, qrels.qids, qrels.qid_bounds, bytes(qrels.docno_bytes),
                 qrels.docno_lens.copy(), qrels.grade).dictionary()
    place = {q: i for i, q in enumerate(sort_qids(qrels.qids))}
    want = np.array([place[q] for q in qrels.qids], dtype=np.int64)[qrels.qid]
    for docs in (first, again, bare):
        assert len(docs) == len(qrels.grade)
        assert docs.keys().tolist() == want.tolist()
        assert docs.strings() == [qrels.docno.bytes(j) for j in range(len(qrels.grade))]
        docs.freeze()
        assert docs.find(qrels.docno, want).tolist() == list(range(len(qrels.grade)))
    assert first is not again  # each call builds its own


LAYOUTS = [  # paths given -> names by file, and by stem
    (["ql/results-cata.txt", "rm/results-cata.txt"],
     ["ql/results-cata.txt", "rm/results-cata.txt"], ["ql/results-cata", "rm/results-cata"]),
    (["a/x/r.run", "b/x/r.run", "c/r.run", "solo.run"],
     ["a/x/r.run", "b/x/r.run", "c/r.run", "solo.run"], ["a/x/r", "b/x/r", "c/r", "solo"]),
    (["x/r", "a/x/r.gz", "run 1.txt"], ["x/r", "a/x/r", "run 1.txt"], ["x/r", "a/x/r", "run 1.txt"]),
    (["./ql//bm25.run", "rm/bm25.run", "dense.trec"],
     ["ql/bm25.run", "rm/bm25.run", "dense.trec"], ["ql/bm25.run", "rm/bm25.run", "dense.trec"]),
    (["2012/web/ql/results-cata.txt", "2012/web/rm/results-cata.txt", "106_1.txt"],
     ["ql/results-cata.txt", "rm/results-cata.txt", "106_1.txt"],
     ["ql/results-cata", "rm/results-cata", "106_1"]),
]


@pytest.mark.parametrize("paths, by_file, by_stem", LAYOUTS)
def test_runs_sharing_a_file_name_get_the_path_part_that_tells_them_apart(
        tmp_path, monkeypatch, paths, by_file, by_stem):
    """contract §1: a run is named by its file name unless another run shares it; then by the
    shortest trailing part of its path that no other such run ends with (whole folders);
    ``--names-from stem`` also drops the extension every name shares. Spaces are kept."""
    monkeypatch.chdir(tmp_path)
    for path in paths:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        write_run(Path(path), {"q1": ["a", "b"]}, "t", gz=path.endswith(".gz"))
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    for source, want in (("file", by_file), ("stem", by_stem)):
        res = rpp("eval", "-m", "map", "--names-from", source, q, *paths)
        assert res.code == 0, res.err
        assert [line.split("\t")[2] for line in res.out.splitlines()] == want
        runs = [read_run(path) for path in paths]
        assert name_runs(runs, source=source) == want
        alone = [name_runs([run], source=source)[0] for run in runs]
        for name, one, path in zip(want, alone, paths):  # a name depends on its neighbours
            if sum(file_name(p) == file_name(path) for p in paths) == 1 and source == "file":
                assert name == one  # only where they share its file name


def test_a_name_with_spaces_is_escaped_only_where_a_format_needs_it(tmp_path):
    """Spaces are printable: kept in every format; markdown escapes '|', CSV quotes nothing
    for a space."""
    q = write_qrels(tmp_path / "qrels", [("q1", "a", 1)])
    runs = [write_run(tmp_path / n, {"q1": ["a", "b"]}, "t") for n in ("my run|1", "base line")]
    trec = rpp("eval", "-m", "map", q, *runs)
    assert [line.split("\t")[2] for line in trec.out.splitlines()] == ["my run|1", "base line"]
    md = rpp("eval", "-m", "map", "--format", "markdown", q, *runs).out
    assert "my run\\|1" in md and "base line" in md
    csv = rpp("eval", "-m", "map", "--format", "csv", q, *runs).out
    assert ",base line," in csv


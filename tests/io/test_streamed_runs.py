"""Runs are read a window at a time (rpp_cli/core/table.py split_stream): the window size must
change nothing. Every command's output, and every bad run's error line, at windows of 7 and
other odd byte counts (boundaries inside lines, inside CRLF, inside a UTF-8 character, right
after a BOM), 1 KiB and the default are compared byte for byte; the default window holds each
of these files whole, as the reader before streaming did.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

import rpp_cli.core.table as table
from rpp_cli.io.runs import read_run

from ..conftest import DEMO, rpp
from ..realistic import generate, write_collection

WINDOWS = (7, 13, 1024)  # bytes; besides the default
ODD_WINDOWS = (1, 2, 3, 4, 5, 6, 7, 8, 11, 13, 17, 23, 31, 47, 64, 1024)
DEFAULT = table.WINDOW_BYTES


def _commands(qrels: Path, runs: list[Path]) -> list[list[str]]:
    """One invocation of every command that reads runs, on this collection."""
    a, b = runs[0], runs[1]
    return [
        ["eval", "-q", "--precision", "10", qrels, *runs],
        ["eval", "--names-from", "tag", "-M", "3", qrels, *runs],
        ["eval", "--dedup", "--format", "jsonl", qrels, *runs],
        ["compare", "--permutations", "200", qrels, *runs],
        ["check", "--permutations", "200", "--baseline", a, qrels, *runs[1:]],
        ["meta", "--permutations", "20", "--samples", "5", qrels, *runs],
        ["levels", qrels, a, b],
        ["trec-eval", "-q", qrels, a],
        ["eval", "-q", "-j", "3", qrels, a],  # one run: its windows split by three threads
    ]


def _outputs(monkeypatch, window: int, commands: list[list[str]]) -> list[tuple]:
    monkeypatch.setattr(table, "WINDOW_BYTES", window)
    return [(r.code, r.out, r.err) for r in (rpp(*c) for c in commands)]


@pytest.mark.slow
@pytest.mark.parametrize("seed,style", [(1, "plain"), (4, "ugly"), (9, "mixed"),
                                        (12, "ugly"), (20, "mixed")])
def test_every_command_prints_the_same_at_every_window(tmp_path, monkeypatch, seed, style):
    """Realistic collections (CRLF, BOM, gzip, comments, tabs in the ugly style) give the
    same exit code, stdout and stderr at windows of 7, 13 and 1024 bytes as at the default."""
    qrels, runs = write_collection(generate(seed), tmp_path, style)
    commands = _commands(qrels, runs)
    want = _outputs(monkeypatch, DEFAULT, commands)
    assert [code for code, _, _ in want[:3]] == [0, 0, 0], want[0][2]
    for window in WINDOWS:
        got = _outputs(monkeypatch, window, commands)
        for command, g, w in zip(commands, got, want):
            assert g == w, f"seed {seed} {style}, window {window}: {command[0]} differs"


def _first_queries(name: str, into: Path, queries: int = 4) -> Path:
    """The lines of the demo's file ``name`` for its first ``queries`` run queries."""
    keep = {line.split()[0] for line in (DEMO / "runs" / "bm25").read_bytes().splitlines()}
    keep = set(sorted(keep)[:queries])
    lines = (DEMO / name).read_bytes().splitlines(keepends=True)
    (into / Path(name).name).write_bytes(b"".join(x for x in lines if x.split()[0] in keep))
    return into / Path(name).name


@pytest.mark.slow
def test_ndeval_and_stdin_print_the_same_at_every_window(tmp_path, monkeypatch):
    """ndeval (rank column, tags) on the demo's first four queries (a window of a few bytes
    ends inside each line, CRLF and query change hundreds of times; a window's cost is per
    line, and the whole demo took 30 s), a run as it is and rewritten with BOM, CRLF and
    gzip, and that run read from standard input beside another."""
    qrels, subtopics, plain, monot5 = (_first_queries(name, tmp_path) for name in (
        "qrels", "qrels.subtopics", "runs/bm25", "runs/monot5"))
    ugly = tmp_path / "bm25.gz"
    ugly.write_bytes(gzip.compress(b"\xef\xbb\xbf" + plain.read_bytes().replace(b"\n", b"\r\n"),
                                   mtime=0))
    commands = [["ndeval", subtopics, plain], ["ndeval", "-M", "5", subtopics, ugly]]
    want = _outputs(monkeypatch, DEFAULT, commands)
    assert [code for code, _, _ in want] == [0, 0] and want[0][1] and want[1][1]
    stdin = ugly.read_bytes()
    piped = rpp("eval", "-q", qrels, "-", monot5, stdin=stdin)
    assert piped.code == 0 and {line.split("\t")[1] for line in piped.out.splitlines()} == {
        "201", "202", "203", "204", "all"}
    for window in (*ODD_WINDOWS[:8], 1024):
        assert _outputs(monkeypatch, window, commands) == want, window
        again = rpp("eval", "-q", qrels, "-", monot5, stdin=stdin)
        assert (again.code, again.out, again.err) == (piped.code, piped.out, piped.err), window


QRELS = b"q1 0 d1 1\nq2 0 d3 1\nq2 0 d\xc3\xa92 1\n"
HEAD = (b"\xef\xbb\xbfq1 Q0 d1 1 3.0 tagA\r\n"  # line 1, after a BOM
        b"q1\tQ0 d\xc3\xa92 2 2.0 tagA\r\n"  # 2: a 2-byte UTF-8 character
        b"\r\n"  # 3: blank
        b"# a comment \xe2\x82\xac\n"  # 4
        b"q2  Q0\td3 1 1.5 tagA\n"  # 5
        b"q2 Q0 d4 2 1.0 tagA\r\n")  # 6
TAIL = b"q3 Q0 d9 1 0.5 tagA\nq3 Q0 d8 2 0.25 tagA\n"  # lines after the bad one
LONG = b"x" * (table.MAX_TOKEN_BYTES + 1)

# (what, line 7, the error after "RUN:LINE: ", its line)
BAD_LINES = [
    ("too few fields", b"q2 Q0 d5 3\n", "expected 5 or 6 fields (run: qid Q0 docno rank score "
     "[tag]), found 4", 7),
    ("control byte", b"q2 Q0 d\x015 3 0.5 tagA\n", "not a text file: control byte 0x01; "
     "expected run: qid Q0 docno rank score [tag]", 7),
    ("lone CR", b"q2 Q0 d5\r3 0.5 tagA\r\n", "not a text file: control byte 0x0d; expected "
     "run: qid Q0 docno rank score [tag]", 7),
    ("NUL", b"q2 Q0 d5 3 0.5 tagA\x00\n", "not a text file: control byte 0x00; expected "
     "run: qid Q0 docno rank score [tag]", 7),
    ("C1 control", b"q2 Q0 d\xc2\x855 3 0.5 tagA\n", "U+0085 (a C1 control) is not allowed "
     "in a field: it could rewrite or reorder what a terminal or a table shows", 7),
    ("not UTF-8", b"q2 Q0 d\x855 3 0.5 tagA\n", "byte 0x85 (not UTF-8; a C1 control in "
     "Latin-1) is not allowed in a field: it could rewrite or reorder what a terminal or a "
     "table shows", 7),
    ("field too long", b"q2 Q0 " + LONG + b" 3 0.5 tagA\n", "field 3 is 4,097 bytes long, "
     "over the limit of 4,096", 7),
    ("bad score", b"q2 Q0 d5 3 0.5x tagA\n", "score '0.5x' is not a finite number", 7),
    ("bad score, then a control byte", b"q2 Q0 d5 3 nan tagA\n" + TAIL + b"q4 \x7f\n",
     "score 'nan' is not a finite number", 7),
    ("a control byte, then a bad score", b"q2 Q0 d5 3 \x7f tagA\n" + TAIL + b"q4 Q0 d 1 x\n",
     "not a text file: control byte 0x7f; expected run: qid Q0 docno rank score [tag]", 7),
    ("repeated docno", b"q1 Q0 d1 3 0.5 tagA\n", "docno 'd1' repeated in query q1 (first at "
     "line 1); use --dedup to keep the best-scored copy", 7),
    ("line too long", b"q2 Q0 d5 3 0.5 tagA" + b" " * (1 << 20) + b"\n", "line longer than "
     "1,048,576 bytes (a field holds at most 4,096)", 7),
    ("line too long, with a control byte in it", b"q2 Q0 d5\x01 3" + b"\t" * (1 << 20) + b"\n",
     "line longer than 1,048,576 bytes (a field holds at most 4,096)", 7),
    ("line too long, a comment", b"# " + b"y" * (3 << 20), "line longer than 1,048,576 "
     "bytes (a field holds at most 4,096)", 7),
]


def _bad_run(tmp_path: Path, line: bytes, gz: bool) -> Path:
    path = tmp_path / ("bad.gz" if gz else "bad")
    data = HEAD + line + TAIL
    path.write_bytes(gzip.compress(data, mtime=0) if gz else data)
    return path


@pytest.mark.slow
@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
@pytest.mark.parametrize("what,line,message,number", BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_lines_give_one_error_at_every_window(tmp_path, monkeypatch, gz, what, line,
                                                  message, number):
    """Each refusal names the same physical line, wherever the windows cut the file."""
    qrels = tmp_path / "qrels"
    qrels.write_bytes(QRELS)
    run = _bad_run(tmp_path, line, gz)
    want = f"rpp: {run}:{number}: {message}\n"
    for window in (DEFAULT, *ODD_WINDOWS):
        monkeypatch.setattr(table, "WINDOW_BYTES", window)
        for jobs in ("1", "3"):  # the windows split one after the other, or three at once
            res = rpp("eval", "-j", jobs, qrels, run)
            assert (res.code, res.err) == (2, want), f"window {window}, -j {jobs}"


def test_an_early_bad_line_comes_before_the_size_limit(tmp_path, monkeypatch):
    """A run's first error is the one reported, as soon as it is read: line 7 is bad, and
    the file is refused for it before its end, past RPP_MAX_INPUT_BYTES, is read; a file
    whose bad line is past the limit is refused as too large."""
    qrels = tmp_path / "qrels"
    qrels.write_bytes(QRELS)
    early = _bad_run(tmp_path, b"q2 Q0 d5 3\n" + TAIL * 200, gz=True)
    late = tmp_path / "late.gz"
    late.write_bytes(gzip.compress(HEAD + TAIL * 200 + b"q2 Q0 d5 3\n", mtime=0))
    monkeypatch.setenv("RPP_MAX_INPUT_BYTES", "2000")
    for window in (DEFAULT, 7, 64, 1024):
        monkeypatch.setattr(table, "WINDOW_BYTES", window)
        for jobs in ("1", "3"):
            res = rpp("eval", "-j", jobs, qrels, early)
            assert (res.code, res.err) == (2, f"rpp: {early}:7: expected 5 or 6 fields (run: "
                                              "qid Q0 docno rank score [tag]), found 4\n"), window
            res = rpp("eval", "-j", jobs, qrels, late)
            assert res.code == 2 and res.err == (
                f"rpp: {late}: larger than the limit of 2,000 bytes per input file "
                "(decompressed); split the file or raise RPP_MAX_INPUT_BYTES\n"), window


def test_a_file_of_comments_is_empty_at_every_window(tmp_path, monkeypatch):
    """Blank and comment lines only (after a BOM, with CRLF): no rows, whatever the window."""
    qrels = tmp_path / "qrels"
    qrels.write_bytes(QRELS)
    run = tmp_path / "empty"
    run.write_bytes(b"\xef\xbb\xbf# nothing\r\n\r\n#\n  \t\n")
    for window in (DEFAULT, *ODD_WINDOWS):
        monkeypatch.setattr(table, "WINDOW_BYTES", window)
        res = rpp("eval", qrels, run)
        assert (res.code, res.err) == (2, f"rpp: {run}: empty file: no run: qid Q0 docno rank "
                                          "score [tag] lines\n"), window


@pytest.mark.parametrize("threads", (1, 2, 3))
@pytest.mark.parametrize("window", (DEFAULT, *ODD_WINDOWS))
def test_read_run_keeps_the_same_arrays_at_every_window(tmp_path, monkeypatch, window,
                                                        threads):
    """A BOM counts only at the very start of the file: one at the start of line 7 is part
    of the qid, wherever the window starts. Lines skip the blank and comment lines 3-4 and
    the untagged line 8 is found: rows 0..7 are lines 1, 2, 5, 6, 7, 8, 9, 10; the same when
    ``threads`` windows are split at once."""
    path = tmp_path / "run"
    path.write_bytes(HEAD + b"\xef\xbb\xbfq2 Q0 d5 3 0.5 tagA\nq3 Q0 d7 1 0.75\n" + TAIL)
    monkeypatch.setattr(table, "WINDOW_BYTES", window)
    run = read_run(str(path), keep_rank=True, threads=threads)
    assert run.tag == "tagA"
    assert run.qid_values == [b"q1", b"q2", b"\xef\xbb\xbfq2", b"q3"]
    assert run.qid_codes.tolist() == [0, 0, 1, 1, 2, 3, 3, 3]
    assert (run.qid_stretches.tolist(), run.stretch_starts.tolist()) == ([0, 1, 2, 3],
                                                                         [0, 2, 4, 5])
    assert [run.docno.bytes(i) for i in range(len(run))] == [
        b"d1", b"d\xc3\xa92", b"d3", b"d4", b"d5", b"d7", b"d9", b"d8"]
    assert [run.rank.bytes(i) for i in range(len(run))] == [
        b"1", b"2", b"1", b"2", b"3", b"1", b"1", b"2"]
    assert np.array_equal(run.score, [3.0, 2.0, 1.5, 1.0, 0.5, 0.75, 0.5, 0.25])
    assert [run.line(i) for i in range(len(run))] == [1, 2, 5, 6, 7, 8, 9, 10]
    assert run.untagged == 5


def test_a_file_without_line_ends_is_scanned_a_logarithmic_number_of_times(tmp_path,
                                                                           monkeypatch):
    """A run saved with CR-only line ends is one long line: the reader looks for a line end
    again only once its buffer has doubled (2 MiB arriving 4 KiB at a time through a 1 KiB
    window: 512 chunks, about log2(1024) scans before the line passes MAX_LINE_BYTES, not one
    scan per chunk), and the error is the one the whole file gives: the line's length, which
    decides before the CR in it."""
    from rpp_cli.core import source

    path = tmp_path / "cr.run"
    path.write_bytes(b"1 Q0 d 1 2 t\r" * ((2 << 20) // 13))
    monkeypatch.setattr(source, "CHUNK", 4096)
    monkeypatch.setattr(table, "WINDOW_BYTES", 1024)
    scans = []  # the run's scans (the qrels are read through the same windows)
    real = table._cuts
    monkeypatch.setattr(table, "_cuts", lambda buffer, final, size: (
        buffer.startswith(b"1 Q0 d ") and scans.append(len(buffer)),
        real(buffer, final, size))[1])
    res = rpp("eval", "-m", "map", DEMO / "qrels", path)
    assert res.code == 2 and ":1: line longer than 1,048,576 bytes" in res.err, res.err
    assert 0 < len(scans) <= 16, len(scans)
    whole = rpp("eval", "-m", "map", DEMO / "qrels", "-", stdin=path.read_bytes())
    assert whole.err == res.err.replace(str(path), "-")


@pytest.mark.parametrize("seed", range(12))
def test_every_row_knows_its_line_at_every_window(tmp_path, monkeypatch, seed):
    """Blank and comment lines anywhere (none, at the start, in runs, at the end; CRLF and
    spaces), windows of any size: each row's line is the line it was written on."""
    rng = np.random.default_rng(seed)
    lines, want = [], []
    skips = rng.random() < 0.7  # some files have no skipped line at all
    for row in range(int(rng.integers(1, 60))):
        while skips and rng.random() < 0.25:
            lines.append(rng.choice([b"", b"   ", b"# a comment", b"#", b"\t"]))
        docno = b"doc-%d-" % row + b"x" * int(rng.integers(0, 40))
        end = b"\r" if rng.random() < 0.2 else b""
        lines.append(b"q%d Q0 %s %d %f run%s" % (row // 7, docno, row % 7 + 1, -row, end))
        want.append(len(lines))
    while skips and rng.random() < 0.3:
        lines.append(b"# trailing")
    path = tmp_path / "run"
    path.write_bytes(b"\n".join(lines) + b"\n")
    for window in (DEFAULT, *rng.choice(ODD_WINDOWS[6:], 3)):
        monkeypatch.setattr(table, "WINDOW_BYTES", int(window))
        run = read_run(str(path), keep_rank=True)
        assert [run.line(i) for i in range(len(run))] == want


@pytest.mark.slow
def test_a_line_asked_for_while_rows_are_added(tmp_path):
    """A join thread asks for a repeated docno's line while the reader still adds rows: the
    view the lookup took stopped the buffers growing, and the reader's append raised
    BufferError (a traceback, 7 times in 100 at -j 8 with small windows and batches)."""
    import threading

    from rpp_cli.core.table import split
    from rpp_cli.io.runs import RUN_FORMAT, LineNumbers

    path = tmp_path / "r"
    path.write_text("# a comment\n106_1 Q0 clueweb12-0000wb-00-00001 1 2.5 r\n\n")
    one = split(str(path), (0, 2, 4), (5, 6), RUN_FORMAT)
    numbers = LineNumbers()
    numbers.add(one, 0)
    failed: list[BaseException] = []
    stop = threading.Event()

    def ask() -> None:
        try:
            while not stop.is_set():
                assert numbers.line(0) == 2
        except BaseException as err:  # noqa: BLE001 - the test looks at it
            failed.append(err)

    asker = threading.Thread(target=ask)
    asker.start()
    try:
        for row in range(1, 20_000):  # each window's table adds an entry (its line moves)
            numbers.add(one, 2 * row)
    finally:
        stop.set()
        asker.join()
    assert not failed
    assert numbers.line(0) == 2 and numbers.line(2 * 19_999) == 2

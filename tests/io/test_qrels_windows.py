"""Qrels read a window at a time (io/qrels.py, io/judged.py): the same judgments, grades,
notes, errors and line numbers as the file read whole, whatever the window, the chunks of
queries coded at once and the threads.

The reference is a literal reading in pure Python (one line at a time, a dict of pairs);
for grades (their integer parts, the atol note and their errors) the whole-file reading
that read_grades still does for the trec-eval drop-in. Windows of a few dozen bytes and
chunks of one to a few queries put every kind of line at a window's edge: a repeated
judgment, a bad grade, a CRLF, a comment.
"""
from __future__ import annotations

import gzip
import os
import random
import threading

import numpy as np
import pytest

import rpp_cli.core.table as table
import rpp_cli.io.judged as judged
from rpp_cli.core import split
from rpp_cli.errors import InputError
from rpp_cli.io.qrels import QRELS_FORMAT, read_grades, read_qrels

from ..conftest import rpp, tiered
from ..realistic import _QID_STYLES, DOCNO_STYLES

BOM = b"\xef\xbb\xbf"
WINDOWS = [31, 64, 257, table.WINDOW_BYTES]
CHUNKS = [1, 3, judged.CHUNK_ROWS]


def hostile_qrels(seed: int, lines: int = 400) -> bytes:
    """Qrels lines of string qids (106_1, 007, q-α) whose lines are sometimes together and
    sometimes not, mixed docnos (numeric, MS MARCO, hex, UTF-8, URLs), grades 0-3 (a few
    negative), pairs judged again far from their first line, fields parted by tabs and runs
    of spaces, CRLF and LF, comments and blank lines, a BOM."""
    rng = random.Random(seed)
    makers = [fn for fn in DOCNO_STYLES.values() if fn is not None]
    qids = list(dict.fromkeys(rng.choice(_QID_STYLES)(rng) for _ in range(rng.randint(3, 40))))
    out, seen = [], []
    qid = rng.choice(qids)
    for _ in range(lines):
        if rng.random() < 0.15:
            qid = rng.choice(qids)  # another query (its lines then not all together)
        if seen and rng.random() < 0.08:
            q, d = rng.choice(seen)  # judged again, anywhere later
        else:
            q, d = qid, rng.choice(makers)(rng)
            seen.append((q, d))
        grade = rng.choice("0000111223") if rng.random() > 0.03 else rng.choice(["-1", "-2"])
        seps = [rng.choice([" ", "\t", "  ", " \t "]) for _ in range(3)]
        text = f"{q}{seps[0]}{rng.choice(['0', 'Q0'])}{seps[1]}{d}{seps[2]}{grade}"
        if rng.random() < 0.1:
            text = rng.choice([" ", "\t"]) + text + rng.choice(["", " ", "\t"])
        if rng.random() < 0.04:
            out.append(rng.choice(["", "# a comment", "#\tq 0 d 1"]))
        out.append(text)
    eol = [rng.choice(["\n", "\r\n"]) for _ in out]
    return BOM + "".join(line + e for line, e in zip(out, eol)).encode()


def literal(data: bytes) -> tuple[list[str], list[tuple[str, bytes, float]], int]:
    """The qids (in order of first line), the judgments ((qid, docno, largest grade): each
    query's together, the queries in order of first line, a query's judgments in order of
    their first line) and the lines that judge a pair again, read one line at a time."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    data = data[len(BOM):] if data.startswith(BOM) else data
    pairs: dict[tuple[bytes, bytes], float] = {}
    qids: dict[bytes, list[bytes]] = {}
    count = 0
    for line in data.split(b"\n"):
        fields = [f for f in line.removesuffix(b"\r").replace(b"\t", b" ").split(b" ") if f]
        if not fields or fields[0].startswith(b"#"):
            continue
        qid, _, docno, grade = fields
        count += 1
        if (qid, docno) not in pairs:
            qids.setdefault(qid, []).append(docno)
        pairs[qid, docno] = float(np.maximum(pairs.get((qid, docno), -np.inf), float(grade)))
    judgments = [(q.decode(), d, pairs[q, d]) for q, docs in qids.items() for d in docs]
    return [q.decode() for q in qids], judgments, count - len(pairs)


def read_in_windows(path, monkeypatch, window: int, chunk: int, threads: int = 1,
                    notes: list[str] | None = None):
    """read_qrels with windows of ``window`` bytes and chunks of ``chunk`` rows."""
    monkeypatch.setattr(table, "WINDOW_BYTES", window)
    monkeypatch.setattr(judged, "CHUNK_ROWS", chunk)
    monkeypatch.setattr(judged, "BLOCK_ROWS", max(1, chunk))
    return read_qrels(str(path), notes, threads)


def judgments_of(qrels) -> list[tuple[str, bytes, float]]:
    """(qid, docno, grade) of every judgment, in judgment order."""
    qid, docno = qrels.qid, qrels.docno
    return [(qrels.qids[q], docno.bytes(j), float(qrels.grade[j]))
            for j, q in enumerate(qid.tolist())]


@pytest.mark.parametrize("seed", tiered(range(6)))
@pytest.mark.parametrize("window", WINDOWS)
@pytest.mark.parametrize("chunk", CHUNKS)
def test_windows_read_what_a_literal_reading_reads(tmp_path, monkeypatch, seed, window, chunk):
    """The same qids, judgments (each query's together, in order of first line), largest
    grades and count of lines judging a pair again, gzip or not, one thread or three."""
    data = hostile_qrels(seed)
    path = tmp_path / "qrels"
    path.write_bytes(gzip.compress(data) if seed % 2 else data)
    want = literal(data)
    for threads in (1, 3):
        got = read_in_windows(path, monkeypatch, window, chunk, threads)
        assert (got.qids, judgments_of(got), got.repeated) == want
        assert got.docno_lens.dtype == np.uint16 and got.grade.dtype == np.float64
        assert len(got.docno_bytes) == sum(len(d) for _, d, _ in want[1])


# Grade texts whose reading is not plain: exponent and hexadecimal (atol reads otherwise),
# rounding onto a whole number (0.99999999999999999), underflow (1e-400), signs and points.
ODD_GRADES = ["1e3", "0x2", "2E0", "0X1p1", "0.99999999999999999", "1e-400", "-0", "+1", ".5",
              "2.", "-1e-400", "2.9999999999999999999", "1", "3", "0", "12e-1"]


def odd_qrels(seed: int, lines: int = 120) -> str:
    """Lines whose grades are :data:`ODD_GRADES` and plain ones, pairs judged again."""
    rng = random.Random(seed)
    docs = [f"d{k}" for k in range(lines // 2)]
    return "".join(f"{rng.choice(['106_1', '106_2', '7'])} 0 {rng.choice(docs)} "
                   f"{rng.choice(ODD_GRADES)}\n" for _ in range(lines))


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("window", WINDOWS)
def test_grades_and_the_atol_note_are_those_of_the_whole_file(tmp_path, monkeypatch, seed,
                                                                window):
    """Each judgment's grade (bit for bit: integer parts kept, the largest of a pair's) and
    the one note on grades atol reads otherwise (its first line, its count of others) are
    what reading the whole file gives."""
    path = tmp_path / "qrels"
    path.write_text(odd_qrels(seed))
    whole = split(str(path), (0, 2, 3), (4,), QRELS_FORMAT)
    want_notes: list[str] = []
    grades = read_grades(whole, notes=want_notes)
    best: dict[tuple[bytes, bytes], float] = {}
    for row in range(len(whole)):
        key = (whole.column(0).bytes(row), whole.column(2).bytes(row))
        best[key] = np.maximum(best.get(key, -np.inf), grades[row])  # -0 and 0: numpy's
    notes: list[str] = []
    got = read_in_windows(path, monkeypatch, window, 2, notes=notes)
    assert notes == want_notes and len(want_notes) == 1
    assert {(q.encode(), d): np.float64(g).tobytes() for q, d, g in judgments_of(got)} == \
        {key: np.float64(g).tobytes() for key, g in best.items()}


def whole_file_error(path) -> str:
    """The error of the file read whole, as the reader before did (split, then grades:
    the tokenizer's errors first)."""
    with pytest.raises(InputError) as err:
        read_grades(split(str(path), (0, 2, 3), (4,), QRELS_FORMAT))
    return str(err.value)


BAD = {"not a number": "x1", "not finite": "nan", "overflow": "1e400",
       "out of range": "3e9", "below range": "-2147483649"}


@pytest.mark.parametrize("window", tiered([31, 64, 100]))
@pytest.mark.parametrize("kind", sorted(BAD))
def test_a_bad_grade_anywhere_names_its_line(tmp_path, monkeypatch, window, kind):
    """A bad grade on line k, for every k (so at every window's edge; a comment and a blank
    line before it, CRLF after): the error and line number the whole file gives."""
    lines = [f"106_{k % 3} 0 doc{k} {k % 4}" for k in range(40)]
    for k in range(len(lines)):
        bad = lines.copy()
        bad[k] = f"106_1 0 d{k} {BAD[kind]}"
        path = tmp_path / "qrels"
        path.write_bytes(("# judged\n\n" + "\r\n".join(bad) + "\r\n").encode())
        with pytest.raises(InputError) as err:
            read_in_windows(path, monkeypatch, window, 2)
        assert str(err.value) == whole_file_error(path)
        assert err.value.line == k + 3


@pytest.mark.parametrize("window", [31, 64, table.WINDOW_BYTES])
def test_errors_come_in_the_order_of_the_whole_file(tmp_path, monkeypatch, window):
    """Three bad lines: a grade out of range, then one that is not a number, then a line of
    three fields, in every order: the line of three fields wins (the tokenizer reads the
    whole file first), then the grade that is not a number, then the one out of range,
    wherever each lies, as when the file is read whole."""
    bad = {"range": "106_1 0 r 3e9", "number": "106_1 0 n abc", "fields": "106_1 0 f"}
    for order in [("range", "number", "fields"), ("fields", "number", "range"),
                  ("number", "range", "fields"), ("range", "fields", "number")]:
        for kinds in (order, order[:2], order[1:], order[::2]):
            lines = [f"106_{k % 2} 0 doc{k} 1" for k in range(30)]
            for at, kind in zip((3, 14, 26), kinds):
                lines[at] = bad[kind]
            path = tmp_path / "qrels"
            path.write_text("\n".join(lines) + "\n")
            want = whole_file_error(path)
            with pytest.raises(InputError) as err:
                read_in_windows(path, monkeypatch, window, 1)
            assert str(err.value) == want, kinds


def test_a_pair_judged_again_across_windows_keeps_its_largest_grade(tmp_path, monkeypatch):
    """A pair judged on the first line and again on lines in later windows (another query's
    lines between): one judgment, the largest grade, and the note of the repeated lines."""
    lines = ["106_1 0 msmarco_passage_01_7 1"] + [f"106_2 0 d{k} 0" for k in range(50)]
    lines += ["106_1 0 msmarco_passage_01_7 3", "106_1 0 msmarco_passage_01_7 2"]
    path = tmp_path / "qrels"
    path.write_text("\n".join(lines) + "\n")
    got = read_in_windows(path, monkeypatch, 64, 1)
    assert got.repeated == 2 and got.qids == ["106_1", "106_2"]
    assert judgments_of(got)[0] == ("106_1", b"msmarco_passage_01_7", 3.0)
    run = tmp_path / "run"
    run.write_text("106_1 Q0 msmarco_passage_01_7 1 1.0 t\n")
    res = rpp("eval", "-m", "map", path, run)
    assert res.code == 0 and f"{path}: 2 lines judge a (query, docno) pair judged on an " \
        "earlier line: each pair keeps its largest grade" in res.err


def test_qrels_from_a_file_gzip_stdin_and_a_fifo_evaluate_alike(tmp_path):
    """The same qrels as a plain file, gzipped, on standard input and through a FIFO (read
    once, as it is written): the same output and notes (each naming its file)."""
    data = hostile_qrels(11, 300)
    plain, gz = tmp_path / "plain", tmp_path / "gz"
    plain.write_bytes(data)
    gz.write_bytes(gzip.compress(data))
    qids, pairs, _ = literal(data)
    runs = [tmp_path / "run1", tmp_path / "run2"]
    for r, run in enumerate(runs):
        run.write_text("".join(f"{q} Q0 {d.decode()} {k + 1} {(k * (r + 2)) % 7} t{r}\n"
                               for k, (q, d, _) in enumerate(pairs) if k % (r + 2) == 0))
    args = ["eval", "-q", "-m", "map", "-m", "ndcg", "-m", "rpp", "-j", "1"]
    want = rpp(*args, plain, *runs)
    assert want.code == 0 and "judge a (query, docno) pair" in want.err
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_bytes, args=(data,))
    writer.start()
    try:
        through_fifo = rpp(*args, fifo, *runs)
    finally:
        writer.join()
    for path, got in [(gz, rpp(*args, gz, *runs)), ("-", rpp(*args, "-", *runs, stdin=data)),
                      (fifo, through_fifo)]:
        assert (got.code, got.out) == (0, want.out)
        assert got.err == want.err.replace(str(plain), str(path))


@pytest.mark.parametrize("seed", range(3))
def test_qrels_whose_queries_are_apart_evaluate_as_those_grouped(tmp_path, seed):
    """The same judgments with each query's lines together, and shuffled (a query's lines
    apart, so the reader groups them): the same output, every measure family."""
    data = hostile_qrels(seed, 300)
    qids, pairs, _ = literal(data)
    lines = [f"{q} 0 {d.decode()} {g:g}\n" for q, d, g in pairs]
    grouped, shuffled = tmp_path / "grouped", tmp_path / "shuffled"
    grouped.write_text("".join(lines))
    random.Random(seed).shuffle(lines)
    shuffled.write_text("".join(lines))
    runs = []
    for r in range(2):
        rng = random.Random(f"{seed}/{r}")
        path = tmp_path / f"run{r}"
        path.write_text("".join(f"{q} Q0 {d.decode()} {k + 1} {rng.randint(0, 9)} t{r}\n"
                                for k, (q, d, _) in enumerate(pairs) if rng.random() < 0.5))
        runs.append(path)
    args = ["eval", "-q", "-m", "map", "-m", "ndcg", "-m", "P.10", "-m", "rpp", "-m",
            "invrpp", "-m", "asl", "-m", "ERR@20", "-m", "bpref"]
    want = rpp(*args, grouped, *runs)
    assert want.code == 0 and want.out
    assert rpp(*args, shuffled, *runs).out == want.out


@pytest.mark.parametrize("jobs", ["1", pytest.param("2", marks=pytest.mark.slow)])
def test_heavy_qrels_print_the_same_bytes_whatever_the_chunks_batches_and_shards(
        tmp_path, monkeypatch, jobs):
    """Qrels of many queries, some judged again, evaluated with the judgments' dictionaries
    built a query or a few at a time or all at once, pytrec_eval given them a query or a few
    at a time or all at once, and shards of one, three or all queries: the same bytes, on
    one worker or two (every family; four runs share the unjudged docnos' codes)."""
    import rpp_cli.measures.pytrec_adapter as adapter

    data = hostile_qrels(5, 1500)
    qrels = tmp_path / "qrels"
    qrels.write_bytes(data)
    _, pairs, _ = literal(data)
    runs = []
    for r in range(4):
        rng = random.Random(f"heavy/{r}")
        path = tmp_path / f"run{r}"
        path.write_text("".join(f"{q} Q0 {d.decode()} {k + 1} {rng.randint(0, 30) / 4} t{r}\n"
                                for k, (q, d, _) in enumerate(pairs) if rng.random() < 0.4)
                        + "".join(f"{pairs[0][0]} Q0 unjudged{k} 0 -{k} t{r}\n"
                                  for k in range(r * 3)))
        runs.append(path)
    args = ["eval", "-q", "-m", "map", "-m", "ndcg", "-m", "bpref", "-m", "num_rel", "-m",
            "rpp", "-m", "dcgrpp", "-m", "asl", "-m", "ERR@20", qrels, *runs]
    want = rpp(*args, "-j", "1")
    assert want.code == 0 and "judge a (query, docno) pair" in want.err
    for chunk, batch, shard in [(1, 1, "1"), (7, 5, "3"), (judged.CHUNK_ROWS, 1, None)]:
        monkeypatch.setattr(judged, "CHUNK_ROWS", chunk)
        monkeypatch.setattr(adapter, "QRELS_BATCH", batch)
        if shard is None:
            monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
        else:
            monkeypatch.setenv("RPP_SHARD_QUERIES", shard)
        got = rpp(*args, "-j", jobs)
        assert (got.code, got.out, got.err) == (0, want.out, want.err), (chunk, batch, shard)

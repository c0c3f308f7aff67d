"""A query too long to hold as rows (io/runs.py LONG_ROWS, io/held.py LongQuery): once one
query has LONG_ROWS rows it is held as its distinct docnos and their best scores, a docno it
repeats is an error as its line is read, and it is joined from that form (join.py
_join_long). Neither may change a byte of any output or error:

- collections with one long query among short ones, joined with LONG_ROWS small (the long
  path) and at its default (rows), across -j, shard sizes (RPP_SHARD_QUERIES), batch and
  window sizes, gzip, CRLF, standard input and a long query listed in two places;
- hostile runs (a wrong field count, a control byte, a bad score, a repeated docno; at the
  start, in a short query, early and late in the long one, in a later query; one error or
  two) give the error a literal reference finds: the first bad line of the file, each as
  today's message, whichever path found it;
- what a long query costs: the 45M-line case of issue 36 (a repeat on line 2 of a query that
  never ends) scaled down, and the bytes a legitimate long query is held in.
"""
from __future__ import annotations

import gzip
import math
import os
import random
import subprocess
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import rpp_cli.core.table as table
import rpp_cli.io.runs as runs
import rpp_cli.join as join
from rpp_cli.io.runs import RUN_FORMAT

from ..conftest import rpp
from ..realistic import Collection, DOCNO_STYLES, _docnos, _score_values, write_collection

LONG_QID, LONG = "q-α", 400  # the long query of the small collections, and its rows
SHORT = (("106_1", 35), ("7", 25))  # short judged queries around it
UNJUDGED = ("999", 20)  # a query the qrels lack (its repeats are no error: it is dropped)


def _collection(seed: int) -> Collection:
    """106_1, the long q-α (scores in stretches of every style: ties, C-float ties, one
    constant stretch; docnos of every style), 7 and 999 in three runs; run 1 lists the long
    query out of ranking order."""
    rng = random.Random(seed)
    styles = [fn for fn in DOCNO_STYLES.values() if fn is not None]
    sizes = dict((*SHORT, (LONG_QID, LONG), UNJUDGED))
    pools = {q: _docnos(rng, styles, 2 * n) for q, n in sizes.items()}
    qrels: dict[str, dict[str, int]] = {}
    judgments = []
    for q in (SHORT[0][0], LONG_QID, SHORT[1][0]):
        qrels[q] = {d: rng.choice((0, 1, 1, 2, 3)) for d in rng.sample(pools[q], sizes[q] // 2)}
        judgments += [(q, d, g) for d, g in qrels[q].items()]
    runs_ = []
    for r in range(3):
        run = {}
        for q, n in sizes.items():
            docs = rng.sample(pools[q], n)
            scores = []
            for style in ("coarse", "float32", "constant", "fine", "tiny", "large"):
                scores += _score_values(rng, style, n // 6 + 1)
            run[q] = list(zip(docs, sorted(scores[:n], reverse=True)))
        if r == 1:
            rng.shuffle(run[LONG_QID])  # (the rank column is not read: the score orders)
        runs_.append(run)
    return Collection(seed, qrels, judgments, runs_, ["bm25", "SPLADE++", "qld"])


def _with_repeats(coll: Collection, path: Path) -> Path:
    """Run 0 with every 20th docno of the long query listed again, with a score above and
    below its own in turn (--dedup keeps the best), some lines later."""
    lines = [f"{q} Q0 {d} {i + 1} {s!r} dup\n" for q, docs in coll.runs[0].items()
             for i, (d, s) in enumerate(docs)]
    again = coll.runs[0][LONG_QID][::20]
    lines[len(lines) // 2:len(lines) // 2] = [
        f"{LONG_QID} Q0 {d} 0 {s + (1 if k % 2 else -1)!r} dup\n" for k, (d, s) in enumerate(again)]
    path.write_text("".join(lines))
    return path


def _commands(qrels: Path, a: Path, b: Path, dup: Path) -> list[tuple[list, bytes | None]]:
    """Every use of a run's rows: values and ties, one run alone (fresh codes), --dedup and
    -M, preferences and interleaving, a comparison, and a run from standard input."""
    return [
        (["eval", "-q", "--precision", "10", qrels, a, b], None),
        (["eval", "-q", "-m", "asl", "-m", "map", "-m", "ndcg_cut.5", "-m", "RR@10", "-m",
          "rbp", qrels, a], None),
        (["eval", "-q", "-M", "7", "--dedup", qrels, a, dup], None),
        (["eval", "-q", "-m", "rpp", "-m", "oi", "-m", "tdi", "-m", "invrpp", qrels, a, b],
         None),
        (["compare", "--permutations", "200", qrels, a, b], None),
        (["eval", "-q", "-m", "P.5", "-m", "Judged@10", "-m", "map", qrels, "-", b],
         a.read_bytes()),
    ]


def _outputs(commands, long_rows: int | None, jobs: int = 1, shard: int | None = None,
             small: bool = False) -> list[tuple]:
    """The outcome of each command with LONG_ROWS ``long_rows`` (None: the default), ``-j``,
    ``RPP_SHARD_QUERIES`` and, when ``small``, batches of 7 rows through windows of 64
    bytes."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(runs, "LONG_ROWS", long_rows or runs.LONG_ROWS)
        mp.setattr(runs, "BATCH_ROWS", 7 if small else runs.BATCH_ROWS)
        mp.setattr(table, "WINDOW_BYTES", 64 if small else table.WINDOW_BYTES)
        if shard is None:
            mp.delenv("RPP_SHARD_QUERIES", raising=False)
        else:
            mp.setenv("RPP_SHARD_QUERIES", str(shard))
        out = [rpp(c[0], "-j", str(jobs), *c[1:], stdin=stdin) for c, stdin in commands]
    return [(r.code, r.out, r.err) for r in out]


@pytest.fixture
def made(monkeypatch) -> list:
    """The long queries the readers make."""
    kept: list = []

    class Counted(runs.LongQuery):
        def __init__(self, *args):
            super().__init__(*args)
            kept.append(self)
    monkeypatch.setattr(runs, "LongQuery", Counted)
    return kept


def _check_variants(made, tmp_path, seed, style, variants) -> None:
    """Each variant (long_rows, jobs, shard, small) prints what rows print by default."""
    coll = _collection(seed)
    qrels, (a, b, _) = write_collection(coll, tmp_path, style)
    commands = _commands(qrels, a, b, _with_repeats(coll, tmp_path / "dup"))
    want = _outputs(commands, None)
    assert [code for code, _, _ in want] == [0] * len(commands), want
    assert "repeated docnos dropped" in want[2][2]
    assert not made  # 400 rows are far from the default LONG_ROWS
    for variant in variants:
        got = _outputs(commands, *variant)
        assert made, variant
        made.clear()
        for (command, _), g, w in zip(commands, got, want):
            assert g == w, f"seed {seed} {style} {variant}: {command[:5]} differs"


def test_a_long_query_prints_what_its_rows_print(tmp_path, made):
    """The long path (LONG_ROWS 1 and 150) against rows, plain and ugly (CRLF, BOM, gzip)."""
    _check_variants(made, tmp_path, 1, "ugly", [(150,), (1, 3)])


@pytest.mark.slow
@pytest.mark.parametrize("seed,style", [(2, "plain"), (3, "ugly"), (4, "mixed")])
def test_every_job_shard_and_window_prints_the_same(tmp_path, made, seed, style):
    """-j 1 and 3, shards of one query, batches of 7 rows through windows of 64 bytes (a
    long query crosses hundreds of windows before it is long), LONG_ROWS from 1 to most of
    the query."""
    _check_variants(made, tmp_path, seed, style, [
        (1,), (13, 3), (150, 3, 1), (150, 1, None, True), (399, 3, 2, True), (1, 1, 1, True)])


@pytest.mark.slow
def test_a_long_query_listed_in_two_places_is_read_again(tmp_path, made):
    """The long query's last 100 lines moved to the end of the file: handed on once the file
    moves on, met again (broken), dropped and joined again from a second reading (long
    again), as its rows are."""
    coll = _collection(5)
    qrels, (a, b, _) = write_collection(coll, tmp_path, "plain")
    for path in (a, b):
        lines = path.read_bytes().splitlines(keepends=True)
        mine = [i for i, line in enumerate(lines) if line.startswith(LONG_QID.encode())]
        moved = [lines[i] for i in mine[-100:]]
        path.write_bytes(b"".join([x for i, x in enumerate(lines) if i not in mine[-100:]]
                                  + moved))
    commands = _commands(qrels, a, b, _with_repeats(coll, tmp_path / "dup"))
    want = _outputs(commands, None)
    for variant in [(50,), (50, 3), (1, 1, None, True)]:
        assert _outputs(commands, *variant) == want, variant
        assert made
        made.clear()


# ---------------------------------------------------------------------------------------------
# hostile runs: the first bad line, whichever reader finds it

QRELS_QIDS = (SHORT[0][0], LONG_QID, SHORT[1][0])


def _base(rng: random.Random) -> list[list[str]]:
    """The fields of a run's lines: 106_1, the long query (300 lines), 7, and 999 (not
    judged, its docnos repeated: no error)."""
    lines = []
    for q, n in (SHORT[0], (LONG_QID, 300), SHORT[1], UNJUDGED):
        docs = _docnos(rng, [fn for fn in DOCNO_STYLES.values() if fn is not None], n)
        if q == UNJUDGED[0]:
            docs = docs[:n // 2] * 2
        for i, d in enumerate(docs):
            lines.append([q, "Q0", d, str(i + 1), f"{rng.randint(-50, 400) / 4}", "sys"])
    return lines


def _inject(rng: random.Random, lines: list[list[str]], kind: str, at: int) -> None:
    """Make line ``at`` (0-based) bad in the way ``kind`` names."""
    line = lines[at]
    if kind == "fields":
        del line[4:]
    elif kind == "control":
        line[2] = line[2][:1] + rng.choice(("\x01", "\x7f", "\x1b")) + line[2][1:]
    elif kind == "score":
        line[4] = rng.choice(("x", "nan", "1e999", "--1", "inf"))
    else:  # a docno of an earlier line of its query: the first, the one before, or between
        earlier = [i for i in range(at) if lines[i][0] == line[0] and len(lines[i]) > 2]
        if earlier:
            line[2] = lines[rng.choice((earlier[0], earlier[-1], rng.choice(earlier)))][2]


def _encode(lines: list[list[str]], ugly: bool) -> bytes:
    """Plain (one space, LF) or ugly: BOM, tabs, CRLF, a comment and a blank line, gzip."""
    if not ugly:
        return "".join(" ".join(f) + "\n" for f in lines).encode()
    text = ["# a hostile run\r\n"] + ["\t".join(f) + "  \r\n" for f in lines[:7]] + ["\r\n"]
    text += [" ".join(f) + "\r\n" for f in lines[7:]]
    return gzip.compress(b"\xef\xbb\xbf" + "".join(text).encode(), mtime=0)


def _first_error(data: bytes) -> tuple[int, str] | None:
    """The contract's first bad line of a run, literally (the kinds _inject makes): a
    control byte, a field count, a score that is not a finite number, then a docno its
    query (one of the qrels') lists twice."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    data = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
    seen: dict[tuple[bytes, bytes], int] = {}
    for number, line in enumerate(data.split(b"\n"), 1):
        line = line[:-1] if line.endswith(b"\r") else line
        bad = [c for c in line if (c < 32 and c != 9) or c == 127]
        if bad:
            return number, f"not a text file: control byte 0x{bad[0]:02x}; expected {RUN_FORMAT}"
        fields = line.replace(b"\t", b" ").split()
        if not fields or fields[0].startswith(b"#"):
            continue
        if len(fields) not in (5, 6):
            return number, f"expected 5 or 6 fields ({RUN_FORMAT}), found {len(fields)}"
        try:
            score = float(fields[4])
        except ValueError:
            score = math.nan
        if not math.isfinite(score):
            return number, f"score '{fields[4].decode()}' is not a finite number"
        key = (fields[0], fields[2])
        if fields[0].decode() in QRELS_QIDS:
            if key in seen:
                return number, (f"docno '{key[1].decode()}' repeated in query "
                                f"{key[0].decode()} (first at line {seen[key]}); use --dedup "
                                "to keep the best-scored copy")
            seen[key] = number
    return None


# where: the first line, a short query, early and late in the long query, a later query
PLACES = {"first line": 0, "short query": 20, "long, early": 40, "long, late": 330,
          "later query": 350}
KINDS = ("fields", "control", "score", "repeat")


def _hostile(seed: int) -> list[tuple[str, list[list[str]]]]:
    """Every kind at every place, then pairs of errors (either may come first), and runs
    with no error at all (999's repeats)."""
    cases = []
    for k, kind in enumerate(KINDS):
        for place, at in PLACES.items():
            rng = random.Random(f"{seed}/{kind}/{place}")
            lines = _base(rng)
            _inject(rng, lines, kind, at)
            cases.append((f"{kind} at {place}", lines))
    for n in range(8):
        rng = random.Random(f"{seed}/pair/{n}")
        lines = _base(rng)
        for _ in range(2):
            _inject(rng, lines, rng.choice(KINDS), rng.randrange(len(lines) - 20))
        cases.append((f"pair {n}", lines))
    cases.append(("no error", _base(random.Random(seed))))
    return cases


def _judged_qrels(path: Path) -> Path:
    path.write_text("".join(f"{q} 0 nosuch{i} {i % 2}\n" for q in QRELS_QIDS for i in range(3)))
    return path


def _check_hostile(tmp_path, variants, every: bool) -> None:
    """Each hostile run gives the reference's error (or none) at each variant (long_rows,
    jobs, small). ``every``: every case, each variant in one of four forms (plain or ugly,
    a file or standard input), the form turning with the case and the variant, so that every
    case meets every variant and every form, and every variant every form (a cross of all
    three is four times the commands and finds nothing a pair does not: the readers' paths
    are the variant's and the form's, the errors the case's); else only the cases in the long
    query and two pairs, plain files, at every variant."""
    qrels = _judged_qrels(tmp_path / "qrels")
    path = tmp_path / "run"
    forms = [(False, False), (True, True), (False, True), (True, False)]  # (ugly, stdin)
    for c, (name, lines) in enumerate(_hostile(36)):
        if not every and not name.endswith(("long, early", "long, late", "pair 0", "pair 1")):
            continue
        encoded = {ugly: _encode(lines, ugly) for ugly in (False, True)}
        want = {ugly: _first_error(data) for ugly, data in encoded.items()}
        assert (want[False] is None) == (name == "no error") or name.startswith(
            ("repeat", "pair"))
        assert (want[True] is None) == (want[False] is None)
        for v, (long_rows, jobs, small) in enumerate(variants):
            ugly, from_stdin = forms[(c + v) % len(forms)] if every else (False, False)
            path.write_bytes(encoded[ugly])
            source, stdin = ("-", encoded[ugly]) if from_stdin else (path, None)
            got = _outputs([(["eval", "-m", "map", qrels, source], stdin)],
                           long_rows, jobs, None, small)[0]
            if want[ugly] is None:
                assert got[0] == 0, (name, ugly, long_rows, jobs, small, got[2])
            else:
                line, message = want[ugly]
                assert got[:2] == (2, "") and got[2] == f"rpp: {source}:{line}: {message}\n", (
                    name, ugly, long_rows, jobs, small, source)


def test_hostile_runs_give_the_first_bad_line(tmp_path):
    """Rows (the join's checks) and the long path (the reader's), through windows of 64
    bytes and batches of 7 rows."""
    _check_hostile(tmp_path, [(None, 1, True), (50, 1, True)], every=False)


@pytest.mark.slow
def test_hostile_runs_give_the_first_bad_line_every_way(tmp_path):
    """Plain and ugly (BOM, CRLF, tabs, a comment, gzip), file and standard input, at the
    default window and batch and at small ones, -j 1 and 3, LONG_ROWS default, 1 and 50."""
    _check_hostile(tmp_path, [(None, 1, False), (None, 3, True), (1, 1, False), (50, 3, True),
                              (1, 3, True)], every=True)


# ---------------------------------------------------------------------------------------------
# what a long query costs

PEAK = ("import resource, subprocess, sys; r = subprocess.run(sys.argv[1:], input=sys.stdin."
        "buffer.read(), capture_output=True); print(r.returncode); print(r.stderr.decode(), "
        "end=''); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")


def _peak(args: list, stdin: bytes = b"", env: dict | None = None) -> tuple[int, str, int]:
    """(exit status, stderr, peak RSS in KiB) of ``rpp ARGS`` alone in a fresh process, with
    ``env`` added to its environment."""
    res = subprocess.run([sys.executable, "-c", PEAK, sys.executable, "-m", "rpp_cli",
                          *map(str, args)], input=stdin, capture_output=True, check=True,
                         env={**os.environ, **(env or {})})
    code, *err, peak = res.stdout.decode().splitlines()
    return int(code), "".join(line + "\n" for line in err), int(peak)


def _one_query(path: Path, rows: int, lines: Callable[[int, int], bytes]) -> Path:
    """A gzipped run of ``rows`` lines of query 301, ``lines(lo, hi)`` the bytes of lines
    lo..hi - 1 (lo a multiple of 100,000, hi - lo that or what is left)."""
    deflate = zlib.compressobj(1, zlib.DEFLATED, 31)
    with open(path, "wb") as f:
        for lo in range(0, rows, 100_000):
            f.write(deflate.compress(lines(lo, min(rows, lo + 100_000))))
        f.write(deflate.flush())
    return path


def _each_line(line: Callable[[int], bytes]) -> Callable[[int, int], bytes]:
    """``lines(lo, hi)`` for :func:`_one_query` from ``line(i)``, the bytes of line i."""
    return lambda lo, hi: b"".join(line(i) for i in range(lo, hi))


@pytest.mark.slow
def test_a_query_that_never_ends_fails_at_its_first_repeat(tmp_path):
    """Issue 36's run scaled down: 4,000,000 lines of one query whose line 2 repeats line 1.
    The error names line 2 once the query is long (LONG_ROWS rows read), from a file or
    from standard input: the peak stays within about LONG_ROWS rows (a few hundred bytes
    each) of reading a 1,000-line run, where holding the query whole cost some 150 bytes a
    row (600 MB here; 7.4 GB at 45M lines)."""
    qrels = tmp_path / "qrels"
    qrels.write_text("301 0 clueweb12-0000tw-00-00007 1\n")
    doc = b"301 Q0 clueweb12-0000tw-00-%05d %d 1.5 run\n"
    period = b"".join(doc % (i, i + 1) for i in range(500))  # line i: docno i % 500
    repeat = period.replace(doc % (1, 2), doc % (0, 2), 1)  # line 2 (i = 1): docno 0 again
    run = _one_query(tmp_path / "run.gz", 4_000_000, lambda lo, hi: (
        (repeat if lo == 0 else period) + period * ((hi - lo) // 500 - 1)))
    small = _one_query(tmp_path / "small.gz", 1000, _each_line(lambda i: doc % (i, i + 1)))
    code, err, base = _peak(["eval", "-m", "map", qrels, small])
    assert code == 0, err
    message = ("2: docno 'clueweb12-0000tw-00-00000' repeated in query 301 (first at line 1); "
               "use --dedup to keep the best-scored copy\n")
    for source, stdin in ((run, b""), ("-", run.read_bytes())):
        code, err, peak = _peak(["eval", "-m", "map", qrels, source], stdin)
        assert (code, err) == (2, f"rpp: {source}:{message}")
        assert peak - base < 200 * runs.LONG_ROWS // 1024, (peak, base)


@pytest.mark.slow
def test_a_legitimate_long_query_is_held_in_compact_form(tmp_path, monkeypatch):
    """2,000,000 distinct docnos in one query: held as each docno's bytes, 9 bytes of
    score and length and 5.6-8.3 bytes of index (at most 17.4 beside its bytes), where rows
    take 10, and joined in a few arrays of 4 bytes a docno, not the join of rows' some 150
    bytes a row: the peak grows by less than 40 bytes a row beside the docnos' bytes."""
    rows = 2_000_000
    qrels = tmp_path / "qrels"
    qrels.write_text("301 0 clueweb12-0000tw-00-00007 1\n301 0 clueweb12-0001tw-20-00070 2\n")
    doc = b"301 Q0 clueweb12-%04dtw-%02d-%05d %d %d.%d run\n"
    run = _one_query(tmp_path / "run.gz", rows, _each_line(lambda i: doc % (
        i // 100_000, i // 1000 % 100, i % 1000 * 7, i + 1, (rows - i) // 3, i % 7)))
    doc_bytes = 25 * rows
    held = []
    real = join._join_long
    monkeypatch.setattr(join, "_join_long", lambda long, *a: (
        held.append((long.docs.nbytes(), len(long.docs))), real(long, *a))[1])
    res = rpp("eval", "-M", "10", "-m", "map", qrels, run)
    assert res.code == 0 and held and held[0][1] == rows, res.err
    beside = (held[0][0] - doc_bytes) / rows
    assert 9 + 5 / 0.9 <= beside <= 9 + 5 / 0.6, beside
    small = _one_query(tmp_path / "small.gz", 1000,
                       _each_line(lambda i: doc % (0, 0, i, i + 1, i, 0)))
    env = {"MALLOC_TRIM_THRESHOLD_": "0", "MALLOC_MMAP_THRESHOLD_": "65536"}  # freed: gone
    base = _peak(["eval", "-M", "10", "-m", "map", qrels, small], env=env)[2]
    code, err, peak = _peak(["eval", "-M", "10", "-m", "map", qrels, run], env=env)
    assert code == 0, err
    assert (peak - base) * 1024 - doc_bytes < 40 * rows, ((peak - base) * 1024 / rows)

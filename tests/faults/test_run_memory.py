"""What reading and joining a run keeps (memory bounded by what is kept).

read_run keeps a row as its docno's bytes, a 2-byte length and an 8-byte score, and its qid
once per stretch of rows with one qid; the window it reads through is the rest. The join
(join.py) takes a batch of whole queries at a time, from the file as it is read or from a
run held whole, so its peak grows with what is kept, not with the docnos' bytes. Each batch
lets the scores go before it is coded, so repeated docnos (--dedup) take their ties and
trec_eval order from what was computed on all rows: a differential test against computing
them on the kept rows, with their scores.
"""
from __future__ import annotations

import gzip
import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rpp_cli.core.table as table
import rpp_cli.join as join
from rpp_cli.join import _ties_and_trec_order, _without
from rpp_cli.core import column_of, rank_rows
from rpp_cli.errors import InputError
from rpp_cli.io.runs import read_run

from ..conftest import rpp

TITLES = ("Zürich", "São_Paulo", "Москва", "東京都")


def _big_run(path, queries: int, depth: int, seed: int = 7) -> tuple[int, int]:
    """A gzipped run of ``queries * depth`` lines shaped like bench's (string qids such as
    106_3, mixed docnos of 1-40 bytes with shared prefixes, scores rounded to 0.1 so that
    they tie); returns (rows, bytes of all docnos)."""
    rng = np.random.default_rng(seed)
    lines, doc_bytes = [], 0
    for q in range(queries):
        shape = rng.integers(0, 4, depth).tolist()
        ids = rng.integers(0, 10**8, depth).tolist()
        score = np.round(np.sort(rng.normal(0, 2, depth))[::-1], 1).tolist()
        for k in range(depth):
            i = ids[k]
            docno = (str(i % 997) if shape[k] == 0 else f"msmarco_passage_{i % 70:02d}_{i}"
                     if shape[k] == 1 else f"{i:040x}" if shape[k] == 2
                     else f"{TITLES[i % 4]}_{i}")
            doc_bytes += len(docno.encode())
            lines.append(f"106_{q} Q0 {docno} {k + 1} {score[k]:.1f} sys\n")
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=1) as f:
        f.write("".join(lines))
    return queries * depth, doc_bytes


@pytest.fixture(scope="module")
def big_run(tmp_path_factory):
    """A factory: big_run(queries) -> (run, qrels, rows, docno bytes): the gzipped run of
    ``queries`` x 250 rows of :func:`_big_run` and qrels judging every 50th of its rows,
    written once for the module (each is read only, by several tests and parameters)."""
    folder = tmp_path_factory.mktemp("big")
    made: dict[int, tuple] = {}

    def make(queries: int) -> tuple:
        if queries not in made:
            run, qrels = folder / f"run{queries}.gz", folder / f"qrels{queries}"
            rows, doc_bytes = _big_run(run, queries, 250)
            lines = gzip.decompress(run.read_bytes()).decode().splitlines()
            qrels.write_text("".join(f"{line.split()[0]} 0 {line.split()[2]} {i // 50 % 2}\n"
                                     for i, line in enumerate(lines) if i % 50 == 0))
            made[queries] = run, qrels, rows, doc_bytes
        return made[queries]
    return make


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_a_run_keeps_its_docno_bytes_and_ten_bytes_a_row(big_run, threads):
    """500,000 rows of 2,000 queries: kept = docno bytes + 2 (length) + 8 (score) bytes a
    row + 12 bytes a stretch of one qid (2,000 stretches) + the line table (one stretch,
    16 bytes); the reader's own peak above that is a few windows (the window, its split
    columns and the gzip chunks) and one growth step of the kept buffers (CPython grows a
    bytearray by an eighth, and a step can move it), not a multiple of the file: <= 6
    windows + kept / 8 here, whatever the ``threads`` splitting a window's pieces (measured,
    windows above kept: 5.7, 5.4 and 5.8-6.05 at 1, 2 and 3 threads; 5.2-7.1 with two and
    four times the rows, where kept / 8 is 1-2 windows). The bound was 6 windows flat, which
    3 threads reached in a clean clone's CI. The reader before kept docno bytes + 24 bytes a
    row (8-byte offset, 4-byte length, 4-byte qid code, 8-byte score)."""
    path, _, rows, doc_bytes = big_run(2000)
    tracemalloc.start()
    try:
        run = read_run(str(path), threads=threads)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(run) == rows and len(run.docno_bytes) == doc_bytes
    assert run.docno_lens.dtype == np.uint16 and run.score.dtype == np.float64
    assert len(run.qid_stretches) == len(run.stretch_starts) == 2000
    arrays = (len(run.docno_bytes) + run.docno_lens.nbytes + run.score.nbytes
              + run.qid_stretches.nbytes + run.stretch_starts.nbytes)
    assert arrays == doc_bytes + 10 * rows + 12 * 2000
    # traced beyond the arrays: the room a growing buffer keeps (CPython grows a bytearray
    # by an eighth) and the 2,000 qid strings (bytes objects of ~40 bytes, and their list)
    assert arrays <= kept <= arrays * 9 // 8 + 2000 * 64
    assert peak - kept <= 6 * table.WINDOW_BYTES + kept // 8


def test_stretches_follow_the_qids_wherever_they_repeat(tmp_path, monkeypatch):
    """A qid that comes back later starts a stretch of its own; stretches run across window
    boundaries (a window of 7 bytes cuts every line): q1 q1 | q2 | q1 q1 | q3 at rows
    0, 2, 3, 5."""
    path = tmp_path / "run"
    path.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 a 1 1 t\n"
                    "q1 Q0 c 3 1 t\nq1 Q0 d 4 0 t\nq3 Q0 a 1 1 t\n")
    for window in (7, 13, table.WINDOW_BYTES):
        monkeypatch.setattr(table, "WINDOW_BYTES", window)
        run = read_run(str(path))
        assert run.qid_values == [b"q1", b"q2", b"q3"]
        assert run.qid_stretches.tolist() == [0, 1, 0, 2]
        assert run.stretch_starts.tolist() == [0, 2, 3, 5]
        assert run.qid_codes.tolist() == [0, 0, 1, 0, 0, 2]
        assert run.per_row(np.array([10, 20, 30])).tolist() == [10, 10, 20, 10, 10, 30]
        assert bytes(run.docno_bytes) == b"abacda"
        line_of = run.docno_line()  # offsets 0..5: one byte a docno, lines 1..6
        assert [line_of(offset) for offset in range(6)] == [1, 2, 3, 4, 5, 6]


def _join_peak(big_run, queries: int, threads: int) -> tuple[int, int, int]:
    """(traced peak, kept, docno bytes of the file) of encoding one gzipped run of
    ``queries`` x 250 rows (--dedup: its docnos repeat) against qrels judging every 50th
    row."""
    from rpp_cli.collection import encode
    from rpp_cli.io.qrels import read_qrels
    from rpp_cli.settings import Options

    run, qrels, _, doc_bytes = big_run(queries)
    judged = read_qrels(str(qrels))
    tracemalloc.start()
    try:
        coll = encode(judged, [str(run)], Options(dedup=True, jobs=threads))
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(coll.runs[0].doc) > 0
    return peak, kept, doc_bytes


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_joining_a_run_holds_a_batch_of_docnos_not_the_file(big_run, monkeypatch, threads):
    """A run is joined a batch of whole queries at a time (BATCH_ROWS rows, here 16,384,
    through windows of 256 KiB), and its unjudged docnos are coded fresh (one run): four
    times the rows (400,000 more, 8.8 MB more docno bytes) raise the peak by what is kept
    (about 10 bytes a row: code, tie flag, query, fresh code's query; twice, while the
    batches are laid out by query) and not by the docnos' bytes, which the reader before
    held whole (docno bytes + 10 bytes a row)."""
    import rpp_cli.io.runs as runs

    monkeypatch.setattr(runs, "BATCH_ROWS", 1 << 14)
    monkeypatch.setattr(table, "WINDOW_BYTES", 1 << 18)
    peak_a, kept_a, bytes_a = _join_peak(big_run, 400, threads)
    peak_b, kept_b, bytes_b = _join_peak(big_run, 2000, threads)
    assert kept_b - kept_a <= 14 * 400_000  # 10.4 bytes a row measured
    growth = (peak_b - 2 * kept_b) - (peak_a - 2 * kept_a)
    assert growth < (bytes_b - bytes_a) // 4, (growth, bytes_b - bytes_a)


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
def test_a_run_held_whole_is_joined_a_batch_at_a_time(big_run, monkeypatch, threads):
    """A run that cannot be read twice (standard input, here a file taken as one) is held
    whole, its docnos' bytes and 10 bytes a row, and joined 16,384 rows of whole queries at
    a time: four times the rows raise the traced peak by what is held and kept, not by the
    join's own arrays of the whole file (about 100 bytes a row, measured with one batch)."""
    import rpp_cli.io.runs as runs
    import rpp_cli.join as join

    monkeypatch.setattr(join, "_rereadable", lambda path: False)
    monkeypatch.setattr(runs, "BATCH_ROWS", 1 << 14)
    monkeypatch.setattr(table, "WINDOW_BYTES", 1 << 18)
    peak_a, kept_a, bytes_a = _join_peak(big_run, 400, threads)
    peak_b, kept_b, bytes_b = _join_peak(big_run, 2000, threads)
    held = (bytes_b - bytes_a) + 10 * 400_000  # the file's rows, held while it is joined
    growth = (peak_b - 2 * kept_b) - (peak_a - 2 * kept_a)
    assert growth < held + 10 * 400_000, (growth, held)


# Scores that tie as C floats but not as doubles (trec_eval's order differs there), ties
# as doubles, and docnos with shared prefixes of 1-12 bytes.
SCORES = (1.0, 1.0 + 2**-30, 1.0 + 2**-29, 0.5, 0.5 + 2**-31, 0.25, -3.0)
DOCNOS = ("d", "d1", "d10", "d2", "doc", "doc-é", "x" * 12, "7", "70", "07")


def _rows(rows: list) -> tuple:
    """(docno, query, score, order) of rows (query, score, docno, ...) in file order."""
    query = np.array([r[0] for r in rows], dtype=np.int64)
    score = np.array([r[1] for r in rows])
    docno = column_of([r[2].encode() for r in rows])
    return docno, query, score, rank_rows(docno, query, score, 4)


def _reference(docno, query, score, order) -> tuple[list[bool], list[int]]:
    """Ties and trec_eval's order of the ranked rows, literally: the ranked copies, a tie
    where the row above has the same query and score, and the ranked rows ranked again by
    their scores as C floats (the identity when no two differing scores become equal)."""
    q, s, d = query[order], score[order], docno.take(order)
    tied = [False] + [bool(q[i] == q[i - 1] and s[i] == s[i - 1]) for i in range(1, len(q))]
    single = s.astype(np.float32).astype(np.float64)
    return tied, rank_rows(d, q, single, 4).tolist()


def _normal(trec: np.ndarray | None, n: int) -> list[int]:
    """An order as a list, None being the identity."""
    return list(range(n)) if trec is None else trec.tolist()


ROWS = st.lists(st.tuples(st.integers(0, 3), st.sampled_from(SCORES), st.sampled_from(DOCNOS),
                          st.booleans()), min_size=1, max_size=60)


@settings(max_examples=200, deadline=None)
@given(ROWS, st.sampled_from([1, 2, 3, 7, 1 << 20]))
def test_ties_and_trec_order_walk_the_ranking_by_chunks(rows, chunk):
    """_ties_and_trec_order, at any chunk size, gives the ties and the C-float order the
    ranked copies give. Rows that repeat a (query, docno) are left out here: only a repeat
    can tie on every key, and repeats are dropped (or refused) before the order is used."""
    seen = set()
    rows = [r for r in rows if (r[0], r[2]) not in seen and not seen.add((r[0], r[2]))]
    docno, query, score, order = _rows(rows)
    old = join.TIE_CHUNK
    join.TIE_CHUNK = chunk
    try:
        tied, trec = _ties_and_trec_order(docno, query, score, order, 4)
    finally:
        join.TIE_CHUNK = old
    want_tied, want_trec = _reference(docno, query, score, order)
    assert tied.tolist() == want_tied
    assert _normal(trec, len(rows)) == want_trec


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(ROWS)
def test_order_and_ties_of_the_kept_rows_without_their_scores(rows):
    """_without(kept, trec, tied) on all ranked rows equals the ties and C-float order of the
    kept rows computed with their scores; a row whose (query, docno) came before in ranking
    order is never kept (as --dedup keeps the first), and the first is always kept."""
    docno, query, score, order = _rows(rows)
    tied, trec = _ties_and_trec_order(docno, query, score, order, 4)
    keys = [(int(query[i]), docno.bytes(i)) for i in order.tolist()]
    first = np.array([keys.index(k) == i for i, k in enumerate(keys)])
    kept = first & np.array([rows[i][3] for i in order.tolist()])
    kept[0] = True
    trec, tied = _without(kept, trec, tied)
    file_rows = np.sort(order[kept])  # the kept rows, in file order
    sub_docno, sub_query, sub_score = docno.take(file_rows), query[file_rows], score[file_rows]
    want_tied, want_trec = _reference(sub_docno, sub_query, sub_score,
                                      rank_rows(sub_docno, sub_query, sub_score, 4))
    assert tied.tolist() == want_tied
    assert _normal(trec, int(kept.sum())) == want_trec


def test_codes_are_kept_as_int32_while_they_fit():
    """A run keeps one dictionary code a row: int32 up to 2^31 - 1 (the same values), int64
    beyond (never wrapped)."""
    from rpp_cli.join import _narrow

    small = _narrow(np.array([0, 5, (1 << 31) - 1], dtype=np.int64))
    assert small.dtype == np.int32 and small.tolist() == [0, 5, (1 << 31) - 1]
    big = _narrow(np.array([0, 1 << 31], dtype=np.int64))
    assert big.dtype == np.int64 and big.tolist() == [0, 1 << 31]


@pytest.mark.slow
def test_a_freed_dictionary_goes_back_to_the_system():
    """encode frees its dictionary and trims the C heap: a dictionary of 500,000 (key,
    docno) entries in 5,000 tables (a few KiB each, below malloc's mmap threshold) stays
    resident once freed while small blocks between them live, until release_free_memory
    gives most of it back (glibc; elsewhere the call does nothing). In a child process, so
    that this one's heap does not blur it."""
    import platform
    import subprocess
    import sys

    script = """
import numpy as np
from rpp_cli.core import Dictionary, column_of
from rpp_cli.memory import _glibc, release_free_memory
def rss():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
start = rss()
d = Dictionary(5000)
pins = []  # small blocks between the tables, alive, as encode's other allocations are
for part in range(50):
    keys = np.repeat(np.arange(part * 100, part * 100 + 100), 100)
    d.add(column_of([b"msmarco_passage_%02d_%08d" % (k % 70, k) for k in range(10000)]), keys)
    pins.append(bytes(2000 + part))
grown = rss()
del d
freed = rss()
release_free_memory()
print(grown - start, freed - start, rss() - start, _glibc("malloc_trim") is not None)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         check=True).stdout.split()
    grown, freed, trimmed = map(int, out[:3])
    assert grown > 20 << 20  # ~24 B of bytes + ~40 B of table a docno
    if platform.libc_ver()[0] == "glibc":
        assert out[3] == "True"
        assert freed > grown // 2  # freed, yet resident: what the trim is for
        assert trimmed < grown // 4
    else:
        assert out[3] == "False" and trimmed <= grown


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(60))
def test_dedup_prints_what_the_file_without_its_repeats_prints(tmp_path, seed):
    """--dedup keeps the best-scored copy of a repeated docno (the earlier line among equal
    scores), and the ties and trec_eval's C-float order of the rows left come from all rows
    (their scores are let go before coding): a realistic collection (coarse, constant and
    float32-tied scores) with copies added after the originals, at a lower score, the same
    score, or a score equal to it as a C float, prints with --dedup exactly what the
    collection without the copies prints."""
    import random
    from dataclasses import replace

    from ..conftest import rpp
    from ..realistic import generate, write_collection

    coll = generate(seed)
    rng = random.Random(seed)
    runs = []
    for run in coll.runs:
        copied = {}
        for q, docs in run.items():
            docs = list(docs)
            for d, s in rng.sample(docs, rng.randint(0, len(docs))):
                lower = rng.choice([s, s - 1e-9, s - 0.5, s - 7])
                at = rng.randint(docs.index((d, s)) + 1, len(docs))
                docs.insert(at, (d, lower))
            copied[q] = docs
        runs.append(copied)
    assert runs != coll.runs  # some copies were added
    qrels, clean = write_collection(coll, tmp_path / "clean", "plain")
    _, repeated = write_collection(replace(coll, runs=runs), tmp_path / "repeated", "plain")
    for args in (["-q", "--precision", "10"], ["-q", "-M", "2", "-m", "map", "-m", "P.1"],
                 ["-q", "-m", "rpp", "-m", "ndcg_cut.5", "-m", "RR@10", "-m", "ERR@20", "-m",
                  "Judged@10", "-m", "rbp", "-m", "oi"]):
        want = rpp("eval", *args, qrels, *clean)
        got = rpp("eval", "--dedup", *args, qrels, *repeated)
        assert want.code == got.code == 0, got.err
        assert got.out == want.out, (seed, args)


@pytest.mark.parametrize("threads", [1, 3])
def test_a_line_longer_than_the_limit_is_refused_before_it_is_held(tmp_path, threads):
    """A 40 MiB line of blanks (40 KB gzipped) was held whole, twice over, before its error
    (a 1 GB one, 1 MB gzipped: 2 GB): the reader now refuses a line once it passes
    MAX_LINE_BYTES without a line end, holding a window or two, and names it as the whole
    file would (standard input is held whole and gives the same line)."""
    data = b"q1 Q0 d1 1 2 t\nq1 Q0 d2 2 1 t\n" + b" \t" * (20 << 20) + b"\nq1 Q0 d3 3 0 t\n"
    path = tmp_path / "run.gz"
    path.write_bytes(gzip.compress(data, compresslevel=1, mtime=0))
    tracemalloc.start()
    try:
        with pytest.raises(InputError) as err:
            read_run(str(path), threads=threads)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(err.value) == f"{path}:3: line longer than 1,048,576 bytes (a field holds " \
                             "at most 4,096)"
    assert peak <= 4 * table.WINDOW_BYTES, peak
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 d1 1\n")
    res = rpp("eval", "-m", "map", qrels, "-", stdin=data)
    assert (res.code, res.err) == (2, "rpp: -:3: line longer than 1,048,576 bytes (a field "
                                      "holds at most 4,096)\n")

"""A run is joined a batch of whole queries at a time (rpp_cli/join.py, io/runs.py RunStream):
the batch size, the file's order of queries and whether it can be read twice must change no
byte of any output or error.

Batches of 1, 2 and 7 rows (as many batches as queries, and queries cut across windows) are
compared with one batch of the whole file (the reader of standard input and pipes), on
realistic collections; files whose queries come back after being handed on (those
queries read again and joined once more); repeats and bad lines in either order; and the
corpus size of one run (unjudged docnos coded fresh, not in the shared dictionary) against a
literal count of distinct docno bytes.
"""
from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

import rpp_cli.collection as collection
import rpp_cli.core.table as table
import rpp_cli.io.runs as runs
import rpp_cli.join as join
from rpp_cli.collection import encode
from rpp_cli.io.qrels import read_qrels, to_text
from rpp_cli.io.held import Pending
from rpp_cli.io.runs import RunStream
from rpp_cli.settings import Options

from .conftest import rpp
from .realistic import generate, write_collection

BATCHES = (1, 2, 7)


def _commands(qrels: Path, paths: list[Path]) -> list[list]:
    """Every way a run's rows are used: per-query values and ties, --dedup, -M, one run alone
    (its corpus size from fresh codes: asl, sl), preferences, interleaving."""
    return [
        ["eval", "-q", "--precision", "10", qrels, *paths],
        ["eval", "-q", "-M", "3", "--dedup", qrels, *paths],
        ["eval", "-q", "-m", "asl", "-m", "map", "-m", "ndcg_cut.5", "-m", "RR@10",
         "-m", "rbp", qrels, paths[0]],
        ["eval", "-q", "-M", "2", "-m", "asl", "-m", "P.2", qrels, paths[1]],
        ["eval", "-q", "-m", "rpp", "-m", "oi", "-m", "tdi", "-m", "invrpp", qrels, *paths],
    ]


def _outputs(monkeypatch, commands: list[list], batch: int | None, whole: int = 0,
             jobs: int | None = None) -> list[tuple]:
    """The outcomes at a batch size, through windows of 64 bytes (a line or two: a batch
    can close after any of them); None: the whole file read at once (not eager), joined
    ``whole`` rows of whole queries at a time (0: at once). ``jobs``: ``-j`` (a run read
    alone then cuts each batch in pieces joined side by side)."""
    if jobs is not None:
        commands = [[c[0], "-j", str(jobs), *c[1:]] for c in commands]
    if batch is None:
        monkeypatch.setattr(join, "_rereadable", lambda path: False)
        monkeypatch.setattr(runs, "BATCH_ROWS", whole or 1 << 40)
    else:
        monkeypatch.setattr(join, "_rereadable", lambda path: True)
        monkeypatch.setattr(runs, "BATCH_ROWS", batch)
        monkeypatch.setattr(table, "WINDOW_BYTES", 64)
    return [(r.code, r.out, r.err) for r in (rpp(*c) for c in commands)]


@pytest.mark.slow
@pytest.mark.parametrize("seed,style", [(2, "plain"), (5, "ugly"), (11, "mixed"), (23, "ugly")])
def test_every_batch_size_prints_what_the_whole_file_prints(tmp_path, monkeypatch, seed, style):
    qrels, paths = write_collection(generate(seed), tmp_path, style)
    commands = _commands(qrels, paths)
    want = _outputs(monkeypatch, commands, None)
    assert [code for code, _, _ in want] == [0] * len(commands), want
    for batch in BATCHES:
        got = _outputs(monkeypatch, commands, batch)
        for command, g, w in zip(commands, got, want):
            assert g == w, f"seed {seed} {style}, batch {batch}: {command[:4]} differs"
    for whole in BATCHES:  # read whole (stdin), joined a few queries at a time
        got = _outputs(monkeypatch, commands, None, whole)
        for command, g, w in zip(commands, got, want):
            assert g == w, f"seed {seed} {style}, whole file by {whole}: {command[:4]} differs"
    pooled = []  # the pieces' pool ran (one run read alone has 5 threads to itself)
    real_pool = join.pipelined
    monkeypatch.setattr(join, "pipelined", lambda *a: pooled.append(1) or real_pool(*a))
    for batch in (*BATCHES, 40):  # pieces of a batch joined side by side
        got = _outputs(monkeypatch, commands, batch, jobs=5)
        for command, g, w in zip(commands, got, want):
            assert g == w, f"seed {seed} {style}, batch {batch} -j 5: {command[:4]} differs"
    assert pooled


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().splitlines(keepends=True)


def _spy_streams(monkeypatch) -> list[RunStream]:
    """Keep every RunStream the join makes."""
    made: list[RunStream] = []

    class Spy(RunStream):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)
    monkeypatch.setattr(join, "RunStream", Spy)
    return made


@pytest.mark.slow
@pytest.mark.parametrize("seed", [3, 8, 14])
def test_a_query_that_comes_back_is_joined_again(tmp_path, monkeypatch, seed):
    """The same lines in another order (shuffled, or one query's first line moved to the
    end) print what the grouped file prints: an eager reading hands a query on and meets it
    again, drops it, and its rows are read again, alone, and joined once more."""
    coll = generate(seed)
    qrels, paths = write_collection(coll, tmp_path / "grouped", "plain")
    commands = _commands(qrels, paths)
    want = _outputs(monkeypatch, commands, None)
    rng = random.Random(seed)
    grouped = {path: _lines(path) for path in paths}
    for how in ("shuffled", "a line moved to the end"):
        for path in paths:
            lines = list(grouped[path])
            if how == "shuffled":
                rng.shuffle(lines)
            else:  # the first line of a query with more than one: behind every other query
                qid = [line.split()[0] for line in lines]
                k = next(i for i in range(len(lines) - 1) if qid[i] == qid[i + 1])
                lines.append(lines.pop(k))
            path.write_bytes(b"".join(lines))
        made = _spy_streams(monkeypatch)
        got = _outputs(monkeypatch, commands, 1)
        assert got == want, how
        eager = [s for s in made if s.eager]
        assert eager and any(s.broken_qids() for s in eager), how
        assert len(made) == len(eager) + sum(bool(s.broken_qids()) for s in eager), how
        monkeypatch.undo()


def _tiny(tmp_path: Path, run_text: str) -> tuple[Path, Path]:
    qrels = tmp_path / "qrels"
    qrels.write_text("q1 0 a 1\nq2 0 b 1\nq3 0 c 1\nq4 0 d 2\n")
    run = tmp_path / "run"
    run.write_text(run_text)
    return qrels, run


GROUPED = ("q1 Q0 a 1 3 t\nq1 Q0 x 2 2 t\n"
           "q2 Q0 b 1 3 t\nq2 Q0 b 2 2 t\n"  # line 4 repeats line 3
           "q3 Q0 c 1 3 t\nq3 Q0 y 2 1 t\n")


@pytest.mark.parametrize("jobs", [None, 5])
@pytest.mark.parametrize("batch,whole", [(None, 0), (None, 1), (None, 2)]
                         + [(batch, 0) for batch in BATCHES])
def test_errors_keep_their_order_whatever_the_batches(tmp_path, monkeypatch, batch, whole,
                                                      jobs):
    """The first bad line of the file is the error, whatever its kind: a repeat found in an
    early batch comes before a malformed line after it (the reading stops there), and a bad
    line (the tokenizer's) or a bad score before a repeat comes first; a repeat in a query
    that comes back is found across its stretches."""
    bad_first = GROUPED.replace("q1 Q0 x 2 2 t", "q1 Q0 x 2")
    bad_score_first = GROUPED.replace("q1 Q0 x 2 2 t", "q1 Q0 x 2 high t")
    cases = [
        (GROUPED, "run:4: docno 'b' repeated in query q2 (first at line 3)"),
        (GROUPED + "q4 Q0 d 1\n", "run:4: docno 'b' repeated in query q2 (first at line 3)"),
        (GROUPED + "q4 Q0 d 1 high t\n", "run:4: docno 'b' repeated in query q2"),
        (bad_first, "run:2: expected 5 or 6 fields"),
        (bad_score_first, "run:2: score 'high' is not a finite number"),
        ("q2 Q0 b 1 3 t\nq1 Q0 a 1 3 t\nq3 Q0 c 1 3 t\nq2 Q0 b 2 2 t\nq1 Q0 a 9 1 t\n",
         "run:4: docno 'b' repeated in query q2 (first at line 1)"),
        ("q2 Q0 b 1 3 t\nq1 Q0 a 1 3 t\nq3 Q0 c 1 3 t\nq2 Q0 b 2 2 t\nq1 Q0 a 9 t\n",
         "run:4: docno 'b' repeated in query q2 (first at line 1)"),
    ]
    for text, error in cases:
        qrels, run = _tiny(tmp_path, text)
        res = _outputs(monkeypatch, [["eval", "-m", "map", qrels, run]], batch, whole,
                       jobs)[0]
        assert res[0] == 2 and res[1] == "", (text, res)
        assert res[2].startswith(f"rpp: {tmp_path}/") and error in res[2], (text, res)
        assert res[2].count("\n") == 1
        monkeypatch.undo()


def test_a_stream_hands_on_closed_queries_only():
    """Pending.closed: the longest prefix of stretches whose queries have no stretch after
    it, without the file's last (open) qid."""
    def pending(qids: list[int], open_qid: int) -> Pending:
        p = Pending(False)
        p.qid.append(np.array(qids, dtype=np.int32))
        p.start.append(np.arange(len(qids), dtype=np.int64))  # a row a stretch
        p.row.append(np.arange(len(qids), dtype=np.int64) * 10)
        p.score.append(np.zeros(len(qids)))
        p.docno.lens.append(np.ones(len(qids), dtype=np.uint16))
        p.docno.data.append(np.frombuffer(bytes(range(97, 97 + len(qids))), dtype=np.uint8))
        p.n, p.open = len(qids), open_qid
        return p

    p = pending([1, 2, 1, 3], 3)
    batch = p.closed()
    assert batch.qid_stretches.tolist() == [1, 2, 1] and bytes(batch.docno_bytes) == b"abc"
    assert batch.first_rows.tolist() == [0, 10, 20]
    assert p.qid.array().tolist() == [3] and p.start.array().tolist() == [0]
    assert bytes(p.docno.data.buffer) == b"d" and p.row.array().tolist() == [30]
    assert pending([1, 2, 3, 1], 1).closed() is None  # q1 spans everything and is open
    assert pending([1, 2, 3, 1], 4).closed().qid_stretches.tolist() == [1, 2, 3, 1]
    assert pending([1, 2, 2, 3], 3).closed().qid_stretches.tolist() == [1, 2, 2]


def test_a_query_met_again_after_its_batch_is_broken(tmp_path, monkeypatch):
    """An eager stream that meets a query it handed on calls it broken and drops the rest of
    its rows (q1 and q2 are handed on with their first rows, then come back; q3-q5 are
    whole); without ``eager`` the file is one batch and nothing is broken."""
    monkeypatch.setattr(runs, "BATCH_ROWS", 1)
    monkeypatch.setattr(table, "WINDOW_BYTES", 8)
    path = tmp_path / "run"
    path.write_text("q1 Q0 a 1 3\nq2 Q0 b 1 3\nq3 Q0 c 1 3\nq1 Q0 d 2 1\nq4 Q0 e 1 1\n"
                    "q2 Q0 f 2 1\nq5 Q0 g 1 1\n")
    stream = RunStream(str(path), eager=True)
    batches = list(stream)
    assert stream.broken_qids() == frozenset({b"q1", b"q2"})
    docnos = sorted(bytes(b.docno_bytes) for b in batches)
    assert b"".join(docnos) == b"abceg" and len(batches) > 1
    whole = RunStream(str(path))
    assert [len(b) for b in whole] == [7] and not whole.broken_qids()


def test_a_file_changed_between_its_readings_is_an_error(tmp_path, monkeypatch):
    """A run read twice (a query broken) that changed in between is refused, never joined
    from two versions."""
    monkeypatch.setattr(runs, "BATCH_ROWS", 1)
    monkeypatch.setattr(table, "WINDOW_BYTES", 8)
    qrels, run = _tiny(tmp_path, "q1 Q0 a 1 3 t\nq2 Q0 b 1 3 t\nq1 Q0 c 2 1 t\n")
    real = RunStream.__iter__

    def touch_after(self):
        yield from real(self)
        if self.eager:
            run.write_text("q1 Q0 a 1 3 t\nq2 Q0 b 1 3 t\nq1 Q0 xy 2 1 t\n")  # longer
    monkeypatch.setattr(RunStream, "__iter__", touch_after)
    res = rpp("eval", "-m", "map", qrels, run)
    assert (res.code, res.out) == (2, "")
    assert res.err == (f"rpp: {run}: changed while it was read (read twice: some queries' "
                       "rows are in more than one place)\n")


def _literal_corpus_sizes(coll, qids: list[str], runs_used: list[int], max_docs: int | None
                          ) -> list[int]:
    """Distinct docno bytes per query over the runs' rankings (top ``max_docs``, repeats
    counted once) and the query's relevant docnos (grade > 0)."""
    sizes = []
    for q in qids:
        seen = {d.encode() for d, g in coll.qrels.get(q, {}).items() if g > 0}
        for r in runs_used:
            ranked = coll.runs[r].get(q, [])
            docs = [d for d, _ in sorted(ranked, key=lambda ds: (-ds[1], _desc(ds[0])))]
            seen.update(d.encode() for d in docs[:max_docs])
        sizes.append(len(seen))
    return sizes


def _desc(docno: str) -> bytes:
    """A key that sorts docnos by descending bytes (trec_eval's tie order)."""
    return bytes(255 - b for b in docno.encode()) + b"\xff"


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(30, 42))
@pytest.mark.parametrize("max_docs", (None, 2))
def test_corpus_size_counts_distinct_docno_bytes(tmp_path, monkeypatch, seed, max_docs):
    """n of each query (contract §2) from one run (fresh codes for its unjudged docnos, in
    batches of 1 and 7 rows and whole) and from all runs (one shared dictionary) equals a
    literal count of distinct docno bytes, counted 1, 5 or COUNT_CHUNK codes at once."""
    coll = generate(seed)
    qrels_path, paths = write_collection(coll, tmp_path, "mixed")
    qrels = read_qrels(str(qrels_path))
    for batch, count in ((1, 1), (7, 5), (1 << 18, collection.COUNT_CHUNK)):
        monkeypatch.setattr(runs, "BATCH_ROWS", batch)
        monkeypatch.setattr(table, "WINDOW_BYTES", 64 if batch < 10 else table.WINDOW_BYTES)
        monkeypatch.setattr(collection, "COUNT_CHUNK", count)
        for used in ([0], [1], list(range(len(paths)))):
            got = encode(qrels, [str(paths[r]) for r in used], Options(max_docs=max_docs, jobs=2))
            assert got.corpus_size.tolist() == _literal_corpus_sizes(coll, got.qids, used,
                                                                     max_docs), (batch, used)


@pytest.mark.parametrize("seed,style", [(4, "mixed"), (17, "ugly"), (29, "plain")])
def test_runs_joined_without_a_shared_dictionary_print_the_same(tmp_path, seed, style):
    """Measures that never compare unjudged docnos across runs (trec_eval's, ir_measures',
    RBP) let each run code its unjudged docnos fresh (no shared dictionary, no corpus size):
    their lines are those printed beside a measure that needs the shared codes (rpp, oi)."""
    qrels, paths = write_collection(generate(seed), tmp_path, style)
    per_run = ["-m", "map", "-m", "P.5", "-m", "RR@10", "-m", "rbp", "-m", "Judged@10"]
    alone = rpp("eval", "-q", "--dedup", "-M", "4", *per_run, qrels, *paths)
    beside = rpp("eval", "-q", "--dedup", "-M", "4", *per_run, "-m", "rpp", "-m", "oi", qrels,
                 *paths)
    assert alone.code == beside.code == 0 and alone.err == beside.err, alone.err
    kept = [line for line in beside.out.splitlines(keepends=True)
            if line.split("\t")[0].strip() not in {"rpp", "rpp_win", "oi", "oi_win"}]
    assert alone.out == "".join(kept) and len(kept) > 5 * len(paths)


def test_a_collection_without_shared_codes_has_no_corpus_size(tmp_path):
    """Several runs encoded without ``across_runs`` leave the corpus size out (None), never
    a sum of the runs' own counts; one run still has its own."""
    coll = generate(6)
    qrels_path, paths = write_collection(coll, tmp_path, "plain")
    qrels = read_qrels(str(qrels_path))
    several = encode(qrels, [str(p) for p in paths], across_runs=False)
    assert several.corpus_size is None
    one = encode(qrels, [str(paths[0])], across_runs=False)
    assert one.corpus_size.tolist() == _literal_corpus_sizes(coll, one.qids, [0], None)


def test_bytes_held_in_memory_are_joined_whole(tmp_path, monkeypatch):
    """A run whose bytes are held in memory (the API's, or a file looked at before its turn)
    is never read twice, even when a file of that name exists: its second reading would
    read the file, not those bytes."""
    from rpp_cli.core.table import remember

    path = tmp_path / "run"
    path.write_text("q1 Q0 on-disk 1 1\n")
    remember(str(path), b"q1 Q0 a 1 3\nq2 Q0 b 1 3\nq1 Q0 c 2 1\n")
    assert not join._rereadable(str(path))
    batches = list(RunStream(str(path)))  # its one reader takes the bytes
    assert [bytes(b.docno_bytes) for b in batches] == [b"abc"]
    assert join._rereadable(str(path))  # the next reading reads the file


def test_a_runs_query_bounds_are_found_once():
    """RunRows.bounds: each query's rows (queries without rows included, before, between and
    after), found once and shared read-only by the reading thread and the trec_eval step."""
    from rpp_cli.join import RunRows

    qidx = np.array([1, 1, 1, 3, 4, 4], dtype=np.int32)
    rows = RunRows(qidx, np.arange(6), None)
    bounds = rows.bounds(6)
    assert bounds.tolist() == [0, 0, 3, 3, 4, 6, 6]
    assert rows.bounds(6) is bounds and not bounds.flags.writeable
    assert rows.bounds(4).tolist() == [0, 0, 3, 3, 4]  # another query count: found again


def test_a_runs_qids_are_placed_as_the_qrels_place_them():
    """join.QueryPlaces: each qid's bytes get the place the qrels give its text (-1: a qid
    the qrels lack), as a lookup of each qid's text would give it, for qids that share
    prefixes, UTF-8 ones, bytes that are not UTF-8, '|', '%' and the empty list."""
    known = [b"106_1", b"106", b"106_10", "q-\u03b1".encode(), b"caf\xe9", b"50%|x",
             b"\xe6\x9d\xb1\xe4\xba\xac", b"007", b"7"]
    qids = [to_text(q) for q in sorted(known)]
    asked = [b"7", b"106_1", b"106_", b"caf\xc3\xa9", b"caf\xe9", b"50%|x", b"07", b"106_10",
             "q-\u03b1".encode(), b"\xe6\x9d\xb1", b"007", b"106"]
    want = [qids.index(to_text(q)) if to_text(q) in qids else -1 for q in asked]
    assert sum(w >= 0 for w in want) == 8 and -1 in want
    places = join.QueryPlaces(qids)
    assert places.qids is qids and places(asked).tolist() == want
    assert places([]).tolist() == []
    assert join.QueryPlaces([])([b"1"]).tolist() == [-1]

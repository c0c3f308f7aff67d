"""What reading heavy qrels costs (io/qrels.py, io/judged.py): a judgment is its docno's
bytes, a 2-byte length and an 8-byte grade, its qid once per query; the file is read a
window at a time, never whole. Reading qrels costs what reading the same lines as a run
costs, and the command on heavy qrels stays within a budget per judgment (the reader before
held the file, its columns and an exact dictionary of every line: 270 bytes a judgment).

Measured on qrels shaped like a judged track (about 1M lines: string qids such as 1001_3,
90 judged docnos a query of mixed shapes and lengths, grades 0-3, mostly 0 and 1, some pairs
judged twice), by tracemalloc in this process and by the kernel's peak RSS of a process of
its own (the CLI's allocator settings, as rpp runs).
"""
from __future__ import annotations

import subprocess
import sys
import tracemalloc

import numpy as np
import pytest

from rpp_cli.collection import encode
from rpp_cli.io.qrels import read_qrels
from rpp_cli.io.runs import read_run

# memory measured on 990,000 judgments, in fresh processes: the full suite's, not the edit
# loop's
pytestmark = pytest.mark.slow

TITLES = ("Zürich", "São_Paulo", "Москва", "東京都")


def heavy_qrels(directory, queries: int = 11_000, per_query: int = 90, seed: int = 5):
    """Qrels of ``queries`` x ``per_query`` lines (a pair judged again every 97th query),
    the same (qid, docno) lines as a run, the qrels' first line of each query alone, and a
    run of one query's 100 rows; their paths."""
    rng = np.random.default_rng(seed)
    qrels, run, thin, small = [], [], [], []
    for q in range(queries):
        qid = f"{1000 + q // 8}_{q % 8}"
        shape = rng.integers(0, 4, per_query).tolist()
        ids = rng.integers(0, 10**8, per_query).tolist()
        grade = rng.choice(4, per_query, p=(0.55, 0.3, 0.1, 0.05)).tolist()
        docs = [str(i % 99_991) + str(k) if s == 0 else f"msmarco_passage_{i % 70:02d}_{i}{k}"
                if s == 1 else f"{i:032x}{k:08d}" if s == 2 else f"{TITLES[i % 4]}_{k}"
                for k, (s, i) in enumerate(zip(shape, ids))]
        lines = [f"{qid} 0 {d} {g}\n" for d, g in zip(docs, grade)]
        if q % 97 == 0:
            lines.append(f"{qid} 0 {docs[0]} 3\n")
        qrels += lines
        run += [f"{qid} Q0 {d} {k + 1} {-k} sys\n" for k, d in enumerate(docs)]
        thin.append(lines[0])
        if q == 3:
            small = [f"{qid} Q0 {d} {k + 1} {100 - k} sys\n"
                     for k, d in enumerate(docs + [f"x{k}" for k in range(10)])]
    paths = []
    for name, lines in [("qrels", qrels), ("run", run), ("thin", thin), ("small", small)]:
        path = directory / name
        path.write_text("".join(lines))
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def heavy(tmp_path_factory):
    return heavy_qrels(tmp_path_factory.mktemp("heavy"))


def _traced(read, path) -> tuple[object, int, int]:
    """What ``read(path)`` returns, and the bytes it keeps and its peak (tracemalloc)."""
    tracemalloc.start()
    try:
        got = read(path)
        kept, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return got, kept, peak


def test_a_judgment_keeps_its_docno_bytes_and_ten_bytes(heavy):
    """Kept: docno bytes + 2 (length) + 8 (grade) bytes a judgment + 8 a query (its bounds),
    and the qids' text; the peak above that is a few windows and one growth step of the kept
    buffers, and no more than reading the same lines as a run peaks at."""
    qrels_path, run_path, _, _ = heavy
    qrels, kept, peak = _traced(read_qrels, qrels_path)
    judgments = len(qrels.grade)
    assert judgments == 11_000 * 90 and qrels.repeated == len(range(0, 11_000, 97))
    arrays = len(qrels.docno_bytes) + qrels.docno_lens.nbytes + qrels.grade.nbytes + \
        qrels.qid_bounds.nbytes
    assert arrays == len(qrels.docno_bytes) + 10 * judgments + 8 * (11_000 + 1)
    assert kept <= arrays * 9 / 8 + 2_000_000  # a growth step (an eighth), the qid texts
    assert peak <= kept + 6 * (4 << 20) + kept / 8
    _, _, run_peak = _traced(read_run, run_path)
    assert peak <= run_peak


READ = """import sys
from rpp_cli import memory
memory.tune()
from rpp_cli.io.qrels import read_qrels
from rpp_cli.io.runs import read_run
(read_qrels if sys.argv[1] == "qrels" else read_run)(sys.argv[2])
"""
# A child's peak RSS starts at the high-water mark of the process that forked it (this one,
# which holds the test's data): a small process of its own starts the measured one, and
# reports the largest of its children's.
LAUNCH = """import resource, subprocess, sys
subprocess.run(sys.argv[1:], check=True, capture_output=True)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)
"""


def _peak_rss(*command: str) -> int:
    """The peak RSS of ``command``'s largest process."""
    done = subprocess.run([sys.executable, "-c", LAUNCH, *command], capture_output=True,
                          text=True, check=True)
    return int(done.stdout)


def test_reading_qrels_peaks_no_higher_than_reading_the_same_lines_as_a_run(heavy):
    """The kernel's peak RSS of reading the qrels, with the allocator as the CLI sets it
    (freed blocks kept), is about that of reading their lines as a run: 106-124 MB and
    113-117 MB measured, as the heap's layout falls (where a growing buffer lies decides
    whether it grows in place), within a fifth of each other; the reader before peaked at
    326 MB on these 990,000 judgments."""
    qrels_path, run_path, _, _ = heavy
    qrels = _peak_rss(sys.executable, "-c", READ, "qrels", qrels_path)
    assert qrels <= _peak_rss(sys.executable, "-c", READ, "run", run_path) * 1.2


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_evaluating_against_heavy_qrels_costs_under_105_bytes_a_judgment(heavy, jobs):
    """``rpp eval -m map`` of a run of one query against the 990,000 judgments, beside the
    same against one judgment a query: under 105 bytes a judgment more at the peak, all
    told (the qrels until their items are made, the collection's judged and relevant items,
    pytrec_eval's copy of a shard's judgments, as trec_eval 10.0 evaluates every query:
    72-74 measured on 1 or 2 workers; 85-92 while the qrels outlived the items' making and
    shards were twice as large, 211-218 with the dictionary of every judgment, 280 with the
    reader before)."""
    qrels_path, _, thin_path, small_path = heavy
    rpp = [sys.executable, "-m", "rpp_cli", "eval", "-j", jobs, "-m", "map"]
    heavy_peak = _peak_rss(*rpp, qrels_path, small_path)
    thin_peak = _peak_rss(*rpp, thin_path, small_path)
    assert (heavy_peak - thin_peak) / (11_000 * 90) < 105


def test_loading_heavy_qrels_holds_under_81_bytes_a_judgment(heavy):
    """Reading the 990,000 judgments and joining a run of one query to them (``encode``: the
    judged keys, the relevant items and their docnos, each item's rank) peaks under 81 bytes
    a judgment of Python objects and arrays, the qrels' own 38 included (78.2 measured by
    tracemalloc, which the allocator's layout does not sway; 91.0 while the qrels outlived
    ``encode``'s use of them, the items were ranked with every docno at once and their
    grades copied twice; 93.4 when the keys were made twice and the items' docnos gathered
    with index arrays as long as the items)."""
    qrels_path, _, _, small_path = heavy
    tracemalloc.start()
    try:
        coll = encode(read_qrels(qrels_path), [small_path])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    judgments = len(coll.judged.grade)
    assert judgments == 11_000 * 90 and len(coll.qids) == 11_000
    assert peak / judgments < 81

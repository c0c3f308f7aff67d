"""The engine's threads: work side by side in one process, errors raised in order."""
from __future__ import annotations

import os
import random
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from rpp_cli.collection import _threads_per_run
from rpp_cli.engine.threads import map_ordered, pipelined, pool

from .conftest import DEMO, rpp, tiered
from .realistic import generate, write_collection


def test_map_ordered_raises_the_lowest_failing_run():
    def fn(r: int) -> int:
        if r >= 4:
            raise KeyError(r)
        return r * 2

    assert map_ordered(lambda r: r * 2, 9, 3) == [r * 2 for r in range(9)]
    with pytest.raises(KeyError) as err:
        map_ordered(fn, 12, 3)
    assert err.value.args == (4,)


def test_pieces_on_a_pool_come_back_in_order_and_few_at_a_time():
    """pipelined: fn of every item in item order; at most ``threads`` items taken ahead of
    the one handed back; an error is raised in order, and what had not started never runs."""
    taken, started, lock = [], [], threading.Lock()

    def items():
        for i in range(40):
            taken.append(i)
            yield i

    def slow(i: int) -> int:
        with lock:
            started.append(i)
        time.sleep(0.002 * (i % 3))  # pieces finish out of order
        return i * i

    out = []
    for value in pipelined(items(), slow, 3):
        out.append(value)
        assert len(taken) <= len(out) + 3  # what waits or runs, beside the one in hand
    assert out == [i * i for i in range(40)]

    def failing(i: int) -> int:
        if i == 5:
            raise MemoryError("piece 5")
        time.sleep(0.01)
        return i

    got, started = [], []
    with pytest.raises(MemoryError, match="piece 5"):
        for value in pipelined(iter(range(100)),
                               lambda i: (started.append(i), failing(i))[1], 2):
            got.append(value)
    assert got == [0, 1, 2, 3, 4] and max(started) < 10


_BLAS_AT_START = """
import os, sys
import click
invoke = click.Context.invoke
def shown(self, *args, **kwargs):
    if self.parent is not None:  # the command's own callback: numpy loaded, no rpp thread yet
        print(os.environ.get("OPENBLAS_NUM_THREADS"), len(os.listdir("/proc/self/task")))
        sys.exit(0)
    return invoke(self, *args, **kwargs)
click.Context.invoke = shown
sys.argv[0] = "rpp"
from rpp_cli.__main__ import run
run()
"""


@pytest.mark.parametrize("chosen", [None, "2"])
def test_the_command_runs_one_blas_thread_unless_the_user_chose(chosen):
    """The ``rpp`` command's OpenBLAS runs one thread (no thread of its own beside the main
    one) where no BLAS setting is in the environment: more would spin as numpy loads, about
    0.1 s of CPU at every start; a user's own setting is kept (two threads where OpenBLAS
    sees two cores or more: it uses no more threads than it sees cores)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")}
    want = "1 1"
    if chosen is not None:
        env["OPENBLAS_NUM_THREADS"] = chosen
        want = f"2 {min(2, len(os.sched_getaffinity(0)))}"
    res = subprocess.run([sys.executable, "-c", _BLAS_AT_START, "eval", str(DEMO / "qrels"),
                          str(DEMO / "runs" / "bm25")], capture_output=True, env=env,
                         timeout=60)
    assert (res.returncode, res.stdout.decode().strip()) == (0, want), res.stderr.decode()


@pytest.mark.parametrize("n_runs,readers,jobs,want", [
    (5, 2, 2, [1, 1, 1, 1, 2]),  # the fifth alone would keep one core waiting
    (4, 2, 2, [1, 1, 1, 1]),
    (6, 4, 4, [1, 1, 1, 1, 2, 2]),
    (3, 2, 8, [4, 4, 8]),
    (1, 1, 2, [2]),
    (7, 1, 1, [1] * 7),
])
def test_the_runs_of_a_last_short_round_share_every_core(n_runs, readers, jobs, want):
    assert _threads_per_run(n_runs, readers, jobs) == want


@pytest.mark.parametrize("n_runs,jobs", [(5, 2), (6, 4)])
def test_a_last_short_round_prints_what_one_thread_prints(n_runs, jobs):
    """The runs read with more threads (a last short round) give the same bytes as -j 1."""
    runs = sorted(str(p) for p in (DEMO / "runs").iterdir())[:n_runs]
    assert len(runs) == n_runs
    one = rpp("eval", "-q", "-j", "1", str(DEMO / "qrels"), *runs)
    many = rpp("eval", "-q", "-j", str(jobs), str(DEMO / "qrels"), *runs)
    assert one.code == many.code == 0 and one.out and (many.out, many.err) == (one.out, one.err)


def test_a_pool_of_no_thread_runs_each_call_as_it_is_submitted():
    """pool(0): the call runs at once, in the caller's thread; its result or error waits in
    its future (what -j 1 does with the work other -j find beside the readers)."""
    ran = []
    with pool(0, "rpp-test") as beside:
        done = beside.submit(lambda x: ran.append(threading.current_thread()) or x * 2, 21)
        assert ran == [threading.current_thread()]
        failed = beside.submit(lambda: {}["absent"])
    assert done.result() == 42
    with pytest.raises(KeyError):
        failed.result()


def _subtopic_collection(tmp_path: Path, seed: int) -> tuple[Path, Path, list[Path]]:
    """A realistic collection and subtopic qrels that judge, besides some of the qrels'
    documents, documents the runs retrieve and the qrels do not judge (items of their own,
    coded after the judgments while the runs are read)."""
    coll = generate(seed)
    qrels, runs = write_collection(coll, tmp_path, "mixed", seed)
    rng = random.Random(seed)
    lines = []
    for q, judged in coll.qrels.items():
        retrieved = sorted({d for run in coll.runs for d, _ in run.get(q, [])} - set(judged))
        for d in rng.sample(sorted(judged), min(3, len(judged))) + retrieved[:4]:
            for sub in rng.sample(["1", "2", "3"], 2):
                lines.append(f"{q} {sub} {d} {rng.choice([0, 1, 1, 2])}\n")
    subtopics = tmp_path / "qrels.subtopics"
    subtopics.write_text("".join(lines), encoding="utf-8")
    return qrels, subtopics, runs


@pytest.mark.parametrize("seed", tiered([3, 11]))
def test_items_found_beside_the_readers_print_what_one_thread_prints(tmp_path, seed):
    """The items (those of the subtopic qrels alone among them) found on a thread of their
    own while the runs are read and coded: the same bytes as -j 1, for rpp's measures over
    every population and trec_eval's."""
    qrels, subtopics, runs = _subtopic_collection(tmp_path, seed)
    assert len(runs) > 1
    args = ["eval", "-q", "-m", "st-rpp", "-m", "rpp", "-m", "invrpp", "-m", "map",
            "-m", "ndcg_cut.10", "--subtopics", subtopics, qrels, *runs]
    one = rpp(*args[:1], "-j", "1", *args[1:])
    assert one.code == 0 and "st-rpp" in one.out, one.err
    for jobs in ("2", "4"):
        many = rpp(*args[:1], "-j", jobs, *args[1:])
        assert (many.code, many.out, many.err) == (one.code, one.out, one.err)

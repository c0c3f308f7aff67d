"""Work side by side in one command (issue 36's serial part): the measure families run in
threads when the engine forks workers, and the engine's ``-j`` slots are shared by every
imap. The rows, notes and arrays are those of one family after the other; never more than
``-j`` workers run; an imap waiting for a slot starts beside another's last shards."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from rpp_cli import pipeline
from rpp_cli.engine import Processes, session
from rpp_cli.engine.threads import side_by_side
from rpp_cli.errors import InputError
from rpp_cli.measures import resolve
from rpp_cli.settings import Options

from .realistic import generate, write_collection

# one measure or more of every family but diversity (no subtopic qrels here): preference,
# lexicographic, interleaving, rank_biased, trec (a note on num_rel under -l 2), search
# length, ir_measures
MEASURES = ["rpp", "dcgrpp", "lexiprecision", "oi", "rbp", "map", "P.5,10", "num_rel", "asl",
            "RR@10", "Judged@10", "ERR@20", "ndcg_cut.10"]


def _evaluate(qrels: Path, runs: list[Path], jobs: int, level: float | None = None):
    """The Context and notes of rpp eval -q's flow on ``jobs`` workers."""
    notes: list[str] = []
    with session(jobs):
        ctx = pipeline.evaluate_runs(str(qrels), [str(r) for r in runs], resolve(MEASURES),
                                     Options(level=level, jobs=jobs), True, notes)
    return ctx, notes


@pytest.mark.parametrize("seed,level", [(3, None), (11, 2.0), (42, None)])
def test_families_side_by_side_give_what_one_by_one_gives(tmp_path, monkeypatch, seed, level):
    """Every row, note, tensor and metric (and their order) of -j 3 is -j 1's, and -j 3 did
    run the families side by side."""
    qrels, runs = write_collection(generate(seed), tmp_path, "mixed")
    calls: list[int] = []

    def spy(work, name):
        calls.append(len(work))
        side_by_side(work, name)
    monkeypatch.setattr(pipeline, "side_by_side", spy)
    one, one_notes = _evaluate(qrels, runs, 1, level)
    assert calls == []
    many, many_notes = _evaluate(qrels, runs, 3, level)
    assert calls == [7]  # the seven families at once
    assert many_notes == one_notes
    assert many.results.measures == one.results.measures
    assert list(many.results.rows()) == list(one.results.rows())
    for mine, theirs in ((many.tensors, one.tensors), (many.metrics, one.metrics)):
        assert list(mine) == list(theirs)
        for name in mine:
            np.testing.assert_array_equal(mine[name], theirs[name])
    if level == 2.0:  # trec's note on num_rel came where one by one puts it
        assert any("num_rel" in n for n in many_notes)


def test_under_an_address_space_limit_no_thread_starts(tmp_path, monkeypatch):
    """Under ``ulimit -v`` (the CLI calls inline_only) no thread starts: CPython's
    Thread.start hangs when the new thread cannot get memory to start, and glibc ends a
    process whose late thread cannot get memory for a library's thread-local storage (127).
    -j 3 then reads, splits and runs the families in this thread, and prints the same."""
    from rpp_cli.engine import threads

    qrels, runs = write_collection(generate(5), tmp_path, "mixed")
    free, _ = _evaluate(qrels, runs, 3)
    monkeypatch.setattr(threads, "_INLINE", [True])
    monkeypatch.setattr(threading.Thread, "start", lambda self: pytest.fail(self.name))
    limited, _ = _evaluate(qrels, runs, 3)
    assert list(limited.results.rows()) == list(free.results.rows())


def test_the_first_family_error_in_order_is_raised_after_all_end():
    """side_by_side: every call runs to its end; the error of the first failing call in
    list order is raised, whichever failed first."""
    ended: list[int] = []

    def call(k: int, fails: bool, wait: float):
        def run() -> None:
            time.sleep(wait)
            ended.append(k)
            if fails:
                raise InputError(f"call {k}")
        return run
    with pytest.raises(InputError, match="call 1"):
        side_by_side([call(0, False, 0.2), call(1, True, 0.3), call(2, True, 0.0)], "t")
    assert sorted(ended) == [0, 1, 2]


def _stamp(wait: float) -> tuple[int, float, float]:
    """A shard that takes ``wait`` s: its worker's pid, start and end (monotonic)."""
    start = time.monotonic()
    time.sleep(wait)
    return os.getpid(), start, time.monotonic()


def _busy_at_once(spans: list[tuple[int, float, float]]) -> int:
    """The largest number of distinct workers busy at one moment."""
    most = 0
    for _, start, _ in spans:
        most = max(most, len({pid for pid, a, b in spans if a <= start < b}))
    return most


def test_imaps_side_by_side_share_the_engines_workers():
    """Two imaps in two threads on Processes(2): never more than 2 workers busy at once,
    and the second one's first shard starts while the first one's last shard still runs
    (its idle worker was given back as soon as no shard was left to hand out)."""
    engine = Processes(2)
    first = [0.2, 0.2, 2.0]  # shard 2 runs alone on one worker for a while
    second = [0.1] * 4
    out: dict[str, list] = {}

    def run(name: str, waits: list[float], delay: float) -> None:
        time.sleep(delay)
        out[name] = list(engine.imap(_stamp, waits))
    side_by_side([lambda: run("first", first, 0.0), lambda: run("second", second, 0.1)], "t")
    spans = out["first"] + out["second"]
    assert _busy_at_once(spans) <= 2
    assert min(a for _, a, _ in out["second"]) < max(b for _, _, b in out["first"])
    assert engine.slots.acquire(blocking=False) and engine.slots.acquire(blocking=False)


def test_an_imap_inside_another_imaps_loop_takes_no_slot():
    """An imap run while the same thread's outer imap holds every slot (its loop's body
    shards more work) does not wait for a slot: it forks its own workers, as before slots."""
    engine = Processes(2)
    got = []
    for square in engine.imap(_square_shard, [1, 2, 3]):
        got.append((square, sum(engine.imap(_square_shard, [4, 5]))))
    assert got == [(1, 41), (4, 41), (9, 41)]


def _square_shard(x: int) -> int:
    return x * x


def test_a_slot_is_given_back_when_an_imap_fails():
    """A failing shard ends its imap with its error and every slot back."""
    engine = Processes(2)
    with pytest.raises(InputError, match="bad shard 3"):
        list(engine.imap(_fail_on_three, list(range(6))))
    assert list(engine.imap(_square_shard, [1, 2, 3])) == [1, 4, 9]
    assert engine.slots.acquire(blocking=False) and engine.slots.acquire(blocking=False)


def _fail_on_three(x: int) -> int:
    if x == 3:
        raise InputError(f"bad shard {x}")
    return x


def test_workers_started_by_threads_end_with_them():
    """No worker of an imap run in a thread is left once the imap is done."""
    engine = Processes(3)
    pids: list[int] = []
    thread = threading.Thread(target=lambda: pids.extend(
        pid for pid, _, _ in engine.imap(_stamp, [0.05] * 6)))
    thread.start()
    thread.join()
    assert pids and all(not Path(f"/proc/{pid}").exists() for pid in set(pids))


def test_calls_side_by_side_see_the_callers_context():
    """The trec_eval release a command put in force (a context variable, which a new thread
    does not inherit) is the one each call sees."""
    from rpp_cli.settings import TREC_EVAL_RELEASES, trec_eval_in_force, trec_eval_release

    seen: list[str] = []
    for release in TREC_EVAL_RELEASES:
        with trec_eval_in_force(release):
            side_by_side([lambda: seen.append(trec_eval_release())] * 2, "t")
    assert seen == [r for r in TREC_EVAL_RELEASES for _ in range(2)]


@pytest.mark.parametrize("workers", [2, 4, 16])
@pytest.mark.parametrize("n,weight", [(250, 40_000.0), (50_000, 500.0), (70, 3e5)])
def test_shards_shrink_toward_the_end_within_the_cap(monkeypatch, workers, n, weight):
    """With several workers, each shard weighs less than the one before it, the last about
    LAST_SHARD of the first's: the workers' last shards end close together. Every query is
    in one shard, none above the cap of MAX_SHARD_WORK. (Shards are whole queries: each
    bound is within a query's weight.)"""
    from rpp_cli.engine import LAST_SHARD, MAX_SHARD_WORK, query_shards

    monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
    bounds = query_shards(np.full(n, weight), workers, shrink=True)
    work = np.diff(bounds) * weight
    assert bounds[0] == 0 and bounds[-1] == n and (work > 0).all()
    assert (work <= MAX_SHARD_WORK + weight).all()
    assert (np.diff(work) <= weight).all()
    assert work[-1] <= LAST_SHARD * work[0] + weight
    for equal in (query_shards(np.full(n, weight), 1, shrink=True),  # one worker: no tail
                  query_shards(np.full(n, weight), workers)):  # not asked to shrink
        work = np.diff(equal) * weight
        assert work.max() - work.min() <= 2 * weight


def test_calls_run_in_turn_where_no_thread_can_start(monkeypatch):
    """A thread that cannot start (a limit on threads or address space) leaves the calls
    from it to run in the caller's thread, in order; errors as side by side."""
    ran: list[tuple[int, str]] = []
    start = threading.Thread.start
    made = []

    def start_two(self):
        if len(made) == 2:
            raise RuntimeError("can't start new thread")
        made.append(self)
        start(self)
    monkeypatch.setattr(threading.Thread, "start", start_two)

    def call(k: int):
        def run() -> None:
            ran.append((k, threading.current_thread().name))
            if k == 3:
                raise InputError("call 3")
        return run
    with pytest.raises(InputError, match="call 3"):
        side_by_side([call(k) for k in range(5)], "t")
    here = threading.current_thread().name
    assert sorted(ran) == [(0, "t-0"), (1, "t-1"), (2, here), (3, here), (4, here)]


def test_results_extended_are_the_results_added_here():
    """Rows added to another Results (of the same queries and runs) and then extended into
    this one, measures new to it included, are the rows added here in that order."""
    from rpp_cli.results import Results

    qids, runs = ["106_1", "7", "q-α"], ["bm25", "monoT5"]
    rng = np.random.default_rng(5)
    grid = rng.random((2, 2, 2))
    here = Results(qids, runs, ["map", "rpp"])
    here.add("map", np.array([0, 0, 2, 2]), np.array([0, 1, 0, 1]), rng.random(4))
    apart = Results(qids, runs, list(here.measures))
    direct = Results(qids, runs, ["map", "rpp"])
    direct._blocks.extend(here._blocks)
    for target in (apart, direct):
        target.add_grid("rpp", np.array([0, 2]), grid)
        target.add("ndcg", -1, np.array([0, 1]), np.array([0.5, 0.25]))  # new to both
        target.add("map", -1, np.array([1, 0]), np.array([0.1, 0.2]))
    here.extend(apart)
    assert here.measures == direct.measures == ["map", "rpp", "ndcg"]
    assert list(here.rows()) == list(direct.rows())
    with pytest.raises(ValueError, match="other queries or runs"):
        here.extend(Results(qids[:2], runs))

"""The engine (rpp_cli/engine): the same bytes out for every -j, shard size and Dask; a dead
worker is an error naming it within seconds; Ctrl-C ends everything with 130.

One Dask LocalCluster of 2 processes serves the whole module (started once: a few seconds).
"""
from __future__ import annotations

import array
import fcntl
import os
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import numpy as np
import pytest

from rpp_cli.errors import EXIT_WORKER_DIED
from rpp_cli.engine import (Inline, Lazy, Processes, Threads, WorkerDied,
                            current, query_shards, session)
from rpp_cli.core import PARALLEL_ROWS
from rpp_cli.errors import InputError
from rpp_cli.results import Results

from .conftest import children_of, ctrl_c_as_from_a_terminal, rpp, script_module
from .realistic import generate, write_collection

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def dask_engine():
    """A LocalCluster of two worker processes for the module's Dask tests."""
    with session(1, "local:2") as engine:
        yield engine


def _square(x: int) -> int:
    return x * x


def _die_on_five(x: int) -> int:
    """A shard function whose worker dies (SIGKILL, as the OOM killer does) on shard 5."""
    if x == 5:
        os.kill(os.getpid(), signal.SIGKILL)
    return x


def _fail_from_three(x: int) -> int:
    if x >= 3:
        raise InputError(f"bad shard {x}")
    return x


def _engine_id(engine) -> str:
    """A test id that names the engine and its workers (repr holds an address)."""
    return f"{type(engine).__name__}-{engine.workers}"


@pytest.mark.parametrize("engine", [Inline(), Threads(3), Processes(1), Processes(2),
                                    Processes(5)], ids=_engine_id)
def test_results_come_in_shard_order(engine):
    assert list(engine.imap(_square, list(range(23)))) == [x * x for x in range(23)]


def test_lazy_shards_are_built_in_the_worker():
    """A forked worker builds its shard: the pid seen by build is the worker's."""
    pids = list(Processes(2).imap(lambda pid: pid, Lazy(6, lambda i: os.getpid())))
    assert os.getpid() not in pids and len(set(pids)) == 2


@pytest.mark.parametrize("engine", [Inline(), Threads(3), Processes(3)],
                         ids=_engine_id)
def test_the_lowest_failing_shard_is_raised(engine):
    """Shards 3.. fail; whichever worker fails first, shard 3's error is the one raised."""
    with pytest.raises(InputError, match="bad shard 3"):
        list(engine.imap(_fail_from_three, list(range(12))))


@pytest.mark.slow
def test_a_shard_error_on_dask_is_the_same_error(dask_engine):
    with pytest.raises(InputError, match="bad shard 3"):
        list(dask_engine.imap(_fail_from_three, list(range(12))))


def test_a_killed_worker_process_is_an_error_naming_it():
    start = time.monotonic()
    with pytest.raises(WorkerDied, match=r"worker process \d+ died \(killed by signal 9 "
                                         r"\(SIGKILL\)\) while working on shard 6 of 10"):
        list(Processes(2).imap(_die_on_five, list(range(10))))
    assert time.monotonic() - start < 5


_SET_UP_FAILS = """
import os, sys
import rpp_cli.engine.processes as processes
from rpp_cli.engine import Processes
def short(parent):
    raise MemoryError("no room to start")
processes._die_with = short
me = os.getpid()
try:
    if sys.argv[1] == "imap":
        list(Processes(2).imap(abs, list(range(10))))
    else:
        Processes(2).write_ordered(lambda x: b"shard", list(range(10)), 1)
except MemoryError as err:
    print("raised", err, os.getpid() == me, flush=True)
os._exit(0)
"""


@pytest.mark.parametrize("how", ["imap", "write_ordered"])
def test_a_worker_whose_set_up_fails_never_returns_into_the_parents_code(how):
    """Out of memory as a forked worker sets itself up (under ``ulimit -v``, loading ctypes
    can fail) is the parent's error for a shard; the worker ends there. It used to return
    from the fork into the parent's code and run the command on beside it (a second output,
    CPython's "Fatal Python error", or a parent waiting for ever)."""
    res = subprocess.run([sys.executable, "-c", _SET_UP_FAILS, how], capture_output=True,
                         timeout=60)
    assert (res.returncode, res.stdout) == (0, b"raised no room to start True\n"), res.stderr


def _engine_inside(x: int) -> tuple[str, list[int]]:
    """The engine a shard meets where it runs, and work it shards itself."""
    return type(current()).__name__, list(current().imap(_square, [x, x + 1]))


@pytest.mark.slow
def test_work_a_dask_shard_shards_itself_runs_inline_on_its_worker():
    """A worker of a local cluster is a fork of the process that started it, which may hold
    an engine then (here an outer session's; a worker the nanny restarts holds the Dask
    engine itself): a shard that shards work (rpp meta's jobs evaluate runs) runs it inline
    there, as on -j's workers, never on the engine it inherited."""
    with session(2):
        with session(1, "local:2") as engine:
            assert list(engine.imap(_engine_inside, [2, 3])) == [("Inline", [4, 9]),
                                                                ("Inline", [9, 16])]


def test_the_output_is_written_by_forks_of_this_machine_only():
    """-j N and a local Dask cluster of N write their output from N forked workers; -j 1 and
    a remote cluster (whose workers would send the text over the network) write inline."""
    from rpp_cli.engine import _ENGINE, writers
    from rpp_cli.engine.dask import DaskEngine

    cases = [(Processes(3), Processes(3)), (Inline(), Inline()), (Threads(4), Inline()),
             (DaskEngine(None, 5, on_this_machine=True), Processes(5)),
             (DaskEngine(None, 5), Inline())]
    for engine, expected in cases:
        _ENGINE.append(engine)
        try:
            made = writers()
            assert (type(made), made.workers) == (type(expected), expected.workers), engine
        finally:
            _ENGINE.pop()


@pytest.mark.slow
def test_a_local_cluster_that_does_not_start_is_one_line():
    """A worker killed while its nanny starts it makes LocalCluster raise ("Nanny failed to
    start."): one line and status 3, not a traceback, and the session's Dask settings undone."""
    import contextlib
    import types

    import dask
    import distributed  # noqa: F401 - its settings' defaults

    from rpp_cli.engine.dask import _start_local

    def refuse(**kwargs):
        raise RuntimeError("Nanny failed to start.")

    fake = types.SimpleNamespace(LocalCluster=refuse)
    method = dask.config.get("distributed.worker.multiprocessing-method")
    with pytest.raises(WorkerDied, match=r"^--dask local:2: the local cluster did not start "
                                         r"\(RuntimeError: Nanny failed to start\.\)$") as err:
        with contextlib.ExitStack() as stack:
            _start_local((dask, fake), 2, stack, "--dask local:2")
    assert err.value.exit_code == EXIT_WORKER_DIED
    assert dask.config.get("distributed.worker.multiprocessing-method") == method


@pytest.mark.slow
def test_a_killed_dask_worker_is_an_error_naming_it(dask_engine):
    """Shard 6 kills its worker; the shards that worker ran beside it (a Dask worker has
    several threads) die with it, so the error names the first of them: 6 or one before."""
    start = time.monotonic()
    with pytest.raises(WorkerDied, match=r"Dask worker \w+://\S+:\d+ died while working on "
                                         r"shard [1-6] of 10"):
        list(dask_engine.imap(_die_on_five, list(range(10))))
    assert time.monotonic() - start < 20
    assert list(dask_engine.imap(_square, [2, 3])) == [4, 9]  # the nanny restarted it


def _line_later(x: int) -> bytes:
    """Shard x's bytes, made after a delay that makes later shards finish first."""
    time.sleep(0.002 * ((7 * x) % 5))
    return f"shard {x} from {os.getpid()}\n".encode() * (x % 4 + 1)


@pytest.mark.parametrize("workers", [1, 2, 5])
def test_workers_write_their_shards_in_order(tmp_path, workers):
    """write_ordered: whichever worker makes a shard first, the file holds every shard's bytes
    once, in shard order, written by the workers (not the parent)."""
    path = tmp_path / "out"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT)
    try:
        Processes(workers).write_ordered(_line_later, list(range(40)), fd)
    finally:
        os.close(fd)
    lines = path.read_bytes().decode().splitlines()
    assert [int(line.split()[1]) for line in lines] == [
        x for x in range(40) for _ in range(x % 4 + 1)]
    writers = {int(line.split()[-1]) for line in lines}
    assert (os.getpid() in writers) == (workers == 1) and len(writers) == min(workers, 40)


def test_a_failed_write_is_raised_as_the_worker_met_it():
    """A pipe whose reader has gone: the worker's BrokenPipeError, raised in the parent."""
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with pytest.raises(BrokenPipeError):
            Processes(3).write_ordered(_line_later, list(range(12)), writer)
    finally:
        os.close(writer)


def test_a_worker_killed_before_its_turn_to_write_is_an_error_naming_it(tmp_path):
    """A sink worker that dies (made or making its shard) is WorkerDied within seconds, and a
    shard's own error is the lowest failing shard's, as imap raises them."""
    fd = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)
    start = time.monotonic()
    try:
        with pytest.raises(WorkerDied, match=r"worker process \d+ died \(killed by signal 9 "):
            Processes(3).write_ordered(lambda x: (_die_on_five(x), b"x")[1], list(range(12)), fd)
        assert time.monotonic() - start < 10
        with pytest.raises(InputError, match="bad shard 3"):
            Processes(3).write_ordered(lambda x: (_fail_from_three(x), b"x")[1],
                                       list(range(12)), fd)
    finally:
        os.close(fd)


def _megabyte(x: int) -> bytes:
    return f"{x}".encode() * (1 << 20)


def test_a_worker_killed_while_writing_says_the_output_is_cut(tmp_path):
    """Two shards of 1 MiB into a pipe nobody reads past 1,000 bytes: shard 0's worker blocks
    in its write, holding its turn; killed there, the error says the output stops within
    that shard's lines (part of it is out), not that nothing was written."""
    import threading

    reader, writer = os.pipe()
    caught: list[BaseException] = []
    before = set(children_of(os.getpid()))  # the suite's own (a Dask cluster's, say) stay

    def run() -> None:
        try:
            Processes(2).write_ordered(_megabyte, [0, 1], writer)
        except BaseException as err:  # noqa: BLE001 - the test looks at it
            caught.append(err)

    thread = threading.Thread(target=run)
    thread.start()
    try:
        assert len(os.read(reader, 1000)) > 0  # shard 0 is being written
        deadline = time.monotonic() + 30
        while len(kids := set(children_of(os.getpid())) - before) < 2 \
                and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # both shards made; shard 0's worker blocked in its write
        for kid in kids:  # the two workers of this engine, and only them
            os.kill(kid, signal.SIGKILL)
        thread.join(30)
    finally:
        os.close(reader)
        os.close(writer)
    assert not thread.is_alive() and len(caught) == 1 and isinstance(caught[0], WorkerDied)
    assert str(caught[0]).endswith("while writing shard 1 of 2: the output stops within that "
                                   "shard's lines, its last line may be cut short")


@pytest.mark.slow
def test_rpp_workers_write_the_same_bytes_to_files_and_pipes(tmp_path, monkeypatch):
    """rpp eval -q -j 3 with one query per output shard (the workers write stdout in turn):
    the same bytes as -j 1 (written inline: run in this process), into a file and through a
    pipe; a reader that leaves early ends rpp with 0, a full disk with 2."""
    inputs = [str(ROOT / "fixtures" / "demo" / "qrels"),
              *sorted(str(p) for p in (ROOT / "fixtures" / "demo" / "runs").iterdir())]
    args = [sys.executable, "-m", "rpp_cli", "eval", "-q", "-Q", *inputs]
    env = {**os.environ, "RPP_SHARD_QUERIES": "1"}
    monkeypatch.setenv("RPP_SHARD_QUERIES", "1")
    inline = rpp("eval", "-q", "-Q", *inputs, "-j", "1")
    one = inline.out.encode()
    piped = subprocess.run(args + ["-j", "3"], capture_output=True, env=env, timeout=120)
    with open(tmp_path / "out", "wb") as f:
        filed = subprocess.run(args + ["-j", "3"], stdout=f, env=env, timeout=120)
    assert inline.code == piped.returncode == filed.returncode == 0
    assert piped.stdout == one == (tmp_path / "out").read_bytes()
    assert one.count(b"\n") > 1000
    proc = subprocess.Popen(args + ["-j", "3"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=env)
    assert proc.stdout.read(100) == one[:100]
    proc.stdout.close()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0 and err == b""
    with open("/dev/full", "wb") as full:
        failed = subprocess.run(args + ["-j", "3"], stdout=full, stderr=subprocess.PIPE,
                                env=env, timeout=120)
    assert failed.returncode == 2
    assert failed.stderr.decode().splitlines() == [
        "rpp: cannot write output: No space left on device"]


def test_query_shards_cover_every_query_once(monkeypatch):
    monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
    weights = np.array([5, 1, 1, 1, 9, 1, 1, 2, 2, 2], dtype=float) * 10_000
    assert query_shards(weights, 1).tolist() == [0, 10]
    assert query_shards(weights / 10_000, 2).tolist() == [0, 10]  # too little work to fork
    bounds = query_shards(weights, 2)  # at most 4 x 2 shards, about equal weight
    assert bounds[0] == 0 and bounds[-1] == 10 and (np.diff(bounds) > 0).all()
    assert len(bounds) - 1 <= 8
    # the cap counts what a shard holds (``held``), the balance every query's work: 40 runs'
    # rows are 40 times the work, but one run's rows at a time are held
    held = weights / 40
    assert query_shards(weights, 1, max_work=weights.sum() / 4).tolist() != [0, 10]
    assert query_shards(weights, 1, max_work=weights.sum() / 4, held=held).tolist() == [0, 10]
    capped = query_shards(weights, 2, max_work=held.sum() / 5, shrink=True, held=held)
    assert all(held[a:b].sum() <= held.sum() / 5 or b - a == 1
               for a, b in zip(capped, capped[1:]))
    monkeypatch.setenv("RPP_SHARD_QUERIES", "3")
    assert query_shards(weights, 1).tolist() == [0, 3, 6, 9, 10]
    for bad in ["0", "\u00b2", "\u0661"]:  # ² and ١ are str.isdigit, and int() refuses ²
        monkeypatch.setenv("RPP_SHARD_QUERIES", bad)
        with pytest.raises(InputError, match=f"RPP_SHARD_QUERIES={bad!r}"):
            query_shards(weights, 1)


def test_query_shards_without_a_size_cap(monkeypatch):
    """``max_work=None`` (preferences: their memory does not grow with a shard) never cuts
    work into more shards than the workers ask for; the default cap does."""
    monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
    weights = np.full(100, 3e6)
    assert query_shards(weights, 1, max_work=None).tolist() == [0, 100]
    assert len(query_shards(weights, 1)) - 1 == 100  # 3M each, over the 1M cap
    assert len(query_shards(weights, 16, max_work=None)) - 1 == 64


def test_preference_shards_weigh_the_pairs(tmp_path, monkeypatch):
    """A query's preference work is its levels times the run pairs: 40 runs on 16 workers get
    about 4 shards per worker, not the 2 that their levels alone (under 2 x MIN_SHARD_WORK)
    made, which left 14 of 16 cores idle while preferences were computed."""
    sys.path.insert(0, str(ROOT / "fixtures"))
    try:
        from make_collection import generate as make_collection
    finally:
        sys.path.pop(0)
    from rpp_cli.collection import encode
    from rpp_cli.io.qrels import read_qrels
    from rpp_cli.measures import preference

    monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
    make_collection(str(tmp_path), n_runs=40, n_queries=30, depth=100, pool=400)
    coll = encode(read_qrels(str(tmp_path / "qrels")),
                  sorted(str(p) for p in (tmp_path / "runs").iterdir()))
    taken: list[int] = []

    class Counting(Inline):
        workers = 16

        def imap(self, fn, shards, label=None):
            taken.append(len(shards))
            return super().imap(fn, shards, label)

    monkeypatch.setattr(preference, "current", lambda: Counting())
    pops = preference.POPULATIONS["graded"](coll)
    levels = len(pops.member_item)
    assert levels < 2 * 20_000  # by levels alone: at most 2 shards
    preference.sharded_pairwise(coll, pops, np.ones((levels, 1)), np.array([True]))
    assert len(taken) == 1 and 16 <= taken[0] <= 30  # 64 wanted, cut at 30 uneven queries


def test_results_part_is_columns_cut_by_query():
    """Rows added in query order and out of order: every cut of the query keys gives the
    rows of columns() with those keys, in the same order."""
    res = Results(["q1", "q2", "q3"], ["a", "b"])
    res.add("m", np.repeat(np.arange(3), 2), np.tile(np.arange(2), 3), np.arange(6.0))
    res.add("m", -1, np.arange(2), np.array([7.0, 8.0]))
    res.add("x", np.array([2, 0, 1]), 0, np.array([1.0, 2.0, 3.0]))
    whole = res.columns()
    key = np.where(whole[1] < 0, 3, whole[1])
    for lo in range(4):
        for hi in range(lo, 5):
            keep = (key >= lo) & (key < hi)
            for got, want in zip(res.part(lo, hi), whole):
                assert got.tolist() == want[keep].tolist()
    assert res.key_counts().tolist() == [3, 3, 3, 2]


@pytest.mark.parametrize("seed", range(6))
def test_results_grid_is_its_rows(seed):
    """A pair measure's tensor added as a grid gives exactly the rows it stands for (every
    query of the grid, every pair a != b, run-major), beside other blocks: the same columns,
    parts, counts and length as the rows added one by one; the tensor is kept, not copied."""
    rng = np.random.default_rng(seed)
    n_q, n_runs = int(rng.integers(1, 7)), int(rng.integers(1, 5))
    queries = np.flatnonzero(rng.random(n_q) < 0.7)  # an evaluated subset, ascending
    tensor = rng.normal(size=(len(queries), n_runs, n_runs))
    qids, runs = [f"q{i}" for i in range(n_q)], [f"r{i}" for i in range(n_runs)]
    grid, rows = Results(qids, runs), Results(qids, runs)
    a, b = np.nonzero(~np.eye(n_runs, dtype=bool))
    ap = rng.normal(size=n_q * n_runs)  # a per-run measure's block before the grid
    for res in (grid, rows):
        res.add("ap", np.repeat(np.arange(n_q), n_runs), np.tile(np.arange(n_runs), n_q), ap)
    grid.add_grid("rpp", queries, tensor)
    rows.add("rpp", np.repeat(queries, len(a)), np.tile(a, len(queries)),
             tensor[:, a, b].ravel(), np.tile(b, len(queries)))
    for res in (grid, rows):
        res.add("rpp", -1, a, tensor.mean(axis=0)[a, b] if len(queries) else a * 0.0, b)
    assert len(grid) == len(rows) and grid.key_counts().tolist() == rows.key_counts().tolist()
    for lo in range(n_q + 2):
        for hi in range(lo, n_q + 2):
            for got, want in zip(grid.part(lo, hi), rows.part(lo, hi)):
                assert got.tolist() == want.tolist()
    assert list(grid.rows()) == list(rows.rows())
    kept = grid._blocks[1].values
    assert np.shares_memory(kept, tensor) and not kept.flags.writeable


def test_results_grid_needs_ascending_queries():
    res = Results(["q1", "q2"], ["a", "b"])
    with pytest.raises(ValueError, match="ascending"):
        res.add_grid("rpp", np.array([1, 0]), np.zeros((2, 2, 2)))


SEEDS = (3, 11, 42)
# trec_eval's and ir_measures' names share one pytrec_eval pass per relevance level and shard
# (P(rel=2)@5: a second level); RR@10, Judged@10, ERR@20 are computed by rpp on every query.
EVAL = ("eval", "-q", "-m", "rpp", "-m", "dcgrpp", "-m", "map", "-m", "P.5,10", "-m", "ndcg_cut.10",
        "-m", "recip_rank", "-m", "num_rel_ret", "-m", "nDCG@10", "-m", "P@20", "-m", "AP",
        "-m", "P(rel=2)@5", "-m", "RR@10", "-m", "Judged@10", "-m", "ERR@20")


def _outputs(tmp_path: Path, seed: int, args: tuple[str, ...], monkeypatch,
             variants: list[tuple[str, str | None]]) -> dict[tuple, str]:
    qrels, runs = write_collection(generate(seed), tmp_path / str(seed), "mixed")
    out = {}
    for jobs, shard in variants:
        if shard is None:
            monkeypatch.delenv("RPP_SHARD_QUERIES", raising=False)
        else:
            monkeypatch.setenv("RPP_SHARD_QUERIES", shard)
        res = rpp(*args, "-j", jobs, qrels, *runs)
        assert res.code == 0, res.err
        out[(jobs, shard)] = res.out
    return out


@pytest.mark.slow
@pytest.mark.parametrize("seed", SEEDS)
def test_same_bytes_for_every_jobs_and_shard_size(tmp_path, monkeypatch, seed):
    """-j 1/2/3 x shard sizes 1, 7, all (default) of realistic collections: one output."""
    variants = [(j, s) for j in ("1", "2", "3") for s in (None, "1", "7")]
    out = _outputs(tmp_path, seed, EVAL, monkeypatch, variants)
    assert out[("1", None)].count("\n") > 50
    assert all(text == out[("1", None)] for text in out.values()), \
        [k for k, text in out.items() if text != out[("1", None)]]


@pytest.mark.slow
@pytest.mark.parametrize("seed", [10, 23, 33])
@pytest.mark.parametrize("level", ["1", "2"])
def test_queries_of_negative_grades_print_the_same_in_every_shard(tmp_path, monkeypatch,
                                                                   seed, level):
    """trec_eval evaluates a query whose grades are all negative from tables the query before
    it sized (its own table of grades is empty): these collections have such queries, and
    every trec_eval measure prints the same bytes whatever query precedes them in a shard."""
    assert any(max(d.values()) < 0 for d in generate(seed).qrels.values())
    variants = [("1", None), ("3", "1"), ("2", "2")]
    out = _outputs(tmp_path, seed, ("eval", "-q", "-l", level, "-m", "all_trec"), monkeypatch,
                   variants)
    assert out[("1", None)].count("\n") > 200
    assert all(text == out[("1", None)] for text in out.values())


def test_same_bytes_for_compare_and_meta(tmp_path, monkeypatch):
    """compare's p-values and meta's draws (seeded per draw) do not depend on the engine."""
    for args in (("compare", "-m", "rpp", "-m", "map", "--permutations", "200"),
                 ("meta", "-m", "rpp", "-m", "map", "--permutations", "50", "--samples", "20",
                  "--judged-fractions", "0.5", "--judged-samples", "3")):
        out = _outputs(tmp_path, 11, args, monkeypatch, [("1", None), ("3", "2")])
        assert out[("1", None)] == out[("3", "2")] and out[("1", None)].count("\n") > 5


@pytest.mark.slow
def test_same_bytes_on_dask(tmp_path, monkeypatch, dask_engine):
    """The shards of eval and meta on the module's LocalCluster (RPP_DASK, as CI would set
    it: the address of the cluster) print what -j 1 prints."""
    address = dask_engine.client.scheduler.address
    for seed in SEEDS[:2]:
        local = _outputs(tmp_path, seed, EVAL, monkeypatch, [("1", None)])[("1", None)]
        monkeypatch.setenv("RPP_DASK", address)
        remote = _outputs(tmp_path / "dask", seed, EVAL, monkeypatch, [("1", "5")])
        monkeypatch.delenv("RPP_DASK")
        assert remote[("1", "5")] == local
    meta = ("meta", "-m", "rpp", "-m", "map", "--permutations", "50", "--samples", "20")
    local = _outputs(tmp_path / "m", 3, meta, monkeypatch, [("1", None)])[("1", None)]
    remote = rpp(*meta, "--dask", address, *(str(p) for p in sorted(
        (tmp_path / "m" / "3").iterdir())))  # qrels sorts first, then run0, run1, ...
    assert remote.code == 0, remote.err
    assert remote.out == local


@pytest.mark.slow
@pytest.mark.parametrize("address", ["tcp://127.0.0.1:9", "tls://127.0.0.1:9"])
def test_dask_errors_are_one_line(tmp_path, monkeypatch, address):
    """An unreachable scheduler, or tls:// without a security setup (distributed raised a
    TypeError there: a traceback and exit 70), is one line and exit 2."""
    monkeypatch.setenv("RPP_DASK_TIMEOUT", "1")
    qrels, runs = write_collection(generate(3), tmp_path, "plain")
    res = rpp("eval", "--dask", address, qrels, *runs)
    assert res.code == 2 and res.out == ""
    assert res.err.strip().splitlines()[-1].startswith(f"rpp: --dask {address}: cannot "
                                                       "reach the scheduler")


@pytest.mark.parametrize("address,said", [
    ("local:0", "needs from 1 to 256 workers"), ("local:99999999", "needs from 1 to 256 workers"),
    ("local:-1", "expected local or local:N, N workers from 1 to 256"),
    ("local:\u0664", "expected local or local:N, N workers from 1 to 256")])
def test_a_local_cluster_size_is_checked_before_any_fork(tmp_path, monkeypatch, address, said):
    """local:99999999 forked workers until memory ran out (22 GB in 60 s, no output);
    local:-1 was taken for a host and waited 20 s for it. From RPP_DASK the message names the
    variable, not an option the user did not give."""
    qrels, runs = write_collection(generate(3), tmp_path, "plain")
    res = rpp("eval", "--dask", address, qrels, *runs)
    assert (res.code, res.out, res.err) == (2, "", f"rpp: --dask {address}: {said}\n")
    monkeypatch.setenv("RPP_DASK", address)
    res = rpp("eval", qrels, *runs)
    assert (res.code, res.err) == (2, f"rpp: RPP_DASK={address}: {said}\n")


@pytest.fixture(scope="module")
def big_collection(tmp_path_factory) -> list[str]:
    """Enough queries (500 x 4 runs) that -j 2's workers write far more than a pipe holds."""
    tmp_path = tmp_path_factory.mktemp("big")
    script = ROOT / "fixtures" / "make_collection.py"
    subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "--runs", "4",
                    "--queries", "500", "--depth", "60", "--seed", "5"], check=True,
                   capture_output=True)
    return [str(tmp_path / "qrels"), *sorted(str(p) for p in (tmp_path / "runs").iterdir())]


@pytest.fixture(scope="module")
def big_plain(big_collection) -> subprocess.CompletedProcess:
    """``rpp eval -q -j 1`` on the big collection: what every way of running it must print."""
    return subprocess.run([sys.executable, "-m", "rpp_cli", "eval", "-q", "-j", "1",
                           *big_collection], capture_output=True, timeout=120)


def _blocked_with_workers(paths: list[str], *flags: str, **popen
                          ) -> tuple[subprocess.Popen, list[int]]:
    """rpp eval -q -j 2 (or ``flags``) started with its stdout a pipe the test does not read,
    and returned once lines are in the pipe and rpp's worker processes are seen. With -j 2
    those are the workers that write its 1.6 MB of lines (nothing else writes to stdout); with
    ``--dask local:2`` rpp writes them while its cluster lives: none of them, nor rpp, can end
    before the test reads (a pipe holds 64 KiB at most). Whatever the test does next meets
    them running, however fast the machine. A shard a query keeps -j 2's workers writing
    (each writes its shards' lines); a Dask cluster's shards keep their default size (rpp
    writes the lines, and 500 one-query Dask tasks would take seconds)."""
    env = {**os.environ, **({} if flags else {"RPP_SHARD_QUERIES": "1"})}
    popen.setdefault("preexec_fn", ctrl_c_as_from_a_terminal)
    proc = subprocess.Popen([sys.executable, "-m", "rpp_cli", "eval", "-q",
                             *(flags or ("-j", "2")), *paths],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, **popen)
    queued = array.array("i", [0])
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        fcntl.ioctl(proc.stdout.fileno(), termios.FIONREAD, queued)
        kids = children_of(proc.pid) if queued[0] else []
        if kids:
            return proc, kids
        time.sleep(0.01)
    proc.kill()
    _, err = proc.communicate()
    raise AssertionError(f"rpp ended, or wrote nothing, with no worker seen: {err[-500:]!r}")


@pytest.mark.slow
def test_killing_a_worker_of_rpp_eval_ends_it_with_one_line(big_collection):
    proc, kids = _blocked_with_workers(big_collection)
    os.kill(kids[0], signal.SIGKILL)
    start = time.monotonic()
    _, err = proc.communicate(timeout=60)
    assert time.monotonic() - start < 10
    assert proc.returncode == EXIT_WORKER_DIED
    assert f"rpp: worker process {kids[0]} died (killed by signal 9 (SIGKILL))" in err.decode()
    assert "Traceback" not in err.decode()


@pytest.mark.slow
def test_ctrl_c_ends_rpp_and_its_workers_with_130(big_collection):
    proc, kids = _blocked_with_workers(big_collection)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert "Traceback" not in err.decode()
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
        time.sleep(0.05)
    assert not any(Path(f"/proc/{k}").exists() for k in kids)


@pytest.mark.slow
def test_ctrl_c_to_rpp_on_a_local_dask_cluster_ends_it_and_the_cluster_with_130(
        big_collection):
    """Ctrl-C as a terminal sends it, to the whole process group: rpp and the cluster's worker
    processes (forks of rpp, which never take it). rpp ends with 130, no traceback from it or
    a worker, and no process of the cluster outlives it by more than a few seconds."""
    proc, kids = _blocked_with_workers(big_collection, "--dask", "local:2", process_group=0)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert all(line.startswith("rpp: note: ") for line in err.decode().splitlines()), err
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(Path(f"/proc/{k}").exists() for k in kids):
        time.sleep(0.05)
    assert not any(Path(f"/proc/{k}").exists() for k in kids)


@pytest.mark.slow
def test_a_ctrl_c_that_reaches_only_a_dask_worker_changes_nothing(big_collection, big_plain):
    """The local cluster's workers leave Ctrl-C to rpp: SIGINT sent to one of them alone
    (a worker that took it would die, and rpp would end with 'worker died') changes no byte
    of the output."""
    proc, kids = _blocked_with_workers(big_collection, "--dask", "local:2")
    for kid in kids:
        os.kill(kid, signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, big_plain.stderr)
    assert out == big_plain.stdout and len(out) > 1_000_000


@pytest.mark.slow
def test_started_with_ctrl_c_ignored_rpp_ignores_it(big_collection, big_plain):
    """``rpp ... &`` in a script or under nohup starts with SIGINT ignored: like any program,
    rpp leaves it so and its workers run on; the output is what a plain run writes."""
    proc, _ = _blocked_with_workers(
        big_collection, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, big_plain.stderr)
    assert out == big_plain.stdout and len(out) > 1_000_000


def test_without_the_dask_extra_dask_is_a_one_line_error(tmp_path, monkeypatch):
    """As if dask.distributed were not installed: one line saying how to install it."""
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed -> ImportError
    qrels, runs = write_collection(generate(3), tmp_path, "plain")
    res = rpp("eval", "--dask", "local:2", qrels, *runs)
    assert res.code == 2 and res.out == ""
    assert res.err == "rpp: --dask needs dask.distributed: pip install 'dask[distributed]'\n"


def test_a_bad_shard_size_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("RPP_SHARD_QUERIES", "some")
    qrels, runs = write_collection(generate(3), tmp_path, "plain")
    res = rpp("eval", "-j", "2", qrels, *runs)
    assert res.code == 2 and res.out == ""
    assert res.err.endswith("rpp: RPP_SHARD_QUERIES='some': expected a positive number of "
                            "queries\n")


def test_a_worker_dead_before_its_next_shard_is_an_error_naming_it():
    """The parent hands a shard to a worker that died while idle: the broken pipe is the
    worker's death (status 3, its pid and signal), not a closed stdout (141)."""
    from multiprocessing import Pipe

    from rpp_cli.engine import WorkerDied, _send

    parent, child = Pipe()
    pid = os.fork()
    if pid == 0:
        os.kill(os.getpid(), signal.SIGKILL)
    child.close()
    os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)  # dead, not yet reaped
    with pytest.raises(WorkerDied, match=rf"worker process {pid} died \(killed by signal 9 "
                                         r"\(SIGKILL\)\) while working on shard 3 of 5"):
        _send(parent, pid, 2, 5)


@pytest.mark.slow
def test_a_local_dask_cluster_is_quiet_and_exact(big_collection, big_plain, dask_engine):
    """``--dask local:2 -Q`` in a real process, while another cluster (the module's) holds
    Dask's usual ports: nothing on stderr (Dask's warnings about busy ports or large task
    graphs are not rpp's notes), and what -j 1 prints."""
    dask = subprocess.run([sys.executable, "-m", "rpp_cli", "eval", "-Q", "-q", "--dask",
                           "local:2", *big_collection], capture_output=True, timeout=300)
    assert dask.returncode == 0 and dask.stderr == b""
    assert dask.stdout == big_plain.stdout and big_plain.stdout.count(b"\n") > 10_000


@pytest.mark.slow
def test_a_large_run_read_alone_prints_the_same_on_every_core(tmp_path):
    """A run of over PARALLEL_ROWS rows read alone: its windows are split and its rows coded
    by the idle cores (-j 3: three parts). With tied scores, --dedup over copies at lower and
    equal scores and -M, every -j prints what -j 1 prints."""
    script_module("fixtures", "make_collection").generate(
        str(tmp_path), n_runs=2, n_queries=300, depth=500, seed=8, docno_style="mixed")
    run = sorted((tmp_path / "runs").iterdir())[0]
    lines = run.read_bytes().splitlines(keepends=True)
    copies = []
    for line in lines[::997]:  # a copy at a lower score, and one at the same score
        qid, q0, docno, rank, score, *tag = line.split()
        copies.append(b" ".join([qid, q0, docno, rank, b"%r" % (float(score) - 1.0), *tag])
                      + b"\n")
        copies.append(line)
    big = tmp_path / "big.run"
    big.write_bytes(b"".join(lines + copies))
    assert len(lines) + len(copies) > PARALLEL_ROWS
    qrels = str(tmp_path / "qrels")
    outputs = {}
    for jobs in ("1", "2", "3"):
        for extra in ((), ("-M", "100")):
            res = rpp("eval", "-q", "--dedup", "--precision", "10", "-j", jobs, *extra, qrels,
                      big)
            assert res.code == 0, res.err
            outputs[(jobs, extra)] = res.out
    for (jobs, extra), out in outputs.items():
        assert out == outputs[("1", extra)] and out.count("\n") > 1000, (jobs, extra)
    assert "repeated docnos dropped" in res.err


def test_a_local_cluster_of_one_worker_per_core_is_capped(monkeypatch):
    """--dask local on a machine of 384 cores was refused ('needs from 1 to 256 workers') for
    a number the user never gave: the default is capped, a number given is checked."""
    from rpp_cli.engine import dask as engine_dask

    started = []

    def fake_start(modules, n, stack, named):
        started.append(n)
        raise InputError("stop here")

    monkeypatch.setattr(engine_dask, "_start_local", fake_start)
    monkeypatch.setattr(engine_dask.os, "cpu_count", lambda: 384)
    with pytest.raises(InputError, match="stop here"):
        with engine_dask.connect("local"):
            pass
    assert started == [256]

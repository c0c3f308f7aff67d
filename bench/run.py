#!/usr/bin/env python3
"""`make bench`: time whole `rpp` processes on generated collections, beside baselines.

Collections come from fixtures/make_collection.py with ``--docnos mixed`` (short numeric,
msmarco_passage_NN_N, 40-byte hex and UTF-8 ids of mixed lengths), cached in bench/data/; the
45M-line gzipped run from bench/big_run.py (copies of such a run). The targets are issue 18's
for a 2-core machine; ``rpp -j 1`` is timed beside some scenarios for information. Issue 36's
scenarios run on shapes the code was not tuned to: tall-deep and L-deep are tall's and L's
sizes generated with another seed and pool, judged as depth pooling judges (90 and 500
documents a query, grades 0-3 spread by ``--grades``); qrels-only reads tall-deep's 4.5M
judgments with a 100-line run; one-query is a 45M-line gzipped run of one query
(bench/one_query.py) whose line 2 repeats a docno; the -j2 lines time ``-j 1`` against
``-j 2`` (bench/serial.py names the serial steps behind that ratio), beside one and two copies
of a CPU job that shares nothing (bench/ceiling.py): what the machine's two cores can give.

Every command of a scenario runs up to ``--repeat`` times, interleaved with the other commands
of the scenario (rpp, rpp -j 1, baseline, rpp, rpp -j 1, ...), so the ratios come from one
invocation on the same machine state. A command stops repeating once it has used
``--budget`` seconds (it always runs once); baselines run ``--baseline-repeat`` times. The
input files are read into the page cache before every run (warm-cache timings). The table
shows medians; every target is reported with its measured value, met or not (or "not
determined", e.g. without pref_eval), and everything goes to bench/results.json. A verdict
whose limit lies inside the range the single runs span is marked "noise decides", and runs
during which other work (processes, hypervisor steal) used over 5% of the machine are listed.
Scenarios that miss a speed target are profiled (cProfile of ``python -P -m rpp_cli ... -j 1``).

Memory: ``peak_rss_mb`` is the kernel's peak RSS of the largest single process (rpp or one of
its workers; wait4's ru_maxrss). While a command runs more than one process, the harness also
samples the sum of their PSS (shared pages split between the processes that share them) every
0.5 s; ``peak_mb``, the figure judged against the memory targets, is the larger of the two.
MB = 10^6 bytes. Linux starts a child's ru_maxrss at the high-water mark of the process that
forked it, so the harness stays small (collections are generated in a subprocess) and flags
any peak at or below its own.

Baselines: bench/naive.py (plain-Python parsing + pytrec_eval, the usual script) and the paper
authors' reference code diazf/pref_eval (``--pref-eval /path/to/pref_eval.py`` or
``PREF_EVAL=...``; never part of this repository, pure Python, no dependencies). pref_eval is
run as ``python pref_eval.py -R QRELS -m rpp -m dcgrpp -m invrpp RUN...`` (every pair, the
summary lines) under ``--pref-eval-timeout``: if it times out, the speedup reported is a lower
bound. ``--pref-eval-runs K`` times it on the first K runs (by file name) instead (same
queries, depth and qrels, so the same per-pair work) and scales to all runs: linearly in the
number of runs (a lower bound on its full time, as its pair work grows faster) and by the
number of pairs (an upper bound); the target is met only if the lower bound meets it.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import platform
import pstats
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
GENERATOR = ROOT / "fixtures" / "make_collection.py"

DOCNOS = "mixed"
HZ = os.sysconf("SC_CLK_TCK")
OTHER_LOAD = 0.05  # flag runs during which other work used this share of the machine
PREF_MEASURES = ["-m", "rpp", "-m", "dcgrpp", "-m", "invrpp"]
GIB_MB = 1.5 * 2**30 / 1e6  # 1.5 GiB in MB (10^6 bytes)


@dataclass
class Collection:
    runs: int
    queries: int
    depth: int
    pool: int  # judged pool per query: candidates the runs rank
    judged_share: float = 0.25  # share of a pool's non-relevant documents judged
    copies: int = 0  # > 0: one big gzipped run (bench/big_run.py), `copies` x the template
    seed: int | None = None  # the generator's --seed (None: its default)
    judged_per_query: int | None = None  # the generator's --judged-per-query (depth pooling)
    grades: str | None = None  # the generator's --grades (shares of grades 0, 1, ...)
    one_query: bool = False  # one run of `depth` lines of one query (bench/one_query.py)

    @property
    def lines(self) -> int:
        return (self.copies or self.runs) * self.queries * self.depth

    def directory(self, name: str) -> str:
        """Its folder name under bench/data/ (every parameter that changes the files)."""
        share = "" if self.judged_share == 0.25 else f"-judged{self.judged_share:g}"
        big = f"-big{self.copies}" if self.copies else ""
        seed = "" if self.seed is None else f"-seed{self.seed}"
        per_query = "" if self.judged_per_query is None else f"-jq{self.judged_per_query}"
        grades = "" if self.grades is None else "-g" + "-".join(
            f"{float(s.split(':')[1]) * 100:g}" for s in self.grades.split(","))
        return (f"{name}-{self.runs}x{self.queries}x{self.depth}-p{self.pool}{share}{big}"
                f"{seed}{per_query}{grades}-{DOCNOS}")

    def generator(self) -> list[str]:
        """The command line (less --out) that writes the collection's files."""
        size = ["--queries", str(self.queries), "--depth", str(self.depth)]
        if self.one_query:
            return [str(HERE / "one_query.py"), "--lines", str(self.depth)]
        if self.copies:
            return [str(HERE / "big_run.py"), "--copies", str(self.copies), *size,
                    "--pool", str(self.pool)]
        extra = [*(["--seed", str(self.seed)] if self.seed is not None else []),
                 *(["--judged-per-query", str(self.judged_per_query)]
                   if self.judged_per_query is not None else []),
                 *(["--grades", self.grades] if self.grades is not None else [])]
        return [str(GENERATOR), "--runs", str(self.runs), "--docnos", DOCNOS,
                "--judged-share", str(self.judged_share), *size, "--pool", str(self.pool),
                *extra]


# Issue 36's grade spread of the unseen shapes: over half the judged documents not relevant.
DEEP_GRADES = "0:0.55,1:0.3,2:0.1,3:0.05"


COLLECTIONS = {
    # about 480 judged per query (a third of the pool of 1500): issue 18's "500-judged L"
    "L": Collection(40, 250, 1000, 1500),        # 10M run lines
    # the same runs, byte for byte; every document of the pool judged: 1500 per query
    "L-all-judged": Collection(40, 250, 1000, 1500, judged_share=1.0),
    "tall": Collection(5, 50_000, 100, 120),     # 25M run lines
    "wide": Collection(200, 50, 100, 400),       # 19,900 pairs
    # one gzipped run of 45M lines (2.1 GB decompressed): 100 copies of a 450-query run,
    # qids renamed Q_k; runs/run.gz and runs/bad.gz (one truncated line 1000 lines from the end)
    "big": Collection(1, 450, 1000, 1500, copies=100),
    # Issue 36's unseen shapes: the sizes of tall and L, generated independently of them
    # (another seed and pool), judged as depth pooling judges (the documents the runs rank
    # best, a fixed number per query) with grades 0-3 spread as DEEP_GRADES.
    # tall-deep: 90 judged per query, 4.5M qrels lines
    "tall-deep": Collection(5, 50_000, 100, 150, seed=36, judged_per_query=90,
                            grades=DEEP_GRADES),
    # L-deep: 500 judged per query
    "L-deep": Collection(40, 250, 1000, 2000, seed=36, judged_per_query=500,
                         grades=DEEP_GRADES),
    # one gzipped run of 45M lines of one query, every line the same (2.2 GB plain, 6.4 MB
    # gzipped): line 2 repeats line 1's docno
    "one-query": Collection(1, 1, 45_000_000, 0, one_query=True),
}


@dataclass
class Target:
    key: str      # what is measured (see Scenario.measure)
    op: str       # "<=" or ">="
    limit: float
    label: str


@dataclass
class Scenario:
    name: str
    collection: str
    args: list[str]
    targets: list[Target]
    naive: bool = False      # time bench/naive.py on the same input
    pref_eval: bool = False  # time diazf/pref_eval on the same input
    jobs1: bool = False      # time `rpp ... -j 1` too
    default: bool = True     # part of a plain `make bench`
    run_files: tuple[str, ...] = ()  # only these files of the collection's runs/ (by name)
    run_head: int = 0  # > 0: one run, the first `run_head` lines of the collection's first run
    stdin: bool = False      # the one run is given as `-`, its file on standard input
    expect_error: str | None = None  # rpp must exit 2 with this in its error line
    needs_gb: float = 0.0    # memory it needs: a plain `make bench` skips it on a smaller machine
    notes: list[str] = field(default_factory=list)


# Issue 18's targets for a 2-core machine (medians, side by side in one invocation).
SCENARIOS = [
    Scenario("L", "L", ["eval", "-q"], naive=True, targets=[
        Target("ratio_to_naive", "<=", 0.4, "time / naive.py time")]),
    Scenario("L-all-judged", "L-all-judged", ["eval", "-q"], naive=True, targets=[
        Target("ratio_to_naive", "<=", 0.4, "time / naive.py time")]),
    Scenario("L-pref", "L", ["eval", "-q", *PREF_MEASURES], pref_eval=True, jobs1=True, targets=[
        Target("speedup_vs_pref_eval", ">=", 40, "pref_eval time / time")], notes=[
        "pref_eval's values differ from rpp's on graded qrels: its RelevanceVector.vector(grade) "
        "caches the first grade's vector and returns it for every grade (with the cache keyed "
        "by grade, or on binary qrels, the two agree to 1e-12). It still loops over every "
        "grade and pair; a fixed cache would only make it slower."]),
    Scenario("tall", "tall", ["eval"], naive=True, jobs1=True, targets=[
        Target("ratio_to_naive", "<=", 0.5, "time / naive.py time"),
        Target("peak_mb", "<=", 1500, "peak memory (MB)")]),
    Scenario("wide", "wide", ["eval"], targets=[
        Target("seconds", "<=", 1.5, "time (s)")]),
    Scenario("big", "big", ["eval", "-m", "map"], run_files=("run.gz",), needs_gb=9,
             targets=[Target("peak_mb", "<=", GIB_MB, "peak memory (MB; 1.5 GiB)")]),
    Scenario("big-stdin", "big", ["eval", "-m", "map"], run_files=("run.gz",), stdin=True,
             needs_gb=9, targets=[Target("peak_mb", "<=", GIB_MB * 2, "peak memory (MB; 3 GiB)")],
             notes=["standard input cannot be read twice: the run is held whole (its docnos' "
                    "bytes and 10 bytes a row), then joined a batch of queries at a time; "
                    "the 3 GiB line is rpp's own, not issue 18's"]),
    Scenario("big-error", "big", ["eval", "-m", "map"], run_files=("bad.gz",), needs_gb=9,
             expect_error=":44999001: expected 5 or 6 fields", targets=[
        Target("peak_mb", "<=", GIB_MB, "peak memory (MB; 1.5 GiB)")], notes=[
        "the run's line 44,999,001 is cut after its rank: rpp reads to the end, then exits 2 "
        "naming that line"]),
    # Issue 36's targets on the unseen shapes (2-core machine, medians side by side).
    Scenario("tall-deep", "tall-deep", ["eval"], naive=True, targets=[
        Target("ratio_to_naive", "<=", 0.5, "time / naive.py time"),
        Target("peak_mb", "<=", 1500, "peak memory (MB)")]),
    Scenario("qrels-only", "tall-deep", ["eval", "-m", "map"], naive=True, run_head=100,
             targets=[Target("peak_mb", "<=", 400, "peak memory (MB)")],
             notes=["tall-deep's 4.5M qrels lines and a run of 100 lines: what reading the "
                    "qrels costs (naive.py's figure beside it: its dicts of the judgments)"]),
    Scenario("L-deep", "L-deep", ["eval", "-q"], naive=True, targets=[
        Target("ratio_to_naive", "<=", 0.4, "time / naive.py time")]),
    Scenario("L-deep-pref", "L-deep", ["eval", "-q", *PREF_MEASURES], pref_eval=True,
             targets=[Target("speedup_vs_pref_eval", ">=", 40, "pref_eval time / time")]),
    Scenario("one-query", "one-query", ["eval", "-m", "map"], run_files=("run.gz",),
             needs_gb=9, expect_error=":2: docno 'msmarco_passage_17_8812345' repeated",
             targets=[Target("peak_mb", "<=", GIB_MB, "peak memory (MB; 1.5 GiB)"),
                      Target("seconds", "<=", 5.0, "time to the error (s)")],
             notes=["45M lines of one query, each the same line: rpp exits 2 naming line 2"]),
    # -j 1 -> -j 2 (issue 36): what the serial part leaves of two cores (bench/serial.py
    # names its steps)
    Scenario("L-deep-j2", "L-deep", ["eval", "-q", "-j", "2"], jobs1=True, targets=[
        Target("jobs1_speedup", ">=", 1.85, "-j 1 time / -j 2 time")]),
    Scenario("tall-deep-j2", "tall-deep", ["eval", "-j", "2"], jobs1=True, targets=[
        Target("jobs1_speedup", ">=", 1.85, "-j 1 time / -j 2 time")]),
    # Not one of the current targets; kept from the earlier benchmark, run with --only hsd.
    Scenario("hsd", "L", ["compare", "--test", "hsd", "--permutations", "1000"], default=False,
             targets=[Target("seconds", "<=", 15.0, "time (s)")]),
]


# ---------------------------------------------------------------------------- collections

def head_run(path: Path, lines: int) -> Path:
    """A run of the first ``lines`` lines of ``path``, cached beside the collection's runs/."""
    out = path.parent.parent / f"head{lines}" / path.name
    if not out.exists():
        out.parent.mkdir(exist_ok=True)
        with open(path, "rb") as f:
            head = b"".join(f.readline() for _ in range(lines))
        out.write_bytes(head)
    return out


def collection(name: str) -> tuple[Path, list[Path]]:
    """The generated collection (cached in bench/data/<name>-...-mixed): qrels, run files."""
    c = COLLECTIONS[name]
    out = HERE / "data" / c.directory(name)
    if not (out / "done").exists():
        print(f"generating {out.name} ({c.lines:,} run lines) ...", file=sys.stderr, flush=True)
        start = time.perf_counter()
        # In a process of its own: the harness must stay small, as a child's ru_maxrss starts
        # from the high-water mark of the process that forked it (see timed()).
        subprocess.run([sys.executable, *c.generator(), "--out", str(out)], check=True)
        (out / "done").write_text("")
        print(f"  {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)
    return out / "qrels", sorted((out / "runs").iterdir())


# ---------------------------------------------------------------------------- measuring

def _children() -> dict[int, list[int]]:
    """ppid -> pids, from /proc (this kernel has no /proc/PID/task/TID/children)."""
    kids: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(b")") + 2:].split()[1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


def _tree(root: int) -> list[int]:
    kids, pids = _children(), [root]
    for pid in pids:
        pids.extend(kids.get(pid, ()))
    return pids


def _pss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class TreeSampler(threading.Thread):
    """Peak sum of PSS over a process tree, sampled while it has more than one process.

    A lone process is left alone (the kernel's ru_maxrss is exact for it and smaps_rollup costs
    ~20 us per MB mapped); the tree is looked up every 0.1 s, PSS read at most every 0.5 s.
    """

    def __init__(self, root: int):
        super().__init__(daemon=True)
        self.root, self.peak_kb, self.samples = root, 0, 0
        self.done = threading.Event()

    def run(self) -> None:
        last = 0.0
        while not self.done.wait(0.1):
            pids = _tree(self.root)
            if len(pids) < 2 or time.monotonic() - last < 0.5:
                continue
            last = time.monotonic()
            self.peak_kb = max(self.peak_kb, sum(_pss_kb(p) for p in pids))
            self.samples += 1


def harness_rss_mb() -> float:
    """This process's own peak RSS: a floor under every child's ru_maxrss (Linux carries the
    forking process's high-water mark over fork and exec), so peaks at or below it are not
    the command's own."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / 1e6


def cpu_ticks() -> tuple[int, int]:
    """(busy, steal) ticks of all CPUs so far (/proc/stat): steal is time the hypervisor gave
    this VM's virtual CPUs to someone else, a cause of noise the harness cannot remove."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    return sum(fields[:3]) + sum(fields[5:7]), fields[7] if len(fields) > 7 else 0


def cached_bytecode(env: dict | None) -> dict:
    """``env`` (default: this process's) without PYTHONDONTWRITEBYTECODE: commands run as an
    installed rpp does, from cached byte-code. The machines here set it, so an editable rpp
    would compile its modules at every start (0.06 s on this VM, 0.4 s on the lent 16-core
    machines), and each of a Dask cluster's workers too; the first run writes the cache."""
    return {k: v for k, v in (os.environ if env is None else env).items()
            if k != "PYTHONDONTWRITEBYTECODE"}


def timed(cmd: list[str], timeout: float | None = None, env: dict | None = None,
          stdin: str | None = None) -> dict:
    """One process: wall seconds, memory, exit status; stdout discarded, stderr kept (tail);
    ``stdin``: a file to give it on standard input; byte-code cached (:func:`cached_bytecode`)."""
    env = cached_bytecode(env)
    with tempfile.TemporaryFile() as err, \
            open(stdin or os.devnull, "rb") as given:
        busy0, steal0 = cpu_ticks()
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=given, stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True, env=env)
        sampler = TreeSampler(proc.pid)
        sampler.start()
        killed = threading.Event()

        def kill() -> None:
            killed.set()
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: rpp and its workers
            except ProcessLookupError:
                pass

        timer = threading.Timer(timeout, kill) if timeout else None
        if timer:
            timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # Ctrl-C does not reach a child in its own session: stop it
            kill()
            os.wait4(proc.pid, 0)
            raise
        wall = time.perf_counter() - start
        busy1, steal1 = cpu_ticks()
        proc.returncode = os.waitstatus_to_exitcode(status)  # reaped: keep Popen from waiting
        if timer:
            timer.cancel()
        sampler.done.set()
        sampler.join()
        err.seek(0)
        tail = err.read()[-2000:].decode(errors="replace")
    rss = usage.ru_maxrss * 1024 / 1e6
    pss = sampler.peak_kb * 1024 / 1e6
    return {"seconds": wall, "peak_rss_mb": rss, "tree_pss_mb": pss if sampler.samples else None,
            "peak_mb": max(rss, pss), "rss_at_harness_floor": rss <= harness_rss_mb(),
            "code": proc.returncode, "timed_out": killed.is_set(), "stderr": tail,
            "machine_busy_s": (busy1 - busy0) / HZ, "steal_s": (steal1 - steal0) / HZ,
            "cpu_s": (usage.ru_utime + usage.ru_stime)}


@dataclass
class Command:
    label: str
    argv: list[str]
    repeat: int
    timeout: float | None = None
    env: dict | None = None
    expect_error: str | None = None  # success is exit status 2 with this in stderr
    stdin: str | None = None  # a file given on standard input
    results: list[dict] = field(default_factory=list)

    def succeeded(self, r: dict) -> bool:
        """Whether run ``r`` ended as expected: exit 0, or the expected error."""
        if r["timed_out"]:
            return False
        if self.expect_error is None:
            return r["code"] == 0
        return r["code"] == 2 and self.expect_error in r["stderr"]

    def shown(self) -> str:
        """The command line with the collection's file names abbreviated."""
        words = [w for w in self.argv if not w.startswith(str(HERE / "data"))]
        n = sum(1 for w in self.argv if w.startswith(str(HERE / "data"))) - 1
        words = [w.replace(str(ROOT) + "/", "") for w in words]
        if n < 0:  # no collection (bench/ceiling.py)
            return shlex.join(words)
        if self.stdin:  # ... QRELS - < RUN
            words.insert(words.index("-"), "QRELS")
            return shlex.join(words) + " < RUN"
        qrels = words.index("-R") + 1 if "-R" in words else len(words)
        words.insert(qrels, "QRELS")
        return shlex.join(words) + f" RUN x{n}"

    def summary(self) -> dict:
        ok = [r for r in self.results if self.succeeded(r)]
        row = {"command": self.shown(), "runs": len(self.results)}
        if not ok:
            last = self.results[-1] if self.results else {}
            row["error"] = ("timed out after %.0f s" % last["seconds"] if last.get("timed_out")
                            else f"exit status {last.get('code')}: {last.get('stderr', '')[-600:]}")
            row["seconds_lower_bound"] = last.get("seconds")
            row["peak_mb"] = last.get("peak_mb")
            return row
        row.update(seconds=statistics.median(r["seconds"] for r in ok),
                   all_seconds=[round(r["seconds"], 3) for r in ok],
                   # CPU time of the command and its children, of the whole machine, and
                   # stolen by the hypervisor, per run: to tell rpp's variance from noise
                   cpu_seconds=[round(r["cpu_s"], 2) for r in ok],
                   machine_busy_seconds=[round(r["machine_busy_s"], 2) for r in ok],
                   steal_seconds=[round(r["steal_s"], 2) for r in ok],
                   other_load=[round(max(0.0, r["machine_busy_s"] + r["steal_s"] - r["cpu_s"])
                                     / (r["seconds"] * (os.cpu_count() or 1)), 3) for r in ok],
                   peak_rss_mb=max(r["peak_rss_mb"] for r in ok),
                   tree_pss_mb=max((r["tree_pss_mb"] or 0 for r in ok), default=0) or None,
                   peak_mb=max(r["peak_mb"] for r in ok))
        if any(r["rss_at_harness_floor"] for r in ok):
            row["peak_rss_note"] = ("at or below the harness's own peak RSS, which Linux carries "
                                    "over to children: the command's true peak may be lower")
        return row


def warm(paths: list[str]) -> None:
    """Read the input files so every run starts with them in the page cache: this VM evicts
    cold file pages (seen: a collection read a minute earlier ~60% evicted, 22 GB free), which
    made first runs up to 40% slower."""
    buf = bytearray(1 << 20)
    for path in paths:
        with open(path, "rb", buffering=0) as f:
            while f.readinto(buf):
                pass


def run_interleaved(commands: list[Command], budget: float, inputs: list[str]) -> None:
    """Round-robin over the commands until each has run `repeat` times or used `budget` s;
    the inputs are read into the page cache before each run."""
    for i in range(max(c.repeat for c in commands)):
        for c in commands:
            spent = sum(r["seconds"] for r in c.results)
            if i >= c.repeat or (i > 0 and budget and spent >= budget):
                continue
            if c.results and not c.succeeded(c.results[-1]):
                continue  # a failure or a timeout is not repeated
            print(f"  {c.label:<14} run {i + 1} ...", end="", file=sys.stderr, flush=True)
            warm(inputs)
            r = timed(c.argv, c.timeout, c.env, c.stdin)
            c.results.append(r)
            state = ("TIMEOUT" if r["timed_out"] else f"{r['peak_mb']:.0f} MB"
                     if c.succeeded(r) else f"FAILED ({r['code']})")
            print(f" {r['seconds']:.2f} s, {state}", file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------- scenarios

def run_scenario(sc: Scenario, args: argparse.Namespace) -> dict:
    qrels, runs = collection(sc.collection)
    if sc.run_files:
        runs = [r for r in runs if r.name in sc.run_files]
    if sc.run_head:
        runs = [head_run(runs[0], sc.run_head)]
    files = [str(qrels), *map(str, runs)]
    stdin = None
    if sc.stdin:  # the one run from standard input
        stdin, files = files[1], [files[0], "-"]
    rpp = Command("rpp", [*args.rpp, *sc.args, *files], args.repeat,
                  expect_error=sc.expect_error, stdin=stdin)
    commands = [rpp]
    j1 = naive = ref = None
    base_env = {**os.environ, "PYTHONUTF8": "1"}  # baselines read the UTF-8 docnos as UTF-8
    if sc.jobs1:
        j1 = Command("rpp -j 1", [*args.rpp, *sc.args, "-j", "1", *files], args.repeat)
        jobs = sc.args[sc.args.index("-j") + 1]
        ceiling = (Command("ceiling 1", [sys.executable, str(HERE / "ceiling.py"), "1"],
                           args.repeat),
                   Command(f"ceiling {jobs}", [sys.executable, str(HERE / "ceiling.py"), jobs],
                           args.repeat))
        commands += [j1, *ceiling]
    if sc.naive and not args.no_baselines:
        naive = Command("naive.py", [sys.executable, str(HERE / "naive.py"), *files],
                        args.baseline_repeat, env=base_env)
        commands.append(naive)
    ref_runs = runs
    if sc.pref_eval and args.pref_eval and not args.no_baselines:
        if args.pref_eval_runs:
            ref_runs = runs[:args.pref_eval_runs]
        ref = Command("pref_eval", [sys.executable, args.pref_eval, "-R", str(qrels),
                                    *PREF_MEASURES, *map(str, ref_runs)],
                      args.baseline_repeat, timeout=args.pref_eval_timeout, env=base_env)
        commands.append(ref)
    print(f"{sc.name}: rpp {' '.join(sc.args)} on {sc.collection} "
          f"({len(runs)} runs)", file=sys.stderr, flush=True)
    inputs = [f for f in files if f != "-"] + ([stdin] if stdin else [])
    run_interleaved(commands, args.budget, inputs)

    row: dict = {"collection": sc.collection, "rpp_args": " ".join(sc.args),
                 "timings": {c.label: c.summary() for c in commands}, "notes": list(sc.notes)}
    main = row["timings"]["rpp"]
    measured: dict[str, tuple[float | None, str | None]] = {}  # key -> (value, basis)
    t = main.get("seconds")
    measured["seconds"] = (t, None)
    measured["peak_mb"] = (main.get("peak_mb") if t is not None else None, None)
    if j1:
        t1 = row["timings"]["rpp -j 1"].get("seconds")
        measured["ratio_to_jobs1"] = (t / t1 if t and t1 else None, None)
        measured["jobs1_speedup"] = (t1 / t if t and t1 else None, None)
        c1, cn = (row["timings"][c.label].get("seconds") for c in ceiling)
        copies = int(ceiling[1].argv[-1])
        if c1 and cn and t and t1:
            machine = copies * c1 / cn
            row["notes"].append(f"this machine gives {copies} copies of a CPU job that shares "
                                f"nothing {machine:.2f}x (bench/ceiling.py, interleaved with "
                                f"rpp): rpp's {t1 / t:.2f}x is {t1 / t / machine:.0%} of it")
    if sc.naive:
        tn = row["timings"].get("naive.py", {}).get("seconds")
        measured["ratio_to_naive"] = (t / tn if t and tn else None, None)
    if sc.pref_eval:
        measured["speedup_vs_pref_eval"] = pref_eval_speedup(row, ref, t, len(runs),
                                                             len(ref_runs), args)
    spread = spreads(row["timings"], len(ref_runs) == len(runs))
    row["targets"] = []
    for target in sc.targets:
        value, basis = measured.get(target.key, (None, None))
        if isinstance(value, tuple):  # (lower, upper) bounds
            low, high = value
            met = (low >= target.limit if target.op == ">=" else high <= target.limit)
            if not met and (high >= target.limit if target.op == ">=" else low <= target.limit):
                met = None  # the bounds straddle the limit: undetermined
            value = low
        elif value is None:
            met = None
        else:
            met = value <= target.limit if target.op == "<=" else value >= target.limit
        lo_hi = spread.get(target.key)
        row["targets"].append({"key": target.key, "label": target.label, "op": target.op,
                               "limit": target.limit, "measured": value, "basis": basis,
                               "met": met, "range_over_runs": lo_hi,
                               "within_spread": bool(lo_hi and met is not None
                                                     and lo_hi[0] <= target.limit <= lo_hi[1])})
    return row


def spreads(timings: dict, ref_all_runs: bool) -> dict[str, list[float]]:
    """[min, max] of each time-based measure over every combination of the single runs: a
    target inside it is decided by noise (one run each: no spread, nothing flagged)."""
    def runs(label: str) -> list[float]:
        return timings.get(label, {}).get("all_seconds") or []
    rpp, out = runs("rpp"), {}
    if rpp:
        out["seconds"] = [min(rpp), max(rpp)]
    for key, label, rpp_over in (("ratio_to_jobs1", "rpp -j 1", True),
                                 ("jobs1_speedup", "rpp -j 1", False),
                                 ("ratio_to_naive", "naive.py", True),
                                 ("speedup_vs_pref_eval", "pref_eval", False)):
        other = runs(label)
        if not (rpp and other) or (key == "speedup_vs_pref_eval" and not ref_all_runs):
            continue
        values = [a / b if rpp_over else b / a for a in rpp for b in other]
        out[key] = [round(min(values), 3), round(max(values), 3)]
    return out


def pref_eval_speedup(row: dict, ref: Command | None, t: float | None, n_all: int, n_ref: int,
                      args: argparse.Namespace):
    """(value or (lower, upper), basis) of pref_eval time / rpp time on all runs."""
    if ref is None:
        row["notes"].append("pref_eval not timed: give --pref-eval PATH or PREF_EVAL=PATH"
                            if not args.pref_eval else "pref_eval not timed (--no-baselines)")
        return None, "not measured"
    s = row["timings"]["pref_eval"]
    if not t:
        return None, "rpp failed"
    pairs = lambda n: n * (n - 1) / 2  # noqa: E731
    if "seconds" in s:
        tr = s["seconds"]
        if n_ref == n_all:
            return tr / t, f"measured: pref_eval on all {n_all} runs"
        low, high = tr * n_all / n_ref, tr * pairs(n_all) / pairs(n_ref)
        s["estimated_all_runs_seconds"] = [round(low, 1), round(high, 1)]
        return ((low / t, high / t),
                f"estimated: pref_eval on {n_ref} of {n_all} runs ({tr:.1f} s), scaled x"
                f"{n_all / n_ref:g} (runs, lower bound) to x{pairs(n_all) / pairs(n_ref):g} "
                f"(pairs, upper bound)")
    if s.get("seconds_lower_bound") and "timed out" in s.get("error", ""):
        lb = s["seconds_lower_bound"]
        if n_ref != n_all:
            lb *= n_all / n_ref
        return ((lb / t, float("inf")),
                f"lower bound: pref_eval timed out after {s['seconds_lower_bound']:.0f} s "
                f"on {n_ref} of {n_all} runs")
    return None, "pref_eval failed"


# ---------------------------------------------------------------------------- report

def fmt_value(key: str, value) -> str:
    if value is None:
        return "-"
    if key == "speedup_vs_pref_eval":
        return f"{value:.1f}x"
    if key == "jobs1_speedup":
        return f"{value:.2f}x"
    if key == "peak_mb":
        return f"{value:.0f}"
    return f"{value:.2f}"


def print_report(report: dict) -> None:
    out = sys.stdout
    out.write("\ncommand timings (median wall s over `runs`; peak MB = max(largest process RSS, "
              "sampled sum of PSS))\n")
    out.write(f"{'scenario':<12}  {'command':<10}  {'runs':>4}  {'median s':>9}  {'peak MB':>8}"
              f"  all runs (s) / error\n")
    for name, row in report["scenarios"].items():
        for label, s in row["timings"].items():
            secs = f"{s['seconds']:9.2f}" if "seconds" in s else f"{'-':>9}"
            peak = (f"{s['peak_mb']:7.0f}" + ("*" if "peak_rss_note" in s else " ")
                    if s.get("peak_mb") else f"{'-':>8}")
            extra = (" ".join(f"{x:.2f}" for x in s["all_seconds"]) if "all_seconds" in s
                     else s.get("error", "").splitlines()[-1:][0] if s.get("error") else "")
            if "estimated_all_runs_seconds" in s:
                extra += " (all runs est. %s-%s s)" % tuple(s["estimated_all_runs_seconds"])
            out.write(f"{name:<12}  {label:<10}  {s['runs']:>4}  {secs}  {peak}  {extra[:70]}\n")
    if any("peak_rss_note" in s for row in report["scenarios"].values()
           for s in row["timings"].values()):
        out.write(f"* at or below the harness's own peak RSS "
                  f"({report['machine']['harness_peak_rss_mb']:.0f} MB), which Linux carries "
                  "over to children: an upper bound\n")
    busy = [f"{name} {label} run {i + 1} ({load:.0%})"
            for name, row in report["scenarios"].items() for label, s in row["timings"].items()
            for i, load in enumerate(s.get("other_load", [])) if load > OTHER_LOAD]
    if busy:
        out.write("runs during which something else used more than "
                  f"{OTHER_LOAD:.0%} of the machine (other processes, hypervisor steal): "
                  + ", ".join(busy) + "\n")
    out.write("\ntargets\n")
    out.write(f"{'scenario':<12}  {'measure':<24}  {'target':>10}  {'measured':>9}  result\n")
    for name, row in report["scenarios"].items():
        for tg in row["targets"]:
            result = {True: "met", False: "MISSED", None: "not determined"}[tg["met"]]
            value = fmt_value(tg["key"], tg["measured"])
            if tg["key"] == "speedup_vs_pref_eval" and tg["basis"] and \
                    not tg["basis"].startswith("measured"):
                value = ">= " + value
            if tg["within_spread"]:
                lo, hi = tg["range_over_runs"]
                result += f" (within run-to-run spread {fmt_value(tg['key'], lo)}-" \
                          f"{fmt_value(tg['key'], hi)}: noise decides)"
            out.write(f"{name:<12}  {tg['label']:<24}  {tg['op']} {tg['limit']:<7g}  "
                      f"{value:>9}  {result}\n")
            if tg["basis"]:
                out.write(f"{'':<14}({tg['basis']})\n")
        for note in row["notes"]:
            out.write(f"{'':<14}note: {note}\n")


# ---------------------------------------------------------------------------- main

# rpp ends with os._exit (its exit flushes and closes what it must itself), which skips
# ``python -m cProfile``'s dump: the profile is written on the way out instead.
PROFILED = """import cProfile, os, sys
stats = sys.argv.pop(1)
profile = cProfile.Profile()
end = os._exit
def dump_and_end(code):
    profile.disable()
    profile.dump_stats(stats)
    end(code)
os._exit = dump_and_end
sys.argv[0] = "rpp"
from rpp_cli.__main__ import run
profile.enable()
try:
    run()
finally:
    dump_and_end(0)
"""


def profile(args: list[str], top: int = 15) -> str:
    """Where the time goes: cProfile of one single-process run, the costliest functions.

    Profiles rpp_cli in ``python -P`` of this interpreter: the installed rpp_cli, or the one
    PYTHONPATH points at (-P: not one in the current directory).
    """
    with tempfile.TemporaryDirectory() as tmp:
        stats = os.path.join(tmp, "prof")
        subprocess.run([sys.executable, "-P", "-c", PROFILED, stats, *args],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if not os.path.exists(stats):
            return "    (profile failed)"
        buf = io.StringIO()
        pstats.Stats(stats, stream=buf).sort_stats("tottime").print_stats(top)
    text = buf.getvalue()
    lines = [line for line in text[text.find("   Ordered by"):].splitlines() if line.strip()]
    return "\n".join("    " + line[:110] for line in lines[:top + 2])


def machine_memory_gb() -> float:
    """The machine's memory in GB (10^9 bytes), from sysconf; infinite when unknown."""
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") / 1e9
    except (ValueError, OSError, AttributeError):
        return float("inf")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="\n".join(__doc__.splitlines()[2:]))
    names = [s.name for s in SCENARIOS]
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="run only this scenario (repeatable or comma-separated; one of "
                             f"{', '.join(names)}). Default: all but "
                             + ", ".join(s.name for s in SCENARIOS if not s.default))
    parser.add_argument("--scenarios", help=argparse.SUPPRESS)  # old spelling of --only
    parser.add_argument("--repeat", type=int, default=3,
                        help="runs of each rpp command (default 3), within --budget")
    parser.add_argument("--budget", type=float, default=45.0,
                        help="stop repeating a command once it has used this many seconds "
                             "(default 45; 0: no limit)")
    parser.add_argument("--baseline-repeat", type=int, default=1,
                        help="runs of naive.py and pref_eval (default 1)")
    parser.add_argument("--pref-eval", default=os.environ.get("PREF_EVAL"),
                        help="path to diazf/pref_eval's pref_eval.py (default: $PREF_EVAL)")
    parser.add_argument("--pref-eval-runs", type=int, default=None, metavar="K",
                        help="time pref_eval on the first K runs only and scale (default: all)")
    parser.add_argument("--pref-eval-timeout", type=float, default=900.0,
                        help="seconds before pref_eval is stopped; the speedup is then a lower "
                             "bound (default 900)")
    parser.add_argument("--no-baselines", action="store_true",
                        help="time rpp only (targets against baselines: not determined)")
    parser.add_argument("--rpp", default=str(Path(sys.executable).parent / "rpp"),
                        help="the rpp command, split like a shell line (default: this venv's "
                             "rpp; e.g. 'python -P -m rpp_cli' with PYTHONPATH=/some/copy)")
    parser.add_argument("--no-profile", action="store_true",
                        help="do not profile the scenarios that miss a time target")
    parser.add_argument("--output", default=str(HERE / "results.json"))
    args = parser.parse_args()
    args.rpp = shlex.split(args.rpp)
    if args.pref_eval:
        args.pref_eval = str(Path(args.pref_eval).expanduser().resolve())
        if not Path(args.pref_eval).is_file():
            parser.error(f"--pref-eval: no such file {args.pref_eval}")
    wanted = [n for spec in (args.only or []) + ([args.scenarios] if args.scenarios else [])
              for n in spec.split(",") if n]
    unknown = sorted(set(wanted) - set(names))
    if unknown:
        parser.error(f"unknown scenario(s) {', '.join(unknown)}; choose from {', '.join(names)}")
    selected = [s for s in SCENARIOS if (s.name in wanted if wanted else s.default)]
    if not wanted:  # a plain run leaves out what this machine's memory cannot hold
        memory = machine_memory_gb()
        for s in [s for s in selected if s.needs_gb > memory]:
            print(f"skipping {s.name}: it needs about {s.needs_gb:g} GB of memory, this "
                  f"machine has {memory:.0f} GB (--only {s.name} runs it anyway)",
                  file=sys.stderr)
            selected.remove(s)

    report = {
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0],
                    "platform": platform.platform(), "load_avg_at_start": os.getloadavg()},
        "settings": {"rpp": shlex.join(args.rpp), "pythonpath": os.environ.get("PYTHONPATH"),
                     "repeat": args.repeat, "budget_s": args.budget,
                     "baseline_repeat": args.baseline_repeat, "pref_eval": args.pref_eval,
                     "pref_eval_runs": args.pref_eval_runs,
                     "pref_eval_timeout_s": args.pref_eval_timeout, "docnos": DOCNOS,
                     "memory": "peak_mb = max(kernel peak RSS of the largest process, sampled "
                               "sum of PSS over the process tree); MB = 10^6 bytes"},
        "collections": {n: {**vars(c), "run_lines": c.lines} for n, c in COLLECTIONS.items()
                        if any(s.collection == n for s in selected)},
        "scenarios": {},
    }
    started = time.perf_counter()
    for sc in selected:
        row = run_scenario(sc, args)
        report["scenarios"][sc.name] = row
        slow = any(tg["met"] is False and tg["key"] in ("seconds", "ratio_to_naive",
                                                        "speedup_vs_pref_eval")
                   for tg in row["targets"])
        if slow and not args.no_profile:
            qrels, runs = collection(sc.collection)
            print(f"  profiling {sc.name} (-j 1) ...", file=sys.stderr, flush=True)
            row["profile"] = profile([*sc.args, "-j", "1", str(qrels), *map(str, runs)])
        Path(args.output).write_text(json.dumps(report, indent=2) + "\n")  # partial results
    report["total_seconds"] = time.perf_counter() - started
    report["machine"]["load_avg_at_end"] = os.getloadavg()
    report["machine"]["harness_peak_rss_mb"] = harness_rss_mb()
    print_report(report)
    for name, row in report["scenarios"].items():
        if "profile" in row:
            print(f"\nprofile of {name} (cProfile, -j 1, by own time):\n{row['profile']}")
    Path(args.output).write_text(json.dumps(report, indent=2) + "\n")
    print(f"\nwrote {args.output} ({report['total_seconds']:.0f} s)")


if __name__ == "__main__":
    main()

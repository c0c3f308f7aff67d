"""Hostile surroundings: stderr closed or failing, full disks, odd environment values and
options, mistakes found late. rpp keeps its results and exit status without stderr, writes
files whole or not at all, checks every output path before any work, and turns every odd
setting into one line and exit status 2."""
from __future__ import annotations

import errno
import json
import os
import resource
import stat
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from rpp_cli.errors import InputError
from rpp_cli.report import files
from rpp_cli.streams import Forgiving

from ..conftest import DEMO, rpp
from ..realistic import generate, write_collection

RPP = [sys.executable, "-m", "rpp_cli"]
QRELS = str(DEMO / "qrels")
SUBTOPICS = str(DEMO / "qrels.subtopics")
BM25, DPR, MONOT5, SPLADE = (str(DEMO / "runs" / n) for n in ("bm25", "dpr", "monot5", "splade"))

# One call of every command (and of the group's own options), as an operator would type it.
COMMANDS = {
    "eval": ["eval", "-q", QRELS, BM25, DPR, MONOT5],
    "eval-one-run": ["eval", "-m", "map", QRELS, BM25],
    "compare": ["compare", "--permutations", "200", QRELS, BM25, DPR],
    "check-pass": ["check", QRELS, "--baseline", BM25, MONOT5],
    "check-fail": ["check", QRELS, "--baseline", MONOT5, BM25, "--format", "jsonl"],
    "meta": ["meta", "--samples", "30", "--permutations", "100", "-m", "rpp", "-m", "map",
             QRELS, BM25, DPR, MONOT5],
    "levels": ["levels", QRELS, BM25, DPR],
    "ndeval": ["ndeval", SUBTOPICS, BM25],
    "trec-eval": ["trec-eval", "-q", "-c", QRELS, BM25],  # (10.0 stops on bm25 without -c)
    "measures": ["measures"],
    "version": ["--version"],
    "help": ["eval", "--help"],
    "bad-input": ["eval", QRELS, "/nonexistent/run"],
}


def _closed_stderr() -> None:
    os.close(2)


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    kwargs.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(RPP + args, stdout=subprocess.PIPE, timeout=120, **kwargs)


# ---------------------------------------------------------------------------------------------
# stderr closed, full or gone

@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_works_with_stderr_closed(name):
    """``2>&-``: the same stdout and exit status as with stderr open, no traceback anywhere
    (before: a traceback on stdout and exit 1, "regression found" for rpp check)."""
    args = COMMANDS[name]
    expected = _run(args)
    closed = _run(args, stderr=None, preexec_fn=_closed_stderr)
    assert closed.returncode == expected.returncode == (
        2 if name == "bad-input" else 1 if name == "check-fail" else 0), expected.stderr
    assert closed.stdout == expected.stdout
    assert b"Traceback" not in closed.stdout


@pytest.mark.slow
def test_stderr_closed_through_the_shell():
    """The same through sh's own ``2>&-``: a failed check is still 1, its evidence on stdout."""
    cmd = " ".join(["exec", *RPP, "check", QRELS, "--baseline", MONOT5, BM25, "2>&-"])
    res = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and res.stdout.startswith("rpp                   \tall\tbm25\t")


@pytest.mark.slow
def test_realistic_collection_with_stderr_closed(tmp_path):
    """Realistic files (ugly bytes, gzip, string qids): identical results without stderr."""
    qrels, runs = write_collection(generate(7), tmp_path, "ugly")
    args = ["eval", "-q", str(qrels), *map(str, runs)]
    for i in range(len(runs)):
        args += ["--name", f"sys{i}"]
    expected = _run(args)
    assert expected.returncode == 0
    closed = _run(args, stderr=None, preexec_fn=_closed_stderr)
    assert (closed.returncode, closed.stdout) == (0, expected.stdout)


@pytest.mark.slow
def test_stderr_on_a_full_disk_or_a_gone_reader():
    """``2>/dev/full`` and a stderr pipe whose reader has gone: notes and verdict lines are
    lost, stdout and the status (1: a failed check) are not, and no 141 for stdout's sake."""
    args = COMMANDS["check-fail"]
    expected = _run(args)
    with open("/dev/full", "w") as full:
        res = _run(args, stderr=full)
    assert (res.returncode, res.stdout) == (1, expected.stdout)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        res = _run(args, stderr=write_end)
    finally:
        os.close(write_end)
    assert (res.returncode, res.stdout) == (1, expected.stdout)


def test_fd_2_closed_at_start_is_never_reused():
    """With fd 2 closed, the next file opened would get descriptor 2 and receive whatever C
    code writes to 'stderr': guard_stderr puts /dev/null there first."""
    code = ("import os; from rpp_cli.streams import guard_stderr; guard_stderr(); "
            "import sys; sys.stderr.write('dropped'); print(os.readlink('/proc/self/fd/2'))")
    res = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True,
                         preexec_fn=_closed_stderr, timeout=60)
    assert (res.returncode, res.stdout) == (0, os.devnull + "\n")


class _Broken:
    """A text stream whose writes fail as a full disk's do."""

    encoding = "utf-8"

    def __init__(self) -> None:
        self.calls = 0

    def write(self, text: str) -> int:
        self.calls += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def isatty(self) -> bool:
        return True

    def fileno(self) -> int:
        return 99  # not the process's fd 2: nothing to redirect


def test_forgiving_stream_drops_everything_after_a_failure():
    broken = _Broken()
    stream = Forgiving(broken)
    assert stream.isatty() and stream.encoding == "utf-8"
    assert stream.write("rpp: note: one\n") == len("rpp: note: one\n")
    assert stream.lost and not stream.isatty()  # no progress bar drawn into a lost stream
    stream.write("rpp: note: two\n")
    stream.flush()
    assert broken.calls == 1  # nothing more was tried


def test_forgiving_stream_passes_text_and_type_errors_through(capsys):
    stream = Forgiving(sys.stderr)
    stream.write("rpp: note: kept\n")
    assert capsys.readouterr().err == "rpp: note: kept\n"
    with pytest.raises(TypeError):  # click probes text streams with write(b"")
        stream.write(b"")


# ---------------------------------------------------------------------------------------------
# files written whole or not at all

def _limit_file_size(limit: int):
    """preexec_fn: every file this process writes stops at ``limit`` bytes (EFBIG after), a
    real write failure from the kernel that needs no privilege (Python ignores SIGXFSZ)."""
    return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _full_filesystem(tmp_path: Path) -> tuple[Path, object]:
    """A directory where writing a plot fails mid-way: a 64 KiB tmpfs filled to its last
    4 KiB when this process may mount one (root), else a 4 KiB file-size limit on rpp. The
    fake-writer test below covers the same rule in any environment."""
    mount = tmp_path / "full"
    mount.mkdir()
    if os.geteuid() == 0 and subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)],
            capture_output=True).returncode == 0:
        try:
            with open(mount / "filler", "wb") as filler:
                filler.write(b"\0" * (60 << 10))
        except OSError:
            pass  # the filesystem is full already
        return mount, None
    return mount, _limit_file_size(4096)


@pytest.fixture
def full_dir(tmp_path):
    where, preexec = _full_filesystem(tmp_path)
    yield where, preexec
    if os.path.ismount(where):
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.slow
@pytest.mark.parametrize("ext", ["svg", "png", "pdf"])
def test_full_filesystem_leaves_no_half_plot(full_dir, ext):
    """The plot fails mid-way: exit 2 and one line, the existing file under the requested
    name untouched, no temporary file left beside it."""
    where, preexec = full_dir
    target = where / f"rpp.{ext}"
    target.write_bytes(b"the previous plot")
    before = sorted(os.listdir(where))
    res = _run(["eval", "--plot", str(target), QRELS, BM25, DPR, MONOT5, SPLADE],
               preexec_fn=preexec)
    err = res.stderr.decode()
    assert res.returncode == 2 and res.stdout == b""
    assert err.splitlines()[-1] in (f"rpp: {target}: cannot write the plot: File too large",
                                    f"rpp: {target}: cannot write the plot: No space left on "
                                    "device")
    assert "Traceback" not in err
    assert target.read_bytes() == b"the previous plot"
    assert sorted(os.listdir(where)) == before


def test_a_writer_failing_mid_way_leaves_nothing(tmp_path, monkeypatch):
    """A fake savefig that writes half an image, then hits a full disk: the requested name
    keeps its old content, the half image is removed, one line, exit 2."""
    from matplotlib.figure import Figure

    def half_then_full(self, out, **kwargs):
        out.write(b"<svg half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", half_then_full)
    target = tmp_path / "rpp.svg"
    target.write_text("old")
    res = rpp("eval", "--plot", target, QRELS, BM25, DPR)
    assert (res.code, res.out) == (2, "")
    assert res.err.splitlines()[-1] == f"rpp: {target}: cannot write the plot: No space left on " \
                                       "device"
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["rpp.svg"]


def test_a_new_plot_appears_only_when_whole(tmp_path, monkeypatch):
    """While savefig writes, the requested name does not exist yet (the bytes go to a hidden
    file beside it); afterwards it holds all of them and nothing else is left."""
    from matplotlib.figure import Figure

    target = tmp_path / "rpp.svg"
    seen = []

    def write(self, out, **kwargs):
        out.write(b"<svg/>")
        seen.append((target.exists(), sorted(os.listdir(tmp_path))))

    monkeypatch.setattr(Figure, "savefig", write)
    assert rpp("eval", "--plot", target, QRELS, BM25, DPR).code == 0
    (exists, listing), = seen
    assert not exists and len(listing) == 1 and listing[0].startswith(".rpp.svg.")
    assert target.read_bytes() == b"<svg/>" and os.listdir(tmp_path) == ["rpp.svg"]


def test_replaced_file_keeps_its_permissions_and_links(tmp_path):
    """An existing file keeps its mode; a new one gets what open() gives under the umask; a
    symbolic link stays a link and its target gets the bytes."""
    old = tmp_path / "old.svg"
    old.write_text("x")
    old.chmod(0o640)
    with files.replaced_whole(str(old), "the plot") as out:
        out.write(b"new")
    assert old.read_bytes() == b"new" and stat.S_IMODE(old.stat().st_mode) == 0o640
    mask = os.umask(0o027)
    try:
        with files.replaced_whole(str(tmp_path / "new.svg"), "the plot") as out:
            out.write(b"n")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o640
    link = tmp_path / "link.svg"
    link.symlink_to(old)
    with files.replaced_whole(str(link), "the plot") as out:
        out.write(b"through the link")
    assert link.is_symlink() and old.read_bytes() == b"through the link"


def test_a_fifo_is_written_in_place(tmp_path):
    """A FIFO (or a device) has no content to protect: written directly, never replaced."""
    fifo = tmp_path / "plot.svg"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_bytes()))
    reader.start()
    files.check_writable(str(fifo), "the plot")
    with files.replaced_whole(str(fifo), "the plot") as out:
        out.write(b"<svg/>")
    reader.join(30)
    assert got == [b"<svg/>"] and stat.S_ISFIFO(fifo.stat().st_mode)


@pytest.mark.slow
def test_step_summary_append_is_whole_or_cut_back(tmp_path):
    """$GITHUB_STEP_SUMMARY on a disk that fills mid-append: the file is cut back to what
    earlier steps wrote (no half table), exit 2 with one line."""
    summary = tmp_path / "summary.md"
    earlier = "earlier step\n" * 300  # 3,900 bytes: the 4,096-byte limit falls in the table
    summary.write_text(earlier)
    env = {**os.environ, "GITHUB_STEP_SUMMARY": str(summary)}
    res = _run(["check", QRELS, "--baseline", MONOT5, BM25, DPR, "--max-drop", "map=0.01"],
               env=env, preexec_fn=_limit_file_size(4096))
    assert res.returncode == 2
    assert res.stderr.decode().splitlines()[-1] == (
        f"rpp: {summary}: cannot write $GITHUB_STEP_SUMMARY: File too large")
    assert summary.read_text() == earlier
    ok = _run(["check", QRELS, "--baseline", MONOT5, BM25, DPR, "--max-drop", "map=0.01"],
              env=env)
    assert ok.returncode == 1
    assert summary.read_text().startswith(earlier + "### rpp check: FAIL")


def test_append_whole_cuts_back_after_a_failed_write(tmp_path, monkeypatch):
    """A fake os.write that writes 10 bytes, then fails: the file is as it was."""
    path = tmp_path / "summary.md"
    path.write_text("before\n")
    real_write = os.write
    calls = []

    def write(fd, data):
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:10]))
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", write)
    with pytest.raises(InputError, match="cannot write the summary: No space left on device"):
        files.append_whole(str(path), "### a table of many bytes\n", "the summary")
    monkeypatch.undo()
    assert calls == [26, 16] and path.read_text() == "before\n"


@pytest.mark.slow
def test_full_stdout_stays_an_error_with_a_plot(tmp_path):
    """> /dev/full: still exit 2 and the one line, with or without --plot."""
    with open("/dev/full", "w") as full:
        res = subprocess.run(RPP + ["eval", "--plot", str(tmp_path / "x.png"), QRELS, BM25, DPR],
                             stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines()[-1] == "rpp: cannot write output: No space left on device"


# ---------------------------------------------------------------------------------------------
# every output path checked before any work

@pytest.mark.parametrize("command", [
    ["eval", "--plot", "{out}", QRELS, "/nonexistent/run", BM25],
    ["meta", "--plot", "{out}", QRELS, "/nonexistent/run", BM25],
    ["levels", "--plot", "{out}", QRELS, "/nonexistent/run", BM25],
])
@pytest.mark.parametrize("where,why", [
    ("missing/x.png", "No such file or directory"),
    ("a-file/x.png", "Not a directory"),
])
def test_plot_path_is_checked_before_any_file_is_read(tmp_path, command, where, why):
    """The run does not exist: the error is about the plot, so the path was checked first
    (before: meta computed for seconds, then failed on the plot and printed nothing)."""
    (tmp_path / "a-file").write_text("")
    out = tmp_path / where
    res = rpp(*[a.format(out=out) for a in command])
    assert (res.code, res.out, res.err) == (2, "", f"rpp: {out}: cannot write the plot: {why}\n")


def test_a_directory_as_plot_is_refused_before_any_work(tmp_path):
    """click's own check (a usage error) and the writability check agree: no work done."""
    res = rpp("meta", "--plot", tmp_path, QRELS, "/nonexistent/run", BM25)
    assert (res.code, res.out) == (2, "") and "is a directory" in res.err
    with pytest.raises(InputError, match="cannot write the plot: it is a directory"):
        files.check_writable(str(tmp_path), "the plot")


def test_a_read_only_plot_is_not_replaced(tmp_path, monkeypatch):
    """A file this user may not write is refused before any work, as open() would refuse it,
    though its directory would take the rename (os.access stands in for a non-root user)."""
    target = tmp_path / "kept.svg"
    target.write_text("kept")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if (str(p), mode) == (
        str(target), os.W_OK) else real_access(p, mode))
    res = rpp("eval", "--plot", target, QRELS, "/nonexistent/run", BM25)
    assert (res.code, res.out, res.err) == (2, "", f"rpp: {target}: cannot write the plot: "
                                                   "Permission denied\n")
    assert target.read_text() == "kept"


def test_step_summary_is_checked_before_any_work(tmp_path, monkeypatch):
    summary = tmp_path / "missing" / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = rpp("check", QRELS, "--baseline", MONOT5, "/nonexistent/run")
    assert (res.code, res.out, res.err) == (
        2, "", f"rpp: {summary}: cannot write $GITHUB_STEP_SUMMARY: No such file or directory\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", "")  # set but empty: not in GitHub Actions
    assert rpp("check", QRELS, "--baseline", BM25, MONOT5).code == 0


# ---------------------------------------------------------------------------------------------
# odd settings

@pytest.mark.parametrize("value", ["abc", "", "1e9", "0", "-5", " 12", "1_000", "٣",
                                   "9223372036854775808", "9" * 5000])
def test_bad_max_input_bytes_is_one_line(monkeypatch, value):
    monkeypatch.setenv("RPP_MAX_INPUT_BYTES", value)
    res = rpp("eval", QRELS, BM25, DPR)
    assert (res.code, res.out) == (2, "")
    assert res.err.startswith("rpp: RPP_MAX_INPUT_BYTES=") and res.err.count("\n") == 1
    assert "expected a whole number of bytes from 1 to 2^63 - 1" in res.err


@pytest.mark.slow
@pytest.mark.parametrize("name", ["eval", "compare", "check-pass", "meta", "levels", "ndeval",
                                  "trec-eval"])
def test_bad_max_input_bytes_in_every_command(name):
    """In a fresh process (the crash was at import), every command reading files; the status
    is the command's bad-input status (the ndeval drop-in's is 1, as ndeval's error())."""
    env = {**os.environ, "RPP_MAX_INPUT_BYTES": "abc"}
    res = _run(COMMANDS[name], env=env)
    assert (res.returncode, res.stdout) == (1 if name == "ndeval" else 2, b"")
    assert res.stderr.decode() == (
        "rpp: RPP_MAX_INPUT_BYTES='abc': expected a whole number of bytes from 1 to 2^63 - 1, "
        "digits only (e.g. 1000000000), or unset for the default 17179869184\n")


def test_good_max_input_bytes(monkeypatch):
    """Digits only: a limit above the file reads it, one below refuses it by name."""
    expected = rpp("eval", "-m", "map", QRELS, BM25).out
    monkeypatch.setenv("RPP_MAX_INPUT_BYTES", str(os.path.getsize(QRELS) + os.path.getsize(BM25)))
    assert rpp("eval", "-m", "map", QRELS, BM25).out == expected
    monkeypatch.setenv("RPP_MAX_INPUT_BYTES", "100")
    res = rpp("eval", "-m", "map", QRELS, BM25)
    assert res.code == 2 and "larger than the limit of 100 bytes" in res.err


@pytest.mark.parametrize("command", ["compare", "check", "meta"])
@pytest.mark.parametrize("seed", ["-1", "9223372036854775808", "1.5", "x"])
def test_bad_seed_is_a_usage_error(command, seed):
    args = {"compare": [QRELS, BM25, DPR], "check": [QRELS, "--baseline", BM25, DPR],
            "meta": [QRELS, BM25, DPR]}[command]
    res = rpp(command, "--seed", seed, *args)
    assert (res.code, res.out) == (2, "")
    assert "Invalid value for '--seed'" in res.err and "Traceback" not in res.err


def test_seed_range_ends_work():
    for seed in ("0", str((1 << 63) - 1)):
        res = rpp("compare", "--seed", seed, "--permutations", "50", QRELS, BM25, DPR)
        assert res.code == 0 and "rpp_p" in res.out


@pytest.mark.parametrize("args,message", [
    (["eval", "-l", "nan", QRELS, BM25, DPR], "rpp: relevance level must be a finite number > 0 "
                                              "(got nan)\n"),
    (["eval", "-l", "inf", QRELS, BM25, DPR], "rpp: relevance level must be a finite number > 0 "
                                              "(got inf)\n"),
    (["compare", "-l", "-inf", QRELS, BM25, DPR], "rpp: relevance level must be a finite number "
                                                  "> 0 (got -inf)\n"),
])
def test_level_must_be_finite(args, message):
    res = rpp(*args)
    assert (res.code, res.out, res.err) == (2, "", message)


@pytest.mark.parametrize("option", ["-alpha", "-beta"])
@pytest.mark.parametrize("value", ["nan", "inf"])
def test_ndeval_parameters_must_be_finite(option, value):
    """A usage error, with the drop-in's status for it (1, as ndeval's)."""
    res = rpp("ndeval", option, value, SUBTOPICS, BM25)
    assert (res.code, res.out) == (1, "") and "Invalid value for" in res.err
    assert "not a finite number" in res.err or "not in the range" in res.err


def _blocks_of(monkeypatch, elements: int) -> None:
    import sys as _sys

    monkeypatch.setattr(_sys.modules["rpp_cli.tasks.meta.study"], "SAMPLE_BLOCK_ELEMENTS",
                        elements)


META = ["meta", "--analysis", "robustness,predictive", "--samples", "300", "--precision", "17",
        "-m", "rpp", "-m", "map", "-m", "P.10", QRELS, BM25, DPR, MONOT5, SPLADE]


@pytest.mark.slow
def test_meta_draws_are_the_same_in_any_block_size(monkeypatch):
    """Blocks of 1, 2 or 300 samples draw the same subsets: the values agree to 1e-14 (the
    sums of the blocks' means are added in another order) and at 12 decimals exactly."""
    one_block = rpp(*META)
    assert one_block.code == 0
    for elements in (1, 50):  # blocks of 1, then of 2 samples (25 queries a sample)
        _blocks_of(monkeypatch, elements)
        blocked = rpp(*META)
        assert blocked.code == 0
        a = [float(line.split("\t")[-1]) for line in one_block.out.splitlines()]
        b = [float(line.split("\t")[-1]) for line in blocked.out.splitlines()]
        assert np.allclose(a, b, rtol=1e-14, atol=0)
        assert [f"{x:.12f}" for x in a] == [f"{x:.12f}" for x in b]


def test_meta_blocks_are_bounded(monkeypatch):
    """Each block's arrays hold about SAMPLE_BLOCK_ELEMENTS elements, whatever --samples."""
    from rpp_cli.tasks.meta.study import random_subsets

    sizes = [len(w) for (w,) in random_subsets(np.random.default_rng(0), 1000, 25, (5,), 16)]
    assert sizes == [1000]
    _blocks_of(monkeypatch, 400)  # 400 // max(25 queries, 16) = 16 samples a block
    sizes = [w.shape for (w,) in random_subsets(np.random.default_rng(0), 1000, 25, (5,), 16)]
    assert sizes == [(16, 25)] * 62 + [(8, 25)]


def test_meta_equals_the_unblocked_reference():
    """One block is bit for bit what rpp computed before blocks (a literal reference: one
    (S, Q) draw, every tau, numpy's mean of the finite ones)."""
    from rpp_cli.settings import Options
    from rpp_cli.tasks import meta as meta_task
    from rpp_cli.tasks.meta import MetaOptions, MetaRequest
    from rpp_cli.stats import kendall_tau_b

    opts = MetaOptions(analyses=("robustness",), samples=200, query_counts=(5,))
    meta = meta_task.plan(QRELS, [BM25, DPR, MONOT5], MetaRequest(("rpp", "map"), opts),
                          Options())
    for job in meta_task.jobs(meta):
        job.finish(job.compute())
    rng = np.random.default_rng([opts.seed, 2, 5])
    order = np.argsort(rng.random((200, meta.n_queries)), axis=1)
    w = np.zeros((200, meta.n_queries))
    np.put_along_axis(w, order[:, :5], 1.0, axis=1)
    for s in meta.subjects:
        taus = kendall_tau_b(s.scores(w), s.scores()[0])
        want = float(taus[np.isfinite(taus)].mean())
        assert meta.results.value("robust_queries_5", "all", s.name) == want


# ---------------------------------------------------------------------------------------------
# rpp check's verdicts and p-values in machine formats

CHECK = ["check", QRELS, "--baseline", BM25, MONOT5, DPR, "-m", "rpp", "--max-drop",
         "map=0.01"]


def test_check_jsonl_carries_every_verdict():
    """Baseline bm25: monot5 and dpr both beat it on rpp and map (drops -0.3650 and -0.0762:
    PASS on both gates); overall PASS, exit 0. Rows: candidates in argument order."""
    res = rpp(*CHECK, "--format", "jsonl")
    assert res.code == 0
    every = [json.loads(line) for line in res.out.splitlines()]
    inputs = [r for r in every if r["measure"] == "input"]  # each file and its SHA-256
    assert [r["run"] for r in inputs] == [QRELS, BM25, MONOT5, DPR]
    assert all(len(r["sha256"]) == 64 for r in inputs)
    rows = [r for r in every if r["measure"] != "input"]
    assert all(list(r) == ["measure", "qid", "run", "other", "value", "verdict"] for r in rows)
    assert [(r["measure"], r["run"], r["verdict"]) for r in rows] == [
        ("rpp", "monot5", "PASS"), ("rpp", "dpr", "PASS"),
        ("rpp_p", "monot5", "PASS"), ("rpp_p", "dpr", "PASS"),
        ("map_drop", "monot5", "PASS"), ("map_drop", "dpr", "PASS"),
        ("verdict", None, "PASS")]
    assert rows[-1] == {"measure": "verdict", "qid": "all", "run": None, "other": "bm25",
                        "value": None, "verdict": "PASS"}


def test_check_csv_verdicts_mixed():
    """Baseline monot5: bm25 and dpr are both worse on rpp (FAIL); dpr's map drop is within
    0.5 (PASS) while its rpp gate fails; overall FAIL, exit 1."""
    res = rpp("check", QRELS, "--baseline", MONOT5, BM25, DPR, "--max-drop", "map=0.5",
              "--format", "csv")
    assert res.code == 1
    lines = res.out.splitlines()
    assert lines[0] == "measure,qid,run,other,value,verdict"
    verdict = {tuple(line.split(",")[:3]): line.split(",")[-1] for line in lines[1:]}
    assert verdict[("rpp", "all", "bm25")] == verdict[("rpp_p", "all", "bm25")] == "FAIL"
    assert verdict[("rpp", "all", "dpr")] == "FAIL"
    assert verdict[("map_drop", "all", "dpr")] == "PASS"
    assert lines[-1] == "verdict,all,,monot5,,FAIL"


def test_check_trec_format_is_unchanged_by_verdicts():
    res = rpp(*CHECK)
    assert res.code == 0 and all(line.count("\t") == 4 for line in res.out.splitlines())
    assert "verdict" not in res.out


@pytest.mark.parametrize("command", [
    ["compare", "--permutations", "10000", QRELS, BM25, MONOT5],
    ["check", QRELS, "--baseline", BM25, MONOT5],
])
def test_machine_formats_print_p_values_in_full(command):
    """10,000 sign flips, none as extreme as bm25 vs monot5: p = 1 / 10001, which 4 decimals
    print as 0.0001 and repr as 9.999000099990002e-05 (reads back exactly)."""
    p = 1 / 10001
    trec = rpp(*command).out
    assert "\t0.0001\n" in trec and repr(p) not in trec  # human formats keep --precision
    rows = [json.loads(line) for line in rpp(*command, "--format", "jsonl").out.splitlines()]
    assert {r["value"] for r in rows if r["measure"] == "rpp_p"} == {p}
    csv_rows = rpp(*command, "--format", "csv").out.splitlines()
    assert {line.split(",")[4] for line in csv_rows if line.startswith("rpp_p,")} == {repr(p)}

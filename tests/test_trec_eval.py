"""``rpp trec-eval --compat 9.0.8``: byte-for-byte against trec_eval 9.0.8's own output, and
every error path (trec_eval 10.0, the default: tests/test_trec_eval10.py).

The expected outputs in tests/golden/trec_eval were written by the reference binary (see the
README there); these tests never need it.
"""
from __future__ import annotations

import gzip
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from rpp_cli.cli import cli, main

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden" / "trec_eval"
QRELS = "fixtures/demo/qrels"
RUN = "fixtures/demo/runs/bm25"


def _cases() -> list[tuple[str, str]]:
    lines = (GOLDEN / "CASES").read_text().splitlines()
    return [tuple(line.split("\t", 1)) for line in lines if line and not line.startswith("#")]


@pytest.mark.parametrize("name,args", _cases(), ids=[c[0] for c in _cases()])
def test_golden_output_byte_for_byte(name: str, args: str, monkeypatch) -> None:
    monkeypatch.chdir(ROOT)
    result = CliRunner().invoke(cli, ["trec-eval", "--compat", "9.0.8", *shlex.split(args)])
    assert result.exit_code == 0, result.output
    assert result.stdout_bytes == (GOLDEN / f"{name}.out").read_bytes()


# trec_eval flags that rpp eval has too (-c is how rpp eval always counts queries)
_EVAL_FLAGS = {"-q": (), "-c": (), "-l": ("-l",), "-M": ("-M",), "-m": ("-m",)}


def _as_rpp_eval(args: str) -> list[str] | None:
    """``rpp eval`` arguments for a trec_eval ``-c`` case (None for a case that has other
    flags: -J, -N, -n, long options; or is not -c)."""
    words = shlex.split(args)
    if "-c" not in words:
        return None
    out, files = ["eval", "-Q", "-q", "--compat", "9.0.8"], []
    for w in words:
        flag, value = w[:2], w[2:]
        if w.startswith("-") and flag not in _EVAL_FLAGS:
            return None
        if w.startswith("-") and _EVAL_FLAGS[flag]:
            out += [flag, value] if value else [flag]
        elif not w.startswith("-"):
            files.append(w) if out[-1] not in ("-l", "-M", "-m") else out.append(w)
    return out + ["--name", "run"] + files


def test_rpp_eval_prints_trec_eval_c_values(monkeypatch) -> None:
    """rpp eval's baselines are trec_eval -c's (contract §6): on every golden case of -c whose
    flags rpp eval has, each line trec_eval prints is rpp eval's line for that measure and
    query, value for value (rpp eval also prints the queries a run lacks, which trec_eval -c
    counts but does not print). The cases hold -l 2 (num_rel's all line counts every
    judgment with a grade > 0 there), queries whose grades are all negative, a truncated
    run and -N-free utility."""
    monkeypatch.chdir(ROOT)
    checked = 0
    for name, args in _cases():
        argv = _as_rpp_eval(args)
        if argv is None:
            continue
        result = CliRunner().invoke(cli, argv)
        assert result.exit_code == 0, (name, result.output)
        got = {}
        for line in result.stdout.splitlines():
            measure, qid, _, value = line.split("\t")
            got[(measure.strip(), qid)] = value
        for line in (GOLDEN / f"{name}.out").read_text().splitlines():
            measure, qid, value = line.split("\t")
            if measure.strip() in ("runid", "relstring"):  # text: rpp eval prints numbers
                continue
            assert got.get((measure.strip(), qid)) == value, (name, line)
            checked += 1
    assert checked > 2000


def test_golden_cases_cover_the_issue() -> None:
    """The flag combinations the issue names are all among the golden cases."""
    args = {name: a for name, a in _cases()}
    assert args["default"].split() == [QRELS, RUN]
    assert "-m all_trec" in args["all_trec"] and "-q" not in args["all_trec"]
    assert "-q" in args["all_trec_q"].split()
    assert {"-q", "-c"} <= set(args["all_trec_qc_trunc"].split())
    assert {"-q", "-l2", "P", "map", "ndcg_cut"} <= set(args["graded_l2"].split())


@dataclass
class Outcome:
    """What a user sees: exit status, stdout, stderr."""

    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def rpp(monkeypatch, capsys):
    """Run the real entry point (``main``: error lines, exit codes) in this process."""
    def run(*args: str) -> Outcome:
        monkeypatch.setattr(sys, "argv", ["rpp", "trec-eval", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exc.code
        seen = capsys.readouterr()
        return Outcome(code, seen.out, seen.err)
    return run


def _one_error_line(proc: Outcome, code: int, *needles: str) -> str:
    assert proc.returncode == code, proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("rpp: "), proc.stderr
    for needle in needles:
        assert needle in lines[0]
    return lines[0]


@pytest.fixture
def files(tmp_path: Path):
    """Write small qrels/run files: files(name=text) -> {name: path}."""
    def write(**texts: str) -> dict[str, str]:
        out = {}
        for name, text in texts.items():
            (tmp_path / name).write_text(text)
            out[name] = str(tmp_path / name)
        return out
    return write


QRELS_OK = "1 0 a 1\n1 0 b 0\n2 0 c 1\n"
RUN_OK = "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0 r\n"


@pytest.mark.parametrize("measure,code,needle", [
    ("foo", 1, "unknown measure 'foo'"),
    ("foo.5", 1, "unknown measure 'foo.5'"),
    ("P.", 1, "improper measure parameters in 'P.'"),
    ("P_10", 1, "unknown measure 'P_10'"),  # rpp eval's shorthand; trec_eval rejects it
    ("prefs_simp", 1, "preference judgments"),
    ("all_prefs", 1, "preference judgments"),
    ("P.0", 2, "cutoffs must be positive"),
    ("P.5,10,", 2, "cutoffs must be positive"),
    ("P.5,5", 2, "duplicate cutoffs"),
    ("iprec_at_recall.0.1,0.10", 2, "duplicate cutoffs"),
    ("Rprec_mult.0.001,0.002", 2, "same name"),
    ("ndcg.1", 2, "level=gain pairs"),
    ("ndcg.1=2,3", 2, "level=gain pairs"),
    ("utility.1,2", 2, "exactly 4 coefficients"),
    ("map.5", 2, "takes no parameters"),
])
def test_bad_measure(measure: str, code: int, needle: str, files, rpp) -> None:
    f = files(q=QRELS_OK, r=RUN_OK)
    _one_error_line(rpp("-m", measure, f["q"], f["r"]), code, needle)


def test_file_errors_come_before_parameter_errors(files, rpp) -> None:
    """trec_eval reads both files before it checks parameters."""
    f = files(r=RUN_OK)
    _one_error_line(rpp("-m", "P.0", "nofile", f["r"]), 2, "nofile", "no such file")


@pytest.mark.parametrize("qrels,run,where,needle", [
    ("", RUN_OK, "q", "empty file"),
    (QRELS_OK, "", "r", "empty file"),
    ("1 0 a\n", RUN_OK, "q:1", "expected 4 fields"),
    ("1 0 a 1 x\n", RUN_OK, "q:1", "expected 4 fields"),
    (QRELS_OK, "1 Q0 a 1 2.0 r\n1 Q0 b 2 1.0\n", "r:2", "expected 6 or more fields"),
    (QRELS_OK, "1 Q0 a 1 high r\n", "r:1", "score 'high' is not a finite number"),
    ("1 0 a high\n", RUN_OK, "q:1", "grade 'high' is not a finite number"),
    ("1 0 a 1\n", "1 Q0 a 1 2 r\n\x00\n", "r:2", "not a text file"),
])
def test_bad_file(qrels: str, run: str, where: str, needle: str, files, rpp) -> None:
    f = files(q=qrels, r=run)
    line = _one_error_line(rpp(f["q"], f["r"]), 2, needle)
    assert line.startswith(f"rpp: {f[where[0]]}{where[1:]}:")


def test_missing_file(files, rpp) -> None:
    f = files(q=QRELS_OK)
    _one_error_line(rpp(f["q"], "nofile"), 2, "nofile: no such file")


def test_duplicate_docno_in_run_exits_4(files, rpp) -> None:
    f = files(q=QRELS_OK, r=RUN_OK + "1 Q0 a 3 0.5 r\n")
    line = _one_error_line(rpp(f["q"], f["r"]), 4, "docno 'a' appears twice for query '1'")
    assert line.startswith(f"rpp: {f['r']}:3:")


def test_duplicate_docno_in_qrels_exits_4(files, rpp) -> None:
    f = files(q="1 0 a 1\n1 0 a 0\n", r=RUN_OK)
    line = _one_error_line(rpp(f["q"], f["r"]), 4, "docno 'a' appears twice for query '1'")
    assert line.startswith(f"rpp: {f['q']}:2:")


def test_duplicates_trec_eval_never_sees_are_not_errors(files, rpp) -> None:
    """Only the top -M docs of evaluated queries are checked, as in trec_eval."""
    f = files(q="1 0 a 1\n3 0 z 1\n3 0 z 0\n",
              r="1 Q0 a 1 3 r\n1 Q0 b 2 2 r\n1 Q0 b 3 1 r\n5 Q0 y 1 1 r\n5 Q0 y 2 1 r\n")
    proc = rpp("--compat", "9.0.8", "-M", "2", "-m", "num_ret", "-m", "map", f["q"], f["r"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "num_ret               \tall\t2\nmap                   \tall\t1.0000\n"
    _one_error_line(rpp("--compat", "9.0.8", "-M", "3", f["q"], f["r"]), 4, "docno 'b'")


def test_no_common_query_exits_7(files, rpp) -> None:
    f = files(q="2 0 a 1\n", r=RUN_OK)
    _one_error_line(rpp("--compat", "9.0.8", "-c", f["q"], f["r"]), 7,
                    "no query has both results and judgments")


@pytest.mark.parametrize("qrels", ["1 0 a -1\n2 0 b 1\n", "1 0 a 1\n2 0 b -2\n"])
def test_query_with_only_negative_grades_exits_4(qrels: str, files, rpp) -> None:
    """trec_eval fails on the first such query (exit 4) or crashes on a later one."""
    f = files(q=qrels, r="1 Q0 a 1 1 r\n2 Q0 b 1 1 r\n")
    _one_error_line(rpp(f["q"], f["r"]), 4, "only negative grades")


def test_negative_grades_after_the_first_query_evaluate_as_in_trec_eval(files, rpp) -> None:
    f = files(q="1 0 a 1\n2 0 b -1\n", r="1 Q0 a 1 1 r\n2 Q0 b 1 1 r\n")
    proc = rpp("-q", "-m", "num_rel", "-m", "map", f["q"], f["r"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[2:4] == ["num_rel               \t2\t0",
                                              "map                   \t2\t0.0000"]


def test_relevance_level_below_1_is_refused(files, rpp) -> None:
    f = files(q=QRELS_OK, r=RUN_OK)
    _one_error_line(rpp("-l", "0", f["q"], f["r"]), 1, "-l 0")


@pytest.mark.parametrize("args", [["-x"], ["-M", "-1"], ["-l", "two"], []])
def test_usage_errors_exit_1(args: list[str], files, rpp) -> None:
    f = files(q=QRELS_OK, r=RUN_OK)
    proc = rpp(*args, f["q"], *([f["r"]] if args else []))
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout == "" and proc.stderr.startswith("rpp: trec-eval: ")
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_options_after_files_and_attached_values(files, rpp) -> None:
    """getopt style: ``-mP.5``, ``-M1``, ``-qc`` and options after the file names."""
    f = files(q=QRELS_OK, r=RUN_OK)
    proc = rpp(f["q"], f["r"], "-mP.5", "-M1", "-qc", "--compat", "9.0.8")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("P_5                   \t1\t0.2000\n"
                           "P_5                   \tall\t0.1000\n")


def test_runid_is_the_tag_as_in_trec_eval(files, rpp) -> None:
    """The drop-in keeps trec_eval's runid (the run's tag), whatever the file is called."""
    f = files(q=QRELS_OK, **{"bm25.run.gz": RUN_OK})
    proc = rpp(f["q"], f["bm25.run.gz"], "-m", "runid", "--compat", "9.0.8")
    assert (proc.returncode, proc.stdout) == (0, "runid                 \tall\tr\n")


@pytest.mark.slow
def test_real_process_stdin_and_gzip(files, tmp_path: Path) -> None:
    """As a subprocess: gzip and stdin read the same; errors exit with no traceback."""
    f = files(q=QRELS_OK)
    (tmp_path / "r.gz").write_bytes(gzip.compress(RUN_OK.encode()))
    command = [sys.executable, "-m", "rpp_cli", "trec-eval", "--compat", "9.0.8", "-q", f["q"]]
    from_gzip = subprocess.run([*command, str(tmp_path / "r.gz")], capture_output=True)
    from_stdin = subprocess.run([*command, "-"], input=RUN_OK.encode(), capture_output=True)
    assert from_gzip.returncode == from_stdin.returncode == 0
    assert from_gzip.stdout == from_stdin.stdout
    assert from_gzip.stdout.startswith(b"num_ret               \t1\t2\n")
    duplicate = subprocess.run([*command, "-"], input=(RUN_OK * 2).encode(),
                               capture_output=True)
    assert duplicate.returncode == 4
    assert duplicate.stderr.decode().splitlines() == [
        "rpp: -:3: docno 'a' appears twice for query '1'"]

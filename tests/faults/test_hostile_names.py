"""Hostile names end to end: they forge nothing in any format, controls in ids are refused at
read time with one escaped line, and ids that are not UTF-8 give valid, distinct output in
every format and locale (subprocesses under PYTHONIOENCODING=utf-8, LC_ALL=C and latin-1
stdout, as CI images run them)."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ..conftest import ROOT, rpp, write_qrels, write_run
from ..report.test_escape import gfm_cells
from ..report.test_formats import _unescape_latex

FORGER = "evil|rpp|PASS|looks-fine|"
ENVIRONMENTS = {"utf8": {"PYTHONIOENCODING": "utf-8"}, "C": {"LC_ALL": "C", "LANG": "C"},
                "latin1": {"PYTHONIOENCODING": "latin-1"}}


def run_rpp(args: list, env_name: str = "utf8") -> subprocess.CompletedProcess:
    """``python -m rpp_cli ARGS`` in a subprocess; stdout and stderr as bytes."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONIOENCODING", "LC_ALL", "LANG", "PYTHONUTF8")}
    env.update(ENVIRONMENTS[env_name])
    return subprocess.run([sys.executable, "-m", "rpp_cli", *map(str, args)], cwd=ROOT,
                          env=env, capture_output=True, timeout=120)


def collection(tmp_path: Path, names: list[str]) -> tuple[Path, list[Path]]:
    """Five queries; run i is named ``names[i]`` (file name and tag alike), the first the
    best on every query, the others worse and worse."""
    qids = [f"q{k}" for k in range(5)]
    docs = ["a", "b", "c", "d"]
    q = write_qrels(tmp_path / "qrels", [(qid, d, 1 if d in "ab" else 0)
                                          for qid in qids for d in docs])
    runs = []
    for i, name in enumerate(names):
        ranking = docs[i:] + docs[:i]
        runs.append(write_run(tmp_path / name, {qid: ranking for qid in qids}, name))
    return q, runs


# -- 20.4: names escaped for every format ------------------------------------------------

def test_a_tag_cannot_forge_a_pass_in_the_check_summary(tmp_path, monkeypatch):
    """The candidate named ``evil|rpp|PASS|looks-fine|`` is worse on every query: each row
    of the Markdown summary (stdout and $GITHUB_STEP_SUMMARY) has exactly four GFM cells,
    the verdict cell of each reads **FAIL**, and the name reads back whole."""
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    q, (base, evil) = collection(tmp_path, ["base", FORGER])
    res = rpp("check", q, "--baseline", base, evil, "--test", "ttest", "--max-drop",
              "map=0.01", "--format", "markdown")
    assert res.code == 1
    assert summary.read_text() == res.out + "\n"
    rows = [line for line in res.out.splitlines() if line.startswith("|")][2:]
    assert len(rows) == 2
    for row in rows:
        cells = [c.strip() for c in gfm_cells(row)]
        assert len(cells) == 4 and cells[2] == "**FAIL**", row
        assert re.sub(r"\\(.)", r"\1", cells[0]) == FORGER


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ["utf8", "C"])
def test_the_check_summary_in_a_subprocess(tmp_path, monkeypatch, env_name):
    """The same in a CI-like process (strict UTF-8 stdout, or the C locale): the forger's
    rows read **FAIL** on stdout and in $GITHUB_STEP_SUMMARY, exit 1."""
    q, (base, evil) = collection(tmp_path, ["base", FORGER])
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    res = run_rpp(["check", q, "--baseline", base, evil, "--test", "ttest", "--format",
                   "markdown"], env_name)
    assert res.returncode == 1, res.stderr
    for text in (res.stdout.decode("utf-8"), summary.read_text("utf-8")):
        rows = [line for line in text.splitlines() if line.startswith("|")][2:]
        assert [[c.strip() for c in gfm_cells(row)][2] for row in rows] == ["**FAIL**"]


def test_a_tag_cannot_shift_the_paper_table(tmp_path):
    """compare --view paper --format markdown: every row has its letter, name and one value
    per measure, the name reads back whole."""
    q, runs = collection(tmp_path, ["base", FORGER, "third"])
    res = rpp("compare", "--view", "paper", "--format", "markdown", "-m", "rpp", "-m", "map",
              "--test", "ttest", q, *runs)
    assert res.code == 0, res.err
    rows = [line for line in res.out.splitlines() if line.startswith("|")]
    assert len(rows) == 2 + 3
    for row in rows:
        assert len(gfm_cells(row)) == 4, row
    cells = [c.strip() for c in gfm_cells(rows[3])]
    assert cells[0] == "(b)" and re.sub(r"\\(.)", r"\1", cells[1]) == FORGER
    assert all(re.fullmatch(r"(\*\*)?-?\d\.\d{4}(\*\*)?(<sup>[a-c]+</sup>)?", c)
               for c in cells[2:])


FORMULAS = ["=cmd", "@SUM(A1)", "+1", "-2", '=HYPERLINK("http://e.vil","x")']


def test_csv_names_are_not_formulas(tmp_path):
    """No CSV field a spreadsheet reads starts with = + - @ (a ' comes first); the values
    keep their minus sign (they are numbers, not names)."""
    q, runs = collection(tmp_path, [f"r{i}" for i in range(len(FORMULAS))])
    args = [a for name in FORMULAS for a in ("--name", name)]
    res = rpp("eval", "-m", "rpp", "--format", "csv", *args, q, *runs)
    assert res.code == 0, res.err
    rows = list(csv.reader(io.StringIO(res.out)))[1:]
    names = {f for row in rows for f in row[2:4] if f}
    assert names == {"'" + name for name in FORMULAS}
    assert any(row[4].startswith("-") for row in rows)


LATEX_NAMES = ["%", "&", "\\input", "a_b", "[5cm]", "$\\frac{1}{2}$"]


@pytest.mark.parametrize("view", ["default", "paper"])
def test_latex_names_are_text(tmp_path, view):
    """Every LaTeX table row has its number of cells; ``\\input`` is text; no name leaves a
    bare special character; the names read back whole."""
    q, runs = collection(tmp_path, [f"r{i}" for i in range(len(LATEX_NAMES))])
    args = [a for name in LATEX_NAMES for a in ("--name", name)]
    command = ["eval", "-m", "map"] if view == "default" else \
        ["compare", "--view", "paper", "-m", "map", "--test", "ttest"]
    res = rpp(*command, "--format", "latex", *args, q, *runs)
    assert res.code == 0, res.err
    assert "\\input" not in res.out.replace("\\textbackslash{}input", "")
    rows = [line for line in res.out.splitlines() if line.endswith("\\\\")]
    width = {line.count(" & ") for line in rows}
    assert len(width) == 1
    shown = {_unescape_latex(cell) for line in rows for cell in line[:-2].split(" & ")}
    assert set(LATEX_NAMES) <= shown


@pytest.mark.slow
def test_plot_labels_are_drawn_as_written(tmp_path):
    """``$\\foo$`` used to fail in mathtext (exit 70) and ``$\\frac{1}{2}$`` was drawn as ½:
    now the heatmap and the levels ECDF draw both names as text."""
    import matplotlib
    names = ["$\\foo$", "$\\frac{1}{2}$"]
    q, runs = collection(tmp_path, ["r0", "r1"])
    heatmap, ecdf = tmp_path / "h.svg", tmp_path / "e.svg"
    with matplotlib.rc_context({"svg.fonttype": "none"}):
        res = rpp("eval", "-m", "rpp", "--plot", heatmap, "--name", names[0], "--name",
                  names[1], q, *runs)
        assert res.code == 0, res.err
        res = rpp("levels", "--plot", ecdf, "--name", names[0], "--name", names[1], q, *runs)
        assert res.code == 0, res.err
    for svg in (heatmap.read_text(), ecdf.read_text()):
        for name in names:
            assert re.search(r">[^<]*" + re.escape(name), svg), name


# -- 20.5: controls in ids refused at read time -------------------------------------------

CONTROLS = {"\u009b": "U+009B (a C1 control)", "\u0085": "U+0085 (a C1 control)",
            "\u202e": "U+202E (a bidirectional control)",
            "\u2066": "U+2066 (a bidirectional control)",
            "\u2028": "U+2028 (a line or paragraph separator)",
            "\u2029": "U+2029 (a line or paragraph separator)"}
WHERE = {  # file, line, and how a poisoned qid or docno is written there
    "qrels qid": ("qrels", 2, lambda c: f"q1 0 a 1\nq{c}2 0 a 1\n"),
    "qrels docno": ("qrels", 2, lambda c: f"q1 0 a 1\nq1 0 b{c} 1\n"),
    "run qid": ("run", 2, lambda c: f"q1 Q0 a 1 2 tag\nq{c} Q0 a 1 2 tag\n"),
    "run docno": ("run", 1, lambda c: f"q1 Q0 {c}a 1 2 tag\n"),
    "run tag": ("run", 1, lambda c: f"q1 Q0 a 1 2 t{c}ag\n"),
}


@pytest.mark.parametrize("char", sorted(CONTROLS))
@pytest.mark.parametrize("where", sorted(WHERE))
def test_controls_in_ids_are_one_escaped_error_line(tmp_path, char, where):
    """Each refused character, in a qid, docno or tag of either file: exit 2, nothing on
    stdout, one line ``rpp: FILE:LINE: U+XXXX (...) is not allowed in a field: ...`` that
    holds no raw control (in-process: the reader is the same for every command)."""
    name, line, text = WHERE[where]
    files = {"qrels": "q1 0 a 1\n", "run": "q1 Q0 a 1 2 tag\n"}
    files[name] = text(char)
    for key, content in files.items():
        (tmp_path / key).write_bytes(content.encode("utf-8"))
    res = rpp("eval", "--name", "r", tmp_path / "qrels", tmp_path / "run")
    assert (res.code, res.out) == (2, "")
    assert res.err.splitlines() == res.err.split("\n")[:-1]  # no separator inside a line
    assert len(res.err.splitlines()) == 1 and res.err.isascii()
    assert res.err.startswith(f"rpp: {tmp_path / name}:{line}: {CONTROLS[char]} is not allowed "
                              "in a field: ")


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "levels", "trec-eval", "ndeval", "meta"])
@pytest.mark.parametrize("env_name", ["utf8", "C"])
def test_every_command_refuses_controls_in_a_subprocess(tmp_path, command, env_name):
    """U+009B in a docno and a Latin-1 C1 byte (0x9b) in a qid: every command stops with the
    same one line, in any locale; stderr is pure ASCII. The status is the command's bad-input
    status: 2, but 1 for the ndeval drop-in (ndeval's error() exits 1)."""
    qrels = tmp_path / "qrels"
    qrels.write_bytes("1 1 a 1\n1 1 d\u009b 1\n".encode("utf-8"))
    run = tmp_path / "run"
    run.write_bytes(b"1 Q0 a 1 2 t\n\x9b Q0 a 1 2 t\n")
    args = {"eval": ["eval", qrels, run], "levels": ["levels", qrels, run, run],
            "trec-eval": ["trec-eval", qrels, run], "ndeval": ["ndeval", qrels, run],
            "meta": ["meta", qrels, run, run]}[command]
    res = run_rpp(args, env_name)
    status = 1 if command == "ndeval" else 2
    assert (res.returncode, res.stdout) == (status, b""), res.stderr
    assert res.stderr.isascii() and res.stderr.count(b"\n") == 1
    assert re.fullmatch(rb"rpp: \S+/qrels:2: U\+009B \(a C1 control\) is not allowed in a "
                        rb"field: .*\n", res.stderr), res.stderr
    qrels.write_bytes(b"1 1 a 1\n")
    res = run_rpp(args, env_name)
    assert res.returncode == status and res.stderr.isascii()
    assert re.fullmatch(rb"rpp: \S+/run:2: byte 0x9b \(not UTF-8; a C1 control in Latin-1\) "
                        rb"is not allowed in a field: .*\n", res.stderr), res.stderr


def test_a_name_with_a_control_is_refused_escaped(tmp_path):
    """--name with U+202E: one line, the name written with escapes (ascii)."""
    q, runs = collection(tmp_path, ["r0", "r1"])
    res = rpp("eval", "--name", "a\u202eb", "--name", "c", q, *runs)
    assert res.code == 2 and res.err.isascii() and len(res.err.splitlines()) == 1
    assert "'a\\u202eb'" in res.err


# -- 20.6: ids that are not UTF-8 -----------------------------------------------------------

# four distinct qids: bytes 71 ff fe; q, backslash, x, f, f (what ff would print as); the
# UTF-8 ÿ (c3 bf); and a Latin-1 docno in each
QIDS = [b"q\xff\xfe", b"q\\xff", b"q\xc3\xbf", b"106_1"]


@pytest.fixture
def not_utf8(tmp_path):
    qrels, a, b = tmp_path / "qrels", tmp_path / "a.run", tmp_path / "b.run"
    qrels.write_bytes(b"".join(q + b" 0 caf\xe9 1\n" + q + b" 0 d2 0\n" for q in QIDS))
    a.write_bytes(b"".join(q + b" Q0 caf\xe9 1 2 a\n" + q + b" Q0 d2 2 1 a\n" for q in QIDS))
    b.write_bytes(b"".join(q + b" Q0 d2 1 2 b\n" + q + b" Q0 caf\xe9 2 1 b\n" for q in QIDS))
    return qrels, a, b


def qids_of(fmt: str, out: bytes) -> list[bytes]:
    """The qids of every output row, as the format's reader gets them, re-encoded; trec text
    as raw bytes (field 2), the others decoded as strict UTF-8 first."""
    if fmt == "trec":
        return [line.split(b"\t")[1] for line in out.splitlines()]
    text = out.decode("utf-8")  # strict: output must be valid UTF-8
    if fmt == "jsonl":
        return [json.loads(line)["qid"].encode("utf-8") for line in text.splitlines()]
    rows = list(csv.reader(io.StringIO(text)))
    return [row[rows[0].index("qid")].encode("utf-8") for row in rows[1:]]


@pytest.mark.slow
@pytest.mark.parametrize("env_name", sorted(ENVIRONMENTS))
@pytest.mark.parametrize("command", ["eval", "levels"])
@pytest.mark.parametrize("fmt", ["trec", "jsonl", "csv"])
def test_ids_that_are_not_utf8_print_in_every_locale(not_utf8, env_name, command, fmt):
    """No crash whatever stdout's encoding; trec text holds the qid bytes themselves (as
    trec_eval writes them); jsonl and csv are valid UTF-8 with ``\\xHH`` for a byte that is
    not UTF-8 and ``\\\\`` for a backslash, so the four qids stay four."""
    qrels, a, b = not_utf8
    per_query = ["-q"] if command == "eval" else []  # levels prints every query anyway
    res = run_rpp([command, *per_query, "--format", fmt, qrels, a, b], env_name)
    assert res.returncode == 0, res.stderr
    shown = set(qids_of(fmt, res.stdout)) - {b"all"}
    expected = set(QIDS) if fmt == "trec" else \
        {b"q\\xff\\xfe", b"q\\\\xff", "qÿ".encode("utf-8"), b"106_1"}
    assert shown == expected


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["matrix", "markdown", "latex"])
def test_ids_that_are_not_utf8_in_the_tables(not_utf8, fmt):
    """The table formats are valid UTF-8 too, one table per qid, titles distinct."""
    qrels, a, b = not_utf8
    res = run_rpp(["eval", "-q", "-m", "map", "--format", fmt, qrels, a, b])
    assert res.returncode == 0, res.stderr
    text = res.stdout.decode("utf-8")
    titles = re.findall(r"per.{1,2}run measures (.*)", text)
    assert len(titles) == len(set(titles)) == len(QIDS) + 1


@pytest.mark.slow
@pytest.mark.parametrize("env_name", ["utf8", "C"])
def test_trec_eval_writes_the_bytes(not_utf8, env_name):
    """The drop-in writes ids as trec_eval does, the bytes themselves, in any locale."""
    qrels, a, _ = not_utf8
    res = run_rpp(["trec-eval", "-q", "-m", "map", qrels, a], env_name)
    assert res.returncode == 0 and b"\tq\xff\xfe\t" in res.stdout


@pytest.mark.slow
def test_a_tag_that_is_not_utf8_is_refused_escaped(tmp_path):
    """Run names are printable text (contract §1): a Latin-1 name (file name and tag alike)
    is refused, its byte shown as ``\\xe9`` as everywhere else; --name is the way out."""
    q, (a, b) = collection(tmp_path, ["r0", "r1"])
    latin = tmp_path / os.fsdecode(b"r\xe9")
    latin.write_bytes(b.read_bytes().replace(b" r1\n", b" r\xe9\n"))
    res = run_rpp(["eval", "-m", "map", q, a, latin])
    assert res.returncode == 2 and res.stderr.isascii()
    assert b"run name 'r\\xe9' (from " in res.stderr, res.stderr
    res = run_rpp(["eval", "-m", "map", "--name", "a", "--name", "b", q, a, latin])
    assert res.returncode == 0, res.stderr


@pytest.mark.slow
def test_an_error_echoing_an_id_escapes_its_bytes(tmp_path):
    """A docno repeated in a query: the message names docno and qid with ``\\xHH`` for the
    bytes that are not UTF-8, in a strict UTF-8 and in the C locale."""
    qrels = tmp_path / "qrels"
    qrels.write_bytes(b"q\xff 0 caf\xe9 1\n")
    run = tmp_path / "run"
    run.write_bytes(b"q\xff Q0 caf\xe9 1 2 t\nq\xff Q0 caf\xe9 2 1 t\n")
    for env_name in ("utf8", "C"):
        res = run_rpp(["eval", qrels, run], env_name)
        assert res.returncode == 2 and res.stdout == b""
        assert res.stderr.isascii() and res.stderr.count(b"\n") == 1
        assert b"docno 'caf\\xe9' repeated in query q\\xff" in res.stderr, res.stderr


def test_ndeval_csv_guards_a_formula_run_id(tmp_path):
    """``rpp ndeval``'s CSV: a run tagged ``=cmd`` is written ``'=cmd`` (topics are numbers
    and stay as ndeval writes them)."""
    qrels, run = tmp_path / "qrels", tmp_path / "=cmd"
    qrels.write_text("1 1 a 1\n1 2 d 1\n")
    run.write_text("1 Q0 a 1 2 =cmd\n1 Q0 d 2 1 =cmd\n")
    res = rpp("ndeval", qrels, run)
    assert res.code == 0, res.err
    rows = list(csv.reader(io.StringIO(res.out)))
    assert [row[:2] for row in rows[1:]] == [["'=cmd", "1"], ["'=cmd", "amean"]]


def test_a_subtopic_id_with_a_control_is_refused(tmp_path):
    """Subtopic qrels go through the same reader: U+2066 in a subtopic id is one line (exit 2;
    the ndeval drop-in exits 1, as ndeval's error() does)."""
    qrels, run = tmp_path / "subtopics", tmp_path / "run"
    qrels.write_bytes("1 1 a 1\n1 t\u2066 d 1\n".encode("utf-8"))
    run.write_text("1 Q0 a 1 2 r\n")
    for args, status in ((["ndeval", qrels, run], 1),
                         (["eval", "--subtopics", qrels, "--name", "r", run], 2)):
        res = rpp(*args)
        assert (res.code, res.out) == (status, ""), res.err
        assert res.err == (f"rpp: {qrels}:2: U+2066 (a bidirectional control) is not allowed in "
                           "a field: it could rewrite or reorder what a terminal or a table "
                           "shows\n")


# trec_eval's float and gain parameters are free text that reaches the printed measure name.
HOSTILE_PARAMETERS = {
    "newline and OSC title": "set_F.\x1b]0;pwned\x07a\nb",
    "CSI colour": "utility.1,1,1,\x1b[31m",
    "a space": "ndcg.1=3, 2=9",
    "C1 control": "11pt_avg.0.5\u0085",
    "not UTF-8 (gain)": os.fsdecode(b"ndcg.1=\xe9"),
    "not UTF-8 (float)": os.fsdecode(b"set_F.\xe9"),
    "not UTF-8 (cutoff)": os.fsdecode(b"iprec_at_recall.\xe9"),
}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["eval", "compare", "meta", "check"])
@pytest.mark.parametrize("label", sorted(HOSTILE_PARAMETERS))
def test_a_measure_parameter_that_cannot_print_as_a_token_is_refused(tmp_path, command, label):
    """A control, a space or a byte that is not UTF-8 in ``-m``'s parameters is one escaped
    line, exit 2: printed, it split or recoloured the output lines and check's verdicts; a
    non-UTF-8 byte crashed pytrec_eval (segmentation fault, nothing said)."""
    name = HOSTILE_PARAMETERS[label]
    q, runs = collection(tmp_path, ["r0", "r1", "r2"])
    args = {"check": ["check", "--baseline", runs[0], "--max-drop", f"{name}=0.01", q, runs[1]]
            }.get(command, [command, "-m", name, q, *runs])
    res = run_rpp(args)
    assert (res.returncode, res.stdout) == (2, b""), res.stderr
    assert res.stderr.isascii() and res.stderr.count(b"\n") == 1, res.stderr
    assert b"names are printable text without spaces or control characters" in res.stderr


@pytest.mark.slow
def test_the_drop_in_refuses_a_parameter_that_is_not_utf8(tmp_path):
    """trec_eval reads ``ndcg.1=\\xe9`` (atof: gain 0); pytrec_eval, which computes the drop-in,
    crashed on it: a usage error now (trec_eval's status 1), the byte shown as ``\\xe9``. Other
    text is trec_eval's: controls in a parameter print raw, as trec_eval prints them."""
    q, (a,) = collection(tmp_path, ["r0"])
    res = run_rpp(["trec-eval", "-m", os.fsdecode(b"ndcg.1=\xe9"), q, a])
    assert (res.returncode, res.stdout) == (1, b""), res.stderr
    assert res.stderr == b"rpp: measure 'ndcg.1=\\xe9': a byte that is not UTF-8 (trec_eval " \
        b"reads it; pytrec_eval, which computes rpp trec-eval, cannot)\n"
    res = run_rpp(["trec-eval", "-m", "set_F.2\x1b[31m", q, a])
    assert res.returncode == 0 and res.stdout.startswith(b"set_F_2\x1b[31m"), res.stdout


@pytest.mark.parametrize("name", ["relstring.5", "relstring_5"])
def test_a_parameterised_text_measure_is_refused(tmp_path, name):
    """``-m relstring.5`` (or ``relstring_5``, its printed spelling) printed nothing and
    exited 0 (only ``relstring`` was refused)."""
    q, runs = collection(tmp_path, ["r0", "r1"])
    for args in (["eval", "-q"], ["compare"], ["meta"], ["eval", "-m", "map"]):
        res = rpp(*args, "-m", name, q, *runs)
        assert (res.code, res.out) == (2, ""), res.err
        assert res.err == f"rpp: measure '{name}' is text, not a number: rpp trec-eval " \
                          "prints it\n"


@pytest.mark.slow
@pytest.mark.parametrize("args", [["eval", "--format", "\udce9\udcff"],
                                  ["eval", "-l", "\udce9\udcff"], ["\udce9\udcff"]])
def test_click_usage_errors_show_bytes_as_rpp_does(tmp_path, args):
    """Bytes that are not UTF-8 in a usage error read ``\\xe9\\xff`` as in rpp's own messages
    (contract §7), not click's ``\\udce9``; a backslash the user typed stays as typed."""
    q, (a,) = collection(tmp_path, ["r0"])
    res = run_rpp([*args, q, a])
    assert res.returncode == 2 and b"'\\xe9\\xff'" in res.stderr and b"udc" not in res.stderr
    res = run_rpp(["eval", "--format", "\\udce9", q, a])
    assert res.returncode == 2 and b"'\\\\udce9'" in res.stderr, res.stderr


def test_bad_environment_values_show_bytes_as_rpp_does(tmp_path, monkeypatch):
    """RPP_MAX_INPUT_BYTES and RPP_SHARD_QUERIES echoed as typed, bytes as ``\\xHH``."""
    q, (a,) = collection(tmp_path, ["r0"])
    for variable in ("RPP_MAX_INPUT_BYTES", "RPP_SHARD_QUERIES"):
        monkeypatch.setenv(variable, "\udce9x")
        res = rpp("eval", q, a)
        monkeypatch.delenv(variable)
        assert res.code == 2 and res.err.startswith(f"rpp: {variable}='\\xe9x': "), res.err

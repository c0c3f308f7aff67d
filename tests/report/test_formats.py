"""Every --format holds the same numbers as the trec format: each is parsed back here and
compared cell by cell; the tables' layout is checked against hand-written text."""
from __future__ import annotations

import csv
import io
import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.report import FORMATS, MACHINE_FORMATS, write
from rpp_cli.report.common import number, styles
from rpp_cli.results import Results

from ..conftest import DEMO, rpp

RUNS = sorted((DEMO / "runs").iterdir())
Key = tuple  # (measure, qid, run, other or None)


def parse_trec(text: str) -> dict[Key, str]:
    """contract §7 lines -> {(measure, qid, run, other): printed value}."""
    out = {}
    for line in text.splitlines():
        f = line.split("\t")
        out[(f[0].rstrip(), f[1], f[2], f[3] if len(f) == 5 else None)] = f[-1]
    return out


def parse_jsonl(text: str) -> dict[Key, str]:
    """Values kept as the JSON number's text (a number, never a string; null when NaN)."""
    out = {}
    for line in text.splitlines():
        assert re.search(r'"value": (-?\d+(\.\d+)?(e-?\d+)?|null)}$', line), line
        obj = json.loads(line, parse_float=str, parse_int=str)
        assert list(obj) == ["measure", "qid", "run", "other", "value"]
        value = "nan" if obj["value"] is None else obj["value"]
        out[(obj["measure"], obj["qid"], obj["run"], obj["other"])] = value
    return out


def _unescape_csv(field: str) -> str:
    """A name as written before its formula guard: one leading ``'`` removed."""
    return field[1:] if field.startswith("'") else field


def parse_csv(text: str) -> dict[Key, str]:
    rows = list(csv.reader(io.StringIO(text)))
    assert rows[0] == ["measure", "qid", "run", "other", "value"]
    return {(_unescape_csv(m), _unescape_csv(q), _unescape_csv(r), _unescape_csv(o) or None): v
            for m, q, r, o, v in rows[1:]}


def _grid(title: str, header: list[str], body: list[list[str]], empty: str) -> dict[Key, str]:
    """Cells of one parsed table back to Results keys, via its title."""
    pair = re.fullmatch(r"(\S+) \((\S+)\): row run vs column run", title)
    single = re.fullmatch(r"per-run measures \((\S+)\)", title)
    assert pair or single, title
    out = {}
    for row in body:
        assert len(row) == len(header)
        for col, cell in zip(header[1:], row[1:]):
            if cell == empty:
                continue
            key = (pair[1], pair[2], row[0], col) if pair else (col, single[1], row[0], None)
            out[key] = cell
    return out


def parse_matrix(text: str) -> dict[Key, str]:
    """Every cell of the matrix text; a wide table's blocks (``[columns i-j of n]``) and their
    numbered runs (``i NAME`` rows, ``i`` columns) are read back to names."""
    out = {}
    for block in text.split("\n\n"):
        title, header, *body = block.rstrip("\n").split("\n")
        title = re.sub(r" \[columns \d+-\d+ of \d+\]$", "", title)
        head, rows = header.split(), [line.split() for line in body]
        if all(h.isdigit() for h in head[1:]) and all(r[0].isdigit() for r in rows):
            names = {r[0]: r[1] for r in rows}
            head, rows = [head[0], *(names[h] for h in head[1:])], [r[1:] for r in rows]
        out |= _grid(title, head, rows, "-")
    return out


def _unescape_markdown(cell: str) -> str:
    return re.sub(r"\\(.)", r"\1", cell.strip())


def parse_markdown(text: str) -> dict[Key, str]:
    out = {}
    for block in text.split("\n\n"):
        lines = block.rstrip("\n").split("\n")
        if lines[0].startswith("**"):
            title = _unescape_markdown(lines[0][2:-2])
            continue
        cells = [[_unescape_markdown(c) for c in line[2:-2].split(" | ")] for line in lines]
        assert re.fullmatch(r"\|:-+\|(-+:\|)+", lines[1])
        out |= _grid(title, cells[0], cells[2:], "")
    return out


_LATEX = {r"\textbackslash{}": "\\", r"\textasciitilde{}": "~", r"\textasciicircum{}": "^",
          r"\textless{}": "<", r"\textgreater{}": ">", r"\textbar{}": "|",
          r"\textquotedbl{}": '"', r"\textasciigrave{}": "`", "{[}": "[", "{]}": "]",
          "{*}": "*", "{}": ""}


def _unescape_latex(cell: str) -> str:
    cell = cell.strip().replace("$-$", "-")
    return re.sub(r"\\text[a-z]+\{\}|\{[][*]?\}|\\(.)", lambda m: m[1] or _LATEX[m[0]], cell)


def parse_latex(text: str) -> dict[Key, str]:
    out = {}
    for block in text.split("\n\n"):
        lines = block.rstrip("\n").split("\n")
        assert lines[0].startswith("% ") and lines[2] == r"\toprule" and lines[4] == r"\midrule"
        assert lines[-2:] == [r"\bottomrule", r"\end{tabular}"]
        rows = [[_unescape_latex(c) for c in line.removesuffix(r" \\").split(" & ")]
                for line in [lines[3], *lines[5:-2]]]
        assert lines[1] == r"\begin{tabular}{l" + "r" * (len(rows[0]) - 1) + "}"
        out |= _grid(lines[0][2:], rows[0], rows[1:], "")
    return out


PARSERS = {"jsonl": parse_jsonl, "csv": parse_csv, "matrix": parse_matrix,
           "markdown": parse_markdown, "latex": parse_latex}


def render(results: Results, fmt: str, precision: int = 4, summary: bool = True) -> str:
    buf = io.StringIO()
    write(results, fmt, buf, precision, summary)
    return buf.getvalue()


@pytest.mark.parametrize("fmt", sorted(PARSERS))
@pytest.mark.parametrize("precision", [0, 4, 10])
def test_demo_same_numbers_in_every_format(fmt, precision):
    """rpp eval -q on the demo collection: every format parses back to the trec values."""
    args = ["eval", "-q", "--precision", str(precision), DEMO / "qrels", *RUNS]
    trec = rpp(*args)
    other = rpp(*args, "--format", fmt)
    assert trec.code == other.code == 0 and other.err == trec.err
    expected = parse_trec(trec.out)
    assert len(expected) == len(trec.out.splitlines()) > 3000
    assert PARSERS[fmt](other.out) == expected


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_row_formats_keep_the_trec_row_order(fmt):
    args = ["eval", "-q", "-m", "rpp", "-m", "map", DEMO / "qrels", *RUNS]
    trec, other = rpp(*args), rpp(*args, "--format", fmt)
    assert list(PARSERS[fmt](other.out)) == list(parse_trec(trec.out))


def test_jsonl_other_is_null_for_per_run_rows():
    res = rpp("eval", "-m", "rpp", "-m", "map", "--format", "jsonl", DEMO / "qrels", *RUNS)
    objs = [json.loads(line) for line in res.out.splitlines()]
    assert {o["measure"] for o in objs if o["other"] is None} == {"rpp_win", "map"}
    assert {o["measure"] for o in objs if o["other"] is not None} == {"rpp"}
    assert all(isinstance(o["value"], float) for o in objs)


def small_results() -> Results:
    """Three runs, two queries; hand-picked values (antisymmetric where they should be)."""
    res = Results(["q1", "q2"], ["bm25", "dense_v2", "x"])
    a = np.array([0, 0, 1, 1, 2, 2])
    b = np.array([1, 2, 0, 2, 0, 1])
    res.add("rpp", -1, a, np.array([-0.5, 0.25, 0.5, 1.0, -0.25, -1.0]), b)
    res.add("rpp_win", -1, np.arange(3), np.array([-0.125, 0.75, -0.625]))
    res.add("map", -1, np.arange(3), np.array([0.1, 0.30006, 12.0]))
    res.add("map", 0, np.arange(3), np.array([0.2, 0.4, 0.6]))
    return res


SMALL_MATRIX = (
    "per-run measures (q1)\n"
    "run          map\n"
    "bm25      0.2000\n"
    "dense_v2  0.4000\n"
    "x         0.6000\n"
    "\n"
    "rpp (all): row run vs column run\n"
    "rpp          bm25  dense_v2       x\n"
    "bm25            -   -0.5000  0.2500\n"
    "dense_v2   0.5000         -  1.0000\n"
    "x         -0.2500   -1.0000       -\n"
    "\n"
    "per-run measures (all)\n"
    "run       rpp_win      map\n"
    "bm25      -0.1250   0.1000\n"
    "dense_v2   0.7500   0.3001\n"
    "x         -0.6250  12.0000\n")


def test_matrix_layout_by_hand():
    """Run names on both axes in argument order, '-' on the diagonal, values right-aligned
    (0.30006 prints as 0.3001 as in the trec format), per-query tables first."""
    assert render(small_results(), "matrix") == SMALL_MATRIX


def test_markdown_layout_by_hand():
    """Markdown's specials in a name or title are backslash-escaped only where they would
    start markup (``dense_v2``'s ``_`` and the title's colon start none); numbers are not."""
    text = render(small_results(), "markdown", precision=2, summary=True)
    assert text.split("\n\n")[2:4] == [
        "**rpp (all): row run vs column run**",
        "| rpp      |  bm25 | dense_v2 |    x |\n"
        "|:---------|------:|---------:|-----:|\n"
        "| bm25     |       |    -0.50 | 0.25 |\n"
        "| dense_v2 |  0.50 |          | 1.00 |\n"
        "| x        | -0.25 |    -1.00 |      |"]


def test_latex_layout_by_hand():
    """Names escaped, minus signs typeset, values right-aligned, booktabs rules."""
    text = render(small_results(), "latex", precision=1)
    assert text.split("\n\n")[2] == (
        "% per-run measures (all)\n"
        "\\begin{tabular}{lrr}\n"
        "\\toprule\n"
        "run       & rpp\\_win &  map \\\\\n"
        "\\midrule\n"
        "bm25      &   $-$0.1 &  0.1 \\\\\n"
        "dense\\_v2 &      0.8 &  0.3 \\\\\n"
        "x         &   $-$0.6 & 12.0 \\\\\n"
        "\\bottomrule\n"
        "\\end{tabular}\n")


def test_tables_are_aligned():
    """Within a table every line has the same width (matrix, markdown) so columns line up."""
    for fmt in ("matrix", "markdown"):
        for block in render(small_results(), fmt).split("\n\n"):
            lines = [ln for ln in block.splitlines() if not ln.startswith(("**", "rpp (", "per-"))]
            if lines:
                assert len({len(ln) for ln in lines}) == 1, (fmt, block)


def test_no_summary_and_empty_results():
    assert render(small_results(), "matrix", summary=False) == SMALL_MATRIX.split("\n\n")[0] + "\n"
    empty = Results(["q1"], ["a", "b"])
    for fmt in FORMATS:
        assert render(empty, fmt) == ("measure,qid,run,other,value\n" if fmt == "csv" else "")


def test_not_finite_values():
    """NaN: JSON has no NaN, so jsonl writes null; the other formats print nan as trec does."""
    res = Results(["q1"], ["a", "b"])
    res.add("p", -1, np.arange(2), np.array([math.nan, 0.5]))
    assert render(res, "jsonl").splitlines()[0].endswith('"other": null, "value": null}')
    assert render(res, "csv").splitlines()[1] == "p,all,a,,nan"
    assert render(res, "trec").splitlines()[0].endswith("\tnan")
    assert "nan" in render(res, "matrix")


NAMES = st.lists(st.text(alphabet="ab_&%$#{}~^\\|,\".-[]*<>'=+@!?`:", min_size=1, max_size=5),
                 min_size=2, max_size=4, unique=True)


@settings(max_examples=60, deadline=None)
@given(runs=NAMES, data=st.data())
def test_every_format_round_trips_any_names_and_values(runs, data):
    """Names with LaTeX, markdown and CSV specials and any finite values parse back to the
    trec format's values in every format; p-values (``rp_p``) in full in jsonl and csv."""
    n = len(runs)
    precision = data.draw(st.integers(0, 8))
    res = Results(["7", "10"], runs)
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    finite = st.floats(-1e4, 1e4, allow_nan=False)
    for q in data.draw(st.lists(st.sampled_from([-1, 0, 1]), min_size=1, unique=True)):
        res.add("rp_p", q, a, np.array(data.draw(st.lists(finite, min_size=len(a),
                                                          max_size=len(a)))), b)
        res.add("m%1", q, np.arange(n), np.array(data.draw(st.lists(finite, min_size=n,
                                                                  max_size=n))))
    expected = parse_trec(render(res, "trec", precision))
    in_full = {tuple(row[:4]): repr(row[4]) for row in res.rows() if row[0] == "rp_p"}
    for fmt in PARSERS:
        want = expected | in_full if fmt in MACHINE_FORMATS else expected
        assert PARSERS[fmt](render(res, fmt, precision)) == want, fmt


def test_unknown_format_is_a_usage_error():
    res = rpp("eval", "--format", "xml", DEMO / "qrels", *RUNS)
    assert res.code == 2 and "'xml' is not one of" in res.err and res.out == ""


def literal_trec(results: Results, precision: int) -> str:
    """contract §7's trec lines, written from the definition: common.number per value."""
    lines, style = [], dict(zip(results.measures, styles(results.measures)))
    for measure, qid, run, other, value in results.rows():
        fields = [f"{measure:<22}", qid, run] + ([] if other is None else [other])
        lines.append("\t".join(fields) + "\t" + number(value, precision, style[measure]))
    return "".join(line + "\n" for line in lines)


VALUES = st.one_of(st.floats(), st.floats(-1e4, 1e4), st.sampled_from(
    [0.125, 0.375, -0.125, 2.5, 0.5, -0.5, 0.00005, -0.00005, -1e-300, -0.0, 5e-324,
     1.7976931348623157e308, -math.inf, math.nan, -math.nan, 123456789.98765, 1e22, -3.0]))
IDS = st.binary(min_size=1, max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape"))


@settings(max_examples=150, deadline=None)
@given(precision=st.integers(0, 17), data=st.data())
def test_trec_lines_are_the_literal_definition(precision, data):
    """The kernel's lines (format_rows) against common.number row by row: any float (NaN of
    either sign, infinities, subnormals, halfway cases, 1e308), count measures as integers,
    no negative zero, ranks (map_rank beside map) as 5 or 5.5, and ids of any bytes (written
    back as read)."""
    qids = data.draw(st.lists(IDS, min_size=1, max_size=3, unique=True))
    runs = data.draw(st.lists(IDS, min_size=2, max_size=3, unique=True))
    res = Results(qids, runs)
    for measure in data.draw(st.lists(st.sampled_from(["map", "num_ret", "rpp", "P_10",
                                                       "map_rank"]), min_size=1, unique=True)):
        q = data.draw(st.integers(-1, len(qids) - 1))
        n = len(runs)
        values = np.array(data.draw(st.lists(VALUES, min_size=n, max_size=n)))
        if measure == "rpp":
            res.add(measure, q, np.arange(n), values, (np.arange(n) + 1) % n)
        else:
            res.add(measure, q, np.arange(n), values)
    assert render(res, "trec", precision) == literal_trec(res, precision)


def test_trec_values_by_hand():
    """Halfway cases round to even as Python's and C's exact printing do; -0.00001 prints
    0.0000; a count prints its integer part; NaN of either sign prints nan."""
    res = Results(["q"], ["a", "b"])
    res.add("m", 0, np.arange(2), np.array([0.125, 0.375]))
    res.add("num_ret", 0, np.arange(2), np.array([7.0, -0.0]))
    res.add("x", 0, np.arange(2), np.array([-0.00001, -math.nan]))
    lines = [line.split("\t")[-1] for line in render(res, "trec", 2).splitlines()]
    assert lines == ["0.12", "0.38", "7", "0", "0.00", "nan"]


@pytest.mark.parametrize("encoding, errors, direct", [
    ("utf-8", "surrogateescape", True), ("UTF8", "surrogateescape", True),
    ("utf-8", "strict", False), ("latin-1", "surrogateescape", False)])
def test_trec_bytes_go_to_the_buffer_only_where_text_would_give_the_same(encoding, errors,
                                                                          direct):
    """rpp's stdout (UTF-8, surrogateescape) takes the kernel's lines as bytes, after what
    its text layer holds; any other stream gets them decoded, as before, so an id's bytes
    that are not UTF-8 still fail or change as that stream's encoding says."""
    from rpp_cli.report.trec import bytes_writer, takes_bytes

    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding=encoding, errors=errors, newline="")
    out.write("first\n")
    line = "m\tq\xe9\t".encode() + b"r\xff\t0.5000\n"
    write_bytes = bytes_writer(out)
    assert takes_bytes(out) == direct
    if direct or errors == "surrogateescape":
        write_bytes(line)
        out.flush()
        text = b"first\n" + line
        assert raw.getvalue() == (text if direct else text.decode(
            "utf-8", "surrogateescape").encode(encoding, errors))
    else:
        with pytest.raises(UnicodeEncodeError):
            write_bytes(line)
            out.flush()
    string = io.StringIO()
    bytes_writer(string)(b"a\tb\n")
    assert string.getvalue() == "a\tb\n"


class _Dribble(io.RawIOBase):
    """A raw stream that takes at most 3 bytes a write (a pipe interrupted by signals)."""

    def __init__(self) -> None:
        self.got = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.got += bytes(data[:3])
        return min(3, len(data))


def test_trec_bytes_survive_partial_writes_of_a_raw_stdout():
    """Under ``python -u`` stdout's buffer is a raw file whose write may take part of the
    bytes: every byte still arrives, in order."""
    from rpp_cli.report.trec import bytes_writer

    raw = _Dribble()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", write_through=True)
    write_bytes = bytes_writer(out)
    line = b"rpp    \t201\tsys\xff\tother\t0.5000\n" * 50
    write_bytes(line)
    assert bytes(raw.got) == line


@pytest.mark.slow
def test_unbuffered_python_prints_the_same_bytes():
    """``python -u`` (stdout's buffer a raw file) prints through a pipe what rpp prints
    otherwise, byte for byte."""
    import os
    import subprocess
    import sys

    args = ["-m", "rpp_cli", "eval", "-q", "-Q", "-j", "2", str(DEMO / "qrels"),
            *map(str, RUNS)]
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    plain = subprocess.run([sys.executable, *args], capture_output=True, env=env, timeout=120)
    unbuffered = subprocess.run([sys.executable, "-u", *args], capture_output=True, env=env,
                                timeout=120)
    assert plain.returncode == unbuffered.returncode == 0
    assert unbuffered.stdout == plain.stdout and len(plain.stdout) > 10_000


def test_aligned_tables_count_terminal_columns():
    """Wide characters (中, 😀) take two terminal columns, a combining mark none: the matrix
    table and --view human's grid pad by columns, so every row ends at the same column."""
    from rpp_cli.report.common import columns
    from rpp_cli.report.matrix import render
    from rpp_cli.report.table import _grid
    from rpp_cli.report.tables import Table

    assert [columns(t) for t in ("bm25", "中文", "😀x", "e\u0301")] == [4, 4, 3, 1]
    names = ["中文运行", "bm25", "e\u0301t\u00e9", "😀"]
    cells = [[None if i == j else f"{i - j:.4f}" for j in range(4)] for i in range(4)]
    lines = render(Table("rpp (all): row run vs column run", "rpp", names, names,
                         cells)).splitlines()[1:]
    assert len({columns(line) for line in lines}) == 1, lines
    grid = _grid([""] + names, [[a] + [c or "." for c in row] for a, row in zip(names, cells)])
    assert len({columns(line) for line in grid}) == 1, grid


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2 ** 32 - 1), st.integers(1, 40), st.booleans())
def test_results_parts_are_the_columns_a_shard_of_queries_at_a_time(seed, rows, summary):
    """Writers take the table a shard of whole queries at a time: the shards, joined, are the
    columns (the ``all`` rows only with ``summary``), each of at most ``rows`` rows unless one
    query has more."""
    rng = np.random.default_rng(seed)
    n_q, runs = int(rng.integers(1, 9)), ["r0", "r1", "r2"]
    results = Results([f"10{q}_1" for q in range(n_q)], runs)
    for name in ("map", "P_10"):
        for q in [*range(n_q), -1]:
            if rng.random() < 0.8:
                results.add(name, q, np.arange(3), rng.random(3))
    whole = results.columns()
    if not summary:
        keep = whole[1] >= 0
        whole = tuple(c[keep] for c in whole)
    parts = list(results.parts(summary, rows))
    assert all(np.array_equal(np.concatenate([p[i] for p in parts]), whole[i]) for i in range(5))
    for m, q, r, o, v in parts:
        assert len(m) <= rows or len(np.unique(q)) == 1


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_format_the_same_bytes_in_shards_of_a_few_rows(fmt, monkeypatch):
    """jsonl, csv and the tables are written a shard of queries at a time (memory follows a
    shard: matrix on 100,000 queries 1.6 GB -> 0.3 GB): shards of 7 rows, which cut between
    nearly every query, print the same bytes as one shard."""
    import rpp_cli.results

    args = ["eval", "-q", "-m", "rpp", "-m", "map", "--format", fmt, DEMO / "qrels", *RUNS[:3]]
    whole = rpp(*args)
    monkeypatch.setattr(rpp_cli.results, "PART_ROWS", 7)
    sharded = rpp(*args)
    assert whole.code == sharded.code == 0 and whole.out == sharded.out and whole.out


def test_a_wide_matrix_is_cut_into_blocks_of_numbered_columns(tmp_path):
    """14 runs with real-length names (46 characters): no line past 100 columns; a run x run
    table numbers its runs and shows every cell once across its blocks; a narrow table
    (the demo) is printed as before, one block."""
    from rpp_cli.report.matrix import MAX_WIDTH

    runs = []
    for i in range(14):
        path = tmp_path / f"dl-hard-passage-run-with-a-long-name-{i:02d}.run"
        path.write_bytes((DEMO / "runs" / ("bm25" if i % 2 else "dpr")).read_bytes())
        runs.append(path)
    res = rpp("eval", "-Q", "-m", "rpp", "-m", "map", "--format", "matrix", DEMO / "qrels",
              *runs)
    lines = res.out.splitlines()
    assert res.code == 0 and max(map(len, lines)) <= MAX_WIDTH
    titles = [line for line in lines if line.startswith("rpp (all)")]
    assert len(titles) > 1 and titles[0].endswith("[columns 1-6 of 14]")
    cells = {}
    for block in res.out.split("\n\n"):
        title, header, *body = block.splitlines()
        if title.startswith("rpp (all)"):
            for row in body:
                i, _, *values = row.split()
                cells.update({(int(i), int(j)): v for j, v in zip(header.split()[1:], values)})
    assert sorted(cells) == [(i, j) for i in range(1, 15) for j in range(1, 15)]
    demo = rpp("eval", "-Q", "--format", "matrix", DEMO / "qrels", *sorted((DEMO / "runs").iterdir()))
    assert "[columns" not in demo.out

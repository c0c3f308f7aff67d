"""Regression tests of the data layer (reading, joining, corpus size, limits), one tiny
hand-made file set each, through the public CLI only. Every expected value is worked out by
hand in a comment: n is the corpus size of the query (contract §2), f the worst-case position."""
from __future__ import annotations

import gzip
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import DEMO, ROOT, parse_lines, rpp, tiered

BOM = b"\xef\xbb\xbf"


def _files(tmp_path: Path, **contents: bytes | str) -> dict[str, Path]:
    """Write ``name=content`` files into tmp_path (str is UTF-8 encoded)."""
    out = {}
    for name, content in contents.items():
        path = tmp_path / name
        path.write_bytes(content.encode() if isinstance(content, str) else content)
        out[name] = path
    return out


def _ok(*args) -> dict[tuple, float]:
    res = rpp(*args)
    assert res.code == 0, res.err
    return parse_lines(res.out)


def _one_error(res, prefix: str) -> str:
    """Exit 2 and exactly one stderr line starting with ``prefix``; returns that line."""
    assert res.code == 2, f"exit {res.code}; stderr: {res.err!r}"
    assert "Traceback" not in res.err
    lines = res.err.strip().splitlines()
    assert len(lines) == 1, f"want one stderr line, got {lines!r}"
    assert lines[0].startswith(prefix), f"{lines[0]!r} does not start with {prefix!r}"
    return lines[0]


# ---------------------------------------------------------------------------------------------
# a. docnos of different widths join


RUN_B = "1 Q0 zz 1 5 b\n"


@pytest.mark.parametrize("qrels, run_a", [
    # the short docno judged, a longer one in the same run
    ("1 0 d1 1\n", "1 Q0 d1 1 2 a\n1 Q0 yyyyyyyyy 2 1 a\n"),
    # the long docno judged and retrieved, a short one in the same run
    ("1 0 yyyyyyyyy 1\n", "1 Q0 yyyyyyyyy 1 2 a\n1 Q0 d1 2 1 a\n"),
    # widths 2 / 17 / 40 in the qrels (one file) and in the run (the 17 and 40 judged 0)
    ("1 0 d1 1\n1 0 yyyyyyyyyyyyyyyyy 0\n1 0 " + "f" * 40 + " 0\n",
     "1 Q0 d1 1 4 a\n1 Q0 " + "e" * 40 + " 2 3 a\n1 Q0 yyyyyyyyyyyyyyyyy 3 2 a\n1 Q0 "
     + "f" * 40 + " 4 1 a\n"),
])
def test_docnos_of_different_widths_join(tmp_path, qrels, run_a):
    # Query 1 has one relevant item, which a ranks first (score 2 > 1) and b misses.
    # First two cases: n = |{relevant, the other docno of a, zz}| = 3, f_1(a) = 1,
    # f_1(b) = n - m + 1 = 3 - 1 + 1 = 3 -> rpp(a, b) = sgn(3 - 1) = 1, asl(a) = 1,
    # asl(b) = 3, map(a) = 1, map(b) = 0.
    # Third case: n = |{d1, e*40, y*17, f*40, zz}| = 5 (the rankings; contract §2):
    # f_1(b) = 5, the rest as above.
    f = _files(tmp_path, qrels=qrels, a=run_a, b=RUN_B)
    got = _ok("eval", "-q", "-m", "rpp", "-m", "asl", "-m", "map", f["qrels"], f["a"], f["b"])
    n = 5 if "f" * 40 in qrels else 3
    assert got[("rpp", "1", "a", "b")] == 1
    assert got[("rpp", "1", "b", "a")] == -1
    assert got[("asl", "1", "a")] == 1
    assert got[("asl", "1", "b")] == n
    assert got[("map", "1", "a")] == 1
    assert got[("map", "1", "b")] == 0


def test_docnos_of_different_widths_across_queries_of_one_file(tmp_path):
    # q1: relevant d1 (2 bytes); q2: relevant y*17 (17 bytes); q3: relevant a 40-byte id.
    # Run a: q1 d1 first; q2 x (score 3) then y*17; q3 the 40-byte id alone.
    # Run b: zz for every query (b retrieves no relevant item).
    # q1: n = |{d1, zz}| = 2: f(a) = 1, f(b) = 2 - 1 + 1 = 2; map(a) = 1.
    # q2: n = |{y*17, x, zz}| = 3: f(a) = 2, f(b) = 3; map(a) = 1/2.
    # q3: n = |{h40, zz}| = 2: f(a) = 1, f(b) = 2; map(a) = 1.
    # rpp(a, b) = 1 on each; all: asl(a) = (1 + 2 + 1) / 3 = 4/3, asl(b) = (2 + 3 + 2) / 3 = 7/3,
    # map(a) = (1 + 0.5 + 1) / 3 = 5/6, map(b) = 0.
    h40 = "0123456789abcdef0123456789abcdef01234567"
    y17 = "y" * 17
    f = _files(tmp_path,
               qrels=f"1 0 d1 1\n2 0 {y17} 1\n3 0 {h40} 2\n",
               a=f"1 Q0 d1 1 2 a\n2 Q0 x 1 3 a\n2 Q0 {y17} 2 1 a\n3 Q0 {h40} 1 9 a\n",
               b="1 Q0 zz 1 5 b\n2 Q0 zz 1 5 b\n3 Q0 zz 1 5 b\n")
    got = _ok("eval", "-q", "--precision", "10", "-m", "rpp", "-m", "asl", "-m", "map",
              f["qrels"], f["a"], f["b"])
    for q, fa, fb, ap in [("1", 1, 2, 1), ("2", 2, 3, 0.5), ("3", 1, 2, 1)]:
        assert got[("rpp", q, "a", "b")] == 1
        assert got[("asl", q, "a")] == fa
        assert got[("asl", q, "b")] == fb
        assert got[("map", q, "a")] == ap
    assert got[("rpp", "all", "a", "b")] == 1
    assert abs(got[("asl", "all", "a")] - 4 / 3) < 1e-9
    assert abs(got[("asl", "all", "b")] - 7 / 3) < 1e-9
    assert abs(got[("map", "all", "a")] - 5 / 6) < 1e-9


# ---------------------------------------------------------------------------------------------
# b. fields split on any run of spaces and tabs


@pytest.mark.parametrize("run_a", [
    "1\t Q0\t d1 1 2\t a\n",  # tabs and spaces mixed within a line
    "1\tQ0\td1\t1\t2\ta\n1 \tQ0\t d9  \t2\t\t1 \t a\n",  # a tab-separated first line, then mixed
    "1\tQ0\td9\t1\t1\ta\n1\tQ0\td1 \t2\t2\ta\n",  # a space left inside a tab-separated field
    "1\tQ0\td9\t1\t1\ta\n1\tQ0\td1\t2 2\ta\n",  # two space-separated fields in one tab field
    "  1 Q0 d1 1 2 a  \n\t1\tQ0\td9\t2\t1\ta\t\n",  # leading and trailing whitespace
])
def test_run_fields_split_on_any_run_of_spaces_and_tabs(tmp_path, run_a):
    # d1 is the only relevant item and a scores it 2, above d9 (score 1) where d9 is there.
    # n = |{d1, (d9), zz}|; f(a) = 1 -> asl(a) = 1, map(a) = 1, rpp(a, b) = 1 (b misses d1).
    f = _files(tmp_path, qrels="1 0 d1 1\n", a=run_a, b=RUN_B)
    got = _ok("eval", "-q", "-m", "rpp", "-m", "asl", "-m", "map", f["qrels"], f["a"], f["b"])
    assert got[("map", "1", "a")] == 1  # the run is named `a` (its tag, the 6th field)
    assert got[("asl", "1", "a")] == 1
    assert got[("rpp", "1", "a", "b")] == 1


def test_qrels_fields_split_on_any_run_of_spaces_and_tabs(tmp_path):
    # The same judgments (d1 relevant, d2 not) spaced plainly and with tabs and spaces mixed.
    run = "1 Q0 d2 1 2 a\n1 Q0 d1 2 1 a\n"
    (tmp_path / "ugly").mkdir()
    plain = _files(tmp_path, qrels="1 0 d1 1\n1 0 d2 0\n", a=run, b=RUN_B)
    ugly = _files(tmp_path / "ugly", qrels=" 1\t 0 \t d1\t\t1 \n1 \t0\td2  0\t\n", a=run,
                  b=RUN_B)
    want = rpp("eval", "-q", "--precision", "10", plain["qrels"], plain["a"], plain["b"])
    got = rpp("eval", "-q", "--precision", "10", ugly["qrels"], ugly["a"], ugly["b"])
    assert want.code == got.code == 0, got.err
    assert got.out == want.out
    # a ranks d2 then d1: map(a) = 1/2
    assert parse_lines(got.out)[("map", "1", "a")] == 0.5


# ---------------------------------------------------------------------------------------------
# c. a UTF-8 BOM at the start of a file is skipped (plain and gzip)

QRELS_C = "1 0 d1 1\n1 0 d2 0\n2 0 d3 1\n"
RUN_C_A = "1 Q0 d1 1 2 a\n1 Q0 d2 2 1 a\n2 Q0 d3 1 1 a\n"
RUN_C_B = "1 Q0 d2 1 2 b\n2 Q0 d9 1 1 b\n"


@pytest.mark.parametrize("gz", [False, True])
@pytest.mark.parametrize("comment", [False, True])
def test_bom_is_skipped(tmp_path, gz, comment):
    # a: q1 d1 first (map 1), q2 d3 first (map 1) -> map all = 1;
    # b: never retrieves a relevant item -> map all = 0. Two queries, no phantom '\ufeff1'.
    # With `comment`, the BOM is followed by a '#' line, which is still a comment.
    def enc(text: str, bom: bool) -> bytes:
        data = ((b"# made by hand\n" if comment else b"") + text.encode())
        data = (BOM if bom else b"") + data
        return gzip.compress(data) if gz else data

    (tmp_path / "bom").mkdir()
    (tmp_path / "plain").mkdir()
    with_bom = _files(tmp_path / "bom", qrels=enc(QRELS_C, True), a=enc(RUN_C_A, True),
                      b=enc(RUN_C_B, True))
    without = _files(tmp_path / "plain", qrels=enc(QRELS_C, False), a=enc(RUN_C_A, False),
                     b=enc(RUN_C_B, False))
    res = rpp("eval", "-q", "-m", "map", "-m", "rpp", with_bom["qrels"], with_bom["a"],
              with_bom["b"])
    ref = rpp("eval", "-q", "-m", "map", "-m", "rpp", without["qrels"], without["a"],
              without["b"])
    assert ref.code == 0, ref.err
    assert res.code == 0, res.err
    assert "\ufeff" not in res.out and "\ufeff" not in res.err
    got = parse_lines(res.out)
    assert {k[1] for k in got} == {"1", "2", "all"}
    assert got[("map", "all", "a")] == 1
    assert got[("map", "all", "b")] == 0
    assert res.out == ref.out


def test_bom_only_at_the_start_of_a_file(tmp_path):
    # A BOM in the middle of a file is not skipped: it is part of the token (here the qid of
    # line 2, '\ufeff2', a query the qrels do not have). q2 is then missing from a: map(a, q2)
    # = 0 and map all (a) = (1 + 0) / 2 = 0.5.
    f = _files(tmp_path, qrels=QRELS_C.encode(),
               a=b"1 Q0 d1 1 2 a\n" + BOM + b"2 Q0 d3 1 1 a\n", b=RUN_C_B.encode())
    got = _ok("eval", "-q", "-m", "map", f["qrels"], f["a"], f["b"])
    assert got[("map", "2", "a")] == 0
    assert got[("map", "all", "a")] == 0.5


# ---------------------------------------------------------------------------------------------
# d. NUL and other control bytes are an error naming the line; CRLF is fine

CONTROL = [(b"\x00", "0x00"), (b"\x01", "0x01"), (b"\x0b", "0x0b"), (b"\x0c", "0x0c"),
           (b"\x7f", "0x7f"), (b"\r", "0x0d")]


@pytest.mark.parametrize("byte, shown", CONTROL)
@pytest.mark.parametrize("where", ["qrels", "run"])
def test_control_byte_is_an_error(tmp_path, byte, shown, where):
    # The byte sits inside a docno on line 2 (a lone CR: not followed by LF).
    bad = b"1 0 d" + byte + b"x 0\n" if where == "qrels" else b"1 Q0 d" + byte + b"x 2 1 a\n"
    qrels = b"1 0 d1 1\n" + (bad if where == "qrels" else b"1 0 d2 0\n")
    run_a = b"1 Q0 d1 1 2 a\n" + (bad if where == "run" else b"1 Q0 d2 2 1 a\n")
    f = _files(tmp_path, qrels=qrels, a=run_a, b=RUN_B)
    res = rpp("eval", "-m", "map", f["qrels"], f["a"], f["b"])
    path = f["qrels"] if where == "qrels" else f["a"]
    line = _one_error(res, f"rpp: {path}:2:")
    assert shown in line


@pytest.mark.parametrize("where", ["qrels", "run"])
def test_control_byte_in_a_gzip_file_is_an_error(tmp_path, where):
    qrels = b"1 0 d1 1\n1 0 d2 0\n"
    run_a = b"1 Q0 d1 1 2 a\n1 Q0 d2 2 1 a\n"
    if where == "qrels":
        qrels = gzip.compress(qrels + b"1 0 d\x00x 0\n")
    else:
        run_a = gzip.compress(run_a + b"1 Q0 d\x00x 3 0 a\n")
    f = _files(tmp_path, qrels=qrels, a=run_a, b=RUN_B)
    res = rpp("eval", "-m", "map", f["qrels"], f["a"], f["b"])
    path = f["qrels"] if where == "qrels" else f["a"]
    assert "0x00" in _one_error(res, f"rpp: {path}:3:")


def test_crlf_line_endings_are_fine(tmp_path):
    # The same collection with LF and with CRLF (and a CR before the final LF only) prints the
    # same: a ranks d2 then d1 -> map(a) = 1/2.
    qrels, run_a = "1 0 d1 1\n1 0 d2 0\n", "1 Q0 d2 1 2 a\n1 Q0 d1 2 1 a\n"
    (tmp_path / "crlf").mkdir()
    lf = _files(tmp_path, qrels=qrels, a=run_a, b=RUN_B)
    crlf = _files(tmp_path / "crlf", qrels=qrels.replace("\n", "\r\n"),
                  a=run_a.replace("\n", "\r\n"), b=RUN_B.replace("\n", "\r\n"))
    want = rpp("eval", "-q", "--precision", "10", lf["qrels"], lf["a"], lf["b"])
    got = rpp("eval", "-q", "--precision", "10", crlf["qrels"], crlf["a"], crlf["b"])
    assert want.code == got.code == 0, got.err
    assert got.out == want.out
    assert parse_lines(got.out)[("map", "1", "a")] == 0.5


# ---------------------------------------------------------------------------------------------
# e. limits: docno length, endless input, decompressed size

LIMIT = 4096


@pytest.mark.parametrize("where", ["qrels", "run"])
def test_docno_longer_than_the_limit_is_an_error(tmp_path, where):
    long = "L" * (LIMIT + 1)
    qrels = "1 0 d1 1\n" + (f"1 0 {long} 0\n" if where == "qrels" else "")
    run_a = "1 Q0 d1 1 2 a\n" + (f"1 Q0 {long} 2 1 a\n" if where == "run" else "")
    f = _files(tmp_path, qrels=qrels, a=run_a, b=RUN_B)
    res = rpp("eval", "-m", "map", f["qrels"], f["a"], f["b"])
    path = f["qrels"] if where == "qrels" else f["a"]
    assert "limit" in _one_error(res, f"rpp: {path}:2:")


def test_docno_of_exactly_the_limit_is_fine(tmp_path):
    # Two 4096-byte docnos that differ in their last byte: L...La relevant and retrieved
    # second by a (after L...Lb, score 3 > 2); b retrieves zz only.
    # n = |{L..La, L..Lb, zz}| = 3: f(a) = 2, f(b) = 3 - 1 + 1 = 3; map(a) = 1/2, rpp(a, b) = 1.
    la, lb = "L" * (LIMIT - 1) + "a", "L" * (LIMIT - 1) + "b"
    f = _files(tmp_path, qrels=f"1 0 {la} 1\n1 0 {lb} 0\n",
               a=f"1 Q0 {lb} 1 3 a\n1 Q0 {la} 2 2 a\n", b=RUN_B)
    got = _ok("eval", "-q", "-m", "map", "-m", "asl", "-m", "rpp", f["qrels"], f["a"], f["b"])
    assert got[("map", "1", "a")] == 0.5
    assert got[("asl", "1", "a")] == 2
    assert got[("asl", "1", "b")] == 3
    assert got[("rpp", "1", "a", "b")] == 1


def _cli_in_subprocess(args: list[str], timeout: float = 60, memory: int = 2 << 30):
    """The CLI in a child process capped at ``memory`` bytes of address space, so that a
    reader that swallows an endless file fails there (MemoryError) instead of taking the
    machine; returns (returncode, stderr, seconds)."""
    def cap():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "rpp_cli", *args], capture_output=True,
                          timeout=timeout, preexec_fn=cap, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    return proc.returncode, proc.stderr.decode("utf-8", "replace"), time.monotonic() - start


@pytest.mark.parametrize("where", tiered(["qrels", "run"]))
def test_dev_zero_is_refused_quickly(tmp_path, where):
    # /dev/zero never ends and its first byte is NUL: an error on line 1, at once.
    f = _files(tmp_path, qrels="1 0 d1 1\n", a="1 Q0 d1 1 2 a\n", b=RUN_B)
    qrels = "/dev/zero" if where == "qrels" else str(f["qrels"])
    run_a = "/dev/zero" if where == "run" else str(f["a"])
    code, err, seconds = _cli_in_subprocess(["eval", "-m", "map", qrels, run_a, str(f["b"])])
    assert code == 2, err[-2000:]
    assert "Traceback" not in err and "MemoryError" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("rpp: /dev/zero:1:"), lines
    assert "0x00" in lines[0]
    assert seconds < 20


@pytest.mark.parametrize("where", tiered(["qrels", "run"]))
def test_gzip_bomb_is_refused_at_the_decompressed_size_cap(tmp_path, monkeypatch, where):
    # One valid line and 64 MB of newlines (64 kB compressed): a valid file, but larger than
    # the cap once decompressed, which is monkeypatched to 1 MB here.
    import rpp_cli.core.table

    monkeypatch.setattr(rpp_cli.core.table, "MAX_INPUT_BYTES", 1 << 20)
    first = b"1 0 d1 1\n" if where == "qrels" else b"1 Q0 d1 1 2 a\n"
    bomb = gzip.compress(first + b"\n" * (64 << 20), compresslevel=9)
    assert len(bomb) < 200_000
    f = _files(tmp_path, qrels="1 0 d1 1\n", a="1 Q0 d1 1 2 a\n", b=RUN_B, bomb=bomb)
    qrels = f["bomb"] if where == "qrels" else f["qrels"]
    run_a = f["bomb"] if where == "run" else f["a"]
    res = rpp("eval", "-m", "map", qrels, run_a, f["b"])
    assert "limit" in _one_error(res, f"rpp: {f['bomb']}:")


def test_file_below_the_decompressed_size_cap_is_fine(tmp_path, monkeypatch):
    # The same kind of file, 512 kB decompressed, under a 1 MB cap: read as usual.
    # a ranks d1 first: map(a) = 1.
    import rpp_cli.core.table

    monkeypatch.setattr(rpp_cli.core.table, "MAX_INPUT_BYTES", 1 << 20)
    f = _files(tmp_path, qrels=gzip.compress(b"1 0 d1 1\n" + b"\n" * (512 << 10)),
               a="1 Q0 d1 1 2 a\n", b=RUN_B)
    got = _ok("eval", "-q", "-m", "map", f["qrels"], f["a"], f["b"])
    assert got[("map", "1", "a")] == 1


# ---------------------------------------------------------------------------------------------
# f. the number of jobs never changes the output


def test_jobs_do_not_change_the_output():
    runs = sorted((DEMO / "runs").iterdir())
    one = rpp("eval", "-q", "-j", "1", DEMO / "qrels", *runs)
    two = rpp("eval", "-q", "-j", "2", DEMO / "qrels", *runs)
    assert one.code == two.code == 0, two.err
    assert one.out == two.out


# ---------------------------------------------------------------------------------------------
# g. the exact corpus size: docnos sharing a long prefix are distinct items

PREFIX = "clueweb12-0000tw-00-00000/http://example.com/archive/2012/index.php?page=" + "p" * 40


def _prefixed(length: int) -> dict[str, str]:
    """Docnos of ``length`` bytes sharing the first length - 1 (P = that prefix): Pa ... Pg,
    and P itself (length - 1 bytes) and Paa (length + 1)."""
    p = PREFIX[:length - 1]
    names = {c: p + c for c in "abcdefg"}
    names["P"], names["aa"] = p, p + "aa"
    return names


def _corpus_files(tmp_path: Path, lengths: list[int]):
    # For each length L, query L: judged Pa (grade 1, the only relevant item), Pb and Pc
    # (grade 0); run a retrieves Pd Pe P Paa (unjudged) Pb Pc (scores 6 5 4 3 2 1), run b
    # retrieves Pg then Pa (scores 2, 1).
    # n = |rankings ∪ relevant| = |{Pd, Pe, P, Paa, Pb, Pc, Pg, Pa}| = 8 (exact, whatever
    # the prefix):
    # asl(a) = f_1(a) = n - m + 1 = 8 - 1 + 1 = 8 (a misses Pa), asl(b) = 2 (Pa at rank 2),
    # rpp(a, b) = sgn(2 - 8) = -1.
    q, a, b = [], [], []
    for L in lengths:
        d = _prefixed(L)
        q += [f"{L} 0 {d['a']} 1", f"{L} 0 {d['b']} 0", f"{L} 0 {d['c']} 0"]
        a += [f"{L} Q0 {d[k]} {i + 1} {6 - i} a"
              for i, k in enumerate(["d", "e", "P", "aa", "b", "c"])]
        b += [f"{L} Q0 {d['g']} 1 2 b", f"{L} Q0 {d['a']} 2 1 b"]
    return _files(tmp_path, qrels="\n".join(q) + "\n", a="\n".join(a) + "\n",
                  b="\n".join(b) + "\n")


@pytest.mark.parametrize("length", [8, 9, 16, 17, 100])
def test_corpus_size_counts_docnos_that_differ_in_the_last_byte(tmp_path, length):
    f = _corpus_files(tmp_path, [length])
    got = _ok("eval", "-q", "-m", "asl", "-m", "rpp", f["qrels"], f["a"], f["b"])
    assert got[("asl", str(length), "a")] == 8
    assert got[("asl", str(length), "b")] == 2
    assert got[("rpp", str(length), "a", "b")] == -1


def test_corpus_size_with_every_width_in_one_file(tmp_path):
    # The five queries of the test above in one set of files (widths 7-101 bytes mixed):
    # each query on its own, n = 8: asl(a) = 8, asl(b) = 2; all: asl(a) = 8, asl(b) = 2.
    lengths = [8, 9, 16, 17, 100]
    f = _corpus_files(tmp_path, lengths)
    got = _ok("eval", "-q", "-m", "asl", f["qrels"], f["a"], f["b"])
    for L in lengths:
        assert got[("asl", str(L), "a")] == 8
        assert got[("asl", str(L), "b")] == 2
    assert got[("asl", "all", "a")] == 8
    assert got[("asl", "all", "b")] == 2


def test_corpus_size_counts_an_item_once_across_runs_and_qrels(tmp_path):
    # The same 40-byte docno h1 judged (relevant) and retrieved by a and b, h2 judged and
    # retrieved by a, zz retrieved by b and c: n = |{h1, h2, zz}| = 3, each counted once.
    # a: h2 then h1 -> f(a) = 2; b: zz then h1 -> f(b) = 2; c misses h1: f(c) = n - 1 + 1 = 3.
    h1, h2 = "a" * 39 + "1", "a" * 39 + "2"
    f = _files(tmp_path, qrels=f"7 0 {h1} 1\n7 0 {h2} 0\n",
               a=f"7 Q0 {h2} 1 2 a\n7 Q0 {h1} 2 1 a\n",
               b=f"7 Q0 zz 1 2 b\n7 Q0 {h1} 2 1 b\n", c="7 Q0 zz 1 1 c\n")
    got = _ok("eval", "-q", "-m", "asl", f["qrels"], f["a"], f["b"], f["c"])
    assert got[("asl", "7", "a")] == 2
    assert got[("asl", "7", "b")] == 2
    assert got[("asl", "7", "c")] == 3


def test_corpus_size_is_rankings_and_relevant_items_only(tmp_path):
    """contract §2 (paper §5.5): n = |rankings ∪ relevant items|. Query 7 judges a (2), d (1),
    b and c (0); a and d are unretrieved, run x retrieves e g, y retrieves f.
    Default: n = |{e, g, f} ∪ {a, d}| = 5 (b, c not counted; counting every judged item gave
    7); m = 2, both missed: f = 5 - 2 + 1 = 4 and 5 -> asl 4.5 for both runs.
    -l 2: the relevant items are {a}: n = |{e, g, f, a}| = 4, f = 4 - 1 + 1 = 4 -> asl 4."""
    f = _files(tmp_path, qrels="7 0 a 2\n7 0 b 0\n7 0 c 0\n7 0 d 1\n",
               x="7 Q0 e 1 2 x\n7 Q0 g 2 1 x\n", y="7 Q0 f 1 1 y\n")
    got = _ok("eval", "-m", "asl", f["qrels"], f["x"], f["y"])
    assert got[("asl", "all", "x")] == got[("asl", "all", "y")] == 4.5
    at2 = _ok("eval", "-l", "2", "-m", "asl", f["qrels"], f["x"], f["y"])
    assert at2[("asl", "all", "x")] == 4


# ---------------------------------------------------------------------------------------------
# h. a docno repeated within a query of a run


def test_repeated_docno_is_an_error_naming_the_line(tmp_path):
    # d1 on lines 1 and 3 of query 1: the repeat, line 3, is named.
    f = _files(tmp_path, qrels="1 0 d2 1\n",
               a="1 Q0 d1 1 1 a\n1 Q0 d2 2 2 a\n1 Q0 d1 3 3 a\n", b=RUN_B)
    res = rpp("eval", "-m", "map", f["qrels"], f["a"], f["b"])
    assert "d1" in _one_error(res, f"rpp: {f['a']}:3:")


def test_repeated_long_docno_is_an_error(tmp_path):
    # The same 40-byte docno twice in query 1 (lines 2 and 4), amid docnos of other widths.
    h = "0123456789abcdef0123456789abcdef01234567"
    f = _files(tmp_path, qrels="1 0 d2 1\n",
               a=f"1 Q0 d2 1 9 a\n1 Q0 {h} 2 8 a\n1 Q0 x 3 7 a\n1 Q0 {h} 4 6 a\n", b=RUN_B)
    res = rpp("eval", "-m", "map", f["qrels"], f["a"], f["b"])
    _one_error(res, f"rpp: {f['a']}:4:")


def test_dedup_keeps_the_best_scored_copy(tmp_path):
    # d1 scored 1 (line 1) and 3 (line 3); d2 (relevant) scored 2. Keeping the best copy
    # (d1 = 3) ranks d1, d2: map(a) = 1/2, asl(a) = 2. (Keeping the first copy would rank d2
    # first: map 1.) n = |{d1, d2, zz}| = 3, so asl(b) = 3.
    f = _files(tmp_path, qrels="1 0 d2 1\n",
               a="1 Q0 d1 1 1 a\n1 Q0 d2 2 2 a\n1 Q0 d1 3 3 a\n", b=RUN_B)
    got = _ok("eval", "-q", "--dedup", "-m", "map", "-m", "asl", f["qrels"], f["a"], f["b"])
    assert got[("map", "1", "a")] == 0.5
    assert got[("asl", "1", "a")] == 2
    assert got[("asl", "1", "b")] == 3


def test_same_docno_in_two_queries_or_near_misses_are_not_repeats(tmp_path):
    # The same docno in queries 1 and 2 is no repeat; nor are docnos of one query sharing all
    # but the last byte (x*16 + 'a' / 'b'), nor d1 / d10 / d100. q1: d1 relevant at rank 1
    # (scores 6 > 5 > ...): map 1. q2: d1 relevant, ranked after x..a (score 2 > 1): map 1/2.
    xa, xb = "x" * 16 + "a", "x" * 16 + "b"
    f = _files(tmp_path, qrels="1 0 d1 1\n2 0 d1 1\n",
               a=(f"1 Q0 d1 1 6 a\n1 Q0 d10 2 5 a\n1 Q0 d100 3 4 a\n1 Q0 {xa} 4 3 a\n"
                  f"1 Q0 {xb} 5 2 a\n2 Q0 {xa} 1 2 a\n2 Q0 d1 2 1 a\n"),
               b="1 Q0 zz 1 5 b\n2 Q0 zz 1 5 b\n")
    got = _ok("eval", "-q", "-m", "map", f["qrels"], f["a"], f["b"])
    assert got[("map", "1", "a")] == 1
    assert got[("map", "2", "a")] == 0.5

"""The compiled kernel against slow literal references, on random bytes (hypothesis fuzzing):
the tokenizer, number parsing, ranking and the exact dictionary."""
from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.core import Dictionary, _kernel, column_of, rank_rows

# -- split ---------------------------------------------------------------------------------

PIECES = [b"a", b"Q0", b"7", b"\xc3\xa9", b"doc-1", b" ", b"  ", b"\t", b" \t", b"\n", b"\r\n",
          b"\r", b"#", b"\x00", b"\x01", b"\x0b", b"\x0c", b"\x7f", b"\xef\xbb\xbf", b"x" * 9]


def reference_split(data: bytes, max_token: int):
    """trec_eval's rules written out line by line: (rows [(nfields, [fields])], error)."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rows = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines):
        if line.endswith(b"\r"):
            line = line[:-1]
        bad = re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", line)
        fields = re.split(rb"[ \t]+", line.strip(b" \t")) if line.strip(b" \t") else []
        comment = bool(fields) and fields[0].startswith(b"#")
        if bad is not None:
            # an error, unless a field that ended before it was too long (reported first)
            before = line[:bad.start()]
            head = re.split(rb"[ \t]+", before.strip(b" \t"))
            complete = head if before.endswith((b" ", b"\t")) else head[:-1]
            if not comment and any(len(f) > max_token for f in complete if f):
                return rows, ("too long", number)
            return rows, ("control", number, bad.group()[0])
        if not comment and any(len(f) > max_token for f in fields):
            return rows, ("too long", number)
        if fields and not comment:
            rows.append(fields)
    return rows, None


def kernel_split(data: bytes, max_token: int):
    cap = data.count(b"\n") + 1
    want = np.arange(8, dtype=np.int32)
    nfields = np.empty(cap, dtype=np.int32)
    starts = np.empty(cap * 8, dtype=np.int64)
    lens = np.empty(cap * 8, dtype=np.int32)
    n, err, at, a, _ = _kernel.split(data, want, max_token, nfields, starts, lens)
    rows = []
    for r in range(n):
        fields = [data[starts[j * cap + r]:starts[j * cap + r] + lens[j * cap + r]]
                  for j in range(min(8, int(nfields[r])))]
        rows.append(fields)
    line = data.count(b"\n", 0, at) if err else None
    error = None if err == 0 else ("control", line, a) if err == 1 else ("too long", line)
    return rows, error


@settings(max_examples=600, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(1, 12))
def test_split_matches_the_reference(pieces, max_token):
    data = b"".join(pieces)
    want_rows, want_error = reference_split(data, max_token)
    got_rows, got_error = kernel_split(data, max_token)
    assert got_error == want_error
    assert got_rows == [fields[:8] for fields in want_rows]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_split_never_reads_outside_the_data(data):
    rows, error = kernel_split(data, 4096)
    for fields in rows:
        assert all(f and not re.search(rb"[\x00-\x20\x7f]", f) for f in fields)
    assert error is None or error[1] <= data.count(b"\n")


# -- parse_floats --------------------------------------------------------------------------

def parse(tokens: list[bytes]) -> tuple[list[float], int]:
    col = column_of(tokens)
    out = np.zeros(len(tokens))
    bad = _kernel.parse_floats(col.data, col.starts, col.lens, out)
    return out.tolist(), bad


NUMBER = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.integers(0, 25).flatmap(lambda places: st.decimals(
        allow_nan=False, allow_infinity=False, places=places)).map(str),
    st.from_regex(r"[+-]?[0-9]{0,20}(\.[0-9]{0,25})?([eE][+-]?[0-9]{1,3})?", fullmatch=True),
)


@settings(max_examples=2000, deadline=None)
@given(NUMBER)
def test_numbers_are_what_python_reads(text):
    """Python's float() is correctly rounded, like strtod: the fast path must agree exactly."""
    values, bad = parse([text.encode()])
    try:
        want = float(text)
    except ValueError:
        want = None
    if want is None or not math.isfinite(want) or "_" in text:
        assert bad == 0, text
    else:
        assert bad == -1, text
        assert values[0] == want and math.copysign(1, values[0]) == math.copysign(1, want), text


@pytest.mark.parametrize("token", [b"nan", b"inf", b"-inf", b"1e999", b"", b".", b"-", b"1.2.3",
                                   b"1,5", b"0x", b"1e", b"--1", b"1 "])
def test_not_finite_numbers_are_refused(token):
    assert parse([b"1", token])[1] == 1


def test_hex_and_exponents_are_numbers():
    values, bad = parse([b"0x1p-2", b"2.5E+2", b"-0.0", b"1e-400", b"+.5"])
    assert bad == -1 and values == [0.25, 250.0, -0.0, 0.0, 0.5]


# -- rank ----------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.sampled_from([0.0, -0.0, 1.0, 1.5, -2.0]),
                          st.binary(min_size=1, max_size=6)), max_size=60))
def test_rank_is_a_sort(rows):
    col = column_of([d for _, _, d in rows])
    query = np.array([q for q, _, _ in rows], dtype=np.int64)
    score = np.array([s for _, s, _ in rows], dtype=np.float64)
    order = rank_rows(col, query, score, 4).tolist()
    want = sorted(range(len(rows)), key=lambda i: (rows[i][0], -rows[i][1],
                                                    [-b for b in rows[i][2]] + [1], i))
    assert order == want


# -- StrMap --------------------------------------------------------------------------------

@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.binary(max_size=20)), max_size=200))
def test_dictionary_is_exact(rows):
    """Codes in order of first appearance per (key, bytes); strings and keys come back."""
    d = Dictionary(5)
    col = column_of([b for _, b in rows])
    keys = np.array([k for k, _ in rows], dtype=np.int64)
    codes, repeat = d.add_batch(col, keys, 0)
    seen: dict = {}
    for i, row in enumerate(rows):
        assert repeat[i] == (row in seen)
        seen.setdefault(row, len(seen))
        assert codes[i] == seen[row]
    assert len(d) == len(seen)
    assert d.strings() == [b for _, b in seen]
    assert d.keys().tolist() == [k for k, _ in seen]
    d.freeze()
    assert d.find(col, keys).tolist() == codes.tolist()
    with pytest.raises(RuntimeError):
        d.add(col, keys)


def test_dictionary_joins_ids_of_any_length():
    """The bug that started the data core: equal ids in files whose longest ids differ."""
    short = column_of([b"d1", b"zz"])
    long = column_of([b"d1", b"yyyyyyyyy" * 30])
    d = Dictionary()
    assert d.add(short).tolist() == [0, 1]
    assert d.add(long).tolist() == [0, 2]


def test_dictionary_refuses_bad_keys():
    d = Dictionary(2)
    with pytest.raises(ValueError):
        d.add(column_of([b"a"]), np.array([2]))


def test_bad_arguments_are_python_errors_not_crashes():
    """Every early exit of the kernel releases what it holds and raises."""
    i64, i32, f64 = (np.zeros(2, dtype=t) for t in (np.int64, np.int32, np.float64))
    with pytest.raises(TypeError):
        _kernel.split(b"a b\n", np.zeros(1, dtype=np.int64), 10, i32, i64, i32)  # fields int64
    with pytest.raises(ValueError):
        _kernel.split(b"a b\n", np.zeros(1, dtype=np.int32), 10, i32, i64[:1], i32)  # too small
    with pytest.raises(ValueError):
        _kernel.parse_floats(b"1 2", i64, i32, np.zeros(3))
    with pytest.raises(ValueError):
        _kernel.rank(b"ab", i64, i32, np.array([0, 5]), f64, 2, np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError):
        _kernel.StrMap(2).intern(b"ab", i64, i32, None, np.zeros(3, dtype=np.int64))
    with pytest.raises(ValueError):
        _kernel.StrMap(2).intern(b"ab", np.array([0, 1]), np.array([1, 5], dtype=np.int32),
                                 None, np.zeros(2, dtype=np.int64))  # outside the data
    with pytest.raises(ValueError):
        _kernel.StrMap(1).intern(b"ab", i64, i32, None, np.zeros(2, dtype=np.int64),
                                 np.zeros(1, dtype=np.uint8), 0)  # repeat too short
    with pytest.raises(IndexError):
        _kernel.nested_dicts(["q"], np.array([0, 1]), ["a"], np.array([3]), [1.0])

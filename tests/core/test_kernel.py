"""The compiled kernel against slow literal references, on random bytes (hypothesis fuzzing):
the tokenizer, number parsing, ranking and the exact dictionary."""
from __future__ import annotations

import math
import random
import re
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rpp_cli.core import (PARALLEL_ROWS, Dictionary, _kernel, _key_cuts, column_of, interleave,
                          permuted_sums, rank_rows)
from rpp_cli.core.table import Column, GrowingColumn, unsafe_kind

from ..realistic import DOCNO_STYLES, _docnos

# -- split ---------------------------------------------------------------------------------

# UTF-8 refused (C1 U+009B and U+0085, U+2028, U+202E, U+2066) and allowed (U+00A0, U+2027,
# U+202F, U+2065, U+FEFF, an emoji), bytes that are not UTF-8 (a lone C1 0x9b; 0xff; a cut
# sequence; an encoded surrogate; an overlong form of U+0085) and pieces that join with others
UNICODE = [b"\xc2\x9b", b"\xc2\x85", b"\xe2\x80\xa8", b"\xe2\x80\xae", b"\xe2\x81\xa6",
           b"\xc2\xa0", b"\xe2\x80\xa7", b"\xe2\x80\xaf", b"\xe2\x81\xa5", b"\xef\xbb\xbf",
           b"\xf0\x9f\x98\x80", b"\x9b", b"\xff", b"\xe2\x80", b"\xed\xa0\x80", b"\xe0\x82\x85",
           b"\xc2", b"\xe2", b"\x80", b"\xa8", b"\x81"]
PIECES = [b"a", b"Q0", b"7", b"\xc3\xa9", b"doc-1", b" ", b"  ", b"\t", b" \t", b"\n", b"\r\n",
          b"\r", b"#", b"\x00", b"\x01", b"\x0b", b"\x0c", b"\x7f", b"\xef\xbb\xbf", b"x" * 9,
          *UNICODE]


def first_unsafe(line: bytes) -> tuple[int, int, bool] | None:
    """(offset, code, not UTF-8) of the first refused character of ``line``, read literally:
    at each offset the shortest slice that strict UTF-8 decodes to one character is one, else
    the byte stands alone for the Latin-1 character of its value."""
    i = 0
    while i < len(line):
        for k in range(1, 5):
            try:
                char = line[i:i + k].decode("utf-8")
            except UnicodeDecodeError:
                continue
            code, not_utf8, step = ord(char), False, k
            break
        else:
            code, not_utf8, step = line[i], True, 1
        if unsafe_kind(code):
            return i, code, not_utf8
        i += step
    return None


def reference_split(data: bytes, max_token: int, max_line: int = 1 << 20):
    """trec_eval's rules written out line by line: (rows [(nfields, [fields])], error). A line
    of more than ``max_line`` bytes before its LF is an error before anything in it."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    rows = []
    lines = data.split(b"\n")
    for number, line in enumerate(lines):
        if len(line) > max_line:
            return rows, ("line", number)
        if line.endswith(b"\r"):
            line = line[:-1]
        control = re.search(rb"[\x00-\x08\x0a-\x1f\x7f]", line)
        unsafe = first_unsafe(line)
        fields = re.split(rb"[ \t]+", line.strip(b" \t")) if line.strip(b" \t") else []
        comment = bool(fields) and fields[0].startswith(b"#")
        if control is not None or unsafe is not None:
            # an error, unless a field that ended before it was too long (reported first)
            if unsafe is None or (control is not None and control.start() < unsafe[0]):
                at, error = control.start(), ("control", number, control.group()[0])
            else:
                at, error = unsafe[0], ("unsafe", number, unsafe[1], unsafe[2])
            before = line[:at]
            head = re.split(rb"[ \t]+", before.strip(b" \t"))
            complete = head if before.endswith((b" ", b"\t")) else head[:-1]
            if not comment and any(len(f) > max_token for f in complete if f):
                return rows, ("too long", number)
            return rows, error
        if not comment and any(len(f) > max_token for f in fields):
            return rows, ("too long", number)
        if fields and not comment:
            rows.append(fields)
    return rows, None


def kernel_split(data: bytes, max_token: int, max_line: int = 1 << 20):
    cap = data.count(b"\n") + 1
    want = np.arange(8, dtype=np.int32)
    nfields = np.empty(cap, dtype=np.int32)
    starts = np.empty(cap * 8, dtype=np.int64)
    lens = np.empty(cap * 8, dtype=np.int32)
    n, err, at, a, b = _kernel.split(data, want, max_token, max_line, nfields, starts, lens)
    rows = []
    for r in range(n):
        fields = [data[starts[j * cap + r]:starts[j * cap + r] + lens[j * cap + r]]
                  for j in range(min(8, int(nfields[r])))]
        rows.append(fields)
    line = data.count(b"\n", 0, at) if err else None
    error = {0: None, 1: ("control", line, a), 2: ("too long", line),
             4: ("unsafe", line, a, bool(b)), 5: ("line", line)}[err]
    return rows, error


@settings(max_examples=1000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(1, 12),
       st.sampled_from([1 << 20, 1, 3, 8, 15, 30, 60]))
@pytest.mark.slow
def test_split_matches_the_reference(pieces, max_token, max_line):
    """Fields, and the first error of each kind at its line: a control byte, a field too
    long, a refused character (C1, U+2028/9, bidi; a byte 0x80-0x9f that is not UTF-8), a
    line too long (before anything in it)."""
    data = b"".join(pieces)
    want_rows, want_error = reference_split(data, max_token, max_line)
    got_rows, got_error = kernel_split(data, max_token, max_line)
    assert got_error == want_error
    assert got_rows == [fields[:8] for fields in want_rows]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.integers(1, 12),
       st.integers(1, 60), st.data())
@pytest.mark.slow
def test_a_line_too_long_is_decided_by_its_first_bytes(pieces, max_token, max_line, data):
    """What a streamed reader holds of a long line (its first max_line + 1 bytes or more,
    cut anywhere after) gives the error the whole data gives: the line's length decides
    before the bytes in it, so cutting the line cannot change the error."""
    text = b"".join(pieces)
    whole = kernel_split(text, max_token, max_line)
    if whole[1] is None or whole[1][0] != "line":
        return
    start = _line_start(text, whole[1][1])
    if start == 0 and text.startswith(b"\xef\xbb\xbf"):  # not part of the first line
        start = 3
    cut = data.draw(st.integers(start + max_line + 1, len(text)))
    assert kernel_split(text[:cut], max_token, max_line) == whole


def _line_start(text: bytes, number: int) -> int:
    """The offset where 0-based line ``number`` of ``text`` starts."""
    at = 0
    for _ in range(number):
        at = text.index(b"\n", at) + 1
    return at


REFUSED = [*range(0x80, 0xA0), 0x2028, 0x2029, *range(0x202A, 0x202F), *range(0x2066, 0x206A)]


@pytest.mark.slow
def test_every_code_point_and_every_lone_byte():
    """Exhaustively: of all 1,112,064 characters, UTF-8 encoded in a field, exactly the 43
    of contract §1 are refused (C1 U+0080-U+009F, U+2028-U+2029, U+202A-U+202E,
    U+2066-U+2069); a byte that is not UTF-8 is refused exactly when it is 0x80-0x9f."""
    allowed = [c for c in range(0x80, 0x110000) if not 0xD800 <= c <= 0xDFFF
               and c not in REFUSED]
    data = "".join(f"x{chr(c)}\n" for c in allowed).encode("utf-8")
    cap = len(allowed) + 1
    nfields = np.empty(cap, dtype=np.int32)
    starts, lens = np.empty(cap, dtype=np.int64), np.empty(cap, dtype=np.int32)
    rows, err, _, _, _ = _kernel.split(data, np.zeros(1, dtype=np.int32), 4096, 1 << 20,
                                       nfields, starts, lens)
    assert err == 0 and rows == len(allowed) == 1_112_064 - 128 - 43
    assert (lens[:rows] == np.array([len(chr(c).encode()) + 1 for c in allowed])).all()
    for code in REFUSED:
        assert kernel_split(f"a\nq 0 d{chr(code)}x 1\n".encode(), 4096)[1] == \
            ("unsafe", 1, code, False)
    for byte in range(0x80, 0x100):
        error = kernel_split(b"q 0 d" + bytes([byte]) + b" 1\n", 4096)[1]
        assert error == (("unsafe", 0, byte, True) if byte < 0xA0 else None)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_split_never_reads_outside_the_data(data):
    rows, error = kernel_split(data, 4096)
    for fields in rows:
        assert all(f and not re.search(rb"[\x00-\x20\x7f]", f) and first_unsafe(f) is None
                   for f in fields)
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


@pytest.mark.slow
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
@pytest.mark.slow
def test_rank_is_a_sort(rows):
    col = column_of([d for _, _, d in rows])
    query = np.array([q for q, _, _ in rows], dtype=np.int64)
    score = np.array([s for _, s, _ in rows], dtype=np.float64)
    order = rank_rows(col, query, score, 4).tolist()
    want = sorted(range(len(rows)), key=lambda i: (rows[i][0], -rows[i][1],
                                                    [-b for b in rows[i][2]] + [1], i))
    assert order == want


# -- StrMap --------------------------------------------------------------------------------

@pytest.mark.slow
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


def test_dictionary_is_exact_when_threads_intern_at_once():
    """Runs read by a pool of threads intern side by side, each key under its stripe's lock: every
    (key, docno) gets one code whichever thread met it first, the codes are dense, and each
    batch's repeat mask marks exactly the rows an earlier row of that batch had."""
    rng = random.Random(18)
    n_keys, n_threads = 40, 6
    styles = [fn for fn in DOCNO_STYLES.values() if fn is not None]
    pools = [_docnos(rng, styles, 300) for _ in range(n_keys)]  # shared docnos across keys
    batches = []
    for _ in range(n_threads):  # rows grouped by key, as ranked rows are, with repeats
        rows = [(k, rng.choice(pools[k]).encode()) for k in range(n_keys) for _ in range(400)]
        batches.append(rows)
    d = Dictionary(n_keys)
    results: list = [None] * n_threads
    start = threading.Barrier(n_threads)

    def work(t: int) -> None:
        rows = batches[t]
        start.wait()
        results[t] = d.add_batch(column_of([b for _, b in rows]),
                                 np.array([k for k, _ in rows], dtype=np.int64), t)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    code_of: dict = {}
    for rows, (codes, repeat) in zip(batches, results):
        seen: set = set()
        for row, code, again in zip(rows, codes.tolist(), repeat.tolist()):
            assert code_of.setdefault(row, code) == code
            assert again == (row in seen)
            seen.add(row)
    assert sorted(code_of.values()) == list(range(len(d)))
    assert d.strings(np.array(list(code_of.values()))) == [b for _, b in code_of]
    assert d.keys()[list(code_of.values())].tolist() == [k for k, _ in code_of]


def test_key_cuts_by_hand():
    """Parts of about n/parts rows, cut where the key changes: keys 0 0 1 1 1 2 3 3 in two
    parts aim at row 4 (key 1), whose first row is 2; in three at rows 2 and 5 (keys 1, 2)."""
    keys = np.array([0, 0, 1, 1, 1, 2, 3, 3])
    assert _key_cuts(keys, 2) == [0, 2, 8]
    assert _key_cuts(keys, 3) == [0, 2, 5, 8]
    assert _key_cuts(keys, 1) == [0, 8]
    assert _key_cuts(np.array([1, 0, 2]), 2) == [0, 3]  # keys not ascending: one part
    assert _key_cuts(np.zeros(5, dtype=np.int64), 4) == [0, 5]  # one key: one part


def test_a_batch_coded_by_threads_is_coded_as_by_one():
    """add_batch cut into parts for threads (ranked rows: keys ascending, docnos repeating
    within and across keys) gives the codes one thread gives, up to their numbering, and the
    same repeats."""
    rng = random.Random(7)
    styles = [fn for fn in DOCNO_STYLES.values() if fn is not None]
    pool = [d.encode() for d in _docnos(rng, styles, 2000)]
    keys = np.sort(np.array([rng.randrange(300) for _ in range(PARALLEL_ROWS + 5000)]))
    col = column_of([rng.choice(pool) for _ in range(len(keys))])
    one, repeat_one = Dictionary(300).add_batch(col, keys, 0)
    d = Dictionary(300)
    many, repeat_many = d.add_batch(col, keys, 0, threads=3)
    assert (repeat_many == repeat_one).all() and repeat_one.any()
    renumber = np.full(len(d), -1)
    renumber[many] = one
    assert (renumber[many] == one).all() and len(np.unique(many)) == len(np.unique(one))
    strings = d.strings(many[:50])
    assert strings == [col.bytes(i) for i in range(50)]
    assert (d.keys()[many] == keys).all()


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
        _kernel.split(b"a b\n", np.zeros(1, dtype=np.int64), 10, 99, i32, i64, i32)  # fields int64
    with pytest.raises(ValueError):
        _kernel.split(b"a b\n", np.zeros(1, dtype=np.int32), 10, 99, i32, i64[:1], i32)  # too small
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


def interleave_args(**change):
    """Good arguments of _kernel.interleave (2 runs, 1 query, codes 0-2), with ``change``."""
    args = {"docs": np.array([0, 1, 2, 1]), "bounds": np.array([0, 2, 2, 4]), "nq": 1,
            "pairs": np.array([0, 1]), "rel": np.ones(3, dtype=np.uint8), "W": np.arange(5.0),
            "m": 1, "method": 1, "sums": np.zeros(2), "n": np.zeros(1, dtype=np.int64)}
    return list({**args, **change}.values())


@pytest.mark.parametrize("change, error", [
    ({}, None),
    ({"docs": np.array([0, 1, 3, 1])}, IndexError),  # a code past relevant
    ({"docs": np.array([0, -1, 2, 1])}, IndexError),
    ({"pairs": np.array([0, 2])}, IndexError),  # no run 2
    ({"pairs": np.array([0, 1, 1])}, ValueError),
    ({"bounds": np.array([0, 2, 2, 5])}, ValueError),  # past docs
    ({"bounds": np.array([0, 2, 3, 2])}, ValueError),  # decreasing
    ({"bounds": np.array([0, 2, 2])}, ValueError),  # not runs x (queries + 1)
    ({"nq": -1}, ValueError),
    ({"W": np.arange(4.0)}, ValueError),  # two rankings of 2 need W[0..4]
    ({"m": 0}, ValueError),
    ({"m": 2}, ValueError),  # W of 5 values is not 2 columns, sums not 2 x 2
    ({"W": np.arange(10.0), "m": 2}, ValueError),  # 2 columns need 2 x 2 sums
    ({"sums": np.zeros(3)}, ValueError),
    ({"n": np.zeros(2, dtype=np.int64)}, ValueError),
    ({"docs": np.array([0, 1, 2, 1], dtype=np.int32)}, TypeError),
    ({"W": np.arange(5, dtype=np.float32)}, TypeError),
    ({"sums": np.zeros(2)[::-1]}, ValueError),  # not contiguous
    ({"method": 2}, ValueError),  # 0 balanced, 1 team draft
    ({"method": -1}, ValueError),
])
def test_interleave_checks_its_arguments(change, error):
    args = interleave_args(**change)
    if error is None:
        _kernel.interleave(*args)
        # a = [0 1], b = [2 1], all relevant, W[k] = k. Team draft, a first: 0(a) 2(b) 1(a),
        # signs + 0 +; b first: 2(b) 0(a) 1(b), signs - 0 -. N = 3.
        assert args[-1].tolist() == [3] and args[-2].tolist() == [2.0, -2.0]
        # Balanced, a first: 0 2 1 (b's 1 is placed). The last click and Eq. 2's cutoff k:
        # stop 1: 0, k = 1: h_a = 1, h_b = 0 (+); stop 2: 2, k = 1 (b's rank): 1 vs 1 (0);
        # stop 3: 1, k = 2: 2 vs 2 (0). b first: 2 0 1: - 0 0. Sums 1 and -1.
        args = interleave_args(method=0)
        _kernel.interleave(*args)
        assert args[-1].tolist() == [3] and args[-2].tolist() == [1.0, -1.0]
    else:
        with pytest.raises(error):
            _kernel.interleave(*args)


def test_interleave_columns_are_independent_walk_sums():
    """Two weight columns in one walk give each column's single-column sums (same example
    as above, W1[k] = k, W2[k] = 10 k)."""
    w = np.arange(5.0)
    args = interleave_args(W=np.stack([w, 10 * w], axis=1).ravel(), m=2, sums=np.zeros(4))
    _kernel.interleave(*args)
    assert args[-2].tolist() == [2.0, 20.0, -2.0, -20.0] and args[-1].tolist() == [3]


def test_interleave_wrapper_refuses_what_it_would_have_to_cast():
    docs, bounds, rel, w = np.array([0, 1]), np.array([[0, 1], [1, 2]]), np.ones(2, bool), \
        np.arange(3.0)[:, None]
    with pytest.raises(TypeError):
        interleave(docs.astype(float), bounds, np.array([[0, 1]]), rel, w)
    with pytest.raises(TypeError):
        interleave(docs, bounds, np.array([[0, 1]]), rel.astype(np.uint8), w)
    with pytest.raises(ValueError):
        interleave(docs, bounds, np.array([0, 1]), rel, w)
    with pytest.raises(ValueError):  # weights are (positions + 1, models)
        interleave(docs, bounds, np.array([[0, 1]]), rel, w[:, 0])
    assert interleave(docs, bounds, np.array([[0, 1]]), rel, w)[1].tolist() == [[2]]


@settings(max_examples=400, deadline=None)
@given(st.data(), st.integers(1, 3), st.integers(0, 3),
       st.sampled_from(["none", "code", "bound", "pair", "W", "relevant"]), st.integers(-2, 9),
       st.sampled_from([0, 1]))
@pytest.mark.slow
def test_interleave_raises_or_counts(data, n_runs, nq, corrupt, value, method):
    """Valid rankings with at most one argument corrupted: a Python error (never for valid
    ones), or else N = |A ∪ B| and |Σ_k sgn| <= N for every pair and query, for both
    methods."""
    ranking = st.lists(st.integers(0, 6), max_size=5, unique=True)
    runs = [[data.draw(ranking) for _ in range(nq)] for _ in range(n_runs)]
    docs = [c for run in runs for r in run for c in r]
    sizes = [len(r) for run in runs for r in run]
    ends = np.cumsum([0] + sizes)
    bounds = np.concatenate([ends[r * nq:(r + 1) * nq + 1] for r in range(n_runs)]).tolist()
    pairs = data.draw(st.lists(st.integers(0, n_runs - 1), max_size=6))
    pairs = pairs[:len(pairs) // 2 * 2]  # flat (a, b) pairs
    n_codes, n_w = 7, 11
    if corrupt == "code" and docs:
        docs[value % len(docs)] = value + 5  # 7 or more: outside relevant, or negative
    elif corrupt == "bound":
        bounds[value % len(bounds)] = value
    elif corrupt == "pair" and pairs:
        pairs[value % len(pairs)] = value
    elif corrupt == "W":
        n_w = value
    elif corrupt == "relevant":
        n_codes = max(0, value)
    n_pairs = len(pairs) // 2
    sums, n = np.zeros(2 * n_pairs * nq), np.zeros(n_pairs * nq, dtype=np.int64)
    try:
        _kernel.interleave(np.array(docs, dtype=np.int64), np.array(bounds, dtype=np.int64), nq,
                           np.array(pairs, dtype=np.int64), np.ones(n_codes, dtype=np.uint8),
                           np.arange(float(max(n_w, 0))), 1, method, sums, n)
    except (ValueError, IndexError):
        assert corrupt != "none"
        return
    b = np.array(bounds).reshape(-1, nq + 1)
    for p in range(n_pairs):
        for q in range(nq):
            ra, rb = (docs[b[r, q]:b[r, q + 1]] for r in pairs[2 * p:2 * p + 2])
            i = p * nq + q
            assert n[i] == len(set(ra) | set(rb))
            assert abs(sums[2 * i]) <= n[i] and abs(sums[2 * i + 1]) <= n[i]  # W[k] = k


# -- gather ----------------------------------------------------------------------------------

@pytest.mark.slow
@given(st.lists(st.binary(max_size=12), max_size=30), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_gather_is_the_strings_one_after_another(strings, rng):
    """Column.compact's copy (kernel gather) equals joining the slices, in any row order."""
    col = column_of(strings)
    order = list(range(len(strings)))
    rng.shuffle(order)
    picked = col.take(np.array(order, dtype=np.int64))
    packed = picked.compact()
    assert bytes(packed.data) == b"".join(strings[i] for i in order)
    assert [packed.bytes(r) for r in range(len(order))] == [strings[i] for i in order]


@given(st.lists(st.binary(max_size=12), max_size=30), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_texts_are_each_rows_text(strings, rng):
    """Column.texts: every row as Column.text gives it (undecodable bytes kept as escapes),
    for rows taken in any order from a shared buffer."""
    col = column_of(strings)
    order = list(range(len(strings)))
    rng.shuffle(order)
    picked = col.take(np.array(order, dtype=np.int64))
    assert picked.texts() == [picked.text(r) for r in range(len(order))]
    assert [t.encode("utf-8", "surrogateescape") for t in picked.texts()] == [
        strings[i] for i in order]


@given(st.lists(st.binary(max_size=40), max_size=20))
@settings(max_examples=200, deadline=None)
def test_extend_is_bytearray_plus_equals(pieces):
    """kernel extend (Growing's append, its copy without the GIL) equals ``+=``, piece by
    piece, for bytes and for the raw bytes of numeric arrays."""
    grown, expected = bytearray(), bytearray()
    for k, piece in enumerate(pieces):
        data = piece if k % 2 else np.frombuffer(piece[:len(piece) // 8 * 8], dtype=np.int64)
        _kernel.extend(grown, data)
        expected += memoryview(data).cast("B") if k % 2 == 0 else data
    assert grown == expected


def test_extend_refuses_what_plus_equals_refuses():
    """A bytearray with a live view cannot be resized (as with ``+=``), bytes cannot grow,
    and a strided array is not one run of bytes: each is an error, nothing is written."""
    grown = bytearray(b"ab")
    view = memoryview(grown)
    with pytest.raises(BufferError):
        _kernel.extend(grown, b"cd")
    view.release()
    with pytest.raises(TypeError):
        _kernel.extend(b"ab", b"cd")
    with pytest.raises(ValueError):
        _kernel.extend(grown, np.arange(6)[::2])
    starts, lens = np.array([1], dtype=np.int64), np.array([2], dtype=np.int32)
    with pytest.raises(ValueError, match="out of the data"):  # "cd"[1:3]
        _kernel.extend(grown, b"cd", starts, lens)
    with pytest.raises(TypeError, match="go together"):
        _kernel.extend(grown, b"cd", starts)
    assert grown == b"ab"


@given(st.lists(st.binary(max_size=12), max_size=30), st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_extend_with_strings_is_gather_then_plus_equals(strings, rng):
    """extend(buffer, data, starts, lens): what gather gives, appended (GrowingColumn's one
    copy of a window's docnos), in any row order."""
    col = column_of(strings)
    order = list(range(len(strings)))
    rng.shuffle(order)
    picked = col.take(np.array(order, dtype=np.int64))
    grown = bytearray(b"kept")
    _kernel.extend(grown, picked.data, picked.starts, picked.lens)
    assert grown == b"kept" + bytes(picked.compact().data)


@given(st.lists(st.lists(st.binary(max_size=12), max_size=8), max_size=6),
       st.randoms(use_true_random=False))
@settings(max_examples=200, deadline=None)
def test_a_growing_column_holds_what_was_appended_in_any_form(pieces, rng):
    """GrowingColumn.append of columns packed (Column.compact's), permuted, cut short (a
    packed column's head, its data longer than its strings) or with bytes before and after
    them: the strings in order, each once, as the literal concatenation."""
    grown, want = GrowingColumn(), []
    for strings in pieces:
        col = column_of(strings)
        form = rng.choice(("packed", "permuted", "head", "padded"))
        if form == "permuted" and strings:
            order = np.array(rng.sample(range(len(strings)), len(strings)), dtype=np.int64)
            col = col.take(order)
            strings = [strings[i] for i in order]
        elif form == "head":
            keep = rng.randrange(len(strings) + 1)
            col = col.take(np.arange(keep))
            strings = strings[:keep]
        elif form == "padded":
            col = Column(b"<" + bytes(col.data) + b">", col.starts + 1, col.lens)
        grown.append(col)
        want += strings
    lens = grown.lens.array()
    assert bytes(grown.data.buffer) == b"".join(want)
    assert lens.tolist() == [len(w) for w in want]


def test_gather_refuses_a_string_out_of_the_data():
    """data b"abc": the string at 2 of length 2 ends at 4 > 3."""
    out = bytearray(2)
    with pytest.raises(ValueError, match="out of the data"):
        _kernel.gather(b"abc", np.array([2], dtype=np.int64), np.array([2], dtype=np.int32), out)
    with pytest.raises(ValueError, match="not the size"):
        _kernel.gather(b"abc", np.array([0], dtype=np.int64), np.array([1], dtype=np.int32), out)
    big = np.array([np.iinfo(np.int64).max], dtype=np.int64)  # start + length would overflow
    with pytest.raises(ValueError, match="out of the data"):
        _kernel.gather(b"abc", big, np.array([2], dtype=np.int32), out)
    assert _kernel.parse_floats(b"1 2", big, np.array([2], dtype=np.int32), np.zeros(1)) == 0
    with pytest.raises(ValueError):
        _kernel.StrMap(1).intern(b"ab", big, np.array([2], dtype=np.int32), None,
                                 np.zeros(1, dtype=np.int64))


# -- permuted_sums (randomized Tukey HSD) ---------------------------------------------------

def _permuted_sums_by_numpy(values: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """The literal loop stats.hsd ran before the kernel: one query at a time, in numpy."""
    n_q, trials, n_runs = perm.shape
    ia, ib = np.triu_indices(n_runs, 1)
    sums = np.zeros((trials, len(ia) if values.ndim == 3 else n_runs))
    for q in range(n_q):
        p = perm[q]
        sums += values[q].take(p[:, ia] * n_runs + p[:, ib]) if values.ndim == 3 \
            else values[q].take(p)
    return sums


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 12), st.integers(1, 9), st.integers(2, 7), st.integers(0, 2**32 - 1),
       st.sampled_from([1.0, 1e-300, 1e300]))
def test_permuted_sums_are_the_bits_of_the_numpy_loop(n_q, trials, n_runs, seed, scale):
    """Both kinds (a preference tensor with its pairs, a metric without), with signed zeros,
    huge and tiny values: the same bits, as the queries are added in the same order."""
    rng = np.random.default_rng(seed)
    tensor = rng.normal(size=(n_q, n_runs, n_runs)) * scale
    tensor[rng.random(tensor.shape) < 0.2] = -0.0
    metric = rng.normal(size=(n_q, n_runs)) * scale
    perm = rng.permuted(np.broadcast_to(np.arange(n_runs), (n_q, trials, n_runs)), axis=2)
    pairs = np.stack(np.triu_indices(n_runs, 1), axis=1)
    for values, with_pairs in ((tensor, pairs), (metric, None)):
        got = permuted_sums(values, perm, with_pairs)
        assert got.tobytes() == _permuted_sums_by_numpy(values, perm).tobytes()


def test_permuted_sums_by_hand():
    """Two queries, two trials, three runs; pair (0, 2): trial 0 keeps the labels, trial 1
    swaps runs 0 and 2 on query 1 only."""
    values = np.arange(18, dtype=np.float64).reshape(2, 3, 3)  # values[q, a, b] = 9q + 3a + b
    perm = np.array([[[0, 1, 2], [0, 1, 2]], [[0, 1, 2], [2, 1, 0]]])
    got = permuted_sums(values, perm, np.array([[0, 2]]))
    assert got.tolist() == [[2.0 + 11.0], [2.0 + 15.0]]
    assert permuted_sums(values[:, 0], perm).tolist() == [[9.0, 11.0, 13.0], [11.0, 11.0, 11.0]]
    one_run = permuted_sums(np.zeros((2, 1, 1)), np.zeros((2, 2, 1), dtype=np.int64),
                            np.zeros((0, 2), dtype=np.int64))
    assert one_run.shape == (2, 0)  # no pair: nothing to sum, as the numpy loop gave


def test_permuted_sums_refuses_bad_arguments():
    values, perm = np.zeros((2, 3, 3)), np.zeros((2, 4, 3), dtype=np.int64)
    pairs = np.array([[0, 1]])
    with pytest.raises(ValueError, match="values must be"):
        permuted_sums(values, perm)  # a tensor needs its pairs
    with pytest.raises(ValueError, match="values must be"):
        permuted_sums(values[:1], perm, pairs)  # queries differ
    with pytest.raises(TypeError, match="permuted_sums: perm must be integers"):
        permuted_sums(values, perm.astype(float), pairs)
    with pytest.raises(IndexError, match="run index out of range"):
        permuted_sums(values, perm + 3, pairs)
    with pytest.raises(IndexError, match="pair index out of range"):
        permuted_sums(values, perm, pairs - 1)
    with pytest.raises(ValueError, match="inconsistent lengths"):
        _kernel.permuted_sums(values, perm, 3, 5, pairs, np.empty((4, 1)))  # 5 trials, not 4

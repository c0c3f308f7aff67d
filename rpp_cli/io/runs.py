"""Run files (SPEC §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score.

Regular files (one separator character, no comments, no blank lines: what systems write) are
parsed by pyarrow's multi-threaded CSV reader; anything else, and every file with an error,
goes through the numpy tokenizer, which names the offending line.
"""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .text import Strings, read_bytes, read_table

RUN_FORMAT = "run: qid Q0 docno rank score [tag]"


@dataclass
class Run:
    """One system's retrieved lists, as columns in file order."""

    path: str
    tag: str | None  # the tag of the first line, if it has one
    qid_codes: np.ndarray  # (rows,) index into qid_values
    qid_values: list[str]  # distinct qids of the file
    docno: Strings
    score: np.ndarray
    line: np.ndarray  # 1-based line number of each row
    rank: Strings | None = None  # the rank column as text (only `rpp ndeval` orders by it)

    def __len__(self) -> int:
        return len(self.score)

    @property
    def qid_bytes(self) -> np.ndarray:
        """The qid of every row as a numpy ``S`` array."""
        values = np.array([q.encode("utf-8", "surrogateescape") for q in self.qid_values],
                          dtype=bytes)
        return values[self.qid_codes]


def read_run(path: str, keep_rank: bool = False) -> Run:
    """Read one run file (plain, gzip or ``-``); malformed lines raise InputError.

    ``keep_rank`` also keeps the rank column (as text), which only ndeval's ordering needs.
    """
    raw = read_bytes(path)
    return _read_regular(path, raw, keep_rank) or _read_any(path, raw, keep_rank)


def _read_any(path: str, raw: bytes, keep_rank: bool = False) -> Run:
    """The numpy tokenizer: any whitespace, comments, blank lines; precise errors."""
    table = read_table(path, (5, 6), RUN_FORMAT, raw)
    score = table.numbers(4, "score")
    tag = table.strings(5, np.array([0])).texts()[0] if table.nfields[0] == 6 else None
    qids = table.strings(0)
    codes, values = _codes(qids)
    return Run(path, tag, codes, values, table.strings(2), score, table.line,
               table.strings(3) if keep_rank else None)


def _codes(strings: Strings) -> tuple[np.ndarray, list[str]]:
    """Integer codes of a (low-cardinality) string column and its distinct values."""
    h = strings.hashes()
    order = np.argsort(h, kind="stable")
    hs = h[order]
    first = order[np.concatenate(([True], hs[1:] != hs[:-1]))]  # ascending by hash
    codes = np.searchsorted(h[first], h)
    if not strings.equal(np.arange(len(h)), strings, first[codes]).all():
        raise InputError("two different query ids share a 64-bit hash; please report this")
    return codes, strings.texts(first)


def _read_regular(path: str, raw: bytes, keep_rank: bool = False) -> Run | None:
    """pyarrow's CSV reader for the common, regular layout; None when the file is not that."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.csv as pcsv

    end = raw.find(b"\n")
    first = raw[:end if end >= 0 else len(raw)].rstrip(b"\r")
    sep = b"\t" if b"\t" in first else b" "
    n_fields = len(first.split(sep))
    if (n_fields not in (5, 6) or len(first.split()) != n_fields or raw[:1] in (b"#", b"\n")
            or b"\n#" in raw or b"\n\n" in raw or b"\n\r\n" in raw):
        return None
    names = ["qid", "q0", "docno", "rank", "score", "tag"][:n_fields]
    try:
        table = pcsv.read_csv(
            pa.py_buffer(raw),
            read_options=pcsv.ReadOptions(column_names=names),
            parse_options=pcsv.ParseOptions(delimiter=sep.decode(), quote_char=False),
            convert_options=pcsv.ConvertOptions(
                column_types={"qid": pa.string(), "docno": pa.string(), "score": pa.float64(),
                              "tag": pa.string(), "rank": pa.string()},
                include_columns=[n for n in ("qid", "docno", "rank", "score", "tag")
                                 if n in names and (n != "rank" or keep_rank)]))
    except (pa.ArrowInvalid, pa.ArrowTypeError, UnicodeDecodeError):
        return None
    score = table["score"].to_numpy()
    if table["qid"].null_count or table["docno"].null_count or not np.isfinite(score).all():
        return None
    if any(pc.min(pc.binary_length(table[c])).as_py() == 0 for c in ("qid", "docno")):
        return None  # a leading or doubled separator shifted the fields
    qid = pc.dictionary_encode(table["qid"]).combine_chunks()
    tag = table["tag"][0].as_py() if "tag" in names else None
    rank = _arrow_strings(table["rank"].combine_chunks()) if keep_rank else None
    return Run(path, tag, np.asarray(qid.indices).astype(np.int64), qid.dictionary.to_pylist(),
               _arrow_strings(table["docno"].combine_chunks()), score,
               np.arange(1, len(score) + 1), rank)


def _arrow_strings(array) -> Strings:
    """A pyarrow StringArray as Strings, without a Python object per string."""
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset:
                                                                array.offset + len(array) + 1]
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)
    strings = Strings.gather(data, offsets[:-1].astype(np.int64),
                             np.diff(offsets).astype(np.int64))
    strings.arrow = array
    return strings


def name_runs(runs: list[Run]) -> tuple[list[str], list[str]]:
    """Display names (SPEC §1): unique tag, else unique base name, else the path.

    Returns the names and the notes to print on stderr for runs that could not use their tag.
    """
    tags = Counter(r.tag for r in runs)
    bases = Counter(os.path.basename(r.path) for r in runs)
    names: list[str] = []
    notes: list[str] = []
    for run in runs:
        base = os.path.basename(run.path)
        if run.tag is not None and tags[run.tag] == 1:
            names.append(run.tag)
            continue
        why = "has no tag" if run.tag is None else f"shares its tag '{run.tag}'"
        if bases[base] == 1 and base != "-":
            names.append(base)
            notes.append(f"{run.path} {why}: named '{base}' after its file name")
        else:
            names.append(run.path)
            notes.append(f"{run.path} {why} and file name: named by its path")
    if len(set(names)) != len(names):
        dup = next(n for n, c in Counter(names).items() if c > 1)
        raise InputError("given twice: every run must be a different file", path=dup)
    return names, notes

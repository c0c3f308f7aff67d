"""Run files (contract §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score."""
from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..core import Column, Dictionary, Table, split
from ..errors import InputError, shown

RUN_FORMAT = "run: qid Q0 docno rank score [tag]"


@dataclass
class Run:
    """One system's retrieved lists, as columns in file order."""

    path: str
    tag: str | None  # the tag of the first line, if it has one
    qid_codes: np.ndarray  # (rows,) index into qid_values
    qid_values: list[bytes]  # distinct qids of the file, in order of first appearance
    docno: Column
    score: np.ndarray
    table: Table  # the file's bytes and fields (line numbers for messages)
    rank: Column | None = None  # the rank column as text (only `rpp ndeval` orders by it)

    def __len__(self) -> int:
        return len(self.score)

    def line(self, row: int) -> int:
        return self.table.line(row)


def read_run(path: str, keep_rank: bool = False) -> Run:
    """Read one run file (plain, gzip or ``-``); malformed lines raise InputError.

    ``keep_rank`` also keeps the rank column (as text), which only ndeval's ordering needs.
    """
    table = split(path, (0, 2, 3, 4) if keep_rank else (0, 2, 4), (5, 6), RUN_FORMAT)
    score = table.floats(4, "score")
    tag = _first_tag(table)
    qids = Dictionary()
    codes = qids.add(table.column(0))
    return Run(path, tag, codes, qids.strings(), table.column(2), score, table,
               table.column(3) if keep_rank else None)


def _first_tag(table: Table) -> str | None:
    """The 6th field of the first data line, if it has one (only that line's tag names the
    run, so no column of tags is kept)."""
    if table.nfields[0] != 6:
        return None
    start = int(table.column(0).starts[0])
    end = table.data.find(b"\n", start)
    line = bytes(table.data[start:end if end >= 0 else len(table.data)])
    return line.split()[5].decode("utf-8", "surrogateescape")  # validated: blanks separate


def name_runs(runs: list, given: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    """Display names (contract §1), one rule for all runs: ``given`` (--name), else their tags when
    every run has one and all differ, else their file names (less ``.gz``) when all differ,
    else their paths. Returns the names and a note saying which rule applied (none for tags).

    A name is one printable token (no whitespace, no control character): it must not be able
    to add a field or a line to the output, nor reach a terminal raw.
    """
    if given:
        if len(given) != len(runs):
            raise InputError(f"--name given {len(given)} times for {len(runs)} runs: name every "
                             "run, in order")
        names, why, notes = list(given), "--name", []
    else:
        tags = [r.tag for r in runs]
        bases = [_base(r.path) for r in runs]
        if None not in tags and len(set(tags)) == len(tags):
            names, why = tags, "their tags"
        elif "-" not in bases and len(set(bases)) == len(bases):
            names, why = bases, "their file names (tags missing or not unique)"
        else:
            names, why = [r.path for r in runs], "their paths (tags and file names not unique)"
        notes = [] if names is tags else [f"runs named by {why}"]
    for run, name in zip(runs, names):
        if not _TOKEN.fullmatch(name) or not name.isprintable():
            raise InputError(f"run name '{shown(name)}' (from {why}) is not one printable token "
                             "without spaces; set names with --name", path=run.path)
    if len(set(names)) != len(names):
        dup = next(n for n, c in Counter(names).items() if c > 1)
        raise InputError("given twice: every run must be a different file, with its own name",
                         path=dup)
    return names, notes


_TOKEN = re.compile(r"[^\s\x00-\x1f\x7f]+")


def _base(path: str) -> str:
    """A run's file name, less ``.gz``."""
    base = os.path.basename(path)
    return base[:-3] if base.endswith(".gz") and len(base) > 3 else base

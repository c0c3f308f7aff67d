"""Run files (SPEC §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score."""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..core import Column, Dictionary, Table, split
from ..errors import InputError

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

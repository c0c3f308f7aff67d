"""Run files (SPEC §1): ``qid Q0 docno rank score [tag]``; the ranking comes from the score."""
from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..errors import InputError
from .text import Field, read_table

RUN_FORMAT = "run: qid Q0 docno rank score [tag]"


@dataclass(frozen=True)
class Run:
    """One system's retrieved lists, as columns in file order."""

    path: str
    tag: str | None  # the tag of the first line, if it has one
    qid: Field
    docno: Field
    score: np.ndarray
    line: np.ndarray  # 1-based line number of each row
    rank: Field | None = None  # the rank column as text (only `rpp ndeval` orders by it)

    def __len__(self) -> int:
        return len(self.score)


def read_run(path: str) -> Run:
    """Read one run file (plain, gzip or ``-``); malformed lines raise InputError."""
    table = read_table(path, (5, 6), RUN_FORMAT)
    score = table.numbers(4, "score")
    tag = None
    if table.nfields[0] == 6:
        tag = table.field(5, np.array([0])).text()[0]
    return Run(path, tag, table.field(0), table.field(2), score, table.line, table.field(3))


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

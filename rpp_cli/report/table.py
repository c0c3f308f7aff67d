"""Aligned text for people (``--view human``): the ``all`` rows of a Results table as tables.

Per-run measures share one table (a row per run, a column per measure); each pair measure
gets a matrix (row run vs column run). ``mark`` may append a marker to any cell, e.g. ``*``
for a significant pair in ``rpp compare``.
"""
from __future__ import annotations

from typing import Callable, TextIO

from ..results import ALL, Results
from .common import columns, number, pad, styles

Mark = Callable[[str, str, "str | None"], str]


def write(results: Results, out: TextIO, precision: int = 4, mark: Mark | None = None,
          legend: str | None = None) -> None:
    """Write the per-run table, then one matrix per pair measure, blank-line separated."""
    mark = mark or (lambda measure, run, other: "")
    style = dict(zip(results.measures, styles(results.measures)))
    per_run: dict[str, dict[str, str]] = {}
    pairs: dict[str, dict[tuple[str, str], str]] = {}
    for measure, qid, run, other, value in results.rows():
        if qid != ALL:
            continue
        cell = f"{number(value, precision, style[measure])}{mark(measure, run, other)}"
        if other is None:
            per_run.setdefault(measure, {})[run] = cell
        else:
            pairs.setdefault(measure, {})[(run, other)] = cell
    blocks = []
    if legend:
        blocks.append([legend])
    if per_run:
        runs = [r for r in results.runs if any(r in col for col in per_run.values())]
        blocks.append(_grid([""] + list(per_run),
                            [[r] + [col.get(r, "") for col in per_run.values()] for r in runs]))
    for measure, cells in pairs.items():
        runs = [r for r in results.runs if any(r in key for key in cells)]
        blocks.append([measure] + _grid(
            [""] + runs, [[a] + [cells.get((a, b), ".") for b in runs] for a in runs]))
    out.write("\n\n".join("\n".join(lines) for lines in blocks) + ("\n" if blocks else ""))


def _grid(header: list[str], rows: list[list[str]]) -> list[str]:
    """Lines of a table: first column left-aligned, the others right-aligned."""
    widths = [max(columns(row[i]) for row in [header] + rows) for i in range(len(header))]
    return ["  ".join(pad(cell, w, right=i > 0)
                      for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
            for row in [header] + rows]


def significance_marks(results: Results, alpha: float) -> Mark:
    """``*`` on every effect cell (``M`` or ``M_diff``) whose pair has ``M_p`` < alpha."""
    significant = set()
    for measure, qid, run, other, value in results.rows():
        if measure.endswith("_p") and qid == ALL and value < alpha:
            significant.add((measure[:-2], run, other))

    def mark(measure: str, run: str, other: str | None) -> str:
        base = measure[:-5] if measure.endswith("_diff") else measure
        return "*" if (base, run, other) in significant and not measure.endswith("_p") else ""
    return mark

"""What every format shares: how a value is printed and the rows in contract §7 order."""
from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator, Mapping, TextIO

import numpy as np

from ..results import ALL, Results
from .escape import ident


COUNTS = frozenset({"num_q", "num_ret", "num_rel", "num_rel_ret", "num_nonrel_judged_ret"})
FIXED, COUNT, RANK = 0, 1, 2  # how a measure's values print (styles)
RANK_SUFFIX = "_rank"


def columns(text: str) -> int:
    """Terminal columns of ``text``: 2 for an East Asian wide or fullwidth character (中, 😀),
    0 for a combining mark, 1 otherwise, so that aligned tables stay aligned."""
    if text.isascii():
        return len(text)
    return sum(0 if unicodedata.combining(c) else
               2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """``text`` padded with spaces to ``width`` terminal columns (on the left when
    ``right``-aligned)."""
    fill = " " * max(0, width - columns(text))
    return fill + text if right else text + fill


def is_count(measure: str) -> bool:
    """Counts print as integers, as trec_eval prints them (contract §7)."""
    return measure in COUNTS


def styles(measures: list[str]) -> list[int]:
    """How each measure's values print (contract §7): COUNT as trec_eval prints counts, an
    integer; RANK, a system ordering's rank (contract §5), as the integer or half it is (``5``,
    ``5.5`` for runs tied at 5 and 6) whatever the precision; FIXED decimals otherwise. A
    rank is ``M_rank`` where M is a measure of the same table (``rpp_win``, ``rpp_borda``,
    ``map``...), so that trec_eval's ``recip_rank`` stays a measure."""
    names = set(measures)
    return [COUNT if m in COUNTS else
            RANK if m.endswith(RANK_SUFFIX) and m[:-len(RANK_SUFFIX)] in names else FIXED
            for m in measures]


def is_p_value(measure: str) -> bool:
    """A p-value row (``M_p`` of compare and check)."""
    return measure.endswith("_p")


def machine_precision(measures: list[str], precision: int) -> list[int | None]:
    """Per measure, the ``precision`` of :func:`number` in jsonl and csv: None (in full, as
    ``repr``: the shortest text that reads back as the same float, 4e-05 and not 0.0000) for
    p-values, so that a script can compare them to any alpha; ``precision`` otherwise."""
    return [None if is_p_value(m) else precision for m in measures]


@dataclass(frozen=True)
class Verdicts:
    """``rpp check``'s outcome as jsonl and csv add it: PASS or FAIL of the gate that each
    (measure, run) row is evidence for, and of the whole check against run ``baseline``."""

    gates: Mapping[tuple[str, str], str]
    overall: str
    baseline: int  # index of the baseline among the runs


def row_ends(measures: list[str], runs: list[str], verdicts: Verdicts | None,
             render: Callable[[str | None], str]) -> list[list[str]]:
    """``[m][r]``: the end of a row of measure m and run r, ``render(verdict)`` (None: no
    verdicts, or a row that is no gate's evidence)."""
    gates: Mapping[tuple[str, str], str] = verdicts.gates if verdicts else {}
    return [[render(gates.get((m, r))) for r in runs] for m in measures]


def number(value: float, precision: int | None, style: int = FIXED) -> str:
    """A value as every format prints it (contract §7: fixed decimals, counts as integers,
    ranks as ``5`` or ``5.5``, no negative zero), so all formats agree; ``style``: see
    :func:`styles`; ``precision`` None prints it in full (``repr``)."""
    if style != FIXED and math.isfinite(value):
        exact = style == COUNT or float(value).is_integer()
        return str(int(value)) if exact else repr(float(value))
    if precision is None:
        return repr(value)
    text = f"{value:.{precision}f}"
    return text[1:] if text[0] == "-" and not text.strip("-0.") else text


def p_text(p: float, digits: int) -> str:
    """A p-value for a reader: ``p 0.0310``, or ``p < 0.0001`` where the printed digits would
    all be 0 (a p of 1e-9 is not 'p 0.0000')."""
    shown = f"{p:.{digits}f}"
    return f"p < {10.0 ** -digits:.{digits}f}" if not shown.strip("0.") else f"p {shown}"


def coded_rows(results: Results, summary: bool = True
               ) -> tuple[list[str], list[str], list[str], Iterator[tuple]]:
    """Measure names, qids as text (``all`` last; :func:`.escape.ident`), run names and the
    rows ``(m, q, r, o, value)`` as indexes into them (``o = -1`` for per-run rows), in
    contract §7 order.

    Writers encode each name once and then only index, which keeps millions of per-query
    rows cheap; the rows come a shard of queries at a time (:meth:`Results.parts`), so memory
    follows a shard, not the output. Without ``summary`` the ``all`` rows are left out.
    """
    def rows() -> Iterator[tuple]:
        for m, q, r, o, v in results.parts(summary):
            q = np.where(q < 0, len(results.qids), q)
            yield from zip(m.tolist(), q.tolist(), r.tolist(), o.tolist(), v.tolist())
    return results.measures, [ident(q) for q in results.qids] + [ALL], results.runs, rows()


def write_lines(out: TextIO, lines: Iterable[str], chunk: int = 65536) -> None:
    """Write ``lines`` in chunks: bounded memory, and a pipe reader sees output early."""
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) >= chunk:
            out.write("".join(batch))
            batch.clear()
    out.write("".join(batch))

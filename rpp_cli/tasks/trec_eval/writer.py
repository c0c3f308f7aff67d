"""trec_eval's own lines (meas_print_*.c): ``%-22s\\t%s\\t%6.4f``, ``%ld`` for counts, the
runid as text and relstring in single quotes; bytes as C's printf writes them."""
from __future__ import annotations

import math
from typing import BinaryIO, Iterator

from ...measures.trec_table import LONG_MEASURES
from ...report.common import write_lines
from .flow import TrecEvalOutput


def c_float(value: float) -> str:
    """C's ``%6.4f``: like Python's except that NaN keeps its sign (``  -nan``)."""
    if math.isnan(value):
        return f"{'-nan' if math.copysign(1.0, value) < 0 else 'nan':>6}"
    return "%6.4f" % value


def lines(output: TrecEvalOutput) -> Iterator[str]:
    """Every line trec_eval prints for ``output``, in order."""
    pads: dict[str, int] = {}  # printf's %-22s pads to 22 bytes, not characters (a
    # parameter may be UTF-8: ndcg.١=٣): the width in characters that makes 22 bytes
    for measure, qid, _run, _other, value in output.results.rows():
        text = output.texts.get((measure, qid))
        if text is not None:
            shown = text if measure == "runid" else f"'{text}'"
        elif measure in LONG_MEASURES:
            shown = str(int(value))  # (long) cast of the double
        else:
            shown = c_float(value)
        pad = pads.get(measure)
        if pad is None:
            pad = pads[measure] = max(0, 22 - len(measure.encode("utf-8", "surrogateescape"))
                                      + len(measure))
        yield f"{measure:<{pad}}\t{qid}\t{shown}\n"


class _Bytes:
    """A text writer onto a binary one: ids that are not UTF-8 pass through unchanged."""

    def __init__(self, out: BinaryIO) -> None:
        self.out = out

    def write(self, text: str) -> None:
        self.out.write(text.encode("utf-8", "surrogateescape"))


def write(output: TrecEvalOutput, out: BinaryIO) -> None:
    """Write the lines as bytes, a chunk at a time: the millions of lines of all_trec -q on
    a large run are never one string, nor one list of lines."""
    write_lines(_Bytes(out), lines(output))  # type: ignore[arg-type]

"""ndeval's CSV: ``runid,topic,<measures>``, one row per topic and run, ``%.6f`` values,
then ``runid,amean,...`` (the ``all`` rows). The run id goes through
:func:`rpp_cli.report.escape.csv_field` (a name such as ``=cmd`` or ``a,b`` is the only
difference from ndeval's bytes: ndeval writes it raw)."""
from __future__ import annotations

from typing import TextIO

from ...report.escape import csv_field
from ...results import ALL, Results


def write(results: Results, out: TextIO) -> None:
    """Write the header and one row per (topic, run), measures in the table's order."""
    table: dict[tuple[str, str], list[float]] = {}
    for _measure, qid, run, _other, value in results.rows():
        table.setdefault((qid, run), []).append(value)
    lines = ["runid,topic," + ",".join(results.measures) + "\n"]
    for (qid, run), values in table.items():
        topic = "amean" if qid == ALL else qid
        lines.append(f"{csv_field(run)},{topic}," + ",".join("%.6f" % v for v in values) + "\n")
    out.write("".join(lines))

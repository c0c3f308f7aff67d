"""ndeval's CSV: ``runid,topic,<measures>``, one row per topic and run, ``%.6f`` values,
then ``runid,amean,...`` (the ``all`` rows)."""
from __future__ import annotations

from typing import TextIO

from ..results import ALL, Results


def write(results: Results, out: TextIO) -> None:
    """Write the header and one row per (topic, run), measures in the table's order."""
    table: dict[tuple[str, str], list[float]] = {}
    for _measure, qid, run, _other, value in results.rows():
        table.setdefault((qid, run), []).append(value)
    lines = ["runid,topic," + ",".join(results.measures) + "\n"]
    for (qid, run), values in table.items():
        topic = "amean" if qid == ALL else qid
        lines.append(f"{run},{topic}," + ",".join("%.6f" % v for v in values) + "\n")
    out.write("".join(lines))

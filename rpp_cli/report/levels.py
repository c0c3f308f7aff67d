"""``rpp levels``'s rows as text: trec lines (contract §7 layout, value last), jsonl, or csv
with a header row. A row is a tuple of :data:`FIELDS` (None where a field is absent), as
:func:`rpp_cli.tasks.levels.rows` yields them: a sign is an int, a share a float."""
from __future__ import annotations

from itertools import chain
from typing import Callable, Iterable, TextIO

from . import reader_may_leave
from .common import number, write_lines
from .escape import csv_field, ident, json_string

FORMATS = ("trec", "jsonl", "csv")
FIELDS = ("measure", "qid", "run", "other", "population", "level", "run_position",
          "other_position", "value")  # the jsonl keys and the csv header


def _value(value: int | float, precision: int) -> str:
    """A sign as an integer, a share with ``precision`` decimals (contract §7)."""
    return str(value) if isinstance(value, int) else number(value, precision)


def _trec(row: tuple, precision: int) -> str:
    """A trec line: the measure padded to 22, the present fields, the value last."""
    fields = [str(x) for x in row[1:-1] if x is not None]
    return f"{row[0]:<22}\t" + "\t".join(fields) + f"\t{_value(row[-1], precision)}\n"


def _text_ids(row: tuple) -> tuple:
    """The row with its ids, the qid and the population label (a subtopic id), as
    :func:`.escape.ident` writes them for every format but trec text."""
    measure, qid, a, b, label, *rest = row
    return (measure, ident(qid), a, b, None if label is None else ident(label), *rest)


def _jsonl(row: tuple, precision: int) -> str:
    """A JSON object keyed by :data:`FIELDS`, null where a field is absent."""
    parts = [f'"{key}": {json_string(x) if isinstance(x, str) else "null" if x is None else x}'
             for key, x in zip(FIELDS[:-1], _text_ids(row)[:-1])]
    return "{" + ", ".join(parts) + f', "value": {_value(row[-1], precision)}}}\n'


def _csv(row: tuple, precision: int) -> str:
    """A csv row in :data:`FIELDS` order, empty where a field is absent."""
    fields = ["" if x is None else csv_field(x) if isinstance(x, str) else str(x)
              for x in _text_ids(row)[:-1]]
    return ",".join(fields) + f",{_value(row[-1], precision)}\n"


_LINES: dict[str, Callable[[tuple, int], str]] = {"trec": _trec, "jsonl": _jsonl, "csv": _csv}


def write(rows: Iterable[tuple], fmt: str, out: TextIO, precision: int = 4) -> None:
    """Print ``rows`` in format ``fmt`` (csv with a header row). A reader that goes away
    (``| head``) ends the output quietly, as :func:`rpp_cli.report.write` does."""
    line = _LINES[fmt]
    header = [",".join(FIELDS) + "\n"] if fmt == "csv" else []
    with reader_may_leave(out):
        write_lines(out, chain(header, (line(row, precision) for row in rows)))

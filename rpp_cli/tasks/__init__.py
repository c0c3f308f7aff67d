"""The tasks: what each command does, one module (or package) per command, each behind the
same entry ``run(qrels, runs, request, options) -> Outcome``, which the click command in
``commands/`` and the Python API in ``api.py`` both call.

``request`` is a small frozen dataclass of the command's own settings, ``options`` the input
options every evaluating command shares (:class:`rpp_cli.settings.Options`; the drop-ins,
``trec_eval/`` and ``ndeval/``, read as their originals do and take none). A task reads,
encodes and measures (through ``pipeline``) and returns its Results with the notes it
gathered; it writes nothing itself (the faces decide where results and notes go).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator

from ..results import Results


@dataclass
class Outcome:
    """What a task returns: its ``results`` (the one tidy table; None for a task whose output
    is not one, ``rpp levels``), the ``notes`` for stderr in the order they arose, and
    ``extras`` that only some faces read (a check's verdicts, the levels, trec_eval's texts),
    by name."""

    results: Results | None
    notes: list[str] = field(default_factory=list)
    extras: dict[str, Any] = field(default_factory=dict)


@contextmanager
def noting(notes: list[str] | None = None) -> Iterator[list[str]]:
    """A task's notes (a new list, or ``notes`` to add to): an error leaving the block carries
    those gathered so far as ``err.notes``, for a caller that keeps them (the API's
    ``notes=``), as it keeps those of a run that succeeds."""
    notes = [] if notes is None else notes
    try:
        yield notes
    except Exception as err:
        err.notes = notes  # type: ignore[attr-defined]
        raise

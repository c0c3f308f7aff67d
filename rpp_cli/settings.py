"""The input settings every command that evaluates runs shares, as one value (``Options``).

It sits below everything that reads them (the click options in ``options.py``, the Python
API, ``collection.encode``), so any of them can take it without importing upward.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Options:
    """Input options shared by every command that evaluates runs."""

    level: float | None = None
    corpus_size: int | None = None
    dedup: bool = False
    jobs: int = 1
    subtopics: str | None = None  # subtopic qrels file
    names: tuple[str | None, ...] = ()  # --name: the runs' names, in order (None: by names_from)
    max_docs: int | None = None  # -M K: each run keeps its top K per query
    names_from: str = "file"  # --names-from: runs not named by --name are named by file or tag

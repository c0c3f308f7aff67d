"""The input settings every command that evaluates runs shares, as one value (``Options``),
and the trec_eval release whose numbers trec_eval's measures follow.

It sits below everything that reads them (the click options in ``options.py``, the Python
API, ``collection.encode``), so any of them can take it without importing upward.
"""
from __future__ import annotations

import contextvars
import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from .errors import InputError

# The trec_eval releases rpp follows, the current one first: 10.0 rounds the recall cutoffs of
# iprec_at_recall and 11pt_avg (lround), adds rbp, rbp_resid and unj to all_trec, and under
# -c prints each judged query a run lacks (docs/measures.md, "trec_eval versions").
TREC_EVAL_RELEASES = ("10.0", "9.0.8")
LATEST_TREC_EVAL = TREC_EVAL_RELEASES[0]
TREC_EVAL_VARIABLE = "RPP_TREC_EVAL"

_IN_FORCE: contextvars.ContextVar[str | None] = contextvars.ContextVar("trec_eval_release",
                                                                       default=None)


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
    trec_eval: str | None = None  # --compat: a TREC_EVAL_RELEASES (None: the one in force)
    binary: bool = False  # --binary: a query's relevant items are one population (pref_eval's)


def trec_eval_release(choice: str | None = None) -> str:
    """The trec_eval release to follow: ``choice`` when given, else the one a command put in
    force (:func:`trec_eval_in_force`), else $RPP_TREC_EVAL, else the latest. A name that is
    not a release is an InputError."""
    release = choice or _IN_FORCE.get() or os.environ.get(TREC_EVAL_VARIABLE) or \
        LATEST_TREC_EVAL
    if release not in TREC_EVAL_RELEASES:
        source = "--compat" if choice or _IN_FORCE.get() else f"${TREC_EVAL_VARIABLE}"
        raise InputError(f"{source} '{release}': expected a trec_eval release, "
                         f"{' or '.join(TREC_EVAL_RELEASES)}")
    return release


@contextmanager
def trec_eval_in_force(choice: str | None) -> Iterator[str]:
    """Put a release in force while a command runs (what ``-m all_trec`` means, which release
    captions name): ``choice``, or the default of :func:`trec_eval_release`."""
    token = _IN_FORCE.set(trec_eval_release(choice))
    try:
        yield _IN_FORCE.get()
    finally:
        _IN_FORCE.reset(token)

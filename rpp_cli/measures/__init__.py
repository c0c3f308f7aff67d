"""Every measure rpp knows: the registry (:mod:`.registry`, the single list ``-m``, help and
``rpp measures`` read), filled by the family modules imported here, and what ``-m`` values
mean (:func:`resolve`)."""
from __future__ import annotations

from .registry import (ACROSS_RUNS, ALL_QUERIES, DEFAULTS, FAMILIES, METRIC, PARAMETRIC,
                       PREFERENCE, REGISTRY, SET, SUBTOPIC_DEFAULTS, Measure, across_runs, family,
                       register)

# The families register their measures on import; import order is listing order (rpp measures).
from . import (preference, lexicographic, interleaving, search_length,  # noqa: F401,I001,E402
               rank_biased, diversity, trec, ir_measures)
from .lookup import resolve  # noqa: E402

__all__ = ["ACROSS_RUNS", "ALL_QUERIES", "DEFAULTS", "FAMILIES", "METRIC", "PARAMETRIC",
           "PREFERENCE", "REGISTRY", "SET", "SUBTOPIC_DEFAULTS", "Measure", "across_runs",
           "family", "register", "resolve"]

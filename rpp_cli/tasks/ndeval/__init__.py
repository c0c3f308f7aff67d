"""``rpp ndeval``, a drop-in for the TREC Web track's ndeval (v4.5): its flow (``flow``; the
subtopic qrels and the run are read by ``rpp_cli.io`` with ndeval's rules) and its CSV
(``writer``)."""
from __future__ import annotations

from .flow import NdevalOptions, run

__all__ = ["NdevalOptions", "run"]

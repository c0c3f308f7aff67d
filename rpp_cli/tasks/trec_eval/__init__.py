"""``rpp trec-eval``, a drop-in for trec_eval 9.0.8: its reading rules (``reader``), its flow
(``flow``: rank, evaluate with pytrec_eval, aggregate) and its line formats (``writer``)."""
from __future__ import annotations

from .flow import TrecEvalOptions, TrecEvalOutput, run

__all__ = ["TrecEvalOptions", "TrecEvalOutput", "run"]

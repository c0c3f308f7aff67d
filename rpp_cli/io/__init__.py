"""Readers: TREC qrels, subtopic qrels and run files into numpy columns (contract §1)."""

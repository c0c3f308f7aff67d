#!/usr/bin/env python3
"""The naive baseline users write today: parse TREC files line by line in Python, then
pytrec_eval per run for the same trec metrics as rpp's defaults (map, ndcg, recip_rank, P_10),
printing per-query and mean lines. `bench/run.py` times it beside `rpp`."""
from __future__ import annotations

import collections
import sys

import pytrec_eval

MEASURES = {"map", "ndcg", "recip_rank", "P.10"}


def main() -> None:
    qrels_path, *run_paths = sys.argv[1:]
    qrels: dict[str, dict[str, int]] = collections.defaultdict(dict)
    with open(qrels_path) as f:
        for line in f:
            qid, _, docno, grade = line.split()
            qrels[qid][docno] = int(grade)
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, MEASURES)
    out = sys.stdout
    for path in run_paths:
        run: dict[str, dict[str, float]] = collections.defaultdict(dict)
        with open(path) as f:
            for line in f:
                qid, _, docno, _, score, tag = line.split()
                run[qid][docno] = float(score)
        results = evaluator.evaluate(run)
        means: dict[str, list[float]] = collections.defaultdict(list)
        for qid in sorted(results):
            for name, value in results[qid].items():
                out.write(f"{name:<22}\t{qid}\t{tag}\t{value:.4f}\n")
                means[name].append(value)
        for name, values in means.items():
            out.write(f"{name:<22}\tall\t{tag}\t{sum(values) / len(values):.4f}\n")


if __name__ == "__main__":
    main()

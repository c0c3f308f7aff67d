#!/usr/bin/env python3
"""Write rbp.tsv: rank-biased precision from ir_measures' RBP provider (trectools), the goldens
of tests/measures/test_rbp_goldens.py. Run from the repository root:

    .venv/bin/pip install ir_measures==0.4.3 trectools==0.0.50   # goldens only, never deps
    .venv/bin/python tests/golden/ir_measures/make_rbp_goldens.py

ir_measures' ``RBP(p=P)`` is trectools' ``get_rbp`` with each item's weight times its grade and
the weights of tied scores averaged. rpp's ``rbp.P`` is Moffat & Zobel's binary RBP (grade > 0,
or >= -l) over contract §2's order, so the two agree where the grades are binary and no score
ties: trectools is given each collection's qrels made binary at the level (a relevant grade 1,
the others as they are: zero and negative grades add nothing there), and a (query, run) whose
ranking has two equal scores is left out. The residual ``rbp_res.P`` is trectools' own, taken
with its depth set to the ranking's length d (the term p^d: everything below the ranking
could be relevant), by one call per length; trectools has none (NaN) for a query with nothing
relevant retrieved, and then nor do the goldens.

Collections: ``realistic.generate(seed)`` (UTF-8 and 1-100 byte docnos, string qids, negative
grades, tied scores) and fixtures/demo, given to ir_measures as Python dicts, so its readers
play no part; the test reads the files. Rows: source, level, measure, qid, run, value.
"""
from __future__ import annotations

import importlib.metadata
import math
import sys
from pathlib import Path

import ir_measures
import pandas as pd
import trectools
from ir_measures import RBP

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import demo_dicts  # noqa: E402
from tests.realistic import generate  # noqa: E402

SEEDS = range(40)
LEVELS = (1, 2)
PERSISTENCES = (0.8, 0.5)


def binary(qrels: dict, level: int) -> dict:
    """``qrels`` with each grade >= level made 1 and the others kept (they add no gain)."""
    return {q: {d: 1 if g >= level else min(g, 0) for d, g in docs.items()}
            for q, docs in qrels.items()}


def untied(run: dict) -> dict:
    """The queries of ``run`` (``{qid: {docno: score}}``) whose scores are all distinct."""
    return {q: docs for q, docs in run.items() if len(set(docs.values())) == len(docs)}


def residuals(qrels: dict, run: dict, p: float) -> dict[str, float]:
    """{qid: trectools' residual with its depth the query's ranking length} (no NaN)."""
    frame = pd.DataFrame([(q, "Q0", d, 0, s, "r") for q, docs in run.items()
                          for d, s in docs.items()],
                         columns=["query", "q0", "docid", "rank", "score", "system"])
    frame = frame.sort_values(["query", "score"], ascending=[True, False])
    trec_qrels = trectools.TrecQrel()
    trec_qrels.qrels_data = pd.DataFrame([(q, "0", d, g) for q, docs in qrels.items()
                                          for d, g in docs.items()],
                                         columns=["query", "q0", "docid", "rel"])
    out = {}
    for depth in sorted({len(docs) for docs in run.values()}):
        at = trectools.TrecRun()
        at.run_data = frame[frame["query"].isin([q for q, d in run.items() if len(d) == depth])]
        _, res = trectools.TrecEval(at, trec_qrels).get_rbp(
            p=p, depth=depth, per_query=True, binary_topical_relevance=False, average_ties=True)
        out.update({q: v for q, v in zip(res.index, res.iloc[:, 0]) if not math.isnan(v)})
    return out


def rows(source: str, qrels: dict, runs: dict) -> list[str]:
    """The golden lines of one collection."""
    out = []
    for level in LEVELS:
        judged = binary(qrels, level)
        for name, run in runs.items():
            run = {q: docs for q, docs in untied(run).items() if q in qrels}
            for p in PERSISTENCES:
                for m in ir_measures.trectools.iter_calc([RBP(p=p)], judged, run):
                    if m.query_id not in run:  # ir_measures' 0 for a query left out (tied)
                        continue
                    out.append(f"{source}\t{level}\trbp.{p}\t{m.query_id}\t{name}\t{m.value!r}\n")
                for q, v in residuals(judged, run, p).items():
                    out.append(f"{source}\t{level}\trbp_res.{p}\t{q}\t{name}\t{v!r}\n")
    return sorted(out)


def main() -> None:
    versions = ", ".join(f"{n} {importlib.metadata.version(n)}"
                         for n in ("ir_measures", "trectools", "pandas"))
    lines = [f"# made by tests/golden/ir_measures/make_rbp_goldens.py with {versions}\n",
             "# source\tlevel\tmeasure\tqid\trun\tvalue\n"]
    for source in ["demo", *(f"seed{seed}" for seed in SEEDS)]:
        if source == "demo":
            qrels, runs = demo_dicts()
        else:
            coll = generate(int(source[4:]))
            qrels = coll.qrels
            runs = {tag: {q: dict(docs) for q, docs in run.items()}
                    for tag, run in zip(coll.tags, coll.runs)}
        lines += rows(source, qrels, runs)
    (HERE / "rbp.tsv").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    main()

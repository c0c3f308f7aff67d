#!/usr/bin/env python3
"""Write values.tsv: ir_measures' own per-query values on realistic collections, the goldens
of tests/measures/test_ir_measures_goldens.py. Run from the repository root:

    .venv/bin/pip install ir_measures==0.4.3   # only to make goldens; never a dependency
    .venv/bin/python tests/golden/ir_measures/make_goldens.py

Collections: ``realistic.generate(seed)`` for the seeds below (tied and C-float-tied scores,
UTF-8 and 1-100 byte docnos, string qids, negative grades) and fixtures/demo. ir_measures is
given each collection as Python dicts (qrels with the larger grade of a docno judged twice, as
contract §1 says), so its own readers play no part; rpp reads the files in the test.

gdeval.pl (ERR@k) accepts numeric qids only and prints 5 decimals: ERR is computed on the
same collection with qids renamed 1, 2, ... (a query's value does not depend on its id), by
ir_measures (``ERR@k`` rows, 5 decimals) and by ir_measures' gdeval.pl with its printf made
``%.17g`` (``gdeval:ERR@k`` rows, every digit).

ir_measures is given every query of the qrels, those without a relevant item too: rpp computes
trec_eval's and ir_measures' measures on all of them, as ir_measures averages over every qrels
query (trec_eval -c). A query whose every grade is negative is left out of the measures that
ir_measures takes from pytrec_eval (it segfaults on one; trec_eval evaluates one only where it
is not the first query evaluated, contract §6: no document relevant, so each of these measures
is 0 there, which the test checks); RR@k, Judged and ERR@k (providers of their own) get it too. Each collection is evaluated in a process of its own.
"""
from __future__ import annotations

import importlib.resources
import subprocess
import sys
import tempfile
from pathlib import Path

import ir_measures
from ir_measures import AP, ERR, P, R, RR, Bpref, Judged, Rprec, Success, nDCG

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from tests.conftest import demo_dicts  # noqa: E402
from tests.realistic import generate  # noqa: E402

SEEDS = range(40)
PYTREC = [P@5, P@10, P(rel=2)@5, nDCG@10, nDCG@20, nDCG, AP, AP(rel=2), AP@10, R@100, RR,
          RR(rel=2), Rprec, Bpref, Success@10]  # ir_measures takes these from pytrec_eval
OWN = [RR@10, RR@5, RR(rel=2)@10, Judged@10, Judged@5, Judged]  # msmarco, judged providers
ERR_CUTOFFS = (20, 10)


def realistic(seed: int) -> tuple[dict, dict]:
    """realistic.generate(seed) as (qrels, {tag: run}) dicts."""
    coll = generate(seed)
    runs = {tag: {q: dict(docs) for q, docs in run.items()}
            for tag, run in zip(coll.tags, coll.runs)}
    return coll.qrels, runs


def gdeval_full(qrels: dict, run: dict, cutoff: int) -> dict[str, float]:
    """{qid: ERR@cutoff} from gdeval.pl printing every digit (qids must be numeric)."""
    script = importlib.resources.files("ir_measures").joinpath("bin/gdeval.pl").read_text()
    assert script.count("%.5f,%.5f") == 1
    with tempfile.TemporaryDirectory() as tmp:
        paths = [Path(tmp) / n for n in ("gdeval.pl", "qrels", "run")]
        paths[0].write_text(script.replace("%.5f,%.5f", "%.17g,%.17g"))
        paths[1].write_text("".join(f"{q} 0 {d} {g}\n" for q, docs in qrels.items()
                                    for d, g in docs.items()))
        paths[2].write_text("".join(f"{q} Q0 {d} {i} {s} run\n" for q, docs in run.items()
                                    for i, (d, s) in enumerate(docs.items())))
        out = subprocess.run(["perl", *map(str, paths), str(cutoff)], check=True,
                             capture_output=True, text=True).stdout
    return {line.split(",")[1]: float(line.split(",")[3]) for line in out.splitlines()[1:]}


def rows(source: str, qrels: dict, runs: dict) -> list[str]:
    """The golden lines of one collection: source, measure, qid, run, value."""
    out = []
    scored = {q: docs for q, docs in qrels.items() if max(docs.values()) >= 0}
    for name, run in runs.items():
        for m in [*ir_measures.iter_calc(PYTREC, scored, run),
                  *ir_measures.iter_calc(OWN, qrels, run)]:
            out.append(f"{source}\t{m.measure}\t{m.query_id}\t{name}\t{m.value!r}\n")
        number = {q: str(i + 1) for i, q in enumerate(dict.fromkeys([*qrels, *run]))}
        back = {v: k for k, v in number.items()}
        numbered_qrels = {number[q]: docs for q, docs in qrels.items()}
        numbered_run = {number[q]: docs for q, docs in run.items()}
        for k in ERR_CUTOFFS:
            for m in ir_measures.iter_calc([ERR@k], numbered_qrels, numbered_run):
                out.append(f"{source}\t{m.measure}\t{back[m.query_id]}\t{name}\t{m.value!r}\n")
            for q, v in gdeval_full(numbered_qrels, numbered_run, k).items():
                out.append(f"{source}\tgdeval:ERR@{k}\t{back[q]}\t{name}\t{v!r}\n")
    return sorted(out)


def main() -> None:
    """Every collection's lines (each from a process of its own) into values.tsv."""
    lines = [f"# made by tests/golden/ir_measures/make_goldens.py with ir_measures "
             f"{ir_measures.__version__}\n", "# source\tmeasure\tqid\trun\tvalue\n"]
    for source in ["demo", *(f"seed{seed}" for seed in SEEDS)]:
        lines.append(subprocess.run([sys.executable, __file__, source], check=True, timeout=120,
                                    capture_output=True, encoding="utf-8").stdout)
    (HERE / "values.tsv").write_text("".join(lines), encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) == 2:  # one collection's lines on stdout
        name = sys.argv[1]
        sys.stdout.reconfigure(encoding="utf-8")
        sys.stdout.write("".join(rows(name, *(demo_dicts() if name == "demo"
                                               else realistic(int(name[4:]))))))
    else:
        main()

"""rpp equals ir_measures 0.4.3 itself, measure by measure, on realistic collections with tied
scores (tests/golden/ir_measures/values.tsv, made by make_goldens.py beside it from Python
dicts; rpp reads the same collections from files written in the mixed style: CRLF, BOM, gzip,
tabs, comments). Per-query values and ``all`` agree to 5e-13; ERR@k, which ir_measures takes
from gdeval.pl's 5-decimal output, agrees at those 5 decimals and to 5e-13 with gdeval.pl
printing every digit."""
from __future__ import annotations

from collections import defaultdict

import pytest

import rpp_cli

from ..conftest import DEMO, ROOT
from ..realistic import generate, write_collection

GOLDENS = ROOT / "tests" / "golden" / "ir_measures" / "values.tsv"
TOL = 5e-13


def _goldens() -> dict[str, dict[tuple[str, str, str], float]]:
    """source -> {(measure, qid, run): value}."""
    out: dict[str, dict] = defaultdict(dict)
    for line in GOLDENS.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            source, measure, qid, run, value = line.split("\t")
            out[source][(measure, qid, run)] = float(value)
    return out


GOLDEN = _goldens()
MEASURES = sorted({m for rows in GOLDEN.values() for m, _, _ in rows if ":" not in m})


def _inputs(source: str, tmp_path):
    """The collection's qrels path, run paths and run names."""
    if source == "demo":
        paths = sorted((DEMO / "runs").iterdir())
        return DEMO / "qrels", paths, [p.name for p in paths]
    coll = generate(int(source[4:]))
    qrels, runs = write_collection(coll, tmp_path, "mixed")
    return qrels, runs, coll.tags


def test_the_goldens_cover_what_they_should():
    assert len(GOLDEN) == 41 and {"RR@10", "Judged@10", "ERR@20", "RR(rel=2)@10",
                                  "AP(rel=2)", "nDCG@10", "P@5"} <= set(MEASURES)


@pytest.mark.parametrize("source", sorted(GOLDEN))
def test_values_equal_ir_measures(source, tmp_path):
    qrels, runs, names = _inputs(source, tmp_path)
    res = rpp_cli.evaluate(str(qrels), [str(p) for p in runs], MEASURES, per_query=True,
                           names=names)
    golden = GOLDEN[source]
    per_query: dict[tuple[str, str], list[float]] = defaultdict(list)
    problems = []
    for r in res.records(summary=False):
        key = (r["measure"], r["qid"], r["run"])
        per_query[key[0], key[2]].append(r["value"])
        if key[0].startswith("ERR@"):
            full = golden.get((f"gdeval:{key[0]}", *key[1:]), 0.0)  # gdeval: queries in the run
            if abs(r["value"] - full) > TOL or f"{r['value']:.5f}" != f"{golden[key]:.5f}":
                problems.append(f"{key}: rpp {r['value']!r}, gdeval {full!r}, "
                                f"ir_measures {golden[key]!r}")
        elif abs(r["value"] - golden[key]) > TOL:
            problems.append(f"{key}: rpp {r['value']!r}, ir_measures {golden[key]!r}")
    assert {(m, q, r) for m, q, r in golden if ":" not in m} == \
        {(r["measure"], r["qid"], r["run"]) for r in res.records(summary=False)}
    for r in res.records():
        if r["qid"] == "all":
            values = per_query[r["measure"], r["run"]]
            if abs(r["value"] - sum(values) / len(values)) > TOL:
                problems.append(f"all {r['measure']} {r['run']}: {r['value']!r}")
    assert not problems, f"{source}: {len(problems)} problems, e.g.\n  " + "\n  ".join(problems[:8])


def test_ties_decide_some_values():
    """The goldens hold rankings where the tie order matters: RR@10 (docno ascending) differs
    from RR (trec_eval's docno descending) on a query whose first relevant item is in the
    top 10."""
    differ = [k for rows in GOLDEN.values() for k, v in rows.items()
              if k[0] == "RR@10" and 0 < rows[("RR", *k[1:])] != v and v > 0]
    assert len(differ) >= 5

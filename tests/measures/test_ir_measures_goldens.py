"""rpp equals ir_measures 0.4.3 itself, measure by measure, on realistic collections with tied
scores (tests/golden/ir_measures/values.tsv, made by make_goldens.py beside it from Python
dicts; rpp reads the same collections from files written in the mixed style: CRLF, BOM, gzip,
tabs, comments). Per-query values and ``all`` agree to 5e-13; ERR@k, which ir_measures takes
from gdeval.pl's 5-decimal output, agrees at those 5 decimals and to 5e-13 with gdeval.pl
printing every digit.

The goldens cover every query of the qrels, those without a relevant item too (rpp computes
trec_eval's and ir_measures' measures on all of them, contract §6), except where ir_measures
cannot: on a query whose every grade is negative pytrec_eval segfaults (and trec_eval stops), so
the measures ir_measures takes from it have no golden there and rpp's value is the contract's 0;
RR@k, Judged and ERR@k, from providers of their own, have goldens there too."""
from __future__ import annotations

from collections import defaultdict

import pytest

import rpp_cli

from ..conftest import DEMO, ROOT, demo_dicts
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
    """The collection's qrels path, run paths, run names, and the queries whose every grade is
    negative."""
    if source == "demo":
        paths = sorted((DEMO / "runs").iterdir())
        return DEMO / "qrels", paths, [p.name for p in paths], _negative_only(demo_dicts()[0])
    coll = generate(int(source[4:]))
    qrels, runs = write_collection(coll, tmp_path, "mixed")
    return qrels, runs, coll.tags, _negative_only(coll.qrels)


def _negative_only(qrels: dict) -> set[str]:
    """The queries of ``qrels`` whose every grade is negative."""
    return {q for q, docs in qrels.items() if max(docs.values()) < 0}


def _own_provider(measure: str) -> bool:
    """True for RR@k, Judged and ERR@k: ir_measures computes them without pytrec_eval."""
    return measure.startswith(("Judged", "ERR@")) or (measure.startswith("RR") and "@" in measure)


def test_the_goldens_cover_what_they_should():
    assert len(GOLDEN) == 41 and {"RR@10", "Judged@10", "ERR@20", "RR(rel=2)@10",
                                  "AP(rel=2)", "nDCG@10", "P@5"} <= set(MEASURES)


@pytest.mark.parametrize("source", sorted(GOLDEN))
def test_values_equal_ir_measures(source, tmp_path, monkeypatch):
    monkeypatch.setenv("RPP_TREC_EVAL", "9.0.8")  # ir_measures runs trec_eval 9.0.8's code
    qrels, runs, names, negative = _inputs(source, tmp_path)
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
        elif key not in golden:  # pytrec_eval's measure on a negative-only query: nothing
            # is relevant there, so 0 (§6)
            if r["value"] != 0.0 or key[1] not in negative or _own_provider(key[0]):
                problems.append(f"{key}: rpp {r['value']!r}, no golden")
        elif abs(r["value"] - golden[key]) > TOL:
            problems.append(f"{key}: rpp {r['value']!r}, ir_measures {golden[key]!r}")
    printed = {(r["measure"], r["qid"], r["run"]) for r in res.records(summary=False)}
    assert {(m, q, r) for m, q, r in golden if ":" not in m} <= printed
    for r in res.records():
        if r["qid"] == "all":
            values = per_query[r["measure"], r["run"]]
            if abs(r["value"] - sum(values) / len(values)) > TOL:
                problems.append(f"all {r['measure']} {r['run']}: {r['value']!r}")
    assert not problems, f"{source}: {len(problems)} problems, e.g.\n  " + "\n  ".join(problems[:8])


def test_the_goldens_hold_queries_without_a_relevant_item():
    """Queries with no relevant item (16 over the realistic collections, 3 with only negative
    grades) have ir_measures' values: RR@10 and ERR@20 0, Judged@10 the share judged."""
    empty = {(s, q) for s in GOLDEN if s != "demo"
             for q, docs in generate(int(s[4:])).qrels.items() if max(docs.values()) <= 0}
    assert len(empty) == 16
    judged = [v for s, rows in GOLDEN.items() for (m, q, _), v in rows.items()
              if (s, q) in empty and m == "Judged@10"]
    assert len(judged) >= 16 and max(judged) > 0
    assert all(v == 0.0 for s, rows in GOLDEN.items() for (m, q, _), v in rows.items()
               if (s, q) in empty and m in ("RR@10", "ERR@20"))


def test_ties_decide_some_values():
    """The goldens hold rankings where the tie order matters: RR@10 (docno ascending) differs
    from RR (trec_eval's docno descending) on a query whose first relevant item is in the
    top 10."""
    differ = [k for rows in GOLDEN.values() for k, v in rows.items()
              if k[0] == "RR@10" and 0 < rows.get(("RR", *k[1:]), 0) != v and v > 0]
    assert len(differ) >= 5

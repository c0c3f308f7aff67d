"""rpp's ``rbp.P`` and ``rbp_res.P`` equal ir_measures' RBP provider (trectools 0.0.50) on
realistic collections (tests/golden/ir_measures/rbp.tsv, made by make_rbp_goldens.py beside it
from Python dicts; rpp reads the files in the mixed style: CRLF, BOM, gzip, tabs, comments).

ir_measures' RBP weighs each item by its grade and averages the weights of tied scores, so the
goldens are made on qrels binary at each level (-l 1, -l 2) and hold only the (query, run)
whose scores are distinct; the residual is trectools' with its depth set to the ranking's
length, as Moffat & Zobel's p^d (see the script)."""
from __future__ import annotations

from collections import defaultdict

import pytest

import rpp_cli

from ..conftest import DEMO, ROOT
from ..realistic import generate, write_collection

GOLDENS = ROOT / "tests" / "golden" / "ir_measures" / "rbp.tsv"
TOL = 5e-13


def _goldens() -> dict[tuple[str, int], dict[tuple[str, str, str], float]]:
    """(source, level) -> {(measure, qid, run): value}."""
    out: dict = defaultdict(dict)
    for line in GOLDENS.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            source, level, measure, qid, run, value = line.split("\t")
            out[source, int(level)][measure, qid, run] = float(value)
    return out


GOLDEN = _goldens()


def test_the_goldens_cover_what_they_should():
    """Both levels on 41 collections, both persistences, non-zero values and residuals."""
    assert len(GOLDEN) == 82
    rows = [(k, v) for golden in GOLDEN.values() for k, v in golden.items()]
    assert {m for (m, _, _), _ in rows} == {"rbp.0.8", "rbp.0.5", "rbp_res.0.8", "rbp_res.0.5"}
    assert sum(1 for (m, _, _), v in rows if m.startswith("rbp.") and v > 0) >= 500
    assert sum(1 for (m, _, _), _ in rows if m.startswith("rbp_res")) >= 500


@pytest.mark.parametrize("source,level", sorted(GOLDEN))
def test_rbp_equals_ir_measures(source, level, tmp_path):
    if source == "demo":
        runs = sorted((DEMO / "runs").iterdir())
        qrels, names = DEMO / "qrels", [p.name for p in runs]
    else:
        coll = generate(int(source[4:]))
        qrels, runs = write_collection(coll, tmp_path, "mixed")
        names = coll.tags
    golden = GOLDEN[source, level]
    if source != "demo" and max(max(d.values()) for d in coll.qrels.values()) < level:
        # rpp's error (nothing to evaluate at that level), where ir_measures gives 0 throughout
        with pytest.raises(rpp_cli.InputError, match="no query has a relevant item at level"):
            rpp_cli.evaluate(str(qrels), [str(p) for p in runs], ["rbp"], level=level)
        assert set(golden.values()) <= {0.0}
        return
    res = rpp_cli.evaluate(str(qrels), [str(p) for p in runs], ["rbp.0.8", "rbp.0.5"],
                           per_query=True, names=names, level=level)
    got = {(r["measure"], r["qid"], r["run"]): r["value"] for r in res.records(summary=False)}
    problems = []
    for key, want in golden.items():
        if key[1] not in {q for _, q, _ in got} and want == 0.0:
            continue  # a query without a relevant item at this level: rpp's own measures
            # leave it out (contract §6), ir_measures scores it 0
        if key not in got or abs(got[key] - want) > TOL:
            problems.append(f"{key}: rpp {got.get(key)!r}, ir_measures {want!r}")
    assert not problems, f"{source} -l {level}: {len(problems)} of {len(golden)}, e.g.\n  " + \
        "\n  ".join(problems[:8])

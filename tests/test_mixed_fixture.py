"""The `mixed` fixture (fixtures/mixed: string and numeric qids, docnos of 1-100 bytes in
mixed styles, UTF-8 ids, tied and scientific-notation scores): every value ``rpp eval -q``
prints equals the slow contract reference and pytrec_eval (tests/reference.py)."""
from __future__ import annotations

import importlib.util

from .conftest import FIXTURES, rpp
from .reference import EVAL_ARGS, compare, expected_output, order_problems, parse_strict

MIXED = FIXTURES / "mixed"
RUNS = ["a", "b", "c"]


def _read(path):
    """A plain trec_eval file (one judgment or retrieved doc a line) as token lists."""
    return [line.split() for line in path.read_text(encoding="utf-8").splitlines() if line]


def _collection():
    qrels: dict[str, dict[str, int]] = {}
    for qid, _, docno, grade in _read(MIXED / "qrels"):
        docs = qrels.setdefault(qid, {})
        docs[docno] = max(int(grade), docs.get(docno, -10**9))  # judged twice: the larger
    runs = []
    for name in RUNS:
        run: dict[str, list[tuple[str, float]]] = {}
        for qid, _, docno, _, score, _ in _read(MIXED / "runs" / name):
            run.setdefault(qid, []).append((docno, float(score)))
        runs.append(run)
    return qrels, runs


def test_fixture_is_what_make_py_writes(tmp_path):
    spec = importlib.util.spec_from_file_location("make_mixed", MIXED / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.make(tmp_path)
    for rel in ["qrels", *(f"runs/{r}" for r in RUNS)]:
        assert (tmp_path / rel).read_bytes() == (MIXED / rel).read_bytes(), rel


def test_mixed_fixture_matches_the_references():
    qrels, runs = _collection()
    assert any(len(d.encode()) == 40 for docs in qrels.values() for d in docs)
    res = rpp(*EVAL_ARGS, MIXED / "qrels", *(MIXED / "runs" / r for r in RUNS))
    assert res.code == 0, res.err
    got, _, order = parse_strict(res.out)
    want = expected_output(qrels, runs, RUNS)
    assert {k[1] for k in want} == {"7", "007", "106_1", "q-α", "1042", "all"}
    problems = compare(got, want) + order_problems(order, RUNS)
    assert not problems, f"{len(problems)} problems, e.g.\n  " + "\n  ".join(problems[:8])

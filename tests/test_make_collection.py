"""fixtures/make_collection.py: the default collection is the demo, byte for byte, and the
judging options (``--judged-per-query``, ``--grades``) judge as depth pooling does, with the
grades spread as asked, and leave the runs as they were."""
from __future__ import annotations

import collections
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from .conftest import ROOT, script_module
SCRIPT = ROOT / "fixtures" / "make_collection.py"
SHARES = (0.55, 0.3, 0.1, 0.05)


@pytest.fixture(scope="module")
def make_collection():
    """The generator's module (fixtures/ is not a package)."""
    return script_module("fixtures", "make_collection")


def files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by its relative path."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def test_the_defaults_write_the_demo_collection(tmp_path, make_collection):
    """The demo fixtures are the generator's defaults: an option added to it changes none."""
    make_collection.generate(str(tmp_path))
    assert files(tmp_path) == files(ROOT / "fixtures" / "demo")


def judgments(path: Path) -> dict[str, dict[str, int]]:
    """qid -> docno -> grade of a qrels file."""
    out: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for line in path.read_text(encoding="utf-8").splitlines():
        qid, _, docno, grade = line.split()
        out[qid][docno] = int(grade)
    return out


def best_ranks(runs: Path) -> dict[str, dict[str, int]]:
    """qid -> docno -> its best rank over the runs."""
    out: dict[str, dict[str, int]] = collections.defaultdict(dict)
    for run in runs.iterdir():
        for line in run.read_text(encoding="utf-8").splitlines():
            qid, _, docno, rank, *_ = line.split()
            out[qid][docno] = min(int(rank), out[qid].get(docno, 1 << 30))
    return out


@pytest.fixture(scope="module")
def pooled(tmp_path_factory) -> tuple[Path, Path]:
    """The same collection judged by default and by the options (mixed docnos, seed 36)."""
    size = ["--runs", "5", "--queries", "60", "--depth", "40", "--pool", "70", "--seed", "36",
            "--docnos", "mixed"]
    out = []
    for name, extra in (("default", []), ("pooled", ["--judged-per-query", "30", "--grades",
                                                       "0:0.55,1:0.3,2:0.1,3:0.05"])):
        folder = tmp_path_factory.mktemp(name)
        subprocess.run([sys.executable, str(SCRIPT), "--out", str(folder), *size, *extra],
                       check=True, capture_output=True)
        out.append(folder)
    return out[0], out[1]


def test_judging_options_leave_the_runs_as_they_were(pooled):
    default, judged = pooled
    assert files(default / "runs") == files(judged / "runs")
    assert (default / "qrels").read_bytes() != (judged / "qrels").read_bytes()


def test_each_query_has_the_documents_the_runs_rank_best_judged(pooled):
    """Depth pooling: N judged a query, and none left out ranks better than one judged."""
    _, judged = pooled
    qrels, best = judgments(judged / "qrels"), best_ranks(judged / "runs")
    assert len(qrels) == 60 and {len(d) for d in qrels.values()} == {30}
    for qid, docs in qrels.items():
        ranked = best.get(qid, {})
        worst_judged = max(ranked.get(d, 1 << 30) for d in docs)
        assert all(rank >= worst_judged for d, rank in ranked.items() if d not in docs), qid


def test_grades_are_spread_as_asked_within_each_query(pooled, make_collection):
    """Of 30 judged documents: 2 of grade 3 (5 %: 1.5, rounded to even), 3 of grade 2, 9
    of grade 1 and 16 of grade 0, in every query; and the higher grades go to documents the
    runs rank higher, on average (the assessor sees the latent relevance, with noise)."""
    _, judged = pooled
    qrels, best = judgments(judged / "qrels"), best_ranks(judged / "runs")
    ends = np.rint(np.cumsum(SHARES[::-1]) * 30).astype(int)
    expected = dict(zip((3, 2, 1, 0), np.diff(np.append(0, ends)).tolist()))
    assert expected == {3: 2, 2: 3, 1: 9, 0: 16}
    mean_rank = collections.defaultdict(list)
    for qid, docs in qrels.items():
        assert collections.Counter(docs.values()) == expected, qid
        for docno, grade in docs.items():
            mean_rank[grade].append(best[qid].get(docno, 100))
    means = [np.mean(mean_rank[g]) for g in (3, 2, 1, 0)]
    assert means == sorted(means), means


@pytest.mark.parametrize("text,error", [
    ("0:0.5,1:0.4", "sum to 1"), ("0:x", "could not convert"), ("1", "GRADE:SHARE"),
    ("0:1.2,1:-0.2", ">= 0")])
def test_bad_grades_are_refused(make_collection, text, error):
    with pytest.raises(ValueError, match=error):
        make_collection.parse_grades(text)


def test_grades_left_out_have_no_share(make_collection):
    assert make_collection.parse_grades("0:0.5,2:0.5") == (0.5, 0.0, 0.5)

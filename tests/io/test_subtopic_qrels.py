"""Subtopic qrels (contract §1): `qid subtopic docno grade`; 0/Q0 carry no subtopic; negative
grades are non-relevant; the overall grade is the largest over an item's lines."""
from __future__ import annotations

import gzip

import numpy as np
import pytest

from rpp_cli.io.qrels import read_subtopic_qrels

from ..conftest import PAPER, rpp
from .test_readers import one_error_line

TEXT = """q1 1 a 1
q1 1 a 0
q1 2 b 2
q1 0 c 3
q1 Q0 d 1
q1 2 e -2
# a comment
q1 x f 1

q2 1 g 0
"""


def test_subtopics_overall_grades_and_counts(tmp_path):
    (tmp_path / "s").write_text(TEXT)
    sq = read_subtopic_qrels(str(tmp_path / "s"))
    assert sq.relevant_docs == {"q1": {"1": ["a"], "2": ["b"], "x": ["f"]}}
    assert sq.relevant("q2") == {} and sq.relevant("q9") == {}
    overall = sq.overall
    judgments: dict = {}
    for j in range(len(overall.grade)):
        judgments.setdefault(overall.qids[overall.qid[j]], {})[overall.docno.text(j)] = \
            overall.grade[j]
    assert judgments == {"q1": {"a": 1, "b": 2, "c": 3, "d": 1, "e": -2, "f": 1}, "q2": {"g": 0}}
    relevant_to_a_subtopic = {overall.docno.text(j) for j in np.flatnonzero(sq.subtopic_relevant)}
    assert relevant_to_a_subtopic == {"a", "b", "f"}
    assert sq.first_line == {"q1": 1, "q2": 10}
    assert (sq.negative, sq.no_subtopic_relevant) == (1, 2)


def test_gzip_and_only_relevant_rows(tmp_path):
    with gzip.open(tmp_path / "s.gz", "wt") as f:
        f.write("7 3 a 1\n7 1 b 1\n")
    sq = read_subtopic_qrels(str(tmp_path / "s.gz"))
    assert sq.relevant("7") == {"1": ["b"], "3": ["a"]}


def test_bad_subtopic_qrels_are_one_line_errors(tmp_path):
    run = PAPER / "run.X"
    (tmp_path / "three").write_text("q1 1 a 1\nq1 1 b\n")
    one_error_line(rpp("eval", "--subtopics", tmp_path / "three", PAPER / "qrels", run),
                   r".*/three:2: expected 4 fields \(subtopic qrels: qid subtopic docno grade\)"
                   r", found 3")
    (tmp_path / "grade").write_text("q1 1 a 1\nq1 1 b high\n")
    one_error_line(rpp("eval", "--subtopics", tmp_path / "grade", PAPER / "qrels", run),
                   r".*/grade:2: grade 'high' is not a finite number")
    (tmp_path / "empty").write_text("\n")
    one_error_line(rpp("eval", "--subtopics", tmp_path / "empty", PAPER / "qrels", run),
                   r".*/empty: empty file: no subtopic qrels.*")
    one_error_line(rpp("eval", "--subtopics", tmp_path / "nope", PAPER / "qrels", run),
                   r".*/nope: no such file")


def _relevant_docs_by_lines(path: str, ndeval: bool) -> dict:
    """The reference: a literal pass over the lines, as rpp read them before (a set of docnos
    per qid and subtopic, in first-line order, docnos sorted by their bytes)."""
    out: dict = {}
    for raw in open(path, "rb").read().splitlines():
        fields = raw.split()
        if not fields or fields[0].startswith(b"#"):
            continue
        qid, sub, doc, grade = (f.decode("utf-8", "surrogateescape") for f in fields)
        if float(grade) <= 0 or (str(int(sub)) == "0" if ndeval else sub in ("0", "Q0")):
            continue
        name = str(int(sub)) if ndeval else sub
        out.setdefault(qid, {}).setdefault(name, set()).add(doc)
    return {q: {s: sorted(d, key=lambda t: t.encode("utf-8", "surrogateescape"))
                for s, d in subs.items()} for q, subs in out.items()}


@pytest.mark.parametrize("seed", range(40))
def test_relevant_docs_equal_a_pass_over_the_lines(tmp_path, seed):
    """Subtopic qrels' relevant docnos, grouped by codes and one sort, equal a literal pass
    over the lines: string qids (106_1), subtopics 01 and 1 (two for rpp, one for ndeval),
    docnos of 1-60 bytes with shared prefixes, UTF-8 and a byte that is not UTF-8, repeated
    lines, zero and negative grades, insertion orders of qids and subtopics kept."""
    rng = np.random.default_rng(seed)
    qids = [f"10{k}_{j}" for k in range(3) for j in range(1, 3)]
    docs = [b"clueweb12-0000wb-00-%05d" % k for k in range(8)] + \
        [b"d", "Zürich_\u6771".encode(), b"caf\xe9", b"x" * 60, b"|%"]
    subs = [b"1", b"01", b"2", b"10", b"3"]
    lines = []
    for _ in range(int(rng.integers(1, 80))):
        lines.append(b"%s %s %s %d" % (qids[rng.integers(len(qids))].encode(),
                                        subs[rng.integers(len(subs))],
                                        docs[rng.integers(len(docs))],
                                        rng.integers(-1, 4)))
    path = tmp_path / "sq"
    path.write_bytes(b"\n".join(lines) + b"\nq9 0 dz 1\n")
    for ndeval in (False, True):
        got = read_subtopic_qrels(str(path), ndeval=ndeval).relevant_docs
        want = _relevant_docs_by_lines(str(path), ndeval)
        assert got == want and list(got) == list(want)
        assert all(list(got[q]) == list(want[q]) for q in want)

"""Subtopic qrels (contract §1): `qid subtopic docno grade`; 0/Q0 carry no subtopic; negative
grades are non-relevant; the overall grade is the largest over an item's lines."""
from __future__ import annotations

import gzip

import numpy as np

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

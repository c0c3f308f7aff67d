"""The notes on the runs read: one note per kind, naming every run it concerns, with exact
judged shares and advice a user of a fixed test collection can follow."""
from __future__ import annotations

import pytest

from .conftest import rpp, write_qrels, write_run

QIDS = [f"{100 + q}_1" for q in range(13)] + ["2_10"]  # string qids, not in number order


def _docs(qid: str, judged: int, shown: int) -> list[str]:
    """A ranking of ``shown`` docnos of mixed lengths, the first ``judged`` of them judged."""
    return ([f"clueweb12-{qid}-{i:04d}" for i in range(judged)]
            + [f"x{i}-{qid}" for i in range(shown - judged)])


@pytest.fixture
def collection(tmp_path):
    """14 queries with 10 judged documents each (every other one relevant), and runs: `full`
    all judged; `edge` 5 of 10 judged on 13 queries and 4 of 9 on one (49.6 %, which a
    rounding to whole percents shows as 50 %); `low` 2 of 10 (20.0 %); `passages` none
    judged; `lacking` all judged, without two judged queries and with one the qrels lack."""
    q = write_qrels(tmp_path / "qrels", [(qid, f"clueweb12-{qid}-{i:04d}", i % 2)
                                         for qid in QIDS for i in range(10)])
    rankings = {
        "full": {qid: _docs(qid, 10, 10) for qid in QIDS},
        "edge": {qid: _docs(qid, 4, 9) if qid == "2_10" else _docs(qid, 5, 10)
                 for qid in QIDS},
        "low": {qid: _docs(qid, 2, 10) for qid in QIDS},
        "passages": {qid: [f"p{qid}#{i}" for i in range(10)] for qid in QIDS},
        "lacking": {**{qid: _docs(qid, 10, 10) for qid in QIDS[2:]}, "999_9": ["d1", "d2"]},
    }
    runs = [write_run(tmp_path / name, ranking, name) for name, ranking in rankings.items()]
    return q, runs


def notes(err: str) -> list[str]:
    """The note lines of stderr."""
    return [line for line in err.splitlines() if line.startswith("rpp: note: ")]


EXPECTED = [
    "rpp: note: nothing retrieved is judged, so the run scores 0: passages; check that the "
    "runs and the qrels use the same document ids (documents or passages?)",
    "rpp: note: under half of the top 10 judged (mean over queries): edge 49.6%, low 20.0%; "
    "unjudged documents count as non-relevant, so these scores are likely too low: read "
    "-m Judged@10 (per query with -q), -m bpref (which ignores unjudged documents), or cut the "
    "rankings to the judged depth with -M",
    "rpp: note: queries not in the qrels, ignored: 1 of lacking",
    "rpp: note: judged queries not in the run, scored as empty rankings as trec_eval -c does: "
    "2 of lacking (100_1, 101_1); if they should not count, leave them out of the qrels",
]


@pytest.mark.parametrize("command", [("eval", "-m", "map"), ("compare", "-m", "map"),
                                     ("meta", "--analysis", "agreement", "-m", "map")])
def test_one_note_per_kind_names_every_run(collection, command):
    q, runs = collection
    res = rpp(*command, q, *runs)
    assert res.code == 0, res.err
    assert notes(res.err) == EXPECTED


def test_the_judged_share_agrees_with_judged_at_10(collection):
    """The share the note prints is the mean of Judged@10 over the run's queries."""
    q, runs = collection
    res = rpp("eval", "-m", "Judged@10", "--precision", "6", q, runs[1], runs[2])
    shares = {line.split("\t")[2]: float(line.split("\t")[-1])
              for line in res.out.splitlines() if "\tall\t" in line}
    assert shares == {"edge": pytest.approx((13 * 0.5 + 4 / 9) / 14, abs=1e-6),
                      "low": pytest.approx(0.2, abs=1e-6)}
    assert f"edge {shares['edge']:.1%}" in res.err and "low 20.0%" in res.err

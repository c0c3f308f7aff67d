"""Grades reach pytrec_eval as compact levels (cost set by the number of distinct grades, not
their size) and every trec_eval value stays what pytrec_eval gives on the grades themselves;
gain pairs work for every run of a command."""
from __future__ import annotations

import numpy as np
import pytest
import pytrec_eval_ext

from rpp_cli.errors import InputError
from rpp_cli.measures import trec_table
from rpp_cli.measures.pytrec_adapter import COMPACT_ABOVE, Compaction, Evaluator, evaluate
from rpp_cli.measures.trec_names import TrecRequest

from ..realistic import generate

# every numeric trec_eval measure that reads grades only through levels and gains (ndcg_cut
# takes the level number itself as gain: refused above COMPACT_ABOVE, tested below)
# (pytrec_eval's: 9.0.8's measures; 10.0's additions are rpp's own, tested against the binary)
MEASURES = [m for m in trec_table.ORDER if m not in trec_table.TEXT_MEASURES | {"ndcg_cut"}
            and trec_table.TABLE[m].in_release("9.0.8")]
FLOOR = "never-retrieved-floor"  # see test_compacted_values_equal_pytrec_eval_on_the_grades
# whole gains: fractional ones are refused with compacted grades (see test_compaction_gains_by_hand)
GAINS = ["ndcg.1007=2,3007=-3", "G.2007=-1,5=4", "ndcg_rel.0=1,1007=9",
         "Rndcg.3007=7,99999=1"]


def test_compaction_by_hand():
    """Grades 0 1 5 -3 stay; 300 < 2147483647 become 256, 257 (COMPACT_ABOVE = 255)."""
    c = Compaction.of(np.array([0, 1, 300, 5, 2147483647, 300, -3]))
    assert COMPACT_ABOVE == 255 and c.high.tolist() == [300, 2147483647]
    assert c.levels(np.array([0, 1, 300, 5, 2147483647, 300, -3])).tolist() == [
        0, 1, 256, 5, 257, 256, -3]
    # -l L: the level of the least grade >= L (none: past every level)
    assert [c.relevance_level(x) for x in (1, 255, 256, 300, 301, 2147483647)] == [
        1, 255, 256, 256, 257, 257]
    assert c.relevance_level(1 << 31) == 258


def test_compaction_gains_by_hand():
    """Moved levels carry their grade as gain unless the user gave one; pairs for grades the
    qrels lack are dropped (they cannot apply), small levels pass as written."""
    c = Compaction.of(np.array([0, 1, 300, 2147483647]))
    assert c.request(TrecRequest("ndcg")).spec == "ndcg.256=300,257=2147483647"
    assert c.request(TrecRequest("G", "1=3,300=9,999=4")).spec == "G.1=3,256=9,257=2147483647"
    assert c.request(TrecRequest("map")) == TrecRequest("map")
    with pytest.raises(InputError, match="ndcg_cut.10' takes each grade as its gain"):
        c.request(TrecRequest("ndcg_cut", "10"))
    small = Compaction.of(np.array([0, 1, 2, 255]))
    assert small.request(TrecRequest("ndcg_cut", "10")) == TrecRequest("ndcg_cut", "10")
    # trec_eval sorts gains by their difference cast to an int: 2.5 and level 2's gain 2
    # compare equal, and the order then depends on levels the compaction leaves out
    with pytest.raises(InputError, match="gain 2.5 is not a whole number"):
        c.request(TrecRequest("ndcg", "1=3,300=2.5"))
    assert small.request(TrecRequest("ndcg", "1=2.5")) == TrecRequest("ndcg", "1=2.5")


def _scaled(seed: int) -> tuple[dict, list[dict]]:
    """A realistic collection's evaluated queries with grades g > 0 made g * 1000 + 7
    (1007, 2007, 3007: past COMPACT_ABOVE, so every relevant grade moves)."""
    coll = generate(seed)
    qids = coll.evaluated
    qrels = {q: {d: g * 1000 + 7 if g > 0 else g for d, g in coll.qrels[q].items()}
             for q in qids}
    runs = [{q: {d: float(s) for d, s in run[q]} for q in qids if run.get(q)}
            for run in coll.runs]
    return qrels, runs


@pytest.mark.slow
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", [1, 2007, 3007, 3008])
def test_compacted_values_equal_pytrec_eval_on_the_grades(seed, level):
    """Differential: pytrec_eval on the grades themselves (levels up to 3007) vs rpp's
    evaluator on compact levels, every measure and gain pairs, bit for bit. (pytrec_eval's
    extension itself: its Python wrapper rewrites gain pairs as cutoffs.)"""
    qrels, runs = _scaled(seed)
    # trec_eval's bpref and gm_bpref sum the judgments of grades 0 .. level - 1 from a table
    # sized by the query's largest grade: past it they read what lies beyond (the sum is then
    # unused, but reading 24 KB past a small block can fault, as the suite saw once in a few
    # dozen runs). Every query gets one unretrieved judgment of grade level - 1, on both sides.
    assert not any(FLOOR in ranking for run in runs for ranking in run.values())
    for docs in qrels.values():
        docs[FLOOR] = level - 1
    grades = np.array([g for docs in qrels.values() for g in docs.values()], dtype=np.int64)
    compaction = Compaction.of(grades)
    assert len(compaction.high)  # the test compacts
    levels = {q: dict(zip(docs, compaction.levels(np.array(list(docs.values()))).tolist()))
              for q, docs in qrels.items()}
    plain = [TrecRequest(m) for m in MEASURES]
    for requests in [plain] + [[TrecRequest(*g.split(".", 1))] for g in GAINS]:
        specs = {r.spec for r in requests}
        for run in filter(None, runs):
            got = evaluate(levels, run, requests, level, compaction=compaction,
                           release="9.0.8")  # all through pytrec_eval, as the reference
            want = pytrec_eval_ext.RelevanceEvaluator(qrels, specs, level).evaluate(run)
            for q in run:
                for req in requests:
                    names = req.output_names()
                    raw = [req.base] if req.base in trec_table.PAIR_PARAMS else names
                    assert [got[q][n] for n in names] == [want[q][n] for n in raw], (
                        req.spec, q, level)


def test_gain_pairs_evaluate_every_run():
    """pytrec_eval spends gain pairs on its first evaluation (a second one segfaulted):
    the same evaluator gives every run the value it gets alone, run after run."""
    qrels, runs = _scaled(3)
    requests = [TrecRequest(*g.split(".", 1)) for g in GAINS]
    compaction = Compaction.of(np.array([g for d in qrels.values() for g in d.values()]))
    levels = {q: dict(zip(docs, compaction.levels(np.array(list(docs.values()))).tolist()))
              for q, docs in qrels.items()}
    evaluator = Evaluator(levels, requests, compaction=compaction)
    together = [evaluator.evaluate(run) for run in runs * 2]
    alone = [evaluate(levels, run, requests, compaction=compaction) for run in runs * 2]
    assert together == alone and any(together)

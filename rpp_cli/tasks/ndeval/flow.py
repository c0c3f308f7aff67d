"""``rpp ndeval``'s flow: the TREC Web track's ndeval (v4.5) for one run, as a drop-in.

ndeval's rules for what is evaluated: a topic's ranking follows the rank column (by score,
then docno descending, with ``-traditional``), ``-M N`` keeps each topic's first N items,
topics are numbers (a run may write ``wt12-151``), a topic of the run missing from the qrels
is printed as zeros but left out of the mean, and the mean divides by the topics of the run
found in the qrels (by all topics of the qrels with ``-c``). The values come from
:mod:`rpp_cli.measures.diversity`; docs/drop-ins.md lists where rpp deliberately differs.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...aggregate import add_metric
from ...core import Column, Dictionary, column_of, first_seen, group_positions, rank_rows
from ...errors import InputError
from ...io.identity import check_inputs
from ...io.qrels import NDEVAL_LARGEST, SubtopicQrels, natural_numbers, read_subtopic_qrels
from ...io.runs import Run, read_run
from ...measures.diversity import NAMES, Judgments, Listed, Scorer, undefined_note
from ...populations import encode_subtopics, relevant_docnos
from ...results import Results
from ...settings import Options
from .. import Outcome




@dataclass(frozen=True)
class NdevalOptions:
    """ndeval's options: -alpha, -beta, -traditional, -M, -c."""

    alpha: float = 0.5
    beta: float = 0.5
    traditional: bool = False
    max_docs: int | None = None
    all_topics: bool = False


def run(qrels: str, runs: str, request: NdevalOptions, options: Options | None = None
        ) -> Outcome:
    """ndeval's 21 values per topic of the one run ``runs`` and their ``amean`` (as the
    ``all`` rows). ``options`` is not read: a drop-in reads as ndeval does, with none of
    rpp's input options."""
    notes: list[str] = []
    check_inputs([qrels, runs])
    sq = read_subtopic_qrels(qrels, ndeval=True)
    qids = _qrels_topics(sq)
    _note_grades(sq, notes)
    scorer, item_query, item_docno = _scorer(sq, qids, request)

    retrieved = read_run(runs, keep_rank=True)
    if retrieved.untagged is not None:
        raise InputError("expected 6 fields, the last the run tag (ndeval's syntax)",
                         retrieved.path, retrieved.line(retrieved.untagged))
    # ndeval's runid: the run's tag as it is (CSV-quoted), as rpp trec-eval's
    names = [retrieved.tag]
    topic = _run_topics(retrieved)
    rows, pos = _ranking(retrieved, topic, request)
    run_topics = np.unique(topic[rows])
    number = np.array([int(q) for q in qids], dtype=np.int64)
    qidx = np.full(len(run_topics), -1, dtype=np.int64)
    found = np.isin(run_topics, number)
    qidx[found] = np.searchsorted(number, run_topics[found])  # qids are in numeric order
    if not found.any():
        raise InputError(f"shares no topic with the qrels ({qrels})", path=runs)
    row_q = qidx[np.searchsorted(run_topics, topic[rows])]
    item = _match_items(row_q, retrieved.docno.take(rows), item_query, item_docno)
    hit = item >= 0
    values = scorer.evaluate(Listed(row_q[hit], pos[hit], item[hit]))
    printed = np.zeros((len(run_topics), len(NAMES)))
    printed[found] = values[qidx[found]]
    total = np.cumsum(printed, axis=0)[-1]  # in topic order, as ndeval adds them
    amean = total / (len(qids) if request.all_topics else int(found.sum()))

    undefined = int(scorer.undefined[qidx[found]].sum())
    if undefined:
        notes.append(undefined_note(_count(undefined, "topic")))
    if not found.all():
        notes.append(f"{_count(int((~found).sum()), 'topic')} of the run not in the qrels: "
                     "printed as zeros and left out of amean, as ndeval does")
    results = Results([str(t) for t in run_topics.tolist()], names, list(NAMES))
    for k, name in enumerate(NAMES):
        add_metric(results, name, printed[:, [k]], True, amean[[k]])
    return Outcome(results, notes)


def _scorer(sq: SubtopicQrels, qids: list[str], request: NdevalOptions
            ) -> tuple[Scorer, np.ndarray, list[str]]:
    """The scorer of the qrels' judgments at ``request``'s alpha and beta, and its items: the
    query index and the docno of each item relevant to a subtopic, query by query."""
    item_query, item_docno = [], []
    for qi, qid in enumerate(qids):
        docs = sorted(relevant_docnos(sq, qid))
        item_query += [qi] * len(docs)
        item_docno += docs
    item_query_a = np.array(item_query, dtype=np.int64)
    index = encode_subtopics(sq, qids, item_query_a, item_docno)
    scorer = Scorer.prepare(Judgments.from_index(index, item_query_a, item_docno),
                            request.alpha, request.beta)
    return scorer, item_query_a, item_docno


def _qrels_topics(sq: SubtopicQrels) -> list[str]:
    """The qrels' topics in numeric order; ndeval's topics are natural numbers."""
    seen: dict[int, str] = {}
    for qid, line in sorted(sq.first_line.items(), key=lambda item: item[1]):
        if not (qid.isascii() and qid.isdigit() and int(qid) <= NDEVAL_LARGEST):
            raise InputError(f"topic '{qid}' is not a number (ndeval's topics are numbers)",
                             sq.path, line)
        if int(qid) in seen:
            raise InputError(f"topics '{seen[int(qid)]}' and '{qid}' are the same number",
                             sq.path, line)
        seen[int(qid)] = qid
    return [seen[n] for n in sorted(seen)]


def _note_grades(sq: SubtopicQrels, notes: list[str]) -> None:
    """Say where rpp reads the qrels differently from ndeval."""
    if sq.negative:
        notes.append(f"{sq.path}: {_count(sq.negative, 'negative grade')} read as "
                     "non-relevant (ndeval rejects them)")
    if sq.no_subtopic_relevant:
        notes.append(f"{sq.path}: subtopic 0 is no subtopic (ndeval counts it as one): "
                     f"{_count(sq.no_subtopic_relevant, 'relevant judgment')} not used")


def _count(n: int, what: str) -> str:
    """``n`` and ``what``, plural unless n is 1."""
    return f"{n} {what}{'' if n == 1 else 's'}"


def _topic_number(token: str) -> int | None:
    """ndeval's run topic: a number, or a number after the first '-' (``wt12-151``)."""
    digits = token if token[:1].isdigit() else token.partition("-")[2]
    ok = digits.isascii() and digits.isdigit() and int(digits) <= NDEVAL_LARGEST
    return int(digits) if ok else None


def _run_topics(run: Run) -> np.ndarray:
    """(rows,) topic number of each run row; a topic that is not one is an InputError."""
    numbers = []
    for code, token in enumerate(run.qid_values):
        text = token.decode("utf-8", "replace")
        number = _topic_number(text)
        if number is None:
            row = int(np.argmax(run.qid_codes == code))
            raise InputError(f"topic '{text}' is not a number or prefix-number such as "
                             "wt12-151 (ndeval's topics)", run.path, run.line(row))
        numbers.append(number)
    return np.array(numbers, dtype=np.int64)[run.qid_codes]


def _ranking(run: Run, topic: np.ndarray, opts: NdevalOptions) -> tuple[np.ndarray, np.ndarray]:
    """Rows of each topic's ranking (topics ascending) and their 0-based positions, after
    -M; ties of rank and repeated docnos among the kept rows are InputErrors."""
    topics, dense = np.unique(topic, return_inverse=True)
    dense = dense.ravel()
    # -traditional too: ndeval reads the rank first
    rank = natural_numbers(run.rank, "rank", run.path, run.line)
    if opts.traditional:
        order = rank_rows(run.docno, dense, run.score, len(topics))
    else:
        order = np.lexsort((rank, topic))
        _repeated_rank(run, order, topic, rank)
    t = topic[order]
    pos = group_positions(t)
    keep = pos < opts.max_docs if opts.max_docs else np.ones(len(t), dtype=bool)
    rows = order[keep]
    _repeated_docno(run, np.sort(rows), topic, dense)
    return rows, pos[keep]


def _repeated_rank(run: Run, order: np.ndarray, topic: np.ndarray, rank: np.ndarray) -> None:
    """InputError at the later line of the first rank repeated in a topic; ``order`` sorts
    rows so that repeats are adjacent (in file order among equals)."""
    t, value = topic[order], rank[order]
    same = np.flatnonzero((t[1:] == t[:-1]) & (value[1:] == value[:-1]))
    if len(same) == 0:
        return
    late = order[same + 1]
    i = int(np.argmin(late))  # the repeat that completes first in the file
    _repeat_error(run, "rank", int(value[same[i]]), int(t[same[i]]), int(order[same[i]]),
                  int(late[i]))


def _repeated_docno(run: Run, rows: np.ndarray, topic: np.ndarray, dense: np.ndarray) -> None:
    """InputError at the first line (of ``rows``, in file order) repeating a docno of its
    topic."""
    codes = Dictionary(int(dense.max(initial=0)) + 1).add(run.docno.take(rows), dense[rows])
    first = first_seen(codes)
    if first.all():
        return
    late = int(np.argmin(first))
    early = int(np.argmax(codes == codes[late]))
    _repeat_error(run, "docno", run.docno.text(int(rows[late])), int(topic[rows[late]]),
                  int(rows[early]), int(rows[late]))


def _repeat_error(run: Run, what: str, shown: int | str, topic: int, early: int, late: int
                  ) -> None:
    """InputError at line ``late`` repeating ``what`` ``shown`` of line ``early``."""
    raise InputError(f"{what} {shown} repeated in topic {topic} (first at line "
                     f"{run.line(early)})", run.path, run.line(late))


def _match_items(row_query: np.ndarray, docnos: Column, item_query: np.ndarray,
                 item_docno: list[str]) -> np.ndarray:
    """Item index of each (query index, docno) row, -1 when it is no relevant item."""
    items = Dictionary(int(item_query.max(initial=0)) + 1)
    items.add(column_of([d.encode("utf-8", "surrogateescape") for d in item_docno]), item_query)
    items.freeze()
    out = items.find(docnos, row_query)
    out[row_query < 0] = -1
    return out

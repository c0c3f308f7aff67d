"""``rpp trec-eval``'s flow: trec_eval 9.0.8 on one run, line for line, with pytrec_eval's
numbers.

read -> rank as trec_eval does (C-float score desc, docno desc; -M; duplicate checks; -J) ->
pytrec_eval per query -> trec_eval's aggregation (-c) -> one Results table, plus the two text
values pytrec_eval cannot give (runid, relstring) for the report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import Dictionary, nested_dicts, rank_rows
from ...errors import (TREC_EVAL_CANNOT_CALCULATE, TREC_EVAL_NO_QUERIES, TREC_EVAL_USAGE,
                        InputError)
from ...io.identity import check_inputs
from ...io.qrels import sort_qids, to_text
from ...measures import pytrec_adapter, trec, trec_names, trec_table
from ...results import ALL, Results
from ...settings import Options
from .. import Outcome
from .reader import (Judgments, Retrieved, read_judgments,
                     read_retrieved)

# trec_eval's documented exit codes (bad files and parameters: 2, InputError's default)

# trec_eval measures that read preference judgments (-R prefs / qrels_jg), not qrels
PREFS_NICKNAMES = {"all_prefs", "prefs", "qrels_jg"}
PREFS_MEASURES = {"yaap", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"}

# relevance of a retrieved doc, as trec_eval's form_res_rels codes it (grades are >= 0)
NONPOOL = -1  # not in the qrels
UNJUDGED = -2  # in the qrels with a negative grade


@dataclass(frozen=True)
class TrecEvalOptions:
    """trec_eval's command-line switches."""

    measures: tuple[str, ...] = ()  # -m (none: official)
    per_query: bool = False  # -q
    summary: bool = True  # not -n
    complete: bool = False  # -c
    level: int = 1  # -l
    max_retrieved: int | None = None  # -M
    judged_only: bool = False  # -J
    num_docs_in_coll: int = 0  # -N


@dataclass(frozen=True)
class TrecEvalOutput:
    """What trec_eval prints: numbers in ``results``; runid/relstring text by (measure, qid)."""

    results: Results
    texts: dict[tuple[str, str], str]


@dataclass(frozen=True)
class Ranked:
    """The evaluated queries' rankings as trec_eval builds them, and their judgments; every
    (query, docno) as an exact integer code."""

    qids: list[str]  # queries with results and judgments, strcmp order
    bounds: np.ndarray  # (Q + 1,) the rows of query q are bounds[q]:bounds[q + 1]
    doc: np.ndarray  # code of each ranked row (C-float score desc, docno desc, top -M)
    rel: np.ndarray  # int64 grade of each ranked row, or NONPOOL / UNJUDGED
    judged_bounds: np.ndarray  # (Q + 1,) the judgments of query q, as bounds above
    judged_doc: np.ndarray  # code of each judgment
    judged_grade: np.ndarray  # its grade
    docs: Dictionary  # the codes' (query, docno)


def run(qrels: str, runs: str, request: TrecEvalOptions, options: Options | None = None
        ) -> Outcome:
    """trec_eval's flow and error order on the one run ``runs``: measure names, files,
    parameters, evaluation. The notes say where rpp reads the files otherwise than trec_eval
    (a grade written 1e3); ``extras["texts"]``: the runid and relstring values by (measure,
    qid) (see :class:`TrecEvalOutput`). ``options`` is not read: a drop-in reads as trec_eval
    does, with none of rpp's input options."""
    requests = parse_measures(request.measures)
    if request.level < 1:
        raise InputError(f"-l {request.level}: relevance levels below 1 are not supported "
                         "(pytrec_eval needs a positive level)", exit_code=TREC_EVAL_USAGE)
    check_inputs([qrels, runs])
    notes: list[str] = []
    judgments = read_judgments(qrels, notes)
    retrieved = read_retrieved(runs)
    for req in requests:
        trec_names.validate(req)
    ranked = rank(judgments, retrieved, request.max_retrieved, qrels, runs)
    qrels_dicts, run_dicts, compaction = pytrec_eval_input(ranked)
    per_query = pytrec_adapter.evaluate(qrels_dicts, run_dicts, requests, request.level,
                              request.judged_only, request.num_docs_in_coll, compaction)
    n_complete = len(judgments.qids) if request.complete else None
    num_rel_all = trec.complete_num_rel(judgments.grade)  # -c's num_rel: every qrels line
    output = tabulate(requests, ranked, per_query, request, retrieved.runid, n_complete,
                      num_rel_all)
    return Outcome(output.results, notes, {"texts": output.texts})


def parse_measures(names: tuple[str, ...]) -> list[trec_names.TrecRequest]:
    """``-m`` as trec_eval reads it (default ``official``), in trec_eval's output order."""
    for name in names:
        if any(0xDC80 <= ord(c) <= 0xDCFF for c in name):  # pytrec_eval crashes on them
            raise InputError(f"measure '{name}': a byte that is not UTF-8 (trec_eval reads "
                             "it; pytrec_eval, which computes rpp trec-eval, cannot)",
                             exit_code=TREC_EVAL_USAGE)
        base = name.split(".", 1)[0]
        if base in PREFS_NICKNAMES or base in PREFS_MEASURES or base.startswith("prefs_"):
            raise InputError(f"measure '{name}' needs trec_eval's preference judgments "
                             "(-R prefs/qrels_jg), which rpp trec-eval does not read",
                             exit_code=TREC_EVAL_USAGE)
    try:
        requests = trec_names.parse(list(names) or ["official"], allow_underscore=False, check=False)
    except InputError as err:
        err.exit_code = TREC_EVAL_USAGE  # trec_eval: illegal measure, exit 1
        raise
    return sorted(requests, key=lambda r: trec_table.ORDER.index(r.base))


def rank(judgments: Judgments, retrieved: Retrieved, max_retrieved: int | None,
         qrels_path: str, run_path: str) -> Ranked:
    """The rankings of the queries with both results and judgments, as trec_eval's
    form_res_rels builds them; duplicate docnos there are errors (exit 4)."""
    evaluated = sort_qids(set(judgments.qids) & set(retrieved.qids))
    if not evaluated:
        raise InputError("no query has both results and judgments", run_path,
                         exit_code=TREC_EVAL_NO_QUERIES)
    qpos = {q: i for i, q in enumerate(evaluated)}
    r_all = np.array([qpos.get(q, -1) for q in retrieved.qids], dtype=np.int64)[retrieved.qid]
    j_all = np.array([qpos.get(q, -1) for q in judgments.qids], dtype=np.int64)[judgments.qid]
    r_rows, j_rows = np.flatnonzero(r_all >= 0), np.flatnonzero(j_all >= 0)
    r_query, j_query = r_all[r_rows], j_all[j_rows]
    j_grade = judgments.grade[j_rows]
    _check_grades(evaluated, j_query, j_grade, qrels_path)
    r_docno = retrieved.docno.take(r_rows)
    order = rank_rows(r_docno, r_query, retrieved.score[r_rows].astype(np.float64), len(qpos))
    bounds = np.searchsorted(r_query[order], np.arange(len(evaluated) + 1))
    if max_retrieved is not None:
        position = np.arange(len(order)) - bounds[r_query[order]]
        order = order[position < max_retrieved]
        bounds = np.searchsorted(r_query[order], np.arange(len(evaluated) + 1))
    docs = Dictionary(len(evaluated))  # (query, docno) -> code
    r_doc = docs.add(r_docno.take(order), r_query[order])
    j_doc = docs.add(judgments.docno.take(j_rows), j_query)
    _check_duplicates(docs, (r_doc, r_query[order], r_rows[order], retrieved, run_path),
                      (j_doc, j_query, j_rows, judgments, qrels_path), evaluated=evaluated)
    grade_of = np.full(len(docs), NONPOOL, dtype=np.int64)
    grade_of[j_doc] = np.where(j_grade >= 0, j_grade, UNJUDGED)
    j_sorted = np.argsort(j_query, kind="stable")
    j_bounds = np.searchsorted(j_query[j_sorted], np.arange(len(evaluated) + 1))
    return Ranked(evaluated, bounds, r_doc, grade_of[r_doc], j_bounds, j_doc[j_sorted],
                  j_grade[j_sorted], docs)


def _check_duplicates(docs: Dictionary, *sides: tuple, evaluated: list[str]) -> None:
    """trec_eval's order: the first query (strcmp) with a repeated docno, the run before the
    qrels within a query, the smallest such docno (strcmp); the line named is the later line
    of its first repeat. ``sides``: (codes, queries, file rows, lines, path) of run, qrels."""
    repeats = []
    for which, (codes, query, rows, lines, path) in enumerate(sides):
        _, inverse, counts = np.unique(codes, return_inverse=True, return_counts=True)
        dup = np.flatnonzero(counts[inverse] > 1)
        if len(dup) == 0:
            continue
        q = int(query[dup].min())
        dup = dup[query[dup] == q]
        candidates = np.unique(codes[dup])
        doc, code = min(zip(docs.strings(candidates), candidates.tolist()))
        line = sorted(lines.line(int(r)) for r in rows[codes == code])[1]
        repeats.append((q, which, doc, line, path))
    if repeats:
        query, _, doc, line, path = min(repeats)
        raise InputError(f"docno '{to_text(doc)}' appears twice for query '{evaluated[query]}'",
                         path, line, exit_code=TREC_EVAL_CANNOT_CALCULATE)


def _check_grades(evaluated: list[str], query: np.ndarray, grade: np.ndarray,
                  qrels_path: str) -> None:
    """trec_eval sizes a buffer by a query's top grade + 1: with only negative grades it fails
    on the first query (exit 4) and crashes on later ones below -1. Refuse both (exit 4)."""
    top = np.full(len(evaluated), np.iinfo(np.int64).min)
    np.maximum.at(top, query, grade)
    bad = np.flatnonzero(top <= -2)
    if top[0] < 0:
        bad = np.concatenate(([0], bad))
    if len(bad):
        raise InputError(f"query '{evaluated[int(bad[0])]}' has only negative grades: trec_eval "
                         "cannot evaluate it", qrels_path, exit_code=TREC_EVAL_CANNOT_CALCULATE)


def pytrec_eval_input(ranked: Ranked) -> tuple[dict[str, dict[str, int]],
                                                dict[str, dict[str, float]], pytrec_adapter.Compaction]:
    """Judgments and kept rankings as pytrec_eval wants them: queries named by index, docnos
    by their exact code, grades as compact levels, and each ranking given in trec_eval's order
    as scores -1, -2, ... (the same rankings and equalities whatever bytes the ids hold)."""
    names = [str(c) for c in range(len(ranked.docs))]
    qids = [str(q) for q in range(len(ranked.qids))]
    scores = pytrec_adapter.position_scores(pytrec_adapter.checked_depth(ranked.bounds))
    compaction = pytrec_adapter.Compaction.of(ranked.judged_grade)
    return (nested_dicts(qids, ranked.judged_bounds, names, ranked.judged_doc,
                         compaction.levels(ranked.judged_grade).tolist(), True),
            nested_dicts(qids, ranked.bounds, names, ranked.doc, scores), compaction)


def relstrings(ranked: Ranked, length: int | float, judged_only: bool) -> list[str]:
    """trec_eval's relstring per query: a char per ranked doc (grade digit, '>' above 9,
    '-' not judged, '.' negative grade), at most ``length`` of them."""
    chars = np.where(ranked.rel > 9, ord(">"), ord("0") + ranked.rel)
    chars = np.where(ranked.rel == NONPOOL, ord("-"), chars)
    chars = np.where(ranked.rel == UNJUDGED, ord("."), chars).astype(np.uint8)
    query = np.repeat(np.arange(len(ranked.qids)), np.diff(ranked.bounds))
    if judged_only:  # -J: only judged docs are ranked
        keep = ranked.rel >= 0
        chars, query = chars[keep], query[keep]
    bounds = np.searchsorted(query, np.arange(len(ranked.qids) + 1)).tolist()
    text = chars.tobytes().decode("ascii")
    # trec_eval's (long) of the parameter: toward zero, and x86's LONG_MIN (nothing) where it
    # overflows (1e19)
    most = int(length) if -2.0 ** 63 <= length < 2.0 ** 63 else 0
    return [text[lo:lo + max(0, min(most, hi - lo))] for lo, hi in zip(bounds[:-1], bounds[1:])]


def tabulate(requests: list[trec_names.TrecRequest], ranked: Ranked,
             per_query: dict[str, dict[str, float]], opts: TrecEvalOptions, runid: str,
             n_complete: int | None, num_rel_all: int) -> TrecEvalOutput:
    """The lines trec_eval prints, as Results rows in its order (per query, then ``all``)."""
    qids = ranked.qids
    every_query = np.arange(len(qids))
    results = Results(qids, [runid])
    texts: dict[tuple[str, str], str] = {}
    for req in requests:
        if req.base == "runid":
            if opts.summary:
                results.add("runid", -1, 0, [np.nan])
                texts[("runid", ALL)] = runid
            continue
        if req.base == "relstring":
            if opts.per_query:
                name = req.output_names()[0]
                length = 10 if req.params is None else trec_names.c_atof(req.params.split(",")[0])
                results.add(name, every_query, 0, np.full(len(qids), np.nan))
                texts.update(((name, q), s) for q, s in
                             zip(qids, relstrings(ranked, length, opts.judged_only)))
            continue
        for name in req.output_names():
            values = np.array([per_query[str(q)][name] for q in range(len(qids))])
            if opts.per_query and name not in trec_table.NOT_PER_QUERY:
                results.add(name, every_query, 0, values)
            if opts.summary:
                value = trec.aggregate(name, values, n_complete)
                if name == "num_rel" and n_complete is not None:
                    value = float(num_rel_all)  # trec_eval -c: every relevant qrels line
                results.add(name, -1, 0, [value])
    return TrecEvalOutput(results, texts)

"""``rpp trec-eval``'s flow: trec_eval 10.0 (or 9.0.8) on one run, line for line, with
pytrec_eval's numbers and rpp's for the measures 10.0 added or changed.

read -> rank as trec_eval does (score desc: 9.0.8 C floats, 10.0 doubles; docno desc; -M;
duplicate checks; -J;
10.0: the qrels' queries in order, a stand-in ranking for each one the run lacks under -c) ->
pytrec_eval and :mod:`~rpp_cli.measures.trec_computed` per query -> trec_eval's aggregation
(-c) -> one Results table, plus the two text values pytrec_eval cannot give (runid, relstring)
for the report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...core import Column, Dictionary, column_of, nested_dicts, rank_rows
from ...errors import (TREC_EVAL_CANNOT_CALCULATE, TREC_EVAL_NO_QUERIES, TREC_EVAL_USAGE,
                        InputError)
from ...io.identity import check_inputs
from ...io.qrels import sort_qids, to_text
from ...measures import pytrec_adapter, trec, trec_computed, trec_names, trec_table
from ...measures.trec_computed import NONPOOL, UNJUDGED
from ...results import ALL, Results
from ...settings import LATEST_TREC_EVAL, Options
from .. import Outcome
from .reader import (Judgments, Retrieved, read_judgments,
                     read_retrieved)

# trec_eval's documented exit codes (bad files and parameters: 2, InputError's default)

# trec_eval measures that read preference judgments (-R prefs / qrels_jg), not qrels
PREFS_NICKNAMES = {"all_prefs", "prefs", "qrels_jg"}
PREFS_MEASURES = {"yaap", "map_avgjg", "P_avgjg", "Rprec_mult_avgjg"}


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
    release: str = LATEST_TREC_EVAL  # --compat: the trec_eval release followed


@dataclass(frozen=True)
class TrecEvalOutput:
    """What trec_eval prints: numbers in ``results``; runid/relstring text by (measure, qid)."""

    results: Results
    texts: dict[tuple[str, str], str]


@dataclass(frozen=True)
class Ranked:
    """The evaluated queries' rankings as trec_eval builds them, and their judgments; every
    (query, docno) as an exact integer code."""

    qids: list[str]  # the queries evaluated, strcmp order
    bounds: np.ndarray  # (Q + 1,) the rows of query q are bounds[q]:bounds[q + 1]
    doc: np.ndarray  # code of each ranked row (score desc, docno desc, top -M)
    rel: np.ndarray  # int64 grade of each ranked row, or NONPOOL / UNJUDGED
    judged_bounds: np.ndarray  # (Q + 1,) the judgments of query q, as bounds above
    judged_doc: np.ndarray  # code of each judgment
    judged_grade: np.ndarray  # its grade
    docs: Dictionary  # the codes' (query, docno)
    stand_in: np.ndarray  # (Q,) bool: the run lacks the query (10.0 -c: a stand-in ranking)
    stop: str | None = None  # 10.0 without -c: the first qrels query the run lacks


def run(qrels: str, runs: str, request: TrecEvalOptions, options: Options | None = None
        ) -> Outcome:
    """trec_eval's flow and error order on the one run ``runs``: measure names, files,
    parameters, evaluation. The notes say where rpp reads the files otherwise than trec_eval
    (a grade written 1e3); ``extras["texts"]``: the runid and relstring values by (measure,
    qid) (see :class:`TrecEvalOutput`). ``options`` is not read: a drop-in reads as trec_eval
    does, with none of rpp's input options."""
    requests = parse_measures(request.measures, request.release)
    if request.level < 1:
        raise InputError(f"-l {request.level}: relevance levels below 1 are not supported "
                         "(pytrec_eval needs a positive level)", exit_code=TREC_EVAL_USAGE)
    check_inputs([qrels, runs])
    notes: list[str] = _rbp_note(requests)
    judgments = read_judgments(qrels, notes)
    retrieved = read_retrieved(runs, as_float=request.release == trec_table.OLDEST)
    for req in requests:
        trec_names.validate(req)
    ranked = rank(judgments, retrieved, request.max_retrieved, qrels, runs, request.release,
                  request.complete)
    qrels_dicts, run_dicts, compaction = pytrec_eval_input(ranked)
    per_query = pytrec_adapter.evaluate(qrels_dicts, run_dicts, requests, request.level,
                                        request.judged_only, request.num_docs_in_coll,
                                        compaction, request.release)
    own = [r for r in requests if not r.record.text and r.record.by_rpp(request.release)]
    if own:
        computed = trec_computed.evaluate(trec_computed.Rankings.of(
            ranked.bounds, ranked.rel, np.repeat(np.arange(len(ranked.qids)),
                                                 np.diff(ranked.judged_bounds)),
            ranked.judged_grade, request.level, request.judged_only), own, request.release)
        for q, values in per_query.items():
            values.update((n, float(v[int(q)])) for n, v in computed.items())
    n_complete = len(judgments.qids) if request.complete else None
    num_rel_all = trec.complete_num_rel(judgments.grade)  # -c's num_rel: every qrels line
    output = tabulate(requests, ranked, per_query, request, retrieved.runid, n_complete,
                      num_rel_all)
    stop = None
    if ranked.stop is not None:  # trec_eval 10.0 has printed the -q lines before it
        stop = _lacking(ranked.stop, runs)
    return Outcome(output.results, notes, {"texts": output.texts, "stop": stop})


def _rbp_note(requests: list[trec_names.TrecRequest]) -> list[str]:
    """A note when trec_eval 10.0 would print other rbp numbers than rpp (see
    trec_computed.RBP_UNSET_AFTER): rbp computed right after one of those measures."""
    bases = [r.base for r in requests]
    at = bases.index("rbp") if "rbp" in bases else 0
    if not at or bases[at - 1] not in trec_computed.RBP_UNSET_AFTER:
        return []
    return [f"rbp: trec_eval 10.0 leaves its smallest and largest gain unset (m_rbp.c) and, "
            f"computed right after {bases[at - 1]}, prints other numbers for it; rpp prints what "
            "its code means, the numbers trec_eval prints for rbp alone or in all_trec"]


def _lacking(qid: str, run_path: str) -> InputError:
    """trec_eval 10.0's stop (exit 4) at a query of the qrels the run lacks, without -c."""
    return InputError(f"the run has no line for query '{qid}' of the qrels: trec_eval 10.0 "
                      "stops there (exit 4; -c evaluates it on a stand-in ranking, --compat "
                      "9.0.8 skips it)", run_path, exit_code=TREC_EVAL_CANNOT_CALCULATE)


def parse_measures(names: tuple[str, ...], release: str = LATEST_TREC_EVAL
                   ) -> list[trec_names.TrecRequest]:
    """``-m`` as trec_eval ``release`` reads it (default ``official``), in trec_eval's output
    order; a measure the release lacks is unknown to it."""
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
        requests = trec_names.parse(list(names) or ["official"], allow_underscore=False,
                                    check=False, release=release)
    except InputError as err:
        err.exit_code = TREC_EVAL_USAGE  # trec_eval: illegal measure, exit 1
        raise
    for req in requests:
        if not req.record.in_release(release):
            raise InputError(f"unknown measure '{req.spec}': trec_eval {release} lacks it "
                             f"(trec_eval {req.record.since} has it)", exit_code=TREC_EVAL_USAGE)
    return sorted(requests, key=lambda r: trec_table.ORDER.index(r.base))


def rank(judgments: Judgments, retrieved: Retrieved, max_retrieved: int | None,
         qrels_path: str, run_path: str, release: str = LATEST_TREC_EVAL,
         complete: bool = False) -> Ranked:
    """The rankings of the queries evaluated (:func:`evaluated_queries`), as trec_eval's
    form_res_rels builds them; duplicate docnos there are errors (exit 4)."""
    evaluated, stand_in, stop = evaluated_queries(judgments.qids, retrieved.qids, release,
                                                  complete, run_path)
    qpos = {q: i for i, q in enumerate(evaluated)}
    r_all = np.array([qpos.get(q, -1) for q in retrieved.qids], dtype=np.int64)[retrieved.qid]
    j_all = np.array([qpos.get(q, -1) for q in judgments.qids], dtype=np.int64)[judgments.qid]
    r_rows, j_rows = np.flatnonzero(r_all >= 0), np.flatnonzero(j_all >= 0)
    r_query, j_query = r_all[r_rows], j_all[j_rows]
    j_grade = judgments.grade[j_rows]
    _check_grades(evaluated, j_query, j_grade, qrels_path)
    r_docno = retrieved.docno.take(r_rows)
    order = rank_rows(r_docno, r_query, retrieved.score[r_rows].astype(np.float64), len(qpos))
    # each ranked row: its place in r_rows, or -1 for a query's stand-in (one row, 10.0 -c)
    lacking = np.flatnonzero(stand_in)
    source = np.concatenate((order, np.full(len(lacking), -1)))
    query = np.concatenate((r_query[order], lacking))
    by_query = np.argsort(query, kind="stable")
    source, query = source[by_query], query[by_query]
    bounds = np.searchsorted(query, np.arange(len(evaluated) + 1))
    if max_retrieved is not None:
        keep = np.arange(len(source)) - bounds[query] < max_retrieved
        source, query = source[keep], query[keep]
        bounds = np.searchsorted(query, np.arange(len(evaluated) + 1))
    docs = Dictionary(len(evaluated))  # (query, docno) -> code
    real = source >= 0
    row_doc = np.empty(len(source), dtype=np.int64)
    row_doc[real] = docs.add(r_docno.take(source[real]), query[real])
    row_doc[~real] = docs.add(_stand_ins(int(np.count_nonzero(~real))), query[~real])
    j_doc = docs.add(judgments.docno.take(j_rows), j_query)
    _check_duplicates(docs, (row_doc[real], query[real], r_rows[source[real]], retrieved,
                             run_path),
                      (j_doc, j_query, j_rows, judgments, qrels_path), evaluated=evaluated)
    grade_of = np.full(len(docs), NONPOOL, dtype=np.int64)
    grade_of[j_doc] = np.where(j_grade >= 0, j_grade, UNJUDGED)
    j_sorted = np.argsort(j_query, kind="stable")
    j_bounds = np.searchsorted(j_query[j_sorted], np.arange(len(evaluated) + 1))
    return Ranked(evaluated, bounds, row_doc, grade_of[row_doc], j_bounds, j_doc[j_sorted],
                  j_grade[j_sorted], docs, stand_in, stop)


def evaluated_queries(judged: list[str], retrieved: list[str], release: str, complete: bool,
                      run_path: str) -> tuple[list[str], np.ndarray, str | None]:
    """The queries trec_eval evaluates, in strcmp order; which of them the run lacks; and the
    one 10.0 stops at. 9.0.8: the queries with results and judgments (none: exit 7). 10.0 reads
    the qrels' queries in order: with -c each one the run lacks is evaluated on a stand-in
    ranking; without, it stops at the first (exit 4, after the -q lines of those before)."""
    has_results = set(retrieved)
    if release == trec_table.OLDEST:
        evaluated = sort_qids(set(judged) & has_results)
        if not evaluated:
            raise InputError("no query has both results and judgments", run_path,
                             exit_code=TREC_EVAL_NO_QUERIES)
        return evaluated, np.zeros(len(evaluated), dtype=bool), None
    evaluated = sort_qids(set(judged))
    lacking = np.array([q not in has_results for q in evaluated], dtype=bool)
    if complete or not lacking.any():
        return evaluated, lacking, None
    first = int(np.argmax(lacking))
    if first == 0:
        raise _lacking(evaluated[0], run_path)
    return evaluated[:first], lacking[:first], evaluated[first]


def _stand_ins(n: int) -> Column:
    """``n`` docnos of trec_eval 10.0's stand-in ranking."""
    return column_of([trec_computed.STAND_IN_DOCNO] * n)


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
    """The lines trec_eval prints, as Results rows in its order (per query, then ``all``,
    which trec_eval 10.0 never reaches when it stops at a query the run lacks). On a stand-in
    ranking (10.0 -c), the values trec_eval then clears are 0 (relstring: empty)."""
    qids = ranked.qids
    every_query = np.arange(len(qids))
    results = Results(qids, [runid])
    texts: dict[tuple[str, str], str] = {}
    summary = opts.summary and ranked.stop is None
    for req in requests:
        if req.base == "runid":
            if summary:
                results.add("runid", -1, 0, [np.nan])
                texts[("runid", ALL)] = runid
            continue
        if req.base == "relstring":
            if opts.per_query:
                name = req.output_names()[0]
                length = 10 if req.params is None else trec_names.c_atof(req.params.split(",")[0])
                results.add(name, every_query, 0, np.full(len(qids), np.nan))
                texts.update(((name, q), "" if cleared and name == "relstring" else s)
                             for q, s, cleared in zip(qids, relstrings(ranked, length,
                                                                       opts.judged_only),
                                                      ranked.stand_in.tolist()))
            continue
        for name in req.output_names():
            values = np.array([per_query[str(q)][name] for q in range(len(qids))])
            if trec_computed.zeroed_for_stand_in(name):
                values[ranked.stand_in] = 0.0
            if opts.per_query and name not in trec_table.NOT_PER_QUERY:
                results.add(name, every_query, 0, values)
            if summary:
                value = trec.aggregate(name, values, n_complete)
                if name == "num_rel" and n_complete is not None:
                    value = float(num_rel_all)  # trec_eval -c: every relevant qrels line
                results.add(name, -1, 0, [value])
    return TrecEvalOutput(results, texts)

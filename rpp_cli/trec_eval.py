"""``rpp trec-eval``: trec_eval 9.0.8 on one run, line for line, with pytrec_eval's numbers.

read -> rank as trec_eval does (C-float score desc, docno desc; -M; duplicate checks; -J) ->
pytrec_eval per query -> trec_eval's aggregation (-c) -> one Results table, plus the two text
values pytrec_eval cannot give (runid, relstring) for the report.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError
from .io.text import decode
from .io.trec_eval import Judgments, Retrieved, read_judgments, read_retrieved
from .measures import trec
from .results import ALL, Results

# trec_eval's documented exit codes (bad files and parameters: 2, InputError's default)
EXIT_USAGE = 1
EXIT_CANNOT_CALCULATE = 4
EXIT_NO_QUERIES = 7

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
    """The evaluated queries' rankings as trec_eval builds them, and their judgments; docnos
    as integer codes in strcmp order (``docs[code]`` is the docno)."""

    qids: list[str]  # queries with results and judgments, strcmp order
    docs: np.ndarray  # S, the distinct docnos, in strcmp order
    bounds: np.ndarray  # (Q + 1,) the rows of query q are bounds[q]:bounds[q + 1]
    doc: np.ndarray  # docno code of each ranked row (score desc, docno desc, top -M)
    score: np.ndarray  # float32
    rel: np.ndarray  # int64 grade of each ranked row, or NONPOOL / UNJUDGED
    judged_bounds: np.ndarray  # (Q + 1,) the judgments of query q, as bounds above
    judged_doc: np.ndarray  # docno code of each judgment
    judged_grade: np.ndarray  # its grade


def run_trec_eval(qrels_path: str, run_path: str, opts: TrecEvalOptions) -> TrecEvalOutput:
    """trec_eval's flow and error order: measure names, files, parameters, evaluation."""
    requests = parse_measures(opts.measures)
    if opts.level < 1:
        raise InputError(f"-l {opts.level}: relevance levels below 1 are not supported "
                         "(pytrec_eval needs a positive level)", exit_code=EXIT_USAGE)
    judgments = read_judgments(qrels_path)
    retrieved = read_retrieved(run_path)
    for req in requests:
        trec.validate(req)
    ranked = rank(judgments, retrieved, opts.max_retrieved, qrels_path, run_path)
    qrels, run = pytrec_eval_input(ranked)
    per_query = trec.evaluate(qrels, run, requests, opts.level, opts.judged_only,
                              opts.num_docs_in_coll)
    n_complete = len(np.unique(judgments.qid)) if opts.complete else None
    num_rel_all = int(np.count_nonzero(judgments.grade > 0))  # -c's num_rel: every qrels line
    return tabulate(requests, ranked, per_query, opts, retrieved.runid, n_complete, num_rel_all)


def parse_measures(names: tuple[str, ...]) -> list[trec.TrecRequest]:
    """``-m`` as trec_eval reads it (default ``official``), in trec_eval's output order."""
    for name in names:
        base = name.split(".", 1)[0]
        if base in PREFS_NICKNAMES or base in PREFS_MEASURES or base.startswith("prefs_"):
            raise InputError(f"measure '{name}' needs trec_eval's preference judgments "
                             "(-R prefs/qrels_jg), which rpp trec-eval does not read",
                             exit_code=EXIT_USAGE)
    try:
        requests = trec.parse(list(names) or ["official"], allow_underscore=False, check=False)
    except InputError as err:
        err.exit_code = EXIT_USAGE  # trec_eval: illegal measure, exit 1
        raise
    return sorted(requests, key=lambda r: trec.ORDER.index(r.base))


def rank(judgments: Judgments, retrieved: Retrieved, max_retrieved: int | None,
         qrels_path: str, run_path: str) -> Ranked:
    """The rankings of the queries with both results and judgments, as trec_eval's
    form_res_rels builds them; duplicate docnos there are errors (exit 4)."""
    evaluated = np.intersect1d(judgments.qid, retrieved.qid)  # bytewise = strcmp order
    if len(evaluated) == 0:
        raise InputError("no query has both results and judgments", run_path,
                         exit_code=EXIT_NO_QUERIES)
    r_rows = np.flatnonzero(np.isin(retrieved.qid, evaluated))
    j_rows = np.flatnonzero(np.isin(judgments.qid, evaluated))
    r_query = np.searchsorted(evaluated, retrieved.qid[r_rows])
    j_query = np.searchsorted(evaluated, judgments.qid[j_rows])
    _check_grades(evaluated, j_query, judgments.grade[j_rows], qrels_path)
    docnos = np.concatenate((retrieved.docno[r_rows], judgments.docno[j_rows]))
    codes, distinct = byte_codes(docnos)
    docs = docnos[distinct]
    r_doc, j_doc = codes[:len(r_rows)], codes[len(r_rows):]
    score = retrieved.score[r_rows]
    order = np.lexsort((-r_doc, -score, r_query))  # score desc, ties: docno desc
    bounds = np.searchsorted(r_query[order], np.arange(len(evaluated) + 1))
    if max_retrieved is not None:
        position = np.arange(len(order)) - bounds[r_query[order]]
        order = order[position < max_retrieved]
        bounds = np.searchsorted(r_query[order], np.arange(len(evaluated) + 1))
    n_docs = len(docs)
    r_key = r_query[order] * n_docs + r_doc[order]
    j_key = j_query * n_docs + j_doc
    _check_duplicates(r_key, retrieved.line[r_rows[order]], j_key, judgments.line[j_rows],
                      n_docs, evaluated, docs, run_path, qrels_path)
    j_sorted = np.argsort(j_key)  # by query, then docno
    j_key, j_grade = j_key[j_sorted], judgments.grade[j_rows][j_sorted]
    at = np.minimum(np.searchsorted(j_key, r_key), len(j_key) - 1)
    found = j_key[at] == r_key
    rel = np.where(found, np.where(j_grade[at] >= 0, j_grade[at], UNJUDGED), NONPOOL)
    j_bounds = np.searchsorted(j_query[j_sorted], np.arange(len(evaluated) + 1))
    return Ranked(decode(evaluated), docs, bounds, r_doc[order], score[order], rel,
                  j_bounds, j_doc[j_sorted], j_grade)


def byte_codes(strings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense codes of an ``S`` array in strcmp order, and one row of each code: sorting the
    bytes as big-endian words is twice as fast as sorting the strings."""
    width = strings.dtype.itemsize
    raw = np.zeros((len(strings), width + -width % 8), dtype=np.uint8)
    raw[:, :width] = strings.view(np.uint8).reshape(len(strings), width)
    keys = raw.view(">u8")  # as integers, in byte order; zero padding sorts first, as strcmp
    order = np.lexsort(keys.T[::-1])
    ranked = keys[order]
    new = np.concatenate(([True], (ranked[1:] != ranked[:-1]).any(axis=1)))
    codes = np.empty(len(strings), dtype=np.int64)
    codes[order] = np.cumsum(new) - 1
    return codes, order[new]


def _check_duplicates(r_key: np.ndarray, r_line: np.ndarray, j_key: np.ndarray,
                      j_line: np.ndarray, n_docs: int, evaluated: np.ndarray,
                      docs: np.ndarray, run_path: str, qrels_path: str) -> None:
    """trec_eval's order: the first query (strcmp) with a repeated docno, the run before the
    qrels within a query; the line named is the repeat's later one."""
    repeats = []
    for which, (keys, lines, path) in enumerate(((r_key, r_line, run_path),
                                                 (j_key, j_line, qrels_path))):
        hit = _first_repeat(keys, lines)
        if hit is not None:
            repeats.append((hit[0] // n_docs, which, hit, path))
    if repeats:
        query, _, (key, line), path = min(repeats)
        doc = decode(docs[[key % n_docs]])[0]
        qid = decode(evaluated[[query]])[0]
        raise InputError(f"docno '{doc}' appears twice for query '{qid}'", path, line,
                         exit_code=EXIT_CANNOT_CALCULATE)


def _check_grades(evaluated: np.ndarray, query: np.ndarray, grade: np.ndarray,
                  qrels_path: str) -> None:
    """trec_eval sizes a buffer by a query's top grade + 1: with only negative grades it fails
    on the first query (exit 4) and crashes on later ones below -1. Refuse both (exit 4)."""
    top = np.full(len(evaluated), np.iinfo(np.int64).min)
    np.maximum.at(top, query, grade)
    bad = np.flatnonzero(top <= -2)
    if top[0] < 0:
        bad = np.concatenate(([0], bad))
    if len(bad):
        qid = decode(evaluated[bad[:1]])[0]
        raise InputError(f"query '{qid}' has only negative grades: trec_eval cannot evaluate it",
                         qrels_path, exit_code=EXIT_CANNOT_CALCULATE)


def _first_repeat(keys: np.ndarray, lines: np.ndarray) -> tuple[int, int] | None:
    """The smallest key that occurs twice, and the later line of its repeat."""
    order = np.lexsort((lines, keys))
    same = np.flatnonzero(keys[order][1:] == keys[order][:-1])
    if len(same) == 0:
        return None
    k = order[same[0] + 1]
    return int(keys[k]), int(lines[k])


def pytrec_eval_input(ranked: Ranked) -> tuple[dict[str, dict[str, int]],
                                                dict[str, dict[str, float]]]:
    """Judgments and kept rankings as pytrec_eval wants them, keyed by query index and by
    docno code as fixed-width digits: the same equalities and strcmp order as the docnos,
    and always valid UTF-8 (pytrec_eval crashes on other bytes)."""
    width = len(str(max(len(ranked.docs) - 1, 0)))
    powers = 10 ** np.arange(width - 1, -1, -1, dtype=np.int64)

    def keys(codes: np.ndarray) -> list[str]:
        digits = (codes[:, None] // powers % 10 + ord("0")).astype(np.uint8)
        return decode(np.ascontiguousarray(digits).view(f"S{width}").ravel())

    def by_query(bounds: np.ndarray, docs: list[str], values: list) -> dict[str, dict]:
        b = bounds.tolist()
        return {str(q): dict(zip(docs[b[q]:b[q + 1]], values[b[q]:b[q + 1]]))
                for q in range(len(ranked.qids))}

    return (by_query(ranked.judged_bounds, keys(ranked.judged_doc),
                     ranked.judged_grade.tolist()),
            by_query(ranked.bounds, keys(ranked.doc), ranked.score.astype(np.float64).tolist()))


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
    return [text[lo:lo + int(max(0.0, min(length, hi - lo)))]
            for lo, hi in zip(bounds[:-1], bounds[1:])]


def tabulate(requests: list[trec.TrecRequest], ranked: Ranked,
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
                length = 10 if req.params is None else trec.c_atof(req.params.split(",")[0])
                results.add(name, every_query, 0, np.full(len(qids), np.nan))
                texts.update(((name, q), s) for q, s in
                             zip(qids, relstrings(ranked, length, opts.judged_only)))
            continue
        for name in req.output_names():
            values = np.array([per_query[str(q)][name] for q in range(len(qids))])
            if opts.per_query and name not in trec.NOT_PER_QUERY:
                results.add(name, every_query, 0, values)
            if opts.summary:
                value = trec.aggregate(name, values, n_complete)
                if name == "num_rel" and n_complete is not None:
                    value = float(num_rel_all)  # trec_eval -c: every relevant qrels line
                results.add(name, -1, 0, [value])
    return TrecEvalOutput(results, texts)

"""What ``rpp eval -q`` must print, computed the slow and literal way (contract §2-4, §6), and a
strict reader of its output (contract §7).

Inputs are Python dicts: ``qrels[qid][docno] = grade`` (the effective grade) and
``runs[r][qid] = [(docno, score), ...]`` (any order). Shared by ``test_differential.py`` and
``test_mixed_fixture.py``.
"""
from __future__ import annotations

import math
from fractions import Fraction

import pytrec_eval

# rpp and invrpp in exact rational arithmetic (dcgrpp's weights are irrational)
EXACT = {"rpp": lambda i: Fraction(1), "invrpp": lambda i: Fraction(1, i)}
PREFERENCES = {"rpp": lambda i: 1.0, "dcgrpp": lambda i: 1 / math.log2(i + 1),
               "invrpp": lambda i: 1 / i}
# printed name -> trec_eval's -m name
TREC = {"map": "map", "ndcg": "ndcg", "P_10": "P.10", "recip_rank": "recip_rank",
        "num_ret": "num_ret", "num_rel_ret": "num_rel_ret"}
SUMMED = {"num_ret", "num_rel_ret"}  # trec_eval sums these in `all`; the rest are means
# lexicographic preferences (Diaz 2023): f(fa, fb) on the relevant items' positions
LEXICOGRAPHIC = {"lexiprecision": lambda fa, fb: _first_sign(fa, fb),
                 "rrlexiprecision": lambda fa, fb: _first_rr(fa, fb),
                 "lexirecall": lambda fa, fb: _first_sign(fa[::-1], fb[::-1])}
RBP_P = 0.7  # rbp.0.7 and its residual (Moffat & Zobel 2008), computed by rpp
IR_MEASURES = ["RR@10", "Judged@10", "ERR@20"]  # ir_measures' measures trec_eval lacks
MEASURE_ORDER = ["rpp", "dcgrpp", "invrpp", *LEXICOGRAPHIC, "asl", "rbp.0.7", *TREC,
                 *IR_MEASURES]
# The references' trec_eval measures come from pytrec_eval, which computes trec_eval 9.0.8's
# numbers (10.0 ranks by double scores, not floats): hence --compat 9.0.8; rpp's 10.0 numbers
# are checked against the 10.0 binary's goldens (tests/test_trec_eval10.py).
EVAL_ARGS = ["eval", "-q", "--precision", "10", "--compat", "9.0.8",
             *[arg for m in MEASURE_ORDER for arg in ("-m", TREC.get(m, m))]]


def evaluated(qrels: dict) -> list[str]:
    """Queries with a relevant item (grade > 0), in trec_eval order (byte order)."""
    return sorted((q for q, docs in qrels.items() if any(g > 0 for g in docs.values())),
                  key=lambda q: q.encode("utf-8"))


def judged(qrels: dict) -> list[str]:
    """Every query of the qrels (trec_eval -c's query set), in trec_eval order."""
    return sorted(qrels, key=lambda q: q.encode("utf-8"))


def ranking(run: dict, qid: str) -> list[str]:
    """contract §2: score descending, equal scores by docno descending in byte (UTF-8) order.
    A query the run lacks is an empty ranking."""
    docs = run.get(qid, [])
    return [d for d, _ in sorted(docs, key=lambda x: (x[1], x[0].encode("utf-8")), reverse=True)]


def corpus_size(qrels: dict, runs: list, qid: str) -> int:
    """contract §2 (paper §5.5): distinct docnos in every run's ranking of the query and its
    relevant items."""
    relevant = {d for d, g in qrels.get(qid, {}).items() if g > 0}
    return len(relevant | {d for run in runs for d, _ in run.get(qid, [])})


def positions(rank: dict[str, int], pop: list[str], n: int) -> list[int]:
    """f_i(P), i = 1..m_P: retrieved members' ranks ascending, then n - m_P + i."""
    got = sorted(rank[d] for d in pop if d in rank)
    return got + [n - len(pop) + i for i in range(len(got) + 1, len(pop) + 1)]


def _sign(x: float) -> int:
    return (x > 0) - (x < 0)


def slow_preferences(qrels: dict, runs: list, measures: dict | None = None) -> dict[tuple, float]:
    """{(measure, qid, a, b): RPP_measure(run a, run b)} for evaluated queries, a != b;
    ``measures`` (default :data:`PREFERENCES`) maps names to p(i | P) before normalisation:
    with :data:`EXACT`'s Fractions the values are exact rationals."""
    out = {}
    for q in evaluated(qrels):
        rel = {d: g for d, g in qrels[q].items() if g > 0}
        n = corpus_size(qrels, runs, q)
        ranks = [{d: i + 1 for i, d in enumerate(ranking(run, q))} for run in runs]
        pops = [[d for d in rel if rel[d] >= lam] for lam in sorted(set(rel.values()))]
        total = sum(len(p) for p in pops)
        for measure, disc in (measures or PREFERENCES).items():
            for a in range(len(runs)):
                for b in range(len(runs)):
                    if a == b:
                        continue
                    value = 0
                    for pop in pops:
                        fa, fb = positions(ranks[a], pop, n), positions(ranks[b], pop, n)
                        w = [disc(i) for i in range(1, len(pop) + 1)]
                        s = sum(wi * _sign(y - x) for wi, x, y in zip(w, fa, fb))
                        value += len(pop) * s / (total * sum(w))
                    out[(measure, q, a, b)] = value
    return out


def _first_sign(fa: list[int], fb: list[int]) -> int:
    """+1 when a's position is smaller at the first level where the two differ, 0 if none."""
    for x, y in zip(fa, fb):
        if x != y:
            return _sign(y - x)
    return 0


def _first_rr(fa: list[int], fb: list[int]) -> float:
    """1/f_i(a) - 1/f_i(b) at the first level i where the two differ, 0 if none."""
    for x, y in zip(fa, fb):
        if x != y:
            return 1 / x - 1 / y
    return 0.0


def slow_lexicographic(qrels: dict, runs: list) -> dict[tuple, float]:
    """{(measure, qid, a, b): value} of the lexicographic preferences, a != b."""
    out = {}
    for q in evaluated(qrels):
        rel = [d for d, g in qrels[q].items() if g > 0]
        n = corpus_size(qrels, runs, q)
        f = [positions({d: i + 1 for i, d in enumerate(ranking(run, q))}, rel, n)
             for run in runs]
        for measure, fn in LEXICOGRAPHIC.items():
            for a in range(len(runs)):
                for b in range(len(runs)):
                    if a != b:
                        out[(measure, q, a, b)] = fn(f[a], f[b])
    return out


def slow_asl(qrels: dict, runs: list) -> dict[tuple, float]:
    """{(qid, r): mean worst-case position of the relevant items} (contract §6)."""
    out = {}
    for q in evaluated(qrels):
        rel = [d for d, g in qrels[q].items() if g > 0]
        n = corpus_size(qrels, runs, q)
        for r, run in enumerate(runs):
            rank = {d: i + 1 for i, d in enumerate(ranking(run, q))}
            pos = positions(rank, rel, n)
            out[(q, r)] = sum(pos) / len(pos)
    return out


def slow_rbp(qrels: dict, runs: list) -> dict[tuple, tuple[float, float]]:
    """{(qid, r): (rbp, residual)} with persistence RBP_P, literally: rank by rank."""
    out = {}
    for q in evaluated(qrels):
        for r, run in enumerate(runs):
            value, residual, weight = 0.0, 0.0, 1 - RBP_P
            for d in ranking(run, q):
                if d not in qrels[q]:
                    residual += weight
                elif qrels[q][d] > 0:
                    value += weight
                weight *= RBP_P
            out[(q, r)] = (value, residual + weight / (1 - RBP_P))
    return out


def slow_ir_measures(qrels: dict, runs: list) -> dict[tuple, float]:
    """{(measure, qid, r): value} of :data:`IR_MEASURES` for every query of the qrels (ir_measures
    averages over them all, as trec_eval -c), literally as ir_measures' providers compute them:
    RR@10 (msmarco_eval) and Judged@10 (judged provider) rank by score descending, then docno
    ascending; ERR@20 (gdeval.pl) ranks as trec_eval does, with
    R = (2^g - 1) / 16 for grades g > 0 and the loop of gdeval's ``err``."""
    out = {}
    for q in judged(qrels):
        judged_docs = qrels[q]
        for r, run in enumerate(runs):
            ascending = [d for d, _ in sorted(run.get(q, []), key=lambda x: (-x[1],
                                                                            x[0].encode()))]
            rr = 0.0
            for i, d in enumerate(ascending[:10]):
                if int(judged_docs.get(d, 0)) >= 1:
                    rr = 1 / (i + 1)
                    break
            top = ascending[:10]
            share = sum(d in judged_docs for d in top) / len(top) if top else 0.0
            score, decay = 0.0, 1.0
            for i, d in enumerate(ranking(run, q)[:20]):
                stop = (2 ** max(int(judged_docs.get(d, 0)), 0) - 1) / 2 ** 4
                score += stop * decay / (i + 1)
                decay *= 1 - stop
            out.update({("RR@10", q, r): rr, ("Judged@10", q, r): share,
                        ("ERR@20", q, r): score})
    return out


def trec_reference(qrels: dict, runs: list) -> dict[tuple, float]:
    """{(printed measure, qid, r): value} for every query of the qrels (trec_eval -c's query
    set, contract §6): straight from pytrec_eval for the queries with a relevant item; for the
    others, num_ret is the ranking's length and the rest 0, since they count relevant items
    retrieved. That holds for a query whose grades are all negative too, as trec_eval 9.0.8
    evaluates it when it can (it stops on one it evaluates first; contract §6), so no such
    query is given to pytrec_eval here (0.5.11 was seen to hang on one after other
    evaluations in one process); a judged query missing from a run scores 0, as trec_eval -c
    counts it; grades as int. No empty ranking is given to pytrec_eval."""
    qids = evaluated(qrels)
    qrels_int = {q: {d: int(g) for d, g in qrels[q].items()} for q in qids}
    out = {}
    for r, run in enumerate(runs):
        evaluator = pytrec_eval.RelevanceEvaluator(qrels_int, set(TREC.values()))
        got = evaluator.evaluate({q: {d: float(s) for d, s in run[q]}
                                  for q in qids if run.get(q)})
        for q in judged(qrels):
            for name in TREC:
                out[(name, q, r)] = got[q][name] if q in got else 0.0
            if q not in qids:  # retrieved, none relevant
                out[("num_ret", q, r)] = float(len(run.get(q, [])))
    return out


def expected_output(qrels: dict, runs: list, names: list[str]) -> dict[tuple, float]:
    """Every line ``rpp eval -q`` prints with :data:`EVAL_ARGS`: {(measure, qid, run[, other]):
    value}, per-query lines and ``all`` lines."""
    qids = evaluated(qrels)
    pref = slow_preferences(qrels, runs) | slow_lexicographic(qrels, runs)
    asl = slow_asl(qrels, runs)
    rbp = slow_rbp(qrels, runs)
    trec = trec_reference(qrels, runs) | slow_ir_measures(qrels, runs)
    R = range(len(runs))
    want: dict[tuple, float] = {}
    for m in [*PREFERENCES, *LEXICOGRAPHIC]:
        for a in R:
            for b in R:
                if a != b:
                    vals = [pref[(m, q, a, b)] for q in qids]
                    for q, v in zip(qids, vals):
                        want[(m, q, names[a], names[b])] = v
                    want[(m, "all", names[a], names[b])] = sum(vals) / len(vals)
            wins = [sum(pref[(m, q, a, b)] for b in R if b != a) / (len(runs) - 1) for q in qids]
            for q, v in zip(qids, wins):
                want[(f"{m}_win", q, names[a])] = v
            want[(f"{m}_win", "all", names[a])] = sum(wins) / len(wins)
    for a in R:
        per_run = {"asl": [asl[(q, a)] for q in qids],
                   "rbp.0.7": [rbp[(q, a)][0] for q in qids],
                   "rbp_res.0.7": [rbp[(q, a)][1] for q in qids]}
        for m, vals in per_run.items():
            for q, v in zip(qids, vals):
                want[(m, q, names[a])] = v
            want[(m, "all", names[a])] = sum(vals) / len(vals)
        for m in [*TREC, *IR_MEASURES]:
            vals = [trec[(m, q, a)] for q in judged(qrels)]
            for q, v in zip(judged(qrels), vals):
                want[(m, q, names[a])] = v
            want[(m, "all", names[a])] = sum(vals) if m in SUMMED else sum(vals) / len(vals)
    return want


def parse_strict(text: str) -> tuple[dict[tuple, float], dict[tuple, str], list[tuple]]:
    """contract §7 lines -> ({key: value}, {key: value text}, keys in output order).

    Every line must be tab-separated ``measure qid run [other] value`` with the measure
    left-justified in 22 characters and a number last; a key printed twice is an error."""
    values: dict[tuple, float] = {}
    texts: dict[tuple, str] = {}
    order: list[tuple] = []
    assert text == "" or text.endswith("\n"), "output does not end with a newline"
    for line in text.splitlines():
        fields = line.split("\t")
        assert len(fields) in (4, 5), f"not measure/qid/run[/other]/value: {line!r}"
        name = fields[0].rstrip(" ")
        assert fields[0] == name.ljust(22), f"measure not left-justified in 22: {line!r}"
        key = (name, *fields[1:-1])
        assert key not in values, f"printed twice: {key}"
        values[key] = float(fields[-1])
        texts[key] = fields[-1]
        order.append(key)
    return values, texts, order


def compare(got: dict[tuple, float], want: dict[tuple, float], tol: float = 1e-9) -> list[str]:
    """Differences between printed and expected lines (missing, extra, wrong value)."""
    problems = [f"missing {k} (want {want[k]!r})" for k in want if k not in got]
    problems += [f"extra {k} = {got[k]!r}" for k in got if k not in want]
    problems += [f"{k}: printed {got[k]!r}, want {want[k]!r}" for k in want
                 if k in got and not abs(got[k] - want[k]) <= tol]
    return problems


def order_problems(order: list[tuple], names: list[str]) -> list[str]:
    """contract §7 order: per-query lines before ``all``, queries in byte order, runs (and pairs)
    in argument order within a (measure, qid)."""
    problems = []
    seen_all = False
    last_q = None
    pos = {n: i for i, n in enumerate(names)}
    prev: dict[tuple, tuple] = {}
    for key in order:
        measure, qid, runs = key[0], key[1], key[2:]
        if qid == "all":
            seen_all = True
        else:
            if seen_all:
                problems.append(f"per-query line after the `all` lines: {key}")
            if last_q is not None and qid.encode() < last_q.encode():
                problems.append(f"query {qid!r} printed after {last_q!r}")
            last_q = qid
        idx = tuple(pos.get(r, -1) for r in runs)
        if (measure, qid) in prev and idx < prev[(measure, qid)]:
            problems.append(f"runs out of argument order at {key}")
        prev[(measure, qid)] = idx
    return problems

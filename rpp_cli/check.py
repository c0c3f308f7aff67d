"""``rpp check``: a regression gate for CI. A candidate fails when it is significantly worse
than the baseline on a chosen measure, or when a metric drops by more than its allowed delta.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .aggregate import TIE_TOLERANCE, mean_preference
from .errors import ASCII_DECIMAL, InputError
from .pipeline import ALL_QUERIES, Options, evaluate_runs, unreached_levels
from .measures import Measure, resolve
from .report.common import Verdicts
from .results import ALL, Results
from .measures.trec import GEOMETRIC, NOT_PER_QUERY, PAIR_PARAMS, TEXT_MEASURES, pytrec_level
from .report.escape import markdown
from .stats import (DEFAULT_SEED, of_runs, pair_values, query_counts, significance, smallest_p,
                    testable)

GATE_TESTS = ("randomization", "ttest")
NO_PER_QUERY_VALUES = NOT_PER_QUERY | GEOMETRIC | TEXT_MEASURES  # (gm_map, runid, num_q ...)
# the same for every run: counted from the qrels, so a gate on them could not fail
RUN_INDEPENDENT = frozenset({"num_rel"})
# trec_eval's measures that count retrieved or judged non-relevant documents, which a query with
# no relevant item still moves (ir_measures' Judged@k too); and those that weigh every positive
# grade as its gain whatever -l says (trec_eval ignores the level for them; so does gdeval)
COUNT_RETRIEVED = frozenset({"num_ret", "num_nonrel_judged_ret", "utility"})
GAIN_WEIGHTED = frozenset({"G", "ndcg", "ndcg_rel", "ndcg_cut", "ERR"})  # not Rndcg: its R
# counts the relevant items at the level, and with none there it is 0


@dataclass(frozen=True)
class Verdict:
    """One gate for one candidate: PASS or FAIL, with the evidence."""

    candidate: str
    measure: str
    passed: bool
    text: str  # what the gate saw, e.g. "effect -0.2100, p 0.0001: significantly worse"
    evidence: tuple[str, ...] = ()  # its rows in the Results: ("rpp", "rpp_p"), ("map_drop",)

    @property
    def word(self) -> str:
        return "PASS" if self.passed else "FAIL"

    def line(self) -> str:
        return f"{self.word}\t{self.candidate}\t{self.measure}\t{self.text}"


def machine_verdicts(verdicts: list[Verdict], baseline: int = 0) -> Verdicts:
    """The verdicts as jsonl and csv carry them: each gate's on its evidence rows (keyed by
    measure and candidate), and the whole check's (FAIL when any gate fails)."""
    gates = {(row, v.candidate): v.word for v in verdicts for row in v.evidence}
    overall = "PASS" if all(v.passed for v in verdicts) else "FAIL"
    return Verdicts(gates, overall, baseline)


def markdown_summary(verdicts: list[Verdict], baseline: str) -> str:
    """The verdicts as a short Markdown report, fit for a pull-request comment or a CI job
    summary: the overall result, then one table row per candidate and gate. Names and
    evidence are escaped (no code spans: escapes do not work in them), so that no name can
    add a cell or a row (a forged PASS) or markup."""
    passed = all(v.passed for v in verdicts)
    lines = [f"### rpp check: {'PASS' if passed else 'FAIL'} (baseline {markdown(baseline)})",
             "", "| candidate | gate | verdict | evidence |", "|---|---|---|---|"]
    for v in verdicts:
        lines.append(f"| {markdown(v.candidate)} | {markdown(v.measure)} | "
                     f"{'PASS' if v.passed else '**FAIL**'} | {markdown(v.text)} |")
    return "\n".join(lines) + "\n"


def parse_max_drops(specs: tuple[str, ...]) -> list[tuple[str, float]]:
    """``MEASURE=DELTA`` pairs; DELTA must be a finite non-negative number (``inf`` would make
    a gate that cannot fail)."""
    out = []
    for spec in specs:
        name, eq, delta = spec.rpartition("=")
        # ASCII digits, as every number of the command line: float() reads 0_05 as 5
        value = float(delta) + 0.0 if ASCII_DECIMAL.fullmatch(delta.strip()) else -1.0
        if not eq or not name or not 0 <= value < math.inf:
            raise InputError(f"--max-drop '{spec}': expected MEASURE=DELTA with a finite "
                             "DELTA >= 0")
        out.append((name, value))
    return out


def run_check(qrels_path: str, baseline: str, candidates: list[str],
              measure_names: list[str] | None, options: Options, test: str, alpha: float,
              max_drops: list[tuple[str, float]], permutations: int = 10000,
              seed: int = DEFAULT_SEED, notes: list[str] | None = None, precision: int = 4
              ) -> tuple[Results, list[Verdict]]:
    """Evaluate baseline and candidates; test each candidate against the baseline.

    Rows (qid ``all``, run = candidate, other = baseline): ``M`` (mean RPP(candidate,
    baseline)) or ``M_diff`` (mean metric difference) and ``M_p`` for each tested measure,
    and ``M_drop`` (baseline minus candidate, in the worse direction) for each --max-drop.
    ``precision``: the decimals of the verdicts' numbers (--precision, as every format).
    """
    notes = notes if notes is not None else []
    if not 0 < alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {alpha:g})")
    if baseline in candidates:
        raise InputError("the baseline is also given as a candidate", path=baseline)
    tested = resolve(measure_names or ["rpp"])
    untestable = [out for m in tested for out in m.outputs if out in NO_PER_QUERY_VALUES]
    if untestable or not tested:
        raise InputError(f"measure '{(untestable or measure_names or ['?'])[0]}' has no "
                         "per-query values: a gate on it could not fail")
    fixed = [out for m in tested for out in m.outputs if out in RUN_INDEPENDENT]
    if fixed:
        raise InputError(f"measure '{fixed[0]}' is counted from the qrels, the same for every "
                         "run: a gate on it could not fail")
    drop_measures = [resolve([name]) for name, _ in max_drops]
    for (name, _), found in zip(max_drops, drop_measures):
        if len(found) != 1 or found[0].kind != "metric" or len(found[0].studied) != 1 \
                or found[0].outputs[0] in NO_PER_QUERY_VALUES | RUN_INDEPENDENT:
            raise InputError(f"--max-drop '{name}': needs one per-run metric with per-query "
                             "values that depend on the run (e.g. map, P.10)")
    wanted = list({m.name: m for m in tested + [f[0] for f in drop_measures]}.values())
    # no relevant item: relevance measures are 0 for every run, a gate that could not fail
    ctx = evaluate_runs(qrels_path, [baseline, *candidates], wanted, options, False, notes,
                        need_relevant=True)
    coll = ctx.collection
    _refuse_blind_gates(coll.judged.grade, tested, [f[0] for f in drop_measures],
                        [name for name, _ in max_drops])
    names = testable(ctx, tested, notes)
    # the fewest queries on which a tested measure can tell two runs apart
    n_queries = min((_queries_that_can_differ(coll, tested, name, n)
                     for (name, _), n in zip(names, query_counts(ctx, names))),
                    default=len(coll.qids))
    floor = smallest_p(test, n_queries, permutations)
    if floor >= alpha:
        why = (f"with {n_queries} queries that can tell runs apart (those with a relevant "
               f"item) and {permutations} permutations the smallest "
               f"p-value {test} can give is {floor:.4g}, not below alpha {alpha:g}")
        if not max_drops:
            raise InputError(f"the significance gate could not fail: {why} (use more queries "
                             "or permutations, or --max-drop)")
        notes.append(f"significance not tested: {why}; --max-drop alone decides")
        names = []
    results = Results(coll.qids, coll.run_names)
    verdicts: list[Verdict] = []
    p_digits = max(precision, 4)  # a p of 0.28 is never 'p 0' (--precision 0) in a verdict
    for c in range(1, len(coll.run_names)):
        cand = coll.run_names[c]
        for name, is_pref in names:
            values = _pair(ctx.tensors[name] if is_pref else ctx.metrics[name], c)
            effect = float(mean_preference(pair_values(values))[0])  # candidate vs baseline
            p = float(significance(values, test, permutations, np.random.default_rng(seed))[0])
            results.add(name if is_pref else f"{name}_diff", -1, [c], [effect], [0])
            results.add(f"{name}_p", -1, [c], [p], [0])
            better = is_pref or _higher_is_better(wanted, name)
            worse = (effect < 0 if better else effect > 0) and p < alpha
            verdicts.append(Verdict(cand, name, not worse,
                                    f"effect {effect:+.{precision}f}, p {p:.{p_digits}f} "
                                    f"({test}, alpha {alpha:g})"
                                    + (": significantly worse" if worse else ""),
                                    (name if is_pref else f"{name}_diff", f"{name}_p")))
        for (name, delta), (m,) in zip(max_drops, drop_measures):
            out = m.studied[0]
            # the values rpp eval prints: a mean, or the sum for trec_eval's counts (num_ret)
            base, mine = (ctx.results.value(out, ALL, run) for run in (coll.run_names[0], cand))
            drop = base - mine if m.higher_is_better else mine - base
            # a drop equal to the delta passes; float rounding (0.8 - 0.7 is 0.1 + 9e-17)
            # decides nothing: within TIE_TOLERANCE of the magnitudes is equal, as for ties
            allowed = delta + TIE_TOLERANCE * max(abs(base), abs(mine), delta)
            results.add(f"{out}_drop", -1, [c], [drop], [0])
            verdicts.append(Verdict(cand, out, drop <= allowed,
                                    f"drop {drop:+.{precision}f} (allowed {delta:g})",
                                    (f"{out}_drop",)))
    return results, verdicts


def _queries_that_can_differ(coll, measures: list[Measure], output: str, averaged: int
                             ) -> int:
    """Of the ``averaged`` queries ``output`` averages over, those whose value some ranking
    could change. trec_eval's and ir_measures' measures average over every query of the
    qrels, and one with no judgment at the measure's level scores 0 whatever is ranked: such
    queries would pad Q in 2 / 2^Q, a gate that looks as if it could fail but cannot. rpp's
    own measures average over the queries with a relevant item already."""
    m = next(m for m in measures if output in m.outputs)
    base = m.trec.base if m.trec is not None else m.options.get("provider", m.name)
    if m.family not in ALL_QUERIES or base in COUNT_RETRIEVED or base == "Judged" \
            or (base in PAIR_PARAMS and m.trec is not None and m.trec.params is not None):
        return averaged  # custom gains may weigh grade 0: every query counts
    if base in GAIN_WEIGHTED:
        level = 1
    else:
        level = pytrec_level(coll.level if m.options.get("level") is None
                             else m.options["level"])
    judged = coll.judged
    relevant = np.trunc(np.nan_to_num(judged.grade, nan=-np.inf)) >= level  # trec_eval's atol
    return int(np.count_nonzero(np.bincount(judged.query[relevant],
                                            minlength=len(judged.qids))))


def _refuse_blind_gates(grades: np.ndarray, tested: list, dropped: list,
                        drop_names: list[str]) -> None:
    """A gate on a measure with its own relevance level (``P(rel=2)@5``) that no judgment
    reaches could not fail: the measure is 0 for every run and query whatever they rank."""
    gates = [(m, f"-m '{m.name}'") for m in tested]
    gates += [(m, f"--max-drop '{name}'") for m, name in zip(dropped, drop_names)]
    for m, gate in gates:
        for _, level, top in unreached_levels(grades, [m]):
            raise InputError(f"{gate}: no judgment has a grade >= {level} (the largest is "
                             f"{top:g}), so the measure is 0 for every run and the gate "
                             "could not fail")


def _pair(values: np.ndarray, c: int) -> np.ndarray:
    """The (candidate, baseline) slice of a (Q, R) or (Q, R, R) array, candidate first."""
    return of_runs(values, [c, 0])


def _higher_is_better(measures, output: str) -> bool:
    return all(m.higher_is_better for m in measures if output in m.outputs)

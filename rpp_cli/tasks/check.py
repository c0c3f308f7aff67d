"""``rpp check``: a regression gate for CI. A candidate fails when it is significantly worse
than the baseline on a chosen measure, or when a metric drops by more than its allowed delta;
with a confidence level, unless the one-sided upper bound of the drop is below the delta (a
non-inferiority test).
"""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import numpy as np

from ..aggregate import mean_preference
from ..orderings import TIE_TOLERANCE
from ..collection import Collection
from ..errors import ASCII_DECIMAL, InputError
from ..measures import Measure, resolve
from ..measures.pytrec_adapter import pytrec_level
from ..pipeline import Context, evaluate_runs, unreached_levels
from ..report.common import Verdicts, is_count, p_text
from ..report.escape import markdown
from ..results import ALL, Results
from ..settings import Options
from ..stats import DEFAULT_SEED, of_runs, pair_values, significance, smallest_p, upper_bound
from ..pipeline import query_counts, testable
from . import Outcome

GATE_TESTS = ("randomization", "ttest")



@dataclass(frozen=True)
class Verdict:
    """One gate for one candidate: PASS or FAIL, with the evidence."""

    candidate: str
    measure: str
    passed: bool
    text: str  # what the gate saw, e.g. "effect -0.2100, p 0.0001: significantly worse"
    evidence: tuple[str, ...] = ()  # its rows in the Results: ("rpp", "rpp_p"), ("map_drop",)
    gate: str = "significance"  # or "max_drop"
    numbers: tuple[tuple[str, float], ...] = ()  # the line's: ("effect", x), ("p", p), ...

    def record(self) -> dict:
        """The verdict as the Python API gives it: candidate, measure, gate, passed and the
        numbers of its line (effect and p, or drop, delta and, with a confidence, bound)."""
        return {"candidate": self.candidate, "measure": self.measure, "gate": self.gate,
                "passed": self.passed, **dict(self.numbers)}

    @property
    def word(self) -> str:
        """PASS or FAIL."""
        return "PASS" if self.passed else "FAIL"

    def line(self) -> str:
        """The verdict line on stderr: word, candidate, gate and evidence, tab-separated."""
        return f"{self.word}\t{self.candidate}\t{self.measure}\t{self.text}"


@dataclass(frozen=True)
class InputVerdicts(Verdicts):
    """:class:`Verdicts` with the input files compared: (path, SHA-256 in hex or None when
    the bytes could not be read again: stdin, a pipe), qrels first, then baseline, then
    candidates; jsonl and csv give each an ``input`` row before the overall verdict."""

    inputs: tuple[tuple[str, str | None], ...] = ()


def machine_verdicts(verdicts: list[Verdict], baseline: int = 0,
                     inputs: list[str] = ()) -> Verdicts:
    """The verdicts as jsonl and csv carry them: each gate's on its evidence rows (keyed by
    measure and candidate), the whole check's (FAIL when any gate fails), and the digest of
    each of the ``inputs`` paths."""
    gates = {(row, v.candidate): v.word for v in verdicts for row in v.evidence}
    overall = "PASS" if all(v.passed for v in verdicts) else "FAIL"
    return InputVerdicts(gates, overall, baseline, tuple((p, sha256(p)) for p in inputs))


def sha256(path: str) -> str | None:
    """The SHA-256 of a regular file's bytes as stored (``sha256sum``'s); None for stdin and
    pipes (``<(zcat ...)``), whose bytes the reader consumed and that cannot be read again."""
    if path == "-" or not os.path.isfile(path):
        return None
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as err:
        raise InputError(f"cannot read again for its SHA-256: {err.strerror or err}",
                         path=path) from None
    return digest.hexdigest()


def markdown_summary(verdicts: list[Verdict], baseline: str) -> str:
    """The verdicts as a short Markdown report, fit for a pull-request comment or a CI job
    summary: the overall result, then one table row per candidate and gate, and the trec_eval
    release in force when a gate is on a trec_eval measure. Names and evidence are escaped (no
    code spans: escapes do not work in them), so that no name can add a cell or a row (a forged
    PASS) or markup."""
    from ..settings import trec_eval_release

    def trec(name: str) -> bool:
        """Whether the gate's measure is trec_eval's (its numbers depend on the release)."""
        try:
            return any(m.family == "trec" for m in resolve([name]))
        except InputError:
            return False

    passed = all(v.passed for v in verdicts)
    # under the heading, a line naming the release when a gate is on a trec_eval measure (the
    # table then follows it directly, as GitHub's Markdown allows), else a blank line
    release = f"trec_eval's measures as trec_eval {trec_eval_release()} computes them."
    lines = [f"### rpp check: {'PASS' if passed else 'FAIL'} (baseline {markdown(baseline)})",
             release if any(trec(v.measure) for v in verdicts) else "",
             "| candidate | gate | verdict | evidence |", "|---|---|---|---|"]
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


@dataclass(frozen=True)
class CheckRequest:
    """``rpp check``'s own settings: the baseline run, ``-m`` (empty: rpp), the test and its
    alpha, the ``--max-drop`` specs (``MEASURE=DELTA``), the random draws and their seed, the
    decimals of the verdicts' numbers (``--precision``, as every format), and the confidence
    level of the --max-drop gates' non-inferiority bound (None: the drop itself decides)."""

    baseline: str
    measures: tuple[str, ...] = ()
    test: str = "randomization"
    alpha: float = 0.05
    max_drops: tuple[str, ...] = ()
    permutations: int = 10000
    seed: int = DEFAULT_SEED
    precision: int = 4
    confidence: float | None = None


def run(qrels: str, runs: list[str], request: CheckRequest, options: Options) -> Outcome:
    """Evaluate the baseline and the candidates ``runs``; test each candidate against the
    baseline. ``extras["verdicts"]``: one :class:`Verdict` per candidate and gate.

    Rows (qid ``all``, run = candidate, other = baseline): ``M`` (mean RPP(candidate,
    baseline)) or ``M_diff`` (mean metric difference) and ``M_p`` for each tested measure,
    and ``M_drop`` (baseline minus candidate, in the worse direction) for each --max-drop,
    with ``M_drop_bound`` (its one-sided upper bound) under a confidence level.
    """
    max_drops = parse_max_drops(request.max_drops)
    if not 0 < request.alpha < 1:
        raise InputError(f"--alpha must be in (0, 1) (got {request.alpha:g})")
    confidence = request.confidence
    if confidence is not None:
        if not 0 < confidence < 1:
            raise InputError(f"--confidence must be in (0, 1) (got {confidence:g})")
        if not max_drops:
            raise InputError("--confidence sets the level of the --max-drop gates' bound: "
                             "give --max-drop MEASURE=DELTA")
    if request.baseline in runs:
        raise InputError("the baseline is also given as a candidate", path=request.baseline)
    tested, dropped = _gates(list(request.measures), max_drops)
    wanted = list({m.name: m for m in tested + dropped}.values())
    notes: list[str] = []
    # no relevant item: relevance measures are 0 for every run, a gate that could not fail
    ctx = evaluate_runs(qrels, [request.baseline, *runs], wanted, options, False, notes,
                        need_relevant=True, statistics=True)
    coll = ctx.collection
    _refuse_unjudged_runs(coll)
    _refuse_blind_gates(coll.judged.grade, tested, dropped, [name for name, _ in max_drops])
    if confidence is not None:
        _refuse_unpassable(ctx, dropped, confidence)
    names = _significance_gates(ctx, tested, request, bool(max_drops), notes)
    _refuse_indistinguishable(ctx, [*names, *((m.studied[0], False) for m in dropped)])
    results = Results(coll.qids, coll.run_names)
    verdicts: list[Verdict] = []
    for c in range(1, len(coll.run_names)):
        verdicts += _tested(ctx, results, c, names, wanted, request)
        if confidence is None:
            verdicts += _dropped(ctx, results, c, max_drops, dropped, request.precision)
        else:
            verdicts += _non_inferior(ctx, results, c, max_drops, dropped, request.precision,
                                      confidence)
    return Outcome(results, notes, {"verdicts": verdicts})


def _gates(measure_names: list[str], max_drops: list[tuple[str, float]]
           ) -> tuple[list[Measure], list[Measure]]:
    """The measures tested (``-m``, default rpp) and the one metric of each --max-drop; a gate
    that could not fail (no per-query values, the same for every run) is an InputError."""
    tested = resolve(measure_names or ["rpp"])
    untestable = [out for m in tested if not m.per_query_values for out in m.outputs]
    if untestable or not tested:
        raise InputError(f"measure '{(untestable or measure_names or ['?'])[0]}' has no "
                         "per-query values: a gate on it could not fail")
    fixed = [out for m in tested if m.run_independent for out in m.outputs]
    if fixed:
        raise InputError(f"measure '{fixed[0]}' is counted from the qrels, the same for every "
                         "run: a gate on it could not fail")
    drop_measures = [resolve([name]) for name, _ in max_drops]
    for (name, _), found in zip(max_drops, drop_measures):
        if len(found) != 1 or found[0].kind != "metric" or len(found[0].studied) != 1 \
                or not found[0].per_query_values or found[0].run_independent:
            raise InputError(f"--max-drop '{name}': needs one per-run metric with per-query "
                             "values that depend on the run (e.g. map, P.10)")
    return tested, [found[0] for found in drop_measures]


def _significance_gates(ctx: Context, tested: list[Measure], request: CheckRequest,
                        has_drops: bool, notes: list[str]) -> list[tuple[str, bool]]:
    """The (output name, is preference) pairs the significance gate tests; none, with a note,
    when the smallest p-value the test can give is not below alpha and a --max-drop decides
    (without one, an InputError: that gate could not fail)."""
    coll = ctx.collection
    names = testable(ctx, tested, notes)
    # the fewest queries on which a tested measure can tell two runs apart
    n_queries = min((_queries_that_can_differ(coll, tested, name, n)
                     for (name, _), n in zip(names, query_counts(ctx, names))),
                    default=len(coll.qids))
    floor = smallest_p(request.test, n_queries, request.permutations)
    if floor < request.alpha:
        return names
    why = (f"with {n_queries} queries that can tell runs apart (those with a relevant "
           f"item) and {request.permutations} permutations the smallest "
           f"p-value {request.test} can give is {floor:.4g}, not below alpha "
           f"{request.alpha:g}")
    if not has_drops:
        raise InputError(f"the significance gate could not fail: {why} (use more queries "
                         "or permutations, or --max-drop)")
    notes.append(f"significance not tested: {why}; --max-drop alone decides")
    return []


def _tested(ctx: Context, results: Results, c: int, names: list[tuple[str, bool]],
            wanted: list[Measure], request: CheckRequest) -> list[Verdict]:
    """Candidate ``c`` against the baseline on every tested measure: its effect and p-value
    rows in ``results``, and a verdict each (FAIL when significantly worse)."""
    test, alpha, precision = request.test, request.alpha, request.precision
    p_digits = max(precision, 4)  # a p of 0.28 is never 'p 0' (--precision 0) in a verdict
    cand = ctx.collection.run_names[c]
    verdicts = []
    for name, is_pref in names:
        values = _pair(ctx.tensors[name] if is_pref else ctx.metrics[name], c)
        effect = float(mean_preference(pair_values(values))[0])  # candidate vs baseline
        p = float(significance(values, test, request.permutations,
                               np.random.default_rng(request.seed))[0])
        results.add(name if is_pref else f"{name}_diff", -1, [c], [effect], [0])
        results.add(f"{name}_p", -1, [c], [p], [0])
        better = is_pref or _higher_is_better(wanted, name)
        worse = (effect < 0 if better else effect > 0) and p < alpha
        verdicts.append(Verdict(cand, name, not worse,
                                f"effect {effect:+.{precision}f}, {p_text(p, p_digits)} "
                                f"({test}, alpha {alpha:g})"
                                + (": significantly worse" if worse else ""),
                                (name if is_pref else f"{name}_diff", f"{name}_p"),
                                numbers=(("effect", effect), ("p", p))))
    return verdicts


def _dropped(ctx: Context, results: Results, c: int, max_drops: list[tuple[str, float]],
             dropped: list[Measure], precision: int) -> list[Verdict]:
    """Candidate ``c`` against the baseline on every --max-drop: its drop row in ``results``
    and a verdict each (FAIL when the drop exceeds the delta)."""
    run_names = ctx.collection.run_names
    verdicts = []
    for (_, delta), m in zip(max_drops, dropped):
        out, base, mine, drop = _drop(ctx, m, c)
        # a drop equal to the delta passes; float rounding (0.8 - 0.7 is 0.1 + 9e-17)
        # decides nothing: within TIE_TOLERANCE of the magnitudes is equal, as for ties
        allowed = delta + TIE_TOLERANCE * max(abs(base), abs(mine), delta)
        results.add(f"{out}_drop", -1, [c], [drop], [0])
        verdicts.append(Verdict(run_names[c], out, drop <= allowed,
                                f"drop {drop:+.{precision}f} (allowed {delta:g})",
                                (f"{out}_drop",), "max_drop",
                                (("drop", drop), ("delta", delta))))
    return verdicts


def _drop(ctx: Context, m: Measure, c: int) -> tuple[str, float, float, float]:
    """The output ``m`` gates, the baseline's and candidate ``c``'s values as rpp eval prints
    them (a mean, or the sum for trec_eval's counts such as num_ret) and the drop between
    them (positive: the candidate is worse)."""
    out, names = m.studied[0], ctx.collection.run_names
    base, mine = (ctx.results.value(out, ALL, run) for run in (names[0], names[c]))
    return out, base, mine, base - mine if m.higher_is_better else mine - base


def per_query_drops(values: np.ndarray, c: int, higher_is_better: bool) -> np.ndarray:
    """(Q,) candidate ``c``'s per-query drop from the baseline (run 0) on a metric's (Q, R)
    values: baseline minus candidate, or candidate minus baseline where lower is better;
    within the tie tolerance of the values, exactly 0 (as :func:`pair_values`)."""
    diff = pair_values(_pair(values, c))[:, 0]  # candidate minus baseline
    return -diff if higher_is_better else diff


def non_inferior(drops: np.ndarray, delta: float, confidence: float,
                 estimate: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(bound, passed), each (T,): the decision of T non-inferiority gates on the columns of
    per-query drops ``drops`` (Q, T): the one-sided upper t bound of the mean drop at
    ``confidence`` (centred on ``estimate`` when given), and whether it is below ``delta``,
    which rejects "the candidate is worse by delta or more" at level 1 - confidence."""
    bound = upper_bound(drops, confidence, estimate)
    return bound, bound < delta


def _non_inferior(ctx: Context, results: Results, c: int, max_drops: list[tuple[str, float]],
                  dropped: list[Measure], precision: int, confidence: float) -> list[Verdict]:
    """Candidate ``c`` against the baseline on every --max-drop as a non-inferiority test:
    its drop and the drop's one-sided upper t bound at ``confidence`` in ``results``, and a
    verdict each, PASS only when the bound is below the delta. The bound is the mean
    per-query drop's (scaled to the sum for trec_eval's counts, as the drop is printed)."""
    run_names = ctx.collection.run_names
    verdicts = []
    for (_, delta), m in zip(max_drops, dropped):
        out, _, _, drop = _drop(ctx, m, c)
        per_query = per_query_drops(ctx.metrics[out], c, m.higher_is_better)
        n = len(per_query)
        scale = n if is_count(out) else 1  # the drop of a sum over the queries
        bounds, passes = non_inferior(per_query[:, None] * scale, delta, confidence,
                                      np.array([drop]))
        bound, passed = float(bounds[0]), bool(passes[0])
        results.add(f"{out}_drop", -1, [c], [drop], [0])
        results.add(f"{out}_drop_bound", -1, [c], [bound], [0])
        verdicts.append(Verdict(
            run_names[c], out, passed,
            f"drop {drop:+.{precision}f}, {100 * confidence:g}% upper bound "
            f"{bound:+.{precision}f} {'<' if passed else '>='} {delta:g} (one-sided t, "
            f"{n} queries)" + ("" if passed else ": not shown non-inferior"),
            (f"{out}_drop", f"{out}_drop_bound"), "max_drop",
            (("drop", drop), ("delta", delta), ("bound", bound), ("confidence", confidence))))
    return verdicts


def _refuse_unpassable(ctx: Context, dropped: list[Measure], confidence: float) -> None:
    """A non-inferiority gate on fewer than 2 queries could not pass: one value has no
    spread, so the t bound has no degrees of freedom (a gate that cannot pass is refused as
    one that cannot fail is)."""
    for m in dropped:
        n = len(ctx.metrics[m.studied[0]])
        if n < 2:
            raise InputError(f"--max-drop '{m.studied[0]}' with --confidence {confidence:g}: "
                             f"{n} {'query' if n == 1 else 'queries'}, and the one-sided t "
                             "bound needs 2 or more, so the gate could not pass")


def _queries_that_can_differ(coll: Collection, measures: list[Measure], output: str, averaged: int
                             ) -> int:
    """Of the ``averaged`` queries ``output`` averages over, those whose value some ranking
    could change. trec_eval's and ir_measures' measures average over every query of the
    qrels, and one with no judgment at the measure's level scores 0 whatever is ranked: such
    queries would pad Q in 2 / 2^Q, a gate that looks as if it could fail but cannot. rpp's
    own measures average over the queries with a relevant item already."""
    m = next(m for m in measures if output in m.outputs)
    if not m.all_queries or m.counts_retrieved or m.custom_gains:
        return averaged  # custom gains may weigh grade 0: every query counts
    level = 1 if m.gain_weighted else pytrec_level(coll.level if m.level is None else m.level)
    judged = coll.judged
    relevant = np.trunc(np.nan_to_num(judged.grade, nan=-np.inf)) >= level  # trec_eval's atol
    return int(np.count_nonzero(np.bincount(judged.query[relevant],
                                            minlength=len(judged.qids))))


def _refuse_blind_gates(grades: np.ndarray, tested: list[Measure], dropped: list[Measure],
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


LIKELY_CAUSE = "another collection's ids, or the wrong qrels?"


def _refuse_unjudged_runs(coll: Collection) -> None:
    """A baseline or candidate that ranks no judged document (on the queries of the qrels)
    makes a gate that could not fail: it scores as an empty ranking on every query, whatever
    the other run ranks. The likely cause is a run of another collection."""
    n_judged = len(coll.judged.grade)  # judged documents have codes 0..J-1
    for r, rows in enumerate(coll.runs):
        if not np.any(rows.doc < n_judged):
            role = "the baseline" if r == 0 else "candidate"
            raise InputError(f"{role} '{coll.run_names[r]}' ranks no document judged in the "
                             f"qrels ({LIKELY_CAUSE}), so a gate on it could not fail")


def _refuse_indistinguishable(ctx: Context, gated: list[tuple[str, bool]]) -> None:
    """A candidate that, like the baseline, ranks no relevant document, and ties it on every
    query of every gated output, could not fail whatever it ranked among the unjudged and
    non-relevant documents: no query can tell the two apart. Identical rankings that reach
    relevant documents are a tie the gate saw, and pass."""
    coll = ctx.collection
    reached = (coll.ranks[:, coll.relevant] > 0).any(axis=1)  # (R,) ranks a relevant item
    if reached[0]:
        return
    for c in range(1, len(coll.run_names)):
        if reached[c] or not all(
                np.all(pair_values(_pair(ctx.tensors[n] if pref else ctx.metrics[n], c)) == 0)
                for n, pref in gated):
            continue
        raise InputError(f"neither the baseline '{coll.run_names[0]}' nor candidate "
                         f"'{coll.run_names[c]}' ranks a relevant document, so no query can "
                         f"tell them apart and the gate could not fail ({LIKELY_CAUSE})")


def _pair(values: np.ndarray, c: int) -> np.ndarray:
    """The (candidate, baseline) slice of a (Q, R) or (Q, R, R) array, candidate first."""
    return of_runs(values, [c, 0])


def _higher_is_better(measures: list[Measure], output: str) -> bool:
    """Whether a larger ``output`` is better for every measure that gives it."""
    return all(m.higher_is_better for m in measures if output in m.outputs)

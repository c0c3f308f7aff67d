"""A table for a paper or a pull request (``rpp compare --view paper``): one row per run, one
column per measure, the best value per measure in bold, and after each value the letters of
the runs it beats significantly; optionally (``rpp compare --ci``) each value's interval in
brackets, or a dagger on the runs whose difference from run (a) has an interval excluding 0.
LaTeX (a full ``table`` with caption and label; needs booktabs) or Markdown."""
from __future__ import annotations

from dataclasses import dataclass
from string import ascii_lowercase

from ..results import ALL, Results
from .common import number
from .escape import latex as escape
from .escape import markdown as markdown_text


@dataclass(frozen=True)
class Column:
    """One measure: the value shown per run and whether lower is better."""

    name: str  # as printed in the header
    value_measure: str  # the rows of the evaluation holding the value (M, or M_win)
    effect_measure: str  # the rows of the comparison holding the effect (M or M_diff)
    p_measure: str
    lower_is_better: bool = False
    low_measure: str = ""  # the rows of the comparison holding the pair's interval (M_ci_low)
    high_measure: str = ""


# What a cell may carry besides its value and letters: a dagger, and an interval.
Extra = tuple[bool, "tuple[float, float] | None"]


def cells(evaluation: Results, comparison: Results, columns: list[Column], alpha: float
          ) -> tuple[list[str], list[list[tuple[float, bool, str]]]]:
    """Runs (in order), and per run and column: (value, best?, letters of runs beaten)."""
    runs = evaluation.runs
    value = {(m, r): v for m, q, r, o, v in evaluation.rows() if q == ALL and o is None}
    pair = {(m, r, o): v for m, q, r, o, v in comparison.rows() if q == ALL and o is not None}
    letter = {run: _letter(i) for i, run in enumerate(runs)}
    joiner = "" if len(runs) <= len(ascii_lowercase) else ","  # aa: {a, a}, or run 27?
    table = []
    for run in runs:
        row = []
        for c in columns:
            v = value[(c.value_measure, run)]
            shown = [value[(c.value_measure, r)] for r in runs]
            best = v == (min(shown) if c.lower_is_better else max(shown))
            beaten = joiner.join(letter[o] for o in runs if o != run
                             and pair[(c.p_measure, run, o)] < alpha
                             and (pair[(c.effect_measure, run, o)] < 0 if c.lower_is_better
                                  else pair[(c.effect_measure, run, o)] > 0))
            row.append((v, best, beaten))
        table.append(row)
    return runs, table


def _letter(i: int) -> str:
    """Run i's letter: a..z, then aa..zz, aaa..."""
    return ascii_lowercase[i % 26] * (i // 26 + 1)


TEST_NAMES = {"ttest": "paired t-test", "randomization": "paired randomization test",
              "hsd": "randomized Tukey HSD test", "wilcoxon": "Wilcoxon signed-rank test",
              "sign": "sign test"}
CORRECTION_NAMES = {"bonferroni": "Bonferroni", "holm": "Holm", "bh": "Benjamini-Hochberg",
                    "by": "Benjamini-Yekutieli"}
INTERVAL_NAMES = {"t": "t-interval", "percentile": "bootstrap percentile interval",
                  "bca": "bootstrap BCa interval"}


def daggers(runs: list[str], comparison: Results, columns: list[Column]) -> list[list[bool]]:
    """Per run and column: whether the interval of the run's difference from the first run
    (its ``low_measure``/``high_measure`` rows) excludes 0; never for the first run."""
    pair = {(m, r, o): v for m, q, r, o, v in comparison.rows() if q == ALL and o is not None}
    return [[i > 0 and (pair[(c.low_measure, run, runs[0])] > 0
                        or pair[(c.high_measure, run, runs[0])] < 0) for c in columns]
            for i, run in enumerate(runs)]


def interval_caption(shown: str, method: str, level: float) -> str:
    """The caption's sentence on what ``shown`` (``interval`` or ``dagger``) marks."""
    what = f"{100 * level:g}% {INTERVAL_NAMES[method]}"
    if shown == "dagger":
        return (f"\u2020: the {what} of the mean paired difference from run (a) excludes 0 "
                "(for a preference measure, of the mean RPP(run, a)).")
    return (f"Brackets: the {what} of the mean over queries (for a preference measure, of "
            "the mean per-query win rate).")


def caption(n_queries: list[int], test: str, correction: str, alpha: float) -> str:
    """The table's caption; ``n_queries``: the query counts the columns average over (two
    when trec_eval's measures keep queries without a relevant item, contract §6). It names
    the trec_eval release in force, whose numbers trec_eval's measures are."""
    from ..settings import trec_eval_release

    fixed = f", {correction.capitalize()} correction" if correction != "none" else ""
    over = (f"{n_queries[0]} queries" if len(n_queries) == 1 else
            f"{n_queries[0]} queries with a relevant item (trec_eval's and "
            f"ir_measures' measures: all {n_queries[-1]} queries of the qrels)")
    return (f"Mean over {over} (for a preference measure, the win rate). Bold: "
            f"the best run per measure. Letters: the runs this run is significantly better than "
            f"({TEST_NAMES.get(test, test)}{fixed}, p < {alpha:g}). trec_eval's measures as "
            f"trec_eval {trec_eval_release()} computes them.")


def _extras(table, extras: list[list[Extra]] | None) -> list[list[Extra]]:
    """``extras``, or no dagger and no interval for every cell."""
    return extras or [[(False, None)] * len(row) for row in table]


def _signed(value: float, precision: int) -> str:
    """A number in a LaTeX cell, its minus sign typeset as math."""
    return number(value, precision).replace("-", "$-$", 1)


def latex(runs: list[str], table, columns: list[Column], precision: int, text: str,
          extras: list[list[Extra]] | None = None) -> str:
    """The table as a LaTeX ``table`` (``extras``: per cell, a dagger and an interval)."""
    head = " & ".join(["", "Run", *(escape(c.name) for c in columns)]) + r" \\"
    body = []
    for i, (run, row) in enumerate(zip(runs, table)):
        out = []
        for (v, best, beaten), (dagger, ends) in zip(row, _extras(table, extras)[i]):
            cell = _signed(v, precision)
            cell = rf"\textbf{{{cell}}}" if best else cell
            marks = (r"\dagger" if dagger else "") + (rf"\mathrm{{{beaten}}}" if beaten else "")
            cell += rf"$^{{{marks}}}$" if marks else ""
            out.append(cell + (f" {{[}}{_signed(ends[0], precision)}, "
                               f"{_signed(ends[1], precision)}{{]}}" if ends else ""))
        body.append(" & ".join([f"({_letter(i)})", escape(run), *out]) + r" \\")
    return "\n".join([r"\begin{table}", r"\centering", rf"\caption{{{escape(text)}}}",
                      r"\label{tab:rpp-compare}", r"\begin{tabular}{ll" + "r" * len(columns) + "}",
                      r"\toprule", head, r"\midrule", *body, r"\bottomrule", r"\end{tabular}",
                      r"\end{table}"]) + "\n"


def markdown(runs: list[str], table, columns: list[Column], precision: int, text: str,
             extras: list[list[Extra]] | None = None) -> str:
    """The table in Markdown, the caption below (``extras`` as :func:`latex`)."""
    lines = ["| | Run | " + " | ".join(markdown_text(c.name) for c in columns) + " |",
             "|---|---|" + "---:|" * len(columns)]
    for i, (run, row) in enumerate(zip(runs, table)):
        out = []
        for (v, best, beaten), (dagger, ends) in zip(row, _extras(table, extras)[i]):
            cell = number(v, precision)
            cell = f"**{cell}**" if best else cell
            cell += ("\u2020" if dagger else "") + (f"<sup>{beaten}</sup>" if beaten else "")
            out.append(cell + (f" \\[{number(ends[0], precision)}, "
                               f"{number(ends[1], precision)}\\]" if ends else ""))
        lines.append(f"| ({_letter(i)}) | {markdown_text(run)} | " + " | ".join(out) + " |")
    return "\n".join(lines) + f"\n\n{text}\n"

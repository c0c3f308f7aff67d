"""A table for a paper or a pull request (``rpp compare --view paper``): one row per run, one
column per measure, the best value per measure in bold, and after each value the letters of
the runs it beats significantly. LaTeX (a full ``table`` with caption and label; needs
booktabs) or Markdown."""
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
              "hsd": "randomized Tukey HSD test"}


def caption(n_queries: list[int], test: str, correction: str, alpha: float) -> str:
    """The table's caption; ``n_queries``: the query counts the columns average over (two
    when trec_eval's measures keep queries without a relevant item, contract §6)."""
    fixed = f", {correction.capitalize()} correction" if correction != "none" else ""
    over = (f"{n_queries[0]} queries" if len(n_queries) == 1 else
            f"{n_queries[0]} queries with a relevant item (trec_eval's and "
            f"ir_measures' measures: all {n_queries[-1]} queries of the qrels)")
    return (f"Mean over {over} (for a preference measure, the win rate). Bold: "
            f"the best run per measure. Letters: the runs this run is significantly better than "
            f"({TEST_NAMES.get(test, test)}{fixed}, p < {alpha:g}).")


def latex(runs: list[str], table, columns: list[Column], precision: int, text: str) -> str:
    head = " & ".join(["", "Run", *(escape(c.name) for c in columns)]) + r" \\"
    body = []
    for i, (run, row) in enumerate(zip(runs, table)):
        out = []
        for v, best, beaten in row:
            cell = number(v, precision).replace("-", "$-$", 1)
            cell = rf"\textbf{{{cell}}}" if best else cell
            out.append(cell + (rf"$^{{\mathrm{{{beaten}}}}}$" if beaten else ""))
        body.append(" & ".join([f"({_letter(i)})", escape(run), *out]) + r" \\")
    return "\n".join([r"\begin{table}", r"\centering", rf"\caption{{{escape(text)}}}",
                      r"\label{tab:rpp-compare}", r"\begin{tabular}{ll" + "r" * len(columns) + "}",
                      r"\toprule", head, r"\midrule", *body, r"\bottomrule", r"\end{tabular}",
                      r"\end{table}"]) + "\n"


def markdown(runs: list[str], table, columns: list[Column], precision: int, text: str) -> str:
    lines = ["| | Run | " + " | ".join(markdown_text(c.name) for c in columns) + " |",
             "|---|---|" + "---:|" * len(columns)]
    for i, (run, row) in enumerate(zip(runs, table)):
        out = []
        for v, best, beaten in row:
            cell = number(v, precision)
            cell = f"**{cell}**" if best else cell
            out.append(cell + (f"<sup>{beaten}</sup>" if beaten else ""))
        lines.append(f"| ({_letter(i)}) | {markdown_text(run)} | " + " | ".join(out) + " |")
    return "\n".join(lines) + f"\n\n{text}\n"

"""Pictures (PNG, matplotlib's Agg backend): the aggregate preference matrix as an annotated
heatmap, ``rpp meta``'s panels (robustness, power, agreement, the paper's Fig. 2 ECDF of
differences), and ``rpp levels``' figures (Fig. 4b for one query, the pooled ECDF otherwise).

matplotlib is optional (``pip install matplotlib``, the ``plot`` extra): :func:`require` turns its absence
into one line and exit status 2 before any work is done. Every name drawn (runs, measures)
goes through :func:`.escape.plot_label` first: it is drawn as written, never as mathtext.
"""
from __future__ import annotations

import os
import re
import textwrap
import warnings

from typing import Mapping, Sequence

import numpy as np

from ..errors import InputError
from ..results import ALL, Results
from .escape import ident, plot_label
from .files import check_writable, replaced_whole

MISSING = "--plot needs matplotlib: pip install matplotlib"


def require() -> None:
    """Fail early, with the install command, when matplotlib is not installed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise InputError(MISSING) from None


def _pyplot():
    """pyplot on the Agg backend (files only, no display needed)."""
    require()
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


FORMATS = ("png", "pdf", "svg")


def image_format(path: str) -> str:
    """The format of a plot file, from its extension (``.png``, ``.pdf``, ``.svg``)."""
    ext = os.path.splitext(path)[1].lower().lstrip(".")
    if ext not in FORMATS:
        raise InputError(f"--plot: the file name must end in .png, .pdf or .svg (got '{path}')")
    return ext


def check(path: str) -> None:
    """Everything ``--plot FILE`` needs, checked before any work: a known extension,
    matplotlib, and a path that can be written."""
    image_format(path)
    require()
    check_writable(path, "the plot")


def _save(fig, path: str) -> list[str]:
    """Write ``fig`` to ``path`` in the format its extension names, whole or not at all
    (:func:`.files.replaced_whole`), and free it; an unwritable path is bad input. Returns
    the notes for stderr: characters of names that no installed font has (matplotlib warns
    once per glyph, with a source line, whatever -Q says) become one note."""
    plt = _pyplot()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            with replaced_whole(path, "the plot") as out:
                fig.savefig(out, format=image_format(path))
    finally:
        plt.close(fig)
    missing, others = [], []
    for w in caught:
        glyph = _MISSING_GLYPH.search(str(w.message))
        (missing if glyph else others).append(glyph[1] if glyph else str(w.message))
    notes = [f"{path}: {m}" for m in dict.fromkeys(others)]
    if missing:
        chars = "".join(dict.fromkeys(missing))
        notes.append(f"{path}: no installed font has {len(chars)} of the characters of the "
                     f"names ({chars[:20]}): drawn as boxes")
    return notes


_MISSING_GLYPH = re.compile(r"Glyph \d+ \((.)\) missing from font")


def win_rates(matrix: np.ndarray) -> np.ndarray:
    """Row means over the other runs: the win rates (contract §5) of an aggregate matrix."""
    return np.nanmean(np.where(np.eye(len(matrix), dtype=bool), np.nan, matrix), axis=1)


def win_order(matrix: np.ndarray, names: Sequence[str]) -> list[int]:
    """Run indexes by win rate, best first; ties broken by run name (contract §5)."""
    win = win_rates(matrix).tolist()
    return sorted(range(len(names)), key=lambda i: (-win[i], names[i]))


MAX_HEATMAP_RUNS = 40  # more would make a figure nobody can read, and a slow one


def preference_heatmap(results: Results, path: str, measure: str | None = None) -> list[str]:
    """Annotated heatmap of the aggregate matrix of ``measure`` (default: the first preference
    measure), runs ordered by win rate on both axes, written to ``path``."""
    choices = results.pair_measures()
    if not choices:
        raise InputError("--plot needs a preference measure (e.g. -m rpp) and two or more runs")
    measure = measure or choices[0]
    if measure not in choices:
        raise InputError(f"--plot-measure {measure}: not a preference measure of this "
                         f"evaluation (choose from {', '.join(choices)})")
    matrix = results.pair_grid(measure)
    title = plot_label(measure)
    win_all = win_rates(matrix)
    order = win_order(matrix, results.runs)
    shown = order[:MAX_HEATMAP_RUNS]  # a readable figure of bounded size: the best runs
    matrix = matrix[np.ix_(shown, shown)]
    win = win_all[shown]
    order = shown
    names = [plot_label(results.runs[i]) for i in order]
    labels = [f"{n} ({w:+.2f})" for n, w in zip(names, win)]
    plt = _pyplot()
    n = len(names)
    side = 3.0 + 0.45 * n  # room for the title and the colour bar even with two runs
    fig, ax = plt.subplots(figsize=(side + 3.2, side + 2.0), dpi=120, layout="constrained")
    limit = float(np.nanmax(np.abs(matrix))) or 1.0  # symmetric, to the largest |value|
    cmap = plt.get_cmap("RdBu").with_extremes(bad="0.85")  # grey: no run is paired with itself
    image = ax.imshow(matrix, cmap=cmap, vmin=-limit, vmax=limit)
    ax.set_xticks(range(n), names, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(n), labels)
    ax.set_xlabel("column run")
    ax.set_ylabel("row run (win rate)")
    cut = (f"\nthe top {n} of {len(results.runs)} runs by win rate (over all runs)"
           if len(results.runs) > n else "; runs by win rate")
    ax.set_title(f"{title}: row vs column run, mean over queries\n"
                 f"> 0: row preferred{cut}")
    size = max(6.0, min(9.0, 60.0 / n))
    for i, j in zip(*np.nonzero(np.isfinite(matrix))):
        value = matrix[i, j]
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=size,
                color="white" if abs(value) > 0.6 * limit else "black")
    fig.colorbar(image, ax=ax, shrink=0.8,
                 label=f"{title}(row, column); scale ±{limit:.2f}, the largest |value|")
    return _save(fig, path)


def _legend(ax, handles: list, **options) -> None:
    """A legend of the data lines ``handles`` under their labels, those starting with ``_``
    included (matplotlib's own collection would leave them out: a measure or run could
    vanish from it; reference lines such as a line at 0 are not in ``handles``)."""
    ax.legend(handles, [line.get_label() for line in handles], **options)


def robustness_curves(results: Results, path: str,
                      scatter: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] | None = None,
                      differences: Mapping[str, np.ndarray] | None = None) -> list[str]:
    """``rpp meta --plot``: one panel per analysis computed: tau against the queries kept and
    against the judged fraction kept (one line per measure), discriminative power per measure
    (t-test and HSD), the agreement (Kendall's tau) between measures, the paper's Fig. 2
    (``differences``: per measure, the per-query difference of every run pair a < b), and per
    (preference measure, metric) the per-query RPP against the metric difference of every run
    pair (``scatter``: (metric differences, preferences))."""
    panels = _meta_panels(results)
    shown = difference_distributions(differences or {})
    if shown:
        panels.append(lambda ax, fig: _ecdfs(ax, shown))
    for (pref, metric), (x, y) in (scatter or {}).items():
        panels.append(lambda ax, fig, p=pref, m=metric, x=x, y=y: _scatter(ax, p, m, x, y))
    if not panels:
        raise InputError("--plot draws meta's analyses: none with a figure was computed")
    plt = _pyplot()
    cols = 1 if len(panels) == 1 else 2
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.3 * rows), dpi=120,
                             layout="constrained", squeeze=False)
    for ax, draw in zip(axes.ravel(), panels):
        draw(ax, fig)
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    return _save(fig, path)


def _meta_panels(results: Results) -> list:
    """Functions drawing one panel each, for the analyses found in ``results``."""
    rows = [row for row in results.rows() if row[1] == ALL]
    panels = []
    for prefix, xlabel in (("robust_queries_", "queries kept"),
                           ("robust_judged_", "fraction of relevant judgments kept")):
        series: dict[str, tuple[list[float], list[float]]] = {}
        for measure, _, run, other, value in rows:
            if measure.startswith(prefix) and other is None:
                xs, ys = series.setdefault(run, ([], []))
                xs.append(float(measure[len(prefix):]))
                ys.append(value)
        if series:
            panels.append(lambda ax, fig, s=series, x=xlabel: _lines(ax, s, x))
    power = {m: {run: v for name, _, run, o, v in rows if name == m and o is None}
             for m in ("power_ttest", "power_hsd")}
    if any(power.values()):
        panels.append(lambda ax, fig: _bars(ax, power))
    agreement = {(run, other): v for name, _, run, other, v in rows
                 if name == "agreement_tau" and other is not None}
    if agreement:
        panels.append(lambda ax, fig: _agreement(ax, fig, agreement))
    return panels


def difference_distributions(differences: Mapping[str, np.ndarray]
                             ) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The series of the paper's Fig. 2: per measure, the ECDF (sorted x, share <= x) of its
    per-query differences over every ordered pair of runs (a pair a < b and its reverse, so
    the curve does not depend on the order of the runs). Measures whose differences leave
    [−1, 1] (asl, counts) are left out: they do not share the axis."""
    out = {}
    for measure, d in differences.items():
        if len(d) and np.all(np.abs(d) <= 1):
            x = np.sort(np.concatenate((d, -d)))
            out[measure] = (x, np.arange(1, len(x) + 1) / len(x))
    return out


def _ecdfs(ax, shown: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> None:
    handles = [ax.step(x, y, where="post", linewidth=1.3, label=plot_label(measure))[0]
               for measure, (x, y) in shown.items()]
    ax.axvline(0, color="grey", linewidth=0.6)
    ax.set_xlim(-1, 1)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("per-query difference: M(a, b) for preferences, m(a) − m(b) for metrics")
    ax.set_ylabel("share of (query, ordered run pair) ≤ x")
    ax.set_title("Distribution of differences over all run pairs (paper Fig. 2)")
    ax.grid(alpha=0.3)
    _legend(ax, handles, fontsize=8, frameon=False)


def _scatter(ax, pref: str, metric: str, x: np.ndarray, y: np.ndarray) -> None:
    """Per-query preference against metric difference, one point per (query, run pair)."""
    ax.scatter(x, y, s=6, alpha=0.35, linewidths=0)
    ax.axhline(0, color="grey", linewidth=0.6)
    ax.axvline(0, color="grey", linewidth=0.6)
    same = float(np.mean(np.sign(x) == np.sign(y))) if len(x) else float("nan")
    pref, metric = plot_label(pref), plot_label(metric)
    ax.set_xlabel(f"{metric}(a) - {metric}(b), per query")
    ax.set_ylabel(f"{pref}(a, b), per query")
    ax.set_title(f"{pref} against {metric}: same sign on {same:.0%} of {len(x)} points")
    ax.grid(alpha=0.3)


def _lines(ax, series, xlabel: str) -> None:
    handles = []
    for label, (x, y) in series.items():
        order = np.argsort(x)
        handles += ax.plot(np.array(x)[order], np.array(y)[order], marker="o", markersize=3,
                           label=plot_label(label))
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Kendall's tau-b with the full ordering")
    ax.set_title(f"Robustness: {xlabel}")
    ax.grid(alpha=0.3)
    _legend(ax, handles, fontsize=8, frameon=False)


def _bars(ax, power: dict[str, dict[str, float]]) -> None:
    measures = list(dict.fromkeys(m for values in power.values() for m in values))
    width = 0.8 / len(power)
    for k, (name, values) in enumerate(power.items()):
        ax.bar(np.arange(len(measures)) + k * width, [values.get(m, np.nan) for m in measures],
               width, label=name.replace("power_", ""))
    ax.set_xticks(np.arange(len(measures)) + width * (len(power) - 1) / 2,
                  [plot_label(m) for m in measures], rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("pairs of runs significantly different")
    ax.set_title("Discriminative power")
    ax.legend(fontsize=8, frameon=False)


def _agreement(ax, fig, agreement: dict[tuple[str, str], float]) -> None:
    names = list(dict.fromkeys(m for pair in agreement for m in pair))
    grid = np.array([[1.0 if a == b else agreement.get((a, b), agreement.get((b, a), np.nan))
                      for b in names] for a in names])
    image = ax.imshow(grid, cmap="viridis", vmin=-1, vmax=1)
    labels = [plot_label(name) for name in names]
    ax.set_xticks(range(len(names)), labels, rotation=30, ha="right")
    ax.set_yticks(range(len(names)), labels)
    for i, j in zip(*np.nonzero(np.isfinite(grid))):
        ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=8,
                color="black" if grid[i, j] > 0.3 else "white")
    ax.set_title("Agreement of the orderings (Kendall's tau)")
    fig.colorbar(image, ax=ax, shrink=0.8)


def difference_ecdf(path: str, difference: np.ndarray, runs: tuple[str, str],
                    shares: np.ndarray, n_queries: int) -> list[str]:
    """``rpp levels --plot`` over several queries: the ECDF of the per-level differences
    f_i^b − f_i^a (positive where run a is ahead) pooled over every query, population and
    level, on a symlog axis (they span 1..n), a line at 0, and the shares of levels where a is
    ahead, b is ahead, they tie (``shares``) in the title. Not a figure of the paper (its Fig.
    4b is one query: :func:`level_differences`), and titled so."""
    a, b = (plot_label(run) for run in runs)
    x = np.sort(difference)
    edge = _symlog_axis_edge(x)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120, layout="constrained")
    ax.step(np.concatenate(([-edge], x, [edge])),
            np.concatenate(([0.0], np.arange(1, len(x) + 1) / len(x), [1.0])),
            where="post", color="tab:blue", linewidth=1.6)
    ax.axvline(0, color="0.25", linewidth=1.0, linestyle="--")
    _symlog(ax.xaxis, ax.set_xscale, ax.set_xlim, edge)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.set_xlabel(_wrapped(f"f_i({b}) − f_i({a}), worst-case positions at recall level i "
                           f"(symlog)\n← {b} ahead  |  {a} ahead →"))
    ax.set_ylabel("share of levels ≤ x")
    queries = f"{n_queries} {'query' if n_queries == 1 else 'queries'}"
    ax.set_title(_wrapped(f"{a} vs {b}: ECDF of {len(x)} recall levels pooled over {queries}\n"
                          f"{_shares_text(a, b, shares)} (the paper's Fig. 4b is one query: "
                          "--query)"))
    return _save(fig, path)


def level_differences(path: str, series: Mapping[str, tuple[np.ndarray, np.ndarray]],
                      runs: tuple[str, str], qid: str, shares: np.ndarray) -> list[str]:
    """``rpp levels --query Q --plot``: the paper's Fig. 4b, f_i^b − f_i^a against the
    recall level i for one query, one series per population (``series``: {label: (i,
    difference)}), on a symlog axis, a line at 0 and the shares in the title."""
    a, b = (plot_label(run) for run in runs)
    edge = _symlog_axis_edge(np.concatenate([d for _, d in series.values()]))
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120, layout="constrained")
    handles = [ax.plot(level, difference, marker="o", markersize=3, linewidth=1.0,
                       label=f"population {plot_label(ident(label))}")[0]
               for label, (level, difference) in series.items()]
    ax.axhline(0, color="0.25", linewidth=1.0, linestyle="--")
    _symlog(ax.yaxis, ax.set_yscale, ax.set_ylim, edge)
    ax.grid(alpha=0.3)
    ax.set_xlabel("recall level i")
    ax.set_ylabel(_wrapped(f"f_i({b}) − f_i({a}) (symlog)\n← {b} ahead  |  {a} ahead →", 40))
    _legend(ax, handles, fontsize=8, frameon=False)
    ax.set_title(_wrapped(f"{a} vs {b} on query {plot_label(ident(qid))}: position "
                          f"differences per recall level\n{_shares_text(a, b, shares)}"))
    return _save(fig, path)


def _symlog_axis_edge(values: np.ndarray) -> float:
    """A symmetric axis limit past the largest |value| (the two sides compare)."""
    return 1.5 * max(1.0, float(np.abs(values).max(initial=0.0)))


def _symlog(axis, set_scale, set_limits, edge: float) -> None:
    """Position differences span 1..n: a symlog scale, short tick labels, ±edge."""
    from matplotlib.ticker import FuncFormatter

    set_scale("symlog", linthresh=1)
    axis.set_major_formatter(FuncFormatter(lambda v, _: _short_number(v)))
    set_limits(-edge, edge)


def _wrapped(text: str, width: int = 72) -> str:
    """``text`` with each of its lines broken at spaces to ``width`` characters, so that a
    title or label of long run names stays within a 7.5-inch figure, not clipped at both
    edges."""
    return "\n".join(textwrap.fill(line, width, break_long_words=False) or line
                     for line in text.split("\n"))


def _shares_text(a: str, b: str, shares: np.ndarray) -> str:
    ahead, behind, tied = shares.tolist()
    return f"{a} ahead at {ahead:.1%}, {b} ahead at {behind:.1%}, tied at {tied:.1%}"


def _short_number(value: float) -> str:
    """A tick label that stays short on a symlog axis: ``-100``, ``0``, ``10``, ``1e4``."""
    if abs(value) < 1000:
        return f"{value:g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    return f"{mantissa}e{int(exponent)}"

"""--plot: the heatmap is a real PNG of sensible size, runs ordered by win rate; clear errors
when matplotlib is missing, the measure is not a preference or the file cannot be written."""
from __future__ import annotations

import sys

import numpy as np
import pytest

from rpp_cli.errors import InputError
from rpp_cli.report import plot
from rpp_cli.settings import Options
from rpp_cli.tasks import eval as eval_task

from ..conftest import DEMO, parse_lines, rpp

# matplotlib draws every figure (about 0.4 s each): the full suite's, not the edit loop's
pytestmark = pytest.mark.slow

RUNS = sorted((DEMO / "runs").iterdir())
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def read_png(path) -> np.ndarray:
    """The image as an (h, w, channels) float array, after checking the PNG signature."""
    from matplotlib import image  # a test extra

    assert path.read_bytes()[:8] == PNG_SIGNATURE
    return image.imread(path)


def test_heatmap_of_the_demo_collection_is_a_sensible_png(tmp_path):
    out = tmp_path / "rpp.png"
    res = rpp("eval", "--plot", out, DEMO / "qrels", *RUNS)
    assert res.code == 0
    assert res.out == rpp("eval", DEMO / "qrels", *RUNS).out  # the text output is unchanged
    pixels = read_png(out)
    height, width = pixels.shape[:2]
    assert 400 <= width <= 1600 and 400 <= height <= 1600
    assert pixels[..., :3].std() > 0.1  # not a blank canvas
    blue = (pixels[..., 2] > 0.5) & (pixels[..., 0] < 0.3)  # strong preferences are drawn
    red = (pixels[..., 0] > 0.5) & (pixels[..., 2] < 0.3)
    assert blue.mean() > 0.02 and red.mean() > 0.02


def test_plot_measure_and_size_grows_with_runs(tmp_path):
    two = tmp_path / "two.png"
    six = tmp_path / "six.png"
    assert rpp("eval", "-m", "invrpp", "--plot", two, DEMO / "qrels", *RUNS[:2]).code == 0
    assert rpp("eval", "--plot", six, "--plot-measure", "dcgrpp", DEMO / "qrels", *RUNS).code == 0
    assert read_png(two).shape[1] < read_png(six).shape[1]


def test_runs_are_ordered_by_win_rate_ties_by_name():
    names = ["b", "a", "c"]
    matrix = np.array([[np.nan, 0.0, 1.0], [0.0, np.nan, 1.0], [-1.0, -1.0, np.nan]])
    np.testing.assert_allclose(plot.win_rates(matrix), [0.5, 0.5, -1.0])
    assert plot.win_order(matrix, names) == [1, 0, 2]  # a and b tie: by name


def test_win_order_of_the_demo_matches_the_printed_win_rates():
    ctx = eval_task.run(str(DEMO / "qrels"), [str(p) for p in RUNS],
                        eval_task.EvalRequest(("rpp",)), Options()).extras["context"]
    res = ctx.results
    assert res.pair_measures() == ["rpp"]
    matrix = res.pair_grid("rpp")
    assert np.isnan(np.diag(matrix)).all()
    wins = {run: res.value("rpp_win", "all", run) for run in res.runs}
    np.testing.assert_allclose(plot.win_rates(matrix), [wins[r] for r in res.runs])
    order = [res.runs[i] for i in plot.win_order(matrix, res.runs)]
    assert order == sorted(wins, key=lambda r: -wins[r])
    assert order[0] == "monot5" and order[-1] == "bm25"  # the generator's best and worst


@pytest.mark.parametrize("args, message", [
    (["-m", "map"], "rpp: --plot needs a preference measure (e.g. -m rpp) and two or more runs"),
    (["--plot-measure", "map"], "rpp: --plot-measure map: not a preference measure of this "
                                "evaluation (choose from rpp, dcgrpp, invrpp)"),
])
def test_nothing_to_plot_is_bad_usage(tmp_path, args, message):
    res = rpp("eval", "--plot", tmp_path / "x.png", *args, DEMO / "qrels", *RUNS)
    assert (res.code, res.out) == (2, "")
    *notes, last = res.err.splitlines()
    assert last == message and all(n.startswith("rpp: note: ") for n in notes)
    assert not (tmp_path / "x.png").exists()


def test_plot_measure_without_plot():
    res = rpp("eval", "--plot-measure", "rpp", DEMO / "qrels", *RUNS)
    assert (res.code, res.out, res.err) == (2, "", "rpp: --plot-measure needs --plot FILE.png\n")


def test_one_run_has_nothing_to_plot(tmp_path):
    res = rpp("eval", "--plot", tmp_path / "x.png", DEMO / "qrels", RUNS[0])
    assert res.code == 2 and res.out == ""
    assert res.err.splitlines()[-1].startswith("rpp: --plot needs a preference measure")


def test_unwritable_plot_file(tmp_path):
    target = tmp_path / "missing-dir" / "x.png"
    res = rpp("eval", "--plot", target, DEMO / "qrels", *RUNS)
    assert res.code == 2 and res.out == ""
    assert res.err.splitlines()[-1] == (f"rpp: {target}: cannot write the plot: "
                                        "No such file or directory")


def test_missing_matplotlib_is_one_line_before_any_work(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    res = rpp("eval", "--plot", tmp_path / "x.png", DEMO / "qrels", "/nonexistent/run")
    assert (res.code, res.out) == (2, "")
    assert res.err == "rpp: --plot needs matplotlib: pip install matplotlib\n"
    with pytest.raises(InputError):
        plot._pyplot()


def test_meta_robustness_curves_png(tmp_path):
    out = tmp_path / "robust.png"
    res = rpp("meta", "--analysis", "robustness", "--samples", "20", "-m", "rpp", "-m", "map",
              "--plot", out, DEMO / "qrels", *RUNS)
    assert res.code == 0
    assert res.out.startswith("robust_queries_")
    pixels = read_png(out)
    height, width = pixels.shape[:2]
    assert 600 <= width <= 1600 and 300 <= height <= 1000
    assert pixels[..., :3].std() > 0.05


def test_meta_plot_needs_an_analysis_with_a_figure(tmp_path):
    res = rpp("meta", "--analysis", "predictive", "--samples", "20", "--plot",
              tmp_path / "x.png", DEMO / "qrels", *RUNS)
    assert res.code == 2
    assert res.err.splitlines()[-1] == ("rpp: --plot draws meta's analyses: none with a figure "
                                        "was computed")
    assert not (tmp_path / "x.png").exists()


def test_heatmap_of_many_runs_shows_the_top_40(tmp_path, monkeypatch):
    """200 runs made a 13,584-pixel figure in minutes: the best 40 by win rate are drawn,
    and the title says so."""
    import numpy as np

    from rpp_cli.report import plot
    from rpp_cli.results import Results

    n = 45
    names = [f"r{i:02d}" for i in range(n)]
    res = Results(["q"], names, ["rpp"])
    m = np.subtract.outer(np.arange(n), np.arange(n)) / n  # r44 is the best run
    a, b = np.nonzero(~np.eye(n, dtype=bool))
    res.add("rpp", -1, a, m[a, b], b)
    titles = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: titles.append(
        (fig.axes[0].get_title(), [t.get_text() for t in fig.axes[0].get_xticklabels()])) or [])
    plot.preference_heatmap(res, str(tmp_path / "h.png"))
    title, ticks = titles[0]
    assert "the top 40 of 45 runs by win rate" in title
    assert ticks[0] == "r44" and len(ticks) == 40 and "r00" not in ticks


@pytest.mark.parametrize("ext, magic", [("png", b"\x89PNG"), ("pdf", b"%PDF"), ("svg", b"<?xml")])
def test_plot_format_follows_the_extension(tmp_path, ext, magic):
    out = tmp_path / f"h.{ext}"
    res = rpp("eval", "-m", "rpp", "--plot", out, DEMO / "qrels", *RUNS)
    assert res.code == 0 and out.read_bytes().startswith(magic)


def test_plot_refuses_an_unknown_extension_before_reading(tmp_path):
    res = rpp("eval", "-m", "rpp", "--plot", tmp_path / "h.jpg", DEMO / "qrels", "nosuch")
    assert res.code == 2 and res.err == (f"rpp: --plot: the file name must end in .png, .pdf or "
                                         f".svg (got '{tmp_path / 'h.jpg'}')\n")


def test_heatmap_colours_span_the_largest_value(tmp_path, monkeypatch):
    """Preferences of +-0.1 must not look white: the scale is symmetric to the largest |value|."""
    import numpy as np

    from rpp_cli.report import plot
    from rpp_cli.results import Results

    res = Results(["q"], ["a", "b"], ["rpp"])
    res.add("rpp", -1, np.array([0, 1]), np.array([0.125, -0.125]), np.array([1, 0]))
    seen = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: seen.append(
        (fig.axes[0].images[0].get_clim(), fig.axes[1].get_ylabel())) or [])
    plot.preference_heatmap(res, str(tmp_path / "h.png"))
    (low, high), label = seen[0]
    assert (low, high) == (-0.125, 0.125) and "±0.12, the largest |value|" in label


def test_meta_plot_draws_every_analysis(tmp_path, monkeypatch):
    from rpp_cli.report import plot

    titles = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: titles.extend(
        ax.get_title() for ax in fig.axes if ax.get_visible() and ax.get_title()) or [])
    res = rpp("meta", "-m", "rpp", "-m", "map", "--samples", "20", "--permutations", "50",
              "--judged-fractions", "0.5", "--judged-samples", "2", "--plot", tmp_path / "m.png",
              DEMO / "qrels", *RUNS)
    assert res.code == 0, res.err
    assert titles[:5] == ["Robustness: queries kept",
                          "Robustness: fraction of relevant judgments kept",
                          "Discriminative power", "Agreement of the orderings (Kendall's tau)",
                          "Distribution of differences over all run pairs (paper Fig. 2)"]
    # one scatter per (preference measure, metric), 25 queries x 15 pairs of the 6 runs; its
    # share of same signs is agreement_sign
    sign = parse_lines(res.out)[("agreement_sign", "all", "rpp", "map")]
    assert titles[5:] == [f"rpp against map: same sign on {sign:.0%} of 375 points"]


def test_meta_plot_fig_2_is_the_ecdf_of_every_pairs_per_query_differences(tmp_path,
                                                                            monkeypatch):
    """The paper's Fig. 2 panel: per measure, the ECDF of its per-query differences over every
    ordered pair of runs (RPP(a, b); ndcg(a) − ndcg(b)), 25 queries x 30 ordered pairs of the
    6 demo runs, equal to what ``rpp eval -q`` prints; asl's differences leave [−1, 1] and
    are not drawn."""
    axes = []
    monkeypatch.setattr(plot, "_save", lambda fig, path: axes.extend(
        ax for ax in fig.axes if "Fig. 2" in ax.get_title()) or [])
    measures = ("-m", "rpp", "-m", "ndcg", "-m", "asl")
    res = rpp("meta", "--analysis", "agreement", *measures, "--plot", tmp_path / "m.png",
              DEMO / "qrels", *RUNS)
    assert res.code == 0, res.err
    (ax,) = axes
    lines = {ln.get_label(): ln for ln in ax.get_lines() if not ln.get_label().startswith("_")}
    assert list(lines) == ["rpp", "ndcg"]
    ev = parse_lines(rpp("eval", "-q", "-n", "--precision", "17", *measures, DEMO / "qrels",
                         *RUNS).out)
    names = [r.name for r in RUNS]
    want = {"rpp": [v for k, v in ev.items() if k[0] == "rpp"],
            "ndcg": [ev["ndcg", k[1], a] - ev["ndcg", k[1], b] for k in ev if k[0] == "ndcg"
                     for a in names for b in names if a != b and k[2] == a]}
    for measure, values in want.items():
        assert len(values) == 25 * 30
        x, y = lines[measure].get_xdata(), lines[measure].get_ydata()
        assert x == pytest.approx(sorted(values), abs=1e-12)
        assert y.tolist() == pytest.approx([k / 750 for k in range(1, 751)])


def test_characters_no_font_has_are_one_note(tmp_path, monkeypatch):
    """matplotlib warns once per missing glyph, with a source line, past -Q: _save turns
    those warnings into one note (the others into a note each) for the command to print."""
    import warnings

    import matplotlib.pyplot as plt

    fig = plt.figure()
    draw = fig.savefig

    def savefig(*args, **kwargs):
        for text in ("Glyph 73728 (\N{CUNEIFORM SIGN A}) missing from font(s) DejaVu Sans.",
                     "Glyph 20013 (\N{CJK UNIFIED IDEOGRAPH-4E2D}) missing from font(s) X.",
                     "Glyph 73728 (\N{CUNEIFORM SIGN A}) missing from font(s) DejaVu Sans.",
                     "something else"):
            warnings.warn(text, UserWarning)
        return draw(*args, **kwargs)

    monkeypatch.setattr(fig, "savefig", savefig)
    out = tmp_path / "f.png"
    notes = plot._save(fig, str(out))
    assert read_png(out).size
    assert notes == [f"{out}: something else",
                     f"{out}: no installed font has 2 of the characters of the names "
                     "(\N{CUNEIFORM SIGN A}\N{CJK UNIFIED IDEOGRAPH-4E2D}): drawn as boxes"]


@pytest.mark.parametrize("quiet", [False, True])
def test_plot_with_names_of_any_script_writes_only_notes(tmp_path, quiet):
    """Run names in scripts the installed fonts may lack: stderr holds rpp's notes and
    nothing else (no matplotlib warning or source line), and nothing under -Q."""
    import shutil
    import subprocess

    runs = []
    for name, src in (("\N{CUNEIFORM SIGN A}中文", RUNS[0]), ("abc", RUNS[1])):
        runs.append(tmp_path / name)
        shutil.copy(src, runs[-1])
    res = subprocess.run([sys.executable, "-m", "rpp_cli", "eval", *(["-Q"] if quiet else []),
                          "-m", "rpp", "--plot", tmp_path / "p.png", DEMO / "qrels", *runs],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert read_png(tmp_path / "p.png").size
    lines = res.stderr.splitlines()
    assert lines == [] if quiet else all(line.startswith("rpp: note: ") for line in lines)


def test_long_run_names_wrap_in_plot_titles():
    """Titles and axis labels of long real names (DL-HARD, CAsT) are broken at spaces within
    the figure's width, never clipped at both edges; every word stays whole."""
    from rpp_cli.report.plot import _wrapped

    a, b = "dl-hard-passage-bm25+rm3-capreolus.run", "cast2021-automatic-canard-t5.run"
    title = f"{a} vs {b}: ECDF of 1264 recall levels pooled over 25 queries\nshares"
    wrapped = _wrapped(title)
    assert all(len(line) <= 72 for line in wrapped.split("\n"))
    assert wrapped.split() == title.split() or "".join(wrapped.split()) == "".join(title.split())
    assert _wrapped("short\nlines") == "short\nlines"

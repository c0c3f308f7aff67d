"""Shared helpers: write tiny collections to files and run the CLI in-process."""
from __future__ import annotations

import gzip
import importlib
import os
import signal
import sys
from dataclasses import dataclass
from pathlib import Path

import hypothesis
import pytest
from click.testing import CliRunner

from rpp_cli.cli import cli


def _scaled_examples(scale: float) -> None:
    """Every property and differential test draws ``scale`` times its examples (at least one),
    decorators' own counts too."""
    init = hypothesis.settings.__init__

    def scaled(self, parent=None, **kwargs):
        if "max_examples" in kwargs:
            kwargs["max_examples"] = max(1, round(kwargs["max_examples"] * scale))
        init(self, parent, **kwargs)
    hypothesis.settings.__init__ = scaled
    hypothesis.settings.register_profile("scaled", max_examples=100)  # (scaled as well)
    hypothesis.settings.load_profile("scaled")


# The fast tier (-m "not slow", the edit loop) draws a fifth of the examples; the whole suite
# (make test, CI) draws them all.
FAST_TIER_EXAMPLES = 0.2


def pytest_configure(config: pytest.Config) -> None:
    """Scale the examples: RPP_HYPOTHESIS_SCALE when set (10 for a deep run before a release:
    RPP_HYPOTHESIS_SCALE=10 pytest ...), else a fifth in the fast tier."""
    scale = float(os.environ.get("RPP_HYPOTHESIS_SCALE", "0"))
    if not scale:
        fast = " ".join(config.option.markexpr.split()) == "not slow"
        scale = FAST_TIER_EXAMPLES if fast else 1
    if scale != 1:
        _scaled_examples(scale)


ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
DEMO = FIXTURES / "demo"
PAPER = FIXTURES / "paper"
# The user documentation: the README, then every reference page under docs/.
DOC_PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def tiered(values, fast: int = 1) -> list:
    """Parameters of which the first ``fast`` run in the fast tier and the rest only in the
    whole suite (marked slow): a grid of seeds keeps a corner in the edit loop. A tuple is
    one value for each of several argument names."""
    return [v if i < fast else pytest.param(*(v if isinstance(v, tuple) else (v,)),
                                            marks=pytest.mark.slow)
            for i, v in enumerate(values)]


def ctrl_c_as_from_a_terminal() -> None:
    """``preexec_fn`` of a child that a test sends signals: SIGINT, SIGHUP and SIGTERM get
    their defaults, as from an interactive shell, whatever the test runner inherited (a
    script's background job starts with SIGINT ignored, nohup with SIGHUP ignored, and rpp
    then leaves them so)."""
    for signum in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


def children_of(pid: int) -> list[int]:
    """Live processes whose parent is ``pid`` (from /proc/*/stat: every Linux kernel has it;
    a zombie, ended and not yet reaped, is not counted)."""
    kids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                stat = Path(f"/proc/{entry.name}/stat").read_bytes()
            except OSError:
                continue
            state, parent = stat[stat.rindex(b")") + 2:].split()[:2]
            if int(parent) == pid and state != b"Z":
                kids.append(int(entry.name))
    return kids


def doc_headings(text: str) -> list[tuple[int, int, str]]:
    """(line index, level, title) of every Markdown heading outside code fences."""
    found, fence = [], False
    for i, line in enumerate(text.split("\n")):
        if line.startswith("```"):
            fence = not fence
        elif not fence and line.startswith("#"):
            marks = len(line) - len(line.lstrip("#"))
            if line[marks:marks + 1] == " ":
                found.append((i, marks, line[marks + 1:].strip()))
    return found


def doc_section(title: str) -> str:
    """The text under the one heading ``title`` in README.md or docs/*.md, up to the next
    heading of the same or a higher level: examples are found wherever the page moves them."""
    hits = []
    for page in DOC_PAGES:
        text = page.read_text()
        heads = doc_headings(text)
        for k, (i, level, name) in enumerate(heads):
            if name == title:
                end = next((j for j, lv, _ in heads[k + 1:] if lv <= level), None)
                hits.append("\n".join(text.split("\n")[i:end]))
    assert len(hits) == 1, f"heading {title!r} found {len(hits)} times in the docs"
    return hits[0]


@dataclass
class Outcome:
    code: int
    out: str
    err: str


def rpp(*args: str, stdin: bytes | str | None = None) -> Outcome:
    """Run ``rpp ARGS`` in-process; stdout and stderr kept apart."""
    result = CliRunner().invoke(cli, [str(a) for a in args], input=stdin, catch_exceptions=False)
    return Outcome(result.exit_code, result.stdout, result.stderr)


def write_qrels(path: Path, rows: list[tuple[str, str, float]], gz: bool = False) -> Path:
    """``rows`` = (qid, docno, grade)."""
    text = "".join(f"{q} 0 {d} {g}\n" for q, d, g in rows)
    _write(path, text, gz)
    return path


def write_run(path: Path, ranking: dict[str, list[str]], tag: str = "run",
              scores: dict[str, list[float]] | None = None, gz: bool = False) -> Path:
    """``ranking[qid]`` = docnos best first; scores default to len..1 (no ties)."""
    lines = []
    for qid, docs in ranking.items():
        sc = scores[qid] if scores else [float(len(docs) - i) for i in range(len(docs))]
        lines += [f"{qid} Q0 {d} {i + 1} {s} {tag}\n" for i, (d, s) in enumerate(zip(docs, sc))]
    _write(path, "".join(lines), gz)
    return path


def _write(path: Path, text: str, gz: bool) -> None:
    if gz:
        with gzip.open(path, "wt") as f:
            f.write(text)
    else:
        path.write_text(text)


def demo_dicts(runs: list[Path] | None = None) -> tuple[dict, dict]:
    """The demo collection (``runs``: these run files, default all) as ranx / pytrec_eval /
    ir_measures dicts: qrels ``{qid: {docno: grade}}`` (the larger grade of a docno judged
    twice) and ``{file name: {qid: {docno: score}}}``."""
    qrels: dict = {}
    for line in (DEMO / "qrels").read_text().splitlines():
        q, _, d, g = line.split()
        qrels.setdefault(q, {})[d] = max(int(g), qrels.get(q, {}).get(d, int(g)))
    out: dict = {}
    for path in runs if runs is not None else sorted((DEMO / "runs").iterdir()):
        run: dict = {}
        for line in path.read_text().splitlines():
            q, _, d, _, s, _ = line.split()
            run.setdefault(q, {})[d] = float(s)
        out[path.name] = run
    return qrels, out


def parse_lines(text: str) -> dict[tuple, float]:
    """contract §7 text -> {(measure, qid, run[, other]): value}."""
    out = {}
    for line in text.splitlines():
        fields = line.split("\t")
        out[(fields[0].strip(), *fields[1:-1])] = float(fields[-1])
    return out


@pytest.fixture
def tiny(tmp_path: Path):
    """A factory: tiny(qrels_rows, {name: ranking}) -> (qrels path, [run paths]); a run's file
    name and tag are its name."""
    def make(qrels_rows, runs, scores=None):
        q = write_qrels(tmp_path / "qrels", qrels_rows)
        paths = [write_run(tmp_path / tag, ranking, tag,
                           (scores or {}).get(tag)) for tag, ranking in runs.items()]
        return q, paths
    return make


def script_module(folder: str, name: str):
    """The script ``folder/name.py`` of the repository as a module (bench/ and fixtures/ are
    not packages)."""
    sys.path.insert(0, str(ROOT / folder))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)

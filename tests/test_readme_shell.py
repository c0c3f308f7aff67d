"""The docs page on output formats, plots and shell use (docs/formats.md): every ``sh``
example runs as written (bash, ``set -euo pipefail``) and does what the text says."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import ROOT, doc_section

SECTION = "Output formats, plots and shell use"


def examples() -> list[str]:
    return re.findall(r"```sh\n(.*?)```", doc_section(SECTION), re.S)


def run(block: str, cwd: Path) -> subprocess.CompletedProcess:
    """``block`` in bash (errexit, pipefail) with the venv's ``rpp`` first on PATH."""
    bindir = os.path.dirname(sys.executable)
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]}
    assert shutil.which("rpp", path=env["PATH"]), "rpp must be installed (make test does it)"
    return subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=cwd, env=env,
                          capture_output=True, text=True)


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> tuple[Path, list[subprocess.CompletedProcess]]:
    """Every example run once, in a scratch directory that looks like the repository root
    after `make demo` (``fixtures`` linked), the completion one asked what it registered."""
    work = tmp_path_factory.mktemp("readme")
    (work / "fixtures").symlink_to(ROOT / "fixtures")
    blocks = examples()
    assert len(blocks) == 6
    blocks[-1] += "\ncomplete -p rpp\n"
    return work, [run(block, work) for block in blocks]


@pytest.mark.parametrize("index", range(6))
def test_readme_example_runs(index, ran):
    res = ran[1][index]
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()
    assert all(line.startswith("rpp: note: ") for line in res.stderr.splitlines()), res.stderr


def test_readme_examples_do_what_they_say(ran):
    work, results = ran
    out = "".join(res.stdout for res in results)
    for name in ("results.md", "results.tex", "results.csv", "rpp.png", "dcgrpp.pdf"):
        assert (work / name).stat().st_size > 500, name
    assert (work / "dcgrpp.pdf").read_bytes().startswith(b"%PDF")
    assert "monot5\t0.4517\n" in out  # best MAP first
    assert "monot5 > bm25 0.7807" in out
    assert "\nmonot5 0.4517\n" in out  # from the jsonl
    assert results[-1].stdout.startswith("complete ") and "rpp" in results[-1].stdout


def test_completion_offers_options_and_formats():
    env = {**os.environ, "_RPP_COMPLETE": "bash_complete", "COMP_WORDS": "rpp eval --format ",
           "COMP_CWORD": "3"}
    res = subprocess.run([sys.executable, "-c", "from rpp_cli.cli import main; main()"],
                         env=env, capture_output=True, text=True)
    assert res.stdout.split() == [f"plain,{f}" for f in
                                  ("trec", "jsonl", "csv", "matrix", "markdown", "latex")]

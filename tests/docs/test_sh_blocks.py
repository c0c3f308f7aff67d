"""Every ``sh`` block of the README and of every docs/ page runs as written (from a directory
that looks like the repository after ``make demo``), so the documentation cannot drift from the
tool. The README's first block (``make demo``, ``make test``) is what CI itself runs."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..conftest import DOC_PAGES, ROOT, doc_headings
from .test_formats_page import examples as formats_page_examples

SH = re.compile(r"```sh\n(.*?)```", re.S)
README_BLOCKS = SH.findall((ROOT / "README.md").read_text())
# (page, index, block): the README's first block is the setup, run by CI, not here; the
# formats page's blocks run in test_formats_page.py, as here, and their outputs are checked.
BLOCKS = [(page.relative_to(ROOT).as_posix(), i, block) for page in DOC_PAGES
          for i, block in enumerate(SH.findall(page.read_text()))
          if (page.name, i) != ("README.md", 0) and block not in formats_page_examples()]


@pytest.mark.slow
@pytest.mark.parametrize("page, index, block", BLOCKS, ids=[f"{p}:{i}" for p, i, _ in BLOCKS])
def test_doc_sh_block_runs(page, index, block, tmp_path):
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{page} block {index}:\n{block}\n{res.stderr[-2000:]}"


def test_the_first_block_is_the_two_setup_commands():
    assert README_BLOCKS[0].split("\n")[0].startswith("make demo")
    assert README_BLOCKS[0].split("\n")[1].startswith("make test")


def test_the_readme_reads_in_five_minutes():
    """Short (the reference lives in docs/), and the exit statuses are a section with a table."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 220
    assert (1, "Exit statuses") in {(lv - 1, name) for _, lv, name in doc_headings(text)}
    section = text[text.index("## Exit statuses"):]
    assert "| status | meaning |\n|---|---|\n| 0 |" in section


def test_every_docs_page_is_linked_from_the_readme():
    text = (ROOT / "README.md").read_text()
    pages = [p.name for p in DOC_PAGES[1:]]
    assert pages and all(f"](docs/{name})" in text for name in pages), pages


@pytest.mark.slow
def test_make_demo_opens_with_tables_read_at_a_glance():
    """`make demo`'s recipe, run as written: the RPP matrix first, the whole output one screen,
    and its last line names the command that prints the trec lines (as the README says)."""
    makefile = (ROOT / "Makefile").read_text()
    recipe = re.search(r"^demo:.*\n((?:\t.*\n)+)", makefile, re.M).group(1)
    script = recipe.replace("\t@", "").replace("\t", "").replace("$(BIN)/", "")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "rpp (all): row run vs column run"
    assert "per-run measures (all)" in lines and len(lines) <= 40
    trec = "rpp eval fixtures/demo/qrels fixtures/demo/runs/*"
    assert lines[-1].endswith(trec) and f"`{trec}`" in (ROOT / "README.md").read_text()

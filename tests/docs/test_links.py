"""Every relative link of README.md and docs/*.md points to a file that exists and, with a
``#anchor``, to a heading of that file (GitHub's anchor rule), so moving text cannot strand one."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..conftest import DOC_PAGES, ROOT, doc_headings

LINK = re.compile(r"\]\(([^)\s]+)\)")


def anchor(title: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation but ``-`` and ``_`` dropped,
    spaces turned into ``-``."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def links(page: Path) -> list[str]:
    """Relative link targets of ``page``, code fences and inline code left out."""
    text, out, fence = page.read_text(), [], False
    for line in text.split("\n"):
        if line.startswith("```"):
            fence = not fence
        elif not fence:
            out += [t for t in LINK.findall(re.sub(r"`[^`]*`", "", line))
                    if not re.match(r"[a-z]+:", t)]
    return out


def test_anchor_follows_github():
    assert anchor("Truncated runs: `-M K`") == "truncated-runs--m-k"
    assert anchor("`rpp meta`: the paper's experiments on your runs") == \
        "rpp-meta-the-papers-experiments-on-your-runs"


@pytest.mark.parametrize("page", DOC_PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    assert page.name != "README.md" or links(page), "the README links to its pages"
    broken = []
    for target in links(page):
        path, _, frag = target.partition("#")
        dest = (page.parent / path).resolve() if path else page
        if not dest.is_file():
            broken.append(target)
        elif frag and frag not in {anchor(name) for _, _, name in doc_headings(dest.read_text())}:
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


def test_nothing_links_outside_the_repository():
    outside = [(p.name, t) for p in DOC_PAGES for t in links(p)
               if not (p.parent / t.partition("#")[0]).resolve().is_relative_to(ROOT)]
    assert not outside, outside

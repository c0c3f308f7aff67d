"""The docs page on output formats, plots and shell use (docs/formats.md): every ``sh``
example runs as written (bash, ``set -euo pipefail``) and does what the text says."""
from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from ..conftest import ROOT, doc_section

pytestmark = pytest.mark.slow

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
def test_formats_page_example_runs(index, ran):
    res = ran[1][index]
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()
    assert all(line.startswith("rpp: note: ") for line in res.stderr.splitlines()), res.stderr


def test_formats_page_examples_do_what_they_say(ran):
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


def readme_bash_completion() -> str:
    """The README's bash completion line, as a reader copies it into ~/.bashrc."""
    block = next(b for b in examples() if "bash_source" in b)
    return next(line for line in block.splitlines() if "bash_source" in line)


class Terminal:
    """An interactive bash (no rc files) in a pseudo-terminal, ``rpp`` on its PATH."""

    def __init__(self, cwd: Path):
        self.leader, follower = pty.openpty()
        fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 400, 0, 0))
        env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep +
               os.environ["PATH"], "PS1": "$ ", "TERM": "dumb", "INPUTRC": "/dev/null",
               "HISTFILE": "/dev/null"}
        self.proc = subprocess.Popen(["bash", "--norc", "--noprofile", "-i"], cwd=cwd, env=env,
                                     stdin=follower, stdout=follower, stderr=follower,
                                     start_new_session=True)
        os.close(follower)
        self.seen = b""

    def type_and_wait(self, keys: str, pattern: bytes, timeout: float = 30.0) -> re.Match:
        """Type ``keys``; the first match of ``pattern`` in what the terminal shows next."""
        start, end = len(self.seen), time.monotonic() + timeout
        os.write(self.leader, keys.encode())
        while not (found := re.compile(pattern).search(self.seen, start)):
            left = end - time.monotonic()
            assert left > 0, f"no {pattern!r} in time; the terminal showed {self.seen[start:]!r}"
            if select.select([self.leader], [], [], left)[0]:
                self.seen += os.read(self.leader, 65536)
        return found

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        os.close(self.leader)


@pytest.fixture(scope="module")
def terminal():
    """One terminal for the completion tests, with the README's bash completion sourced."""
    term = Terminal(ROOT)
    try:
        term.type_and_wait(readme_bash_completion() + "\necho READY\n", rb"\nREADY\r?\n")
        yield term
    finally:
        term.close()


@pytest.mark.parametrize("line, completed", [
    ("rpp eval fixtures/de", "rpp eval fixtures/demo/"),
    ("rpp eval fixtures/demo/qrels fixtures/demo/runs/col",
     "rpp eval fixtures/demo/qrels fixtures/demo/runs/colbert"),
    ("rpp check fixtures/demo/qrels fixtures/demo/runs/dpr --baseline fixtures/demo/runs/sp",
     "rpp check fixtures/demo/qrels fixtures/demo/runs/dpr --baseline fixtures/demo/runs/splade"),
    ("rpp eval --format mat", "rpp eval --format matrix"),
])
def test_tab_completes_file_names_in_a_terminal(terminal, line, completed):
    """The README's bash completion in an interactive bash: TAB completes a file argument as
    a file name (before, click offered nothing and the bell rang) and an option's values
    still complete. What TAB made of the line is echoed back: Ctrl-A goes to the start of the
    line and types ``echo DONE:`` before it."""
    shown = terminal.type_and_wait(line + "\t\x01echo DONE:\r", rb"\nDONE:([^\r\n]*)\r?\n")
    assert shown.group(1).decode() == completed

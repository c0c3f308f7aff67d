"""Every ``sh`` block of the README runs as written (from a directory that looks like the
repository after ``make demo``), so the README cannot drift from the tool. The first block
(``make demo``, ``make test``) is what CI itself runs."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from .conftest import ROOT

BLOCKS = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)


@pytest.mark.parametrize("index", range(1, len(BLOCKS)))
def test_readme_sh_block_runs(index, tmp_path):
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + BLOCKS[index]], cwd=tmp_path,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"README block {index}:\n{BLOCKS[index]}\n{res.stderr[-2000:]}"


def test_the_first_block_is_the_two_setup_commands():
    assert BLOCKS[0].split("\n")[0].startswith("make demo")
    assert BLOCKS[0].split("\n")[1].startswith("make test")

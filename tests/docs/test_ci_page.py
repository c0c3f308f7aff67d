"""The documented `rpp check` example (docs/ci.md) runs as written and does what it says."""
from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from ..conftest import ROOT, doc_section

pytestmark = pytest.mark.slow


def test_ci_page_check_example(tmp_path):
    section = doc_section("Regression gate: `rpp check`")
    (block,) = [b for b in re.findall(r"```sh\n(.*?)```", section, re.S) if "candidate.run" in b]
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    env = {**os.environ, "PATH": os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"]}
    res = subprocess.run(["bash", "-c", "set -euo pipefail\n" + block], cwd=tmp_path, env=env,
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stderr
    assert res.stdout.rstrip().endswith(
        "map_drop              \tall\tcandidate.run\tmonot5\t0.0000\nno regression")
    assert "PASS\tcandidate.run\trpp" in res.stderr and "PASS\tcandidate.run\tmap" in res.stderr
    assert "FAIL\tbm25\trpp" in res.stderr
    assert res.stderr.rstrip().endswith("regression: bm25 must not ship")
    assert "rpp_p" in (tmp_path / "gate.tsv").read_text()

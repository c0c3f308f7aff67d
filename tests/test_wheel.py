"""``make wheel``: a binary wheel, so that a machine without a compiler installs rpp with
``pip install rpp_cli-*.whl`` (installed here into a fresh venv, as a CI image would)."""
from __future__ import annotations

import re
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import numpy
import pytest
import pytrec_eval
import scipy

from rpp_cli import __version__

from .conftest import DEMO, ROOT, rpp

pytestmark = pytest.mark.slow

RUNS = [DEMO / "runs" / "bm25", DEMO / "runs" / "monot5"]


def run(*argv, cwd: Path) -> str:
    """``argv`` from ``cwd`` (not the repository: nothing imports rpp_cli from its sources);
    its stdout, after checking that it succeeded."""
    res = subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True)
    assert res.returncode == 0, (argv, res.stdout, res.stderr)
    return res.stdout


def dependency_sites() -> set[str]:
    """The site-packages holding rpp's dependencies in the test environment."""
    return {str(Path(m.__file__).resolve().parent.parent)
            for m in (click, numpy, pytrec_eval, scipy)}


def test_the_wheel_installs_into_a_fresh_venv_and_runs(tmp_path):
    """Build with ``make wheel``, check it carries the compiled kernel, install it (binary
    only, no build step) into a fresh venv whose dependencies come from the test
    environment, and run ``rpp --version`` and one eval from there."""
    dist = tmp_path / "dist"
    run("make", "--no-print-directory", "wheel", f"DIST={dist}", cwd=ROOT)
    (wheel,) = dist.glob("rpp_cli-*.whl")
    assert wheel.name.startswith(f"rpp_cli-{__version__}-")
    kernel = [n for n in zipfile.ZipFile(wheel).namelist()
              if re.fullmatch(r"rpp_cli/core/_kernel\.[^/]+\.so", n)]
    assert len(kernel) == 1, "the wheel must carry the compiled kernel"

    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path)
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))",
                    cwd=tmp_path).strip())
    # A path in a .pth file is read as a plain directory: the .pth files in it (such as the
    # test environment's editable rpp_cli) are not run, so rpp_cli comes from the wheel only.
    (site / "dependencies.pth").write_text("\n".join(sorted(dependency_sites())) + "\n")
    run(sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-deps",
        "--no-index", "--ignore-installed", "--only-binary", ":all:", wheel, cwd=tmp_path)

    where = run(python, "-c", "import rpp_cli.core._kernel as k; print(k.__file__)",
                cwd=tmp_path)
    assert Path(where.strip()).is_relative_to(site / "rpp_cli")
    rpp_script = venv / "bin" / "rpp"
    assert run(rpp_script, "--version", cwd=tmp_path).startswith(f"rpp {__version__} (")
    args = ["eval", "-m", "map", "-m", "rpp", DEMO / "qrels", *RUNS]
    assert run(rpp_script, *args, cwd=tmp_path) == rpp(*args).out

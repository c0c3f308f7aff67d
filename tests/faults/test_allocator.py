"""The CLI tunes glibc's allocator (rpp_cli/memory.py) unless the user tuned it."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ..conftest import DEMO, tiered

ON_GLIBC = (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
PROBE = "from rpp_cli import memory; print(memory.tune())"


def _python(args: list[str], env: dict[str, str]) -> str:
    """stdout of ``python ARGS`` with no MALLOC_ setting but ``env``'s."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    return subprocess.run([sys.executable, *args], env=clean | env, capture_output=True,
                          text=True, check=True).stdout


def _tune(env: dict[str, str]) -> str:
    return _python(["-c", PROBE], env).strip()


def test_tuned_on_glibc_only():
    """mallopt is glibc's: applied there, and nothing done (False) on any other C library."""
    assert _tune({}) == ("True" if ON_GLIBC else "False")


@pytest.mark.parametrize("var", tiered(["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                        "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"]))
def test_the_users_settings_win(var):
    assert _tune({var: "131072"}) == "False"


@pytest.mark.slow
def test_same_bytes_with_and_without_tuning():
    """The allocator changes where arrays live, never a value."""
    args = ["-m", "rpp_cli", "eval", "-q", "-j", "2", "--precision", "10", str(DEMO / "qrels"),
            *map(str, sorted((DEMO / "runs").iterdir()))]
    tuned = _python(args, {})
    assert tuned == _python(args, {"MALLOC_TOP_PAD_": "131072"}) and tuned.count("\n") > 1000

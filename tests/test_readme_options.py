"""The README documents every option of every command (a new option must be written up)."""
from __future__ import annotations

import re

import click
import pytest

from rpp_cli.cli import cli

from .conftest import ROOT

README = (ROOT / "README.md").read_text()


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_option_is_in_the_readme(name):
    command = cli.commands[name]
    options = [p.opts for p in command.params if isinstance(p, click.Option)]
    missing = [max(opts, key=len) for opts in options
               if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", README) for o in opts)]
    assert not missing, f"rpp {name}: options missing from the README: {missing}"

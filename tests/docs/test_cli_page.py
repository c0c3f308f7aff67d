"""docs/cli.md documents every option of every command (a new option must be written up)."""
from __future__ import annotations

import re

import click
import pytest

from rpp_cli.cli import cli

from ..conftest import ROOT

CLI_PAGE = (ROOT / "docs" / "cli.md").read_text()


@pytest.mark.parametrize("name", sorted(cli.commands))
def test_every_option_is_in_docs_cli(name):
    command = cli.commands[name]
    options = [p.opts for p in command.params if isinstance(p, click.Option)]
    missing = [max(opts, key=len) for opts in options
               if not any(re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", CLI_PAGE) for o in opts)]
    assert not missing, f"rpp {name}: options missing from docs/cli.md: {missing}"

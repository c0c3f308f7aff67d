"""The commands of ``rpp``, one module each (the drop-ins share one), in the order
``rpp --help`` lists them."""
from __future__ import annotations

from .check import check_command
from .compare import compare_command
from .dropins import ndeval_command, trec_eval_command
from .eval import eval_command, measures_command
from .helps import help_command
from .levels import levels_command
from .meta import meta_command

COMMANDS = [eval_command, measures_command, compare_command, check_command, meta_command,
            ndeval_command, trec_eval_command, levels_command, help_command]

"""Errors users can act on, and the exit codes of SPEC §8.

Every problem with the input is raised as :class:`InputError` where it is found and turned
into one line on stderr (``rpp: FILE:LINE: message``) and its exit status (2 unless the
command documents another, e.g. ``rpp trec-eval`` follows trec_eval's codes) by the CLI.
"""
from __future__ import annotations

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2


class InputError(Exception):
    """Bad input or usage; ``str()`` is the one line printed after ``rpp: ``."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None,
                 exit_code: int = EXIT_BAD_INPUT) -> None:
        self.path = path
        self.line = line
        self.message = message
        self.exit_code = exit_code
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return where + self.message

"""Every note rpp can print is in docs/contract.md's table of notes: the notes are found in
the code (the strings handed to a ``notes`` list, or returned by a function that makes notes),
and the longest fixed part of each must be in the table."""
from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONTRACT = ROOT / "docs" / "contract.md"


def _fixed_parts(node: ast.AST) -> list[str]:
    """The literal stretches of a string expression (an f-string's text between its fields)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.JoinedStr):
        parts, current = [], ""
        for value in node.values:
            if isinstance(value, ast.Constant):
                current += str(value.value)
            else:
                parts, current = parts + [current], ""
        return parts + [current]
    if isinstance(node, ast.BinOp):
        return _fixed_parts(node.left) + _fixed_parts(node.right)
    return []


def _is_text(node: ast.AST) -> bool:
    """A string literal or an f-string: what a note is written as."""
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant)
                                                and isinstance(node.value, str))


def _note_functions(tree: ast.Module) -> set[str]:
    """Functions whose strings are notes: named for notes, or whose result a notes list takes."""
    names = {fn.name for fn in ast.walk(tree) if isinstance(fn, ast.FunctionDef)
             and "note" in fn.name}
    for call in ast.walk(tree):
        if _adds_to_notes(call):
            names.update(arg.func.id for arg in call.args  # type: ignore[attr-defined]
                         if isinstance(arg, ast.Call) and isinstance(arg.func, ast.Name))
    return names


def _adds_to_notes(node: ast.AST) -> bool:
    """``notes.append(...)`` or ``notes.extend(...)`` (``ctx.notes``, ``study.notes`` too)."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("append", "extend")
            and ast.unparse(node.func.value).endswith("notes"))


@functools.cache
def code_notes() -> dict[str, str]:
    """Each note's longest fixed part, keyed by where it is written (module:line); parsed once
    for the module's two tests (read only)."""
    found = {}
    for path in sorted((ROOT / "rpp_cli").rglob("*.py")):
        tree = ast.parse(path.read_text())
        makers = _note_functions(tree)
        for fn in ast.walk(tree):
            if not isinstance(fn, ast.FunctionDef):
                continue
            for node in ast.walk(fn):
                said = list(node.args) if _adds_to_notes(node) else []  # type: ignore
                if fn.name in makers and isinstance(node, ast.Return) and node.value:
                    said.append(node.value)
                for expr in said:
                    for text in filter(_is_text, ast.walk(expr)):
                        fixed = max(_fixed_parts(text), key=len).strip(" :;,(")
                        if len(fixed) >= 12:
                            where = f"{path.relative_to(ROOT)}:{text.lineno}"
                            found.setdefault(where, fixed)
    return found


def notes_table() -> str:
    """The section of contract.md that lists the notes, whitespace made single spaces."""
    text = CONTRACT.read_text()
    section = text[text.index("## Notes on stderr"):]
    section = section[:section.find("\n## ", 3)] if "\n## " in section[3:] else section
    return re.sub(r"\s+", " ", section)


def test_every_note_the_code_prints_is_in_the_table():
    table = notes_table()
    missing = {where: fixed for where, fixed in code_notes().items()
               if re.sub(r"\s+", " ", fixed) not in table}
    assert not missing, f"notes missing from contract.md's table: {missing}"


def test_the_search_finds_the_notes_it_must():
    """The search itself: notes made in a function's list, appended, or returned."""
    found = " | ".join(code_notes().values())
    for fixed in ("cut the rankings to the judged depth with -M",  # a function's list
                  "queries not in the qrels, ignored",  # appended to a local list
                  "--max-drop alone decides",  # a task's note
                  "ndeval prints -nan",  # returned by a function named for notes
                  "where trec_eval itself reads"):  # returned by a function notes.extend takes
        assert fixed in found

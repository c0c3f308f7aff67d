"""The house docs/project.md draws is the house the code builds: every room (a top-level
module or a folder of rpp_cli/) sits on one floor of its table, imports only from its own
floor and the floors below, and no chain of imports between rooms comes back to where it
started; the floors stay few and the files short. Every import statement counts, those
inside functions too (a lazy import is still an arrow), but those only a type checker
reads."""
from __future__ import annotations

import ast
import re
import sys
from functools import cache
from pathlib import Path

from ..conftest import ROOT

PACKAGE = ROOT / "rpp_cli"
MAX_FLOORS = 12  # the longest chain of rooms, each importing the next
MAX_LINES = 500  # a Python module's lines (the C kernel is one translation unit: exempt)


def room_of(module: str) -> str:
    """``rpp_cli.io.runs`` -> ``io``; ``rpp_cli.cli`` -> ``cli``."""
    return module.split(".")[1]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(node: ast.AST) -> bool:
    """Whether ``node`` is an ``if TYPE_CHECKING:`` block (imports a type checker reads)."""
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def imported(path: Path) -> set[str]:
    """The rpp_cli modules (or packages) that ``path`` imports, relative imports resolved."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    skipped = {id(n) for block in ast.walk(tree) if _type_checking(block)
               for n in ast.walk(block)}
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("rpp_cli"))
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            name = ".".join(base + ([node.module] if node.module else []))
            if name.startswith("rpp_cli"):
                found.update(f"{name}.{a.name}" for a in node.names)
                found.add(name)
    return {m for m in found if is_room(m)}


def is_room(module: str) -> bool:
    """Whether ``module`` lies in a room of rpp_cli (a folder or a top-level module)."""
    parts = module.split(".")
    return len(parts) > 1 and ((PACKAGE / parts[1]).is_dir()
                               or (PACKAGE / f"{parts[1]}.py").is_file())


@cache
def arrows() -> dict[str, set[str]]:
    """Room -> the other rooms it imports from (the package's own ``__init__``, whose API
    names load on first use, is the front door, not a room)."""
    out: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path == PACKAGE / "__init__.py":
            continue
        room = room_of(module_name(path))
        targets = {room_of(m) for m in imported(path)}
        out.setdefault(room, set()).update(targets - {room})
    return out


def floors_in_the_docs() -> list[set[str]]:
    """The rooms of each row of docs/project.md's floor table, top floor first."""
    text = (ROOT / "docs" / "project.md").read_text()
    table = text[text.index("| floor | what lives there |"):].split("\n\n")[0]
    rows = [line.split("|")[1] for line in table.splitlines()[2:]]
    return [{name.rstrip("/").removesuffix(".py") for name in re.findall(r"`([^`]+)`", row)}
            for row in rows]


def test_every_room_sits_on_one_floor_of_the_docs_table():
    listed = [room for floor in floors_in_the_docs() for room in floor]
    assert sorted(listed) == sorted(set(listed)), "a room listed on two floors"
    assert set(listed) == set(arrows()), (set(arrows()) - set(listed), set(listed) - set(arrows()))


def test_no_import_runs_back_up():
    floor = {room: k for k, rooms in enumerate(floors_in_the_docs()) for room in rooms}
    upward = sorted(f"{a} (floor {floor[a] + 1}) imports {b} (floor {floor[b] + 1})"
                    for a, targets in arrows().items() for b in targets if floor[b] < floor[a])
    assert not upward, upward


def test_no_import_circle_and_few_floors():
    graph, depth, path = arrows(), {}, []

    def walk(room: str) -> int:
        """The floors from ``room`` down to the ground; a room met again on the way down is
        a circle."""
        assert room not in path, " -> ".join(path[path.index(room):] + [room])
        if room not in depth:
            path.append(room)
            depth[room] = 1 + max((walk(r) for r in graph.get(room, ())), default=0)
            path.pop()
        return depth[room]

    assert max(walk(room) for room in graph) <= MAX_FLOORS, depth


def test_no_module_is_long():
    long = {str(p.relative_to(ROOT)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long


def test_the_checks_see_a_circle_and_an_upward_import(monkeypatch):
    """The graph is read from the code: an arrow added from the ground to the top makes a
    circle the walk reports."""
    graph = {room: set(targets) for room, targets in arrows().items()}
    graph["errors"].add("cli")
    monkeypatch.setattr(sys.modules[__name__], "arrows", lambda: graph)
    try:
        test_no_import_circle_and_few_floors()
    except AssertionError as err:
        assert "cli" in str(err) and "errors" in str(err)
    else:
        raise AssertionError("a circle through errors -> cli was not seen")
    try:
        test_no_import_runs_back_up()
    except AssertionError as err:
        assert "errors (floor" in str(err)
    else:
        raise AssertionError("errors importing cli was not seen running back up")

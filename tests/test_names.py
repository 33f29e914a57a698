"""Each public name of `bot/` means one thing, held by an `ast` walk of every module.

A class, or a CamelCase alias (a type alias, a `TypeVar`, a union of plans), defined at the
top of two modules makes an import line the only clue to what a reader holds: `Outcome` was
a probe's result, a merge step's and a notice callback's. So each such name is defined in
one module, and a second module that means the same thing imports it; a different thing
gets a name that says what it is.

Lower-case functions stay out: modules that play one part each keep the same function on
purpose (each `bot/cli` command module's `register`, each storage backend's `migrate`),
reached through the module rather than imported by name beside its twin.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

BOT = Path(__file__).resolve().parent.parent / "bot"

# Names defined in two or more modules on purpose, each with its reason. Keep it empty
# unless a name must be spelled the same in two places.
ALLOWED: dict[str, str] = {}


def _is_public_camel(name: str) -> bool:
    return name[:1].isupper() and not name.isupper()


def _defined(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The public CamelCase names a module defines at its top level, with their lines."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names = [node.name]
        elif isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        for name in names:
            if _is_public_camel(name):
                yield name, node.lineno


def definitions(root: Path) -> dict[str, list[str]]:
    found: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line in _defined(tree):
            found[name].append(f"{path.relative_to(root.parent)}:{line}")
    return found


def test_each_public_name_is_defined_in_one_module() -> None:
    twice = {
        name: where
        for name, where in sorted(definitions(BOT).items())
        if len(where) > 1 and name not in ALLOWED
    }
    assert not twice, "\n".join(f"{name}: {', '.join(where)}" for name, where in twice.items())


def test_every_allowed_name_is_still_defined_twice() -> None:
    """An entry whose second definition went away is stale and would hide a new one."""
    found = definitions(BOT)
    stale = [name for name in ALLOWED if len(found.get(name, [])) < 2]
    assert not stale, stale


def test_the_walk_sees_classes_aliases_and_type_vars(tmp_path: Path) -> None:
    package = tmp_path / "bot"
    (package / "inner").mkdir(parents=True)
    (package / "a.py").write_text(
        "from typing import TypeVar\n"
        "class Window: ...\n"
        "Clock = object\n"
        "Result = TypeVar('Result')\n"
        "Limit: int = 3\n"
        "MAX_SIZE = 3\n"
        "_Private = int\n"
        "def plan() -> None: ...\n",
        encoding="utf-8",
    )
    (package / "inner" / "b.py").write_text(
        "Window = int\nclass Clock: ...\nResult = 1\nLimit = 4\nMAX_SIZE = 4\n"
        "_Private = str\ndef plan() -> None: ...\n",
        encoding="utf-8",
    )
    twice = {name for name, where in definitions(package).items() if len(where) > 1}
    assert twice == {"Window", "Clock", "Result", "Limit"}

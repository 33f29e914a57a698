"""Each public name of `bot/` means one thing, held by an `ast` walk of every module.

A class, a CamelCase alias (a type alias, a `TypeVar`, a union of plans) or a public
function defined at the top of two modules makes an import line the only clue to what a
reader holds: `Outcome` was a probe's result, a merge step's and a notice callback's;
`plan` was a dashboard cache's next action and the merge queue's moves. So each such name
is defined in one module, and a second module that means the same thing imports it; a
different thing gets a name that says what it is.

The same holds for a public ALL_CAPS constant: `COMMENT_LIMIT` written in three modules
is one of GitHub's limits kept three times, and `TIER_ORDER` was a tuple of tiers in one
module and a rank by name in another. A one-letter type variable (`T = TypeVar("T")`) is
each module's own placeholder, not a constant, and is left out.

A few functions and constants are the same part played by each of several modules (each
`bot/cli` command module's `register`, each storage backend's `migrate` and `MIGRATIONS`);
no module imports one beside its twin. `ALLOWED` lists them, with the modules that may
define each and why.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path

BOT = Path(__file__).resolve().parent.parent / "bot"


@dataclass(frozen=True)
class SameRole:
    """Modules (globs relative to the repository, as `bot/cli/*.py`) that each define the
    name for the same part, and what that part is."""

    modules: tuple[str, ...]
    why: str


# Names defined in two or more modules on purpose. Anything else defined twice is a
# name that means two things, or one thing written twice.
ALLOWED: dict[str, SameRole] = {
    "register": SameRole(
        ("bot/cli/*.py",),
        "each command module of `bot/cli` adds its subcommands to the parser `bot.cli` builds",
    ),
    "build_parser": SameRole(
        ("bot/cli/__init__.py", "bot/cli/judge.py"),
        "each entry point's whole parser: `judge-bot` with every command, and the judge "
        "commands alone for `bot.cli.judge.main`",
    ),
    "main": SameRole(
        ("bot/cli/__init__.py", "bot/cli/judge.py"),
        "each entry point: `bot.cli:main` is the console script; `bot.cli.judge.main` is what "
        "installed pre-push hooks run (through `bot.judge.console`), so it stays",
    ),
    "migrate": SameRole(
        ("bot/storage/sqlite_schema.py", "bot/storage/postgres_schema.py"),
        "each storage backend creates and migrates its own schema (migrations append-only)",
    ),
    "fill_missing_facts": SameRole(
        ("bot/storage/sqlite_facts.py", "bot/storage/postgres_facts.py"),
        "each storage backend writes the `verdict_facts` rows its records lack, in its SQL",
    ),
    "render_schema": SameRole(
        ("bot/judge/records.py", "bot/judging/repo_config.py"),
        "each JSON schema's module renders it (`python -m` the module prints it): the verdict "
        "record's and `.github/judge.yml`'s",
    ),
    "SCHEMA_ID": SameRole(
        ("bot/judge/records.py", "bot/judging/repo_config.py"),
        "each JSON schema's `$id`, in the module that renders it: the verdict record's and "
        "`.github/judge.yml`'s",
    ),
    "EPILOG": SameRole(
        ("bot/cli/*.py",),
        "each command module's `--help` epilog (its exit statuses), passed to its own parser",
    ),
    "MIGRATIONS": SameRole(
        ("bot/storage/sqlite_schema.py", "bot/storage/postgres_schema.py"),
        "each storage backend's migrations, in its SQL (append-only)",
    ),
    "CREATE": SameRole(
        ("bot/storage/sqlite_facts.py", "bot/storage/postgres_facts.py"),
        "each storage backend's `verdict_facts` table and indexes, in its SQL",
    ),
    "FILL_BATCH": SameRole(
        ("bot/storage/sqlite_facts.py", "bot/storage/postgres_facts.py"),
        "the rows each storage backend's `fill_missing_facts` reads at a time (tests shrink "
        "each backend's own)",
    ),
    "CLAIM_SQL": SameRole(
        ("bot/storage/sqlite_deliveries.py", "bot/storage/postgres_deliveries.py"),
        "each storage backend's statement claiming due deliveries (`BEGIN IMMEDIATE` vs "
        "`FOR UPDATE SKIP LOCKED`)",
    ),
    "CLAIM": SameRole(
        ("bot/storage/sqlite_merge_queue.py", "bot/storage/postgres_merge_queue.py"),
        "each storage backend's statement claiming merge queue heads",
    ),
}


def _is_public_camel(name: str) -> bool:
    return name[:1].isupper() and not name.isupper()


def _is_public_constant(name: str, value: ast.expr | None) -> bool:
    """An ALL_CAPS name not bound to a `TypeVar(...)` (a type variable is a placeholder)."""
    if not name.isupper() or name.startswith("_"):
        return False
    called = value.func if isinstance(value, ast.Call) else None
    return not (isinstance(called, ast.Name) and called.id == "TypeVar")


def _defined(tree: ast.Module) -> Iterator[tuple[str, int]]:
    """The public names a module defines at its top level, with their lines: classes,
    CamelCase aliases, ALL_CAPS constants, and functions not named with a leading
    underscore."""
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            if not node.name.startswith("_"):
                yield node.name, node.lineno
            continue
        if isinstance(node, ast.ClassDef):
            if _is_public_camel(node.name):
                yield node.name, node.lineno
            continue
        if isinstance(node, ast.Assign):
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names = [node.target.id]
        else:
            continue
        for name in names:
            if _is_public_camel(name) or _is_public_constant(name, node.value):
                yield name, node.lineno


def definitions(root: Path) -> dict[str, dict[str, int]]:
    """Each public name, and the modules (`bot/...py`) defining it with the first line (an
    `@overload`ed function is one definition)."""
    found: dict[str, dict[str, int]] = defaultdict(dict)
    for path in sorted(root.rglob("*.py")):
        module = path.relative_to(root.parent).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for name, line in _defined(tree):
            found[name].setdefault(module, line)
    return found


def _where(modules: dict[str, int]) -> str:
    return ", ".join(f"{module}:{line}" for module, line in modules.items())


def test_each_public_name_is_defined_in_one_module() -> None:
    twice = {
        name: modules
        for name, modules in sorted(definitions(BOT).items())
        if len(modules) > 1 and name not in ALLOWED
    }
    assert not twice, "\n".join(f"{name}: {_where(modules)}" for name, modules in twice.items())


def astray(found: dict[str, dict[str, int]], allowed: dict[str, SameRole]) -> dict[str, list[str]]:
    """The modules defining an allowed name outside the modules its role names."""
    outside = {
        name: [m for m in found.get(name, {}) if not any(fnmatchcase(m, g) for g in role.modules)]
        for name, role in allowed.items()
    }
    return {name: modules for name, modules in outside.items() if modules}


def test_an_allowed_name_is_defined_only_where_its_role_is() -> None:
    """`register` in a module outside `bot/cli` would be a second meaning, not the role."""
    assert not astray(definitions(BOT), ALLOWED)


def test_a_name_outside_its_role_is_astray() -> None:
    found = {"register": {"bot/cli/a.py": 1, "bot/cli/b.py": 2, "bot/merging/c.py": 3}}
    assert astray(found, {"register": ALLOWED["register"]}) == {"register": ["bot/merging/c.py"]}
    assert astray({"register": {"bot/cli/a.py": 1}}, ALLOWED) == {}


def test_every_allowed_name_is_still_defined_twice() -> None:
    """An entry whose second definition went away is stale and would hide a new one."""
    found = definitions(BOT)
    stale = [name for name in ALLOWED if len(found.get(name, {})) < 2]
    assert not stale, stale


def test_the_walk_sees_classes_aliases_type_vars_and_functions(tmp_path: Path) -> None:
    package = tmp_path / "bot"
    (package / "inner").mkdir(parents=True)
    (package / "a.py").write_text(
        "from typing import TypeVar, overload\n"
        "class Window: ...\n"
        "Clock = object\n"
        "Result = TypeVar('Result')\n"
        "Limit: int = 3\n"
        "MAX_SIZE = 3\n"
        "TIMEOUT: float = 1.0\n"
        "T = TypeVar('T')\n"
        "_HIDDEN = 1\n"
        "_Private = int\n"
        "def plan() -> None: ...\n"
        "async def record() -> None: ...\n"
        "def _helper() -> None: ...\n"
        "@overload\n"
        "def once(x: int) -> int: ...\n"
        "@overload\n"
        "def once(x: str) -> str: ...\n"
        "def once(x: object) -> object: return x\n"
        "class Holder:\n"
        "    def show(self) -> None: ...\n",
        encoding="utf-8",
    )
    (package / "inner" / "b.py").write_text(
        "Window = int\nclass Clock: ...\nResult = 1\nLimit = 4\nMAX_SIZE = 4\n"
        "TIMEOUT = 2.0\nT = TypeVar('T')\n_HIDDEN = 2\n"
        "_Private = str\ndef plan() -> None: ...\ndef record() -> None: ...\n"
        "def _helper() -> None: ...\ndef show() -> None: ...\nplan_alias = plan\n",
        encoding="utf-8",
    )
    found = definitions(package)
    twice = {name for name, modules in found.items() if len(modules) > 1}
    assert twice == {"Window", "Clock", "Result", "Limit", "MAX_SIZE", "TIMEOUT", "plan", "record"}
    assert found["once"] == {"bot/a.py": 15}

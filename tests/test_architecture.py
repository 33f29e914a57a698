"""The floor plan (docs/architecture.md), held by an `ast` walk of `bot/`'s imports.

A new import that breaks the plan fails here, naming the modules: which package may use
which, no cycle between packages, the judge's rooms importing downward only, and which
module owns each kv namespace (nobody else names it).
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

BOT = Path(__file__).resolve().parent.parent / "bot"

# Lower layers never import higher ones; within a layer, imports may go either way as
# long as no cycle forms. Top-level modules of `bot/` count as packages of their own.
LAYERS: tuple[frozenset[str], ...] = (
    # Know no feature: storage, GitHub access, the judge, and small shared helpers.
    frozenset(
        {
            "storage",
            "github",
            "judge",
            "credentials",
            "gfm",
            "globs",
            "lifetime",
            "link_health",
            "logs",
            "metrics",
            "record_view",
            "record_metrics",
        }
    ),
    # The platform: operator settings, outbound notices, services, delivery intake.
    frozenset({"settings", "notify", "services", "intake"}),
    # Judging: the flow, target, state, run and repository config. Announces outcomes.
    frozenset({"judging"}),
    # Features that react to judging (or to webhooks of their own).
    frozenset({"disagreement", "reviews", "merging", "commands", "installations"}),
    # Readers: reports and pages over storage and the judge's vocabulary.
    frozenset({"reports", "dashboard", "pages", "evaluation"}),
    # Composition: each composes everything in one place.
    frozenset({"app", "routing", "reactions", "cli", "registration", "action", "__main__", "bot"}),
)

# Packages that must not see each other although the layers would allow it.
FORBIDDEN = {
    ("judge", "storage"): "the engine keeps records through `EngineStore`, passed in",
}

# Imports the plan allows by name, each with its reason.
EXCEPTIONS = {
    ("bot.judge.console", "bot.cli.judge"): (
        "installed pre-push hooks run `python -m bot.judge.console`; it forwards to the CLI"
    ),
}

# The judge's rooms (bot/judge/*/) and its top-level modules, lowest first.
JUDGE_ROOMS: tuple[frozenset[str], ...] = (
    frozenset({"records", "authorship", "watched_authors", "providers"}),
    frozenset({"rubrics", "settings", "record_table"}),
    frozenset({"checks", "tagging"}),
    frozenset({"engine", "console"}),
    frozenset({"doctor"}),
)

# Each kv namespace, and the one module that names it (reads, writes and forgets it;
# other packages call that module's helpers).
NAMESPACE_OWNERS = {
    "judged-sha": "bot.judging.state",
    "skip-label-grant": "bot.judging.state",
    "judged-sha-ci-rerun": "bot.judging.state",
    "judged-sha-run": "bot.judging.run_handle",
    "judged-sha-run-creator": "bot.judging.run_handle",
    "repo-config": "bot.judging.config_store",
    "disagreement-by-task": "bot.disagreement.sync",
    "disagreement-by-issue": "bot.disagreement.sync",
    "circuit-breaker": "bot.merging.breaker_flow",
    "merge-conflict-notice": "bot.merging.driver",
    "branch-rules": "bot.merging.github_handover",
    "github-merge-queue": "bot.merging.github_handover",
    "github-merge-groups": "bot.merging.github_handover",
    "merge-batch-files": "bot.merging.batch_files",
    "review-submitted": "bot.reviews.submit",
    "review-ids": "bot.reviews.submit",
    "override-applied": "bot.commands.handlers",
    "notify-outage": "bot.notify.reporting",
    "notifications-sent": "bot.notify.sender",
    "delivery-handled": "bot.intake.dispatch",
    "missed-delivery-claims": "bot.intake.recovery",
    "verdict-cache": "bot.judge.engine",
    "storage-write-probe": "bot.storage.keyed",
}

KV_METHODS = frozenset({"kv_get", "kv_put", "kv_put_if_absent", "kv_delete", "kv_list"})


@dataclass(frozen=True)
class Module:
    name: str
    path: Path
    tree: ast.Module


@cache
def modules() -> dict[str, Module]:
    found = {}
    for path in sorted(BOT.rglob("*.py")):
        parts = list(path.relative_to(BOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        name = ".".join(parts)
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8")))
    return found


def imported(module: Module) -> Iterator[tuple[str, int]]:
    """Every `bot` module this one imports (lazily or not), with the line."""
    known = modules()
    is_package = module.path.name == "__init__.py"
    for node in ast.walk(module.tree):
        if not isinstance(node, ast.Import | ast.ImportFrom):
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = module.name.split(".")
                anchor = anchor if is_package else anchor[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            names = [base, *(f"{base}.{alias.name}" for alias in node.names)]
        for name in names:
            while name not in known and "." in name:
                name = name.rsplit(".", 1)[0]
            if name in known and name != module.name:
                yield name, node.lineno


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def layer_of(package: str) -> int:
    for index, layer in enumerate(LAYERS):
        if package in layer:
            return index
    raise AssertionError(f"package {package!r} has no layer: add it to LAYERS")


def package_edges() -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for module in modules().values():
        for target, line in imported(module):
            if (module.name, target) in EXCEPTIONS:
                continue
            source, sink = package_of(module.name), package_of(target)
            if source != sink:
                edges[(source, sink)].append(f"{module.name}:{line} imports {target}")
    return edges


def test_every_package_has_a_layer() -> None:
    for module in modules():
        layer_of(package_of(module))


def test_no_package_imports_a_higher_layer() -> None:
    wrong = [
        f"{source} (layer {layer_of(source)}) -> {sink} (layer {layer_of(sink)}): {where[0]}"
        for (source, sink), where in sorted(package_edges().items())
        if layer_of(source) < layer_of(sink)
    ]
    assert not wrong, "\n".join(wrong)


def test_forbidden_pairs_stay_apart() -> None:
    edges = package_edges()
    wrong = [
        f"{pair}: {edges[pair][0]} ({why})" for pair, why in FORBIDDEN.items() if pair in edges
    ]
    assert not wrong, "\n".join(wrong)


def test_no_cycle_between_packages() -> None:
    graph: dict[str, set[str]] = defaultdict(set)
    for source, sink in package_edges():
        graph[source].add(sink)
    cycle = _a_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def _a_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that returns to its start, or None."""
    done: set[str] = set()
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        path.append(node)
        for following in sorted(graph.get(node, ())):
            found = visit(following)
            if found is not None:
                return found
        path.pop()
        done.add(node)
        return None

    for start in sorted(graph):
        found = visit(start)
        if found is not None:
            return found
    return None


def test_the_cycle_finder_finds_cycles() -> None:
    assert _a_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _a_cycle({"a": {"b"}, "b": {"c"}}) is None


def _room(module: str) -> str:
    return module.split(".")[2] if module.count(".") >= 2 else "__init__"


def test_the_judge_rooms_import_downward_only() -> None:
    rank = {room: index for index, rooms in enumerate(JUDGE_ROOMS) for room in rooms}
    wrong = []
    for module in modules().values():
        if not module.name.startswith("bot.judge."):
            continue
        for target, line in imported(module):
            if not target.startswith("bot.judge.") or (module.name, target) in EXCEPTIONS:
                continue
            source, sink = _room(module.name), _room(target)
            assert source in rank and sink in rank, f"add {source!r}/{sink!r} to JUDGE_ROOMS"
            if source != sink and rank[source] <= rank[sink]:
                wrong.append(f"{module.name}:{line} imports {target}")
    assert not wrong, "\n".join(wrong)


def test_the_judge_directory_holds_rooms() -> None:
    """Modules directly in bot/judge/ are the shared vocabulary; the rest live in rooms."""
    direct = sorted(p.stem for p in (BOT / "judge").glob("*.py") if p.stem != "__init__")
    assert direct == sorted(r for rooms in JUDGE_ROOMS for r in rooms if not _is_room(r))
    for room in (r for rooms in JUDGE_ROOMS for r in rooms if _is_room(r)):
        docstring = ast.get_docstring(modules()[f"bot.judge.{room}"].tree)
        assert docstring, f"bot/judge/{room}/__init__.py needs a docstring naming its modules"


def _is_room(name: str) -> bool:
    return (BOT / "judge" / name).is_dir()


def test_every_package_says_what_its_modules_do() -> None:
    missing = [
        name
        for name, module in modules().items()
        if module.path.name == "__init__.py" and not ast.get_docstring(module.tree)
    ]
    assert not missing, f"packages without a docstring: {missing}"


def test_each_package_docstring_names_its_modules() -> None:
    """A module added without a line in its package's docstring is a room nobody
    will find; the docstring is the package's table of contents."""
    missing = []
    for init in sorted(BOT.rglob("__init__.py")):
        package = init.parent
        members = {path.stem for path in package.glob("*.py")} - {"__init__"}
        members |= {d.name for d in package.iterdir() if (d / "__init__.py").is_file()}
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        missing += [
            f"{package.relative_to(BOT.parent)}: {name}"
            for name in sorted(members)
            if not re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", docstring)
        ]
    assert not missing, "modules missing from their package's docstring:\n" + "\n".join(missing)


ARCHITECTURE_DOC = BOT.parent / "docs" / "architecture.md"


def test_the_architecture_doc_keeps_the_kv_owner_table() -> None:
    documented = {}
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    for names, owner in re.findall(r"^\| (`[^|]+`) \| `([\w/]+)\.py`", text, re.MULTILINE):
        for name in re.findall(r"`([\w-]+)`", names):
            documented[name] = "bot." + owner.replace("/", ".").removesuffix(".__init__")
    assert documented == NAMESPACE_OWNERS


def test_the_architecture_doc_names_only_modules_that_exist() -> None:
    text = ARCHITECTURE_DOC.read_text(encoding="utf-8")
    paths = set(re.findall(r"\b((?:[a-z_]+/)+[a-z_]+\.py)\b", text))
    roots = (BOT.parent, BOT, BOT / "judge")
    gone = sorted(p for p in paths if not any((root / p).is_file() for root in roots))
    assert not gone, f"docs/architecture.md names modules that do not exist: {gone}"


def _string_constants(module: Module) -> Iterator[tuple[str, int]]:
    for node in ast.walk(module.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.value, node.lineno


def test_each_kv_namespace_is_named_by_its_owner_only() -> None:
    wrong = []
    for module in modules().values():
        if module.name.startswith("bot.storage"):
            continue
        for value, line in _string_constants(module):
            owner = NAMESPACE_OWNERS.get(value)
            if owner is not None and owner != module.name:
                wrong.append(f"{module.name}:{line} names {value!r}, owned by {owner}")
    assert not wrong, "\n".join(wrong)


def _calls_kv(module: Module) -> bool:
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in KV_METHODS
        for node in ast.walk(module.tree)
    )


def test_only_namespace_owners_call_the_kv_store() -> None:
    owners = set(NAMESPACE_OWNERS.values())
    callers = {
        name for name, module in modules().items() if _calls_kv(module) and "storage" not in name
    }
    assert callers <= owners, f"kv calls outside an owner module: {sorted(callers - owners)}"


def test_every_owner_defines_its_namespaces() -> None:
    """A namespace constant that moved or was renamed makes the table above wrong."""
    for namespace, owner in NAMESPACE_OWNERS.items():
        values = {value for value, _ in _string_constants(modules()[owner])}
        assert namespace in values, f"{owner} no longer names {namespace!r}"


@pytest.mark.parametrize("module", ["bot.judge.engine"])
def test_the_engine_reads_no_settings_loader_or_storage(module: str) -> None:
    engine = [m for m in modules() if m == module or m.startswith(module + ".")]
    wrong = [
        f"{name}:{line} imports {target}"
        for name in engine
        for target, line in imported(modules()[name])
        if package_of(target) in {"settings", "storage"}
    ]
    assert not wrong, "\n".join(wrong)


# Public functions of kv owners that take a JSON object which is not a kv row, each with why.
UNTYPED_BY_NATURE = {
    "bot.intake.dispatch.has_handlers": "a webhook payload, GitHub's shape",
    "bot.merging.github_handover.has_merge_queue": "the rules as GitHub's REST API returns them",
}


def _untyped_annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    arguments = function.args
    annotations = [
        a.annotation
        for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)
        if a.annotation is not None
    ]
    if function.returns is not None:
        annotations.append(function.returns)
    return [
        text
        for text in map(ast.unparse, annotations)
        if "dict[str, Any]" in text or "Mapping[str, Any]" in text
    ]


def test_untyped_by_nature_lists_only_what_needs_it() -> None:
    for qualified in UNTYPED_BY_NATURE:
        owner, _, name = qualified.rpartition(".")
        functions = {
            node.name: node
            for node in modules()[owner].tree.body
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        }
        assert name in functions, f"{qualified} is gone: drop it from UNTYPED_BY_NATURE"
        assert _untyped_annotations(functions[name]), f"{qualified} is typed now: drop it"


def test_kv_owners_hand_out_typed_rows() -> None:
    """An owner's helpers take and return typed values: the JSON dict of a row lives
    inside the owner, so a caller cannot misspell a key (`.get("hold_label")`)."""
    wrong = []
    for owner in sorted(set(NAMESPACE_OWNERS.values())):
        for node in modules()[owner].tree.body:
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            qualified = f"{owner}.{node.name}"
            if node.name.startswith("_") or qualified in UNTYPED_BY_NATURE:
                continue
            untyped = _untyped_annotations(node)
            if untyped:
                wrong.append(f"{qualified}:{node.lineno} {', '.join(untyped)}")
    assert not wrong, "kv owners' helpers with untyped rows:\n" + "\n".join(wrong)


# What a module outside bot/storage may take from the SQLite driver: its exceptions, to
# tell a storage failure from the rest.
SQLITE_EXCEPTIONS = frozenset({"Error", "DatabaseError", "OperationalError"})


def test_sql_is_storages_own() -> None:
    """Statements live in bot/storage: a module elsewhere that opened a database would
    bypass the owners of its rows (the Action's restored cache is taken in by storage)."""
    wrong = []
    for name, module in modules().items():
        if name.startswith("bot.storage"):
            continue
        for node in ast.walk(module.tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "sqlite3"
                and node.attr not in SQLITE_EXCEPTIONS
            ):
                wrong.append(f"{name}:{node.lineno} uses sqlite3.{node.attr}")
        wrong += [
            f"{name}:{line} imports {target}"
            for target, line in imported(module)
            if target.split(".")[0] in {"asyncpg", "aiosqlite"}
        ]
    assert not wrong, "\n".join(wrong)

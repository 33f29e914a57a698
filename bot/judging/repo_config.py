"""The per-repository configuration file `.github/judge.yml`, and the pure
decisions it drives: which changed files are judged, with which rubric, at
which depth, for which authors.

`parse_repo_config` turns the file's text into a `RepoConfig` or raises
`RepoConfigError`, whose message names the line and key at fault and what was
expected, so a repository owner can fix the file from the check-run text alone.
Errors are mapped back to lines through PyYAML's composed node tree: pydantic
reports a location such as `("paths", "include", 2)`, which is walked down the
nodes to the one that holds the bad value.

Glob syntax is gitignore's (see `bot.globs`). The shape of the file, the
defaults and an example are in docs/repo-config.md; `python -m bot.judging.repo_config`
prints the JSON Schema and docs/judge-config.schema.json must equal it (a test
checks).

Nothing here performs I/O: the caller fetches the file and the list of changed
files and acts on the returned values.
"""

from __future__ import annotations

import difflib
import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints
from pydantic import ValidationError as PydanticValidationError

from bot.github.types import ChangedPath
from bot.globs import GlobError, check_glob, first_match, match_any
from bot.judge.config import DEFAULT_WATCHED_PATHS, Mode
from bot.judge.records import JSON_SCHEMA_DIALECT, RubricName

CONFIG_PATH = ".github/judge.yml"
SCHEMA_ID = "https://judge-bot.invalid/schemas/judge-config.json"


DEFAULT_INCLUDE: tuple[str, ...] = DEFAULT_WATCHED_PATHS
DEFAULT_SKIP_LABEL = "judge-skip"
DEFAULT_MAX_FILES = 50
DEFAULT_MAX_CHARS_PER_FILE = 100_000
# Upper bounds protect the App operator's model budget from one repository's file.
MAX_MAX_FILES = 500
MAX_MAX_CHARS_PER_FILE = 1_000_000

Glob = Annotated[
    str,
    StringConstraints(min_length=1),
    AfterValidator(check_glob),
]
NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


def _normalise_author(name: str) -> str:
    return name.strip().removeprefix("@").strip()


def _check_author(name: str) -> str:
    normal = _normalise_author(name)
    if not normal:
        raise ValueError("expected a name, email or login, got an empty string")
    return normal


Author = Annotated[str, AfterValidator(_check_author)]


class _Section(BaseModel):
    # Frozen so the shared defaults below can never be mutated through one
    # instance; extra keys are forbidden so a misspelt key is an error, not a no-op.
    model_config = ConfigDict(extra="forbid", frozen=True)


class PathsConfig(_Section):
    """Which changed files are judged."""

    include: tuple[Glob, ...] = Field(
        default=DEFAULT_INCLUDE,
        description="Globs of files to judge. Setting this replaces the default list; use "
        "extra_include to add to it instead. Default: Markdown under research/, knowledge/, "
        "docs/ and plans/.",
    )
    extra_include: tuple[Glob, ...] = Field(
        default=(),
        description="Globs judged in addition to include (handy to keep the default list).",
    )
    exclude: tuple[Glob, ...] = Field(
        default=(),
        description="Globs never judged, even when include, extra_include or sensitive match.",
    )


class LimitsConfig(_Section):
    """Bounds on how much of one change is sent to the judges."""

    max_files: int = Field(
        default=DEFAULT_MAX_FILES,
        ge=1,
        le=MAX_MAX_FILES,
        strict=True,
        description="Most files judged per change; the rest are listed as left out "
        "(sensitive files are chosen first).",
    )
    max_chars_per_file: int = Field(
        default=DEFAULT_MAX_CHARS_PER_FILE,
        ge=1,
        le=MAX_MAX_CHARS_PER_FILE,
        strict=True,
        description="Characters of one file sent to a judge; longer files are truncated "
        "and the truncation is recorded.",
    )


class ModelsConfig(_Section):
    """Per-tier model overrides for this repository."""

    quick: NonEmpty | None = Field(
        default=None,
        description="Model for the quick tier (first screening). Unset: the installation's.",
    )
    deep: NonEmpty | None = Field(
        default=None,
        description="Model for the deep tier (thorough review, sensitive files). "
        "Unset: the installation's.",
    )
    tiebreaker: NonEmpty | None = Field(
        default=None,
        description="Model that settles quick/deep disagreement. Unset: the installation's.",
    )


class TaskConfig(_Section):
    """Standing instructions added to the task of every judged change."""

    directives: tuple[NonEmpty, ...] = Field(
        default=(),
        description="Rules every change in this repository must follow, given to the judges "
        "with each change's own task (e.g. 'Every claim cites a source').",
    )
    acceptance: str = Field(
        default="",
        description="Acceptance criteria for every change, appended to the change's own.",
    )


class RepoConfig(_Section):
    """judge-bot settings for one repository, read from .github/judge.yml."""

    mode: Mode | None = Field(
        default=None,
        description="advisory: the judge check run never fails; blocking: a reject or "
        "improve verdict fails it. Unset: the installation default (JUDGE_MODE, itself "
        "advisory by default).",
    )
    paths: PathsConfig = Field(
        default=PathsConfig(),
        description="Which changed files are judged: include (replaces the default), "
        "extra_include (adds to it) and exclude (wins over both).",
    )
    rubrics: dict[Glob, RubricName] = Field(
        default={"**/*.md": RubricName.CONTENT},
        description="Ordered mapping of glob to rubric (content, code or completion); the "
        "first glob that matches a file wins, and a file no glob matches gets content.",
    )
    sensitive: tuple[Glob, ...] = Field(
        default=(),
        description="Globs of files that always get the deep tier. A sensitive file is "
        "judged even when no include glob lists it (exclude still wins).",
    )
    authors: tuple[Author, ...] = Field(
        default=(),
        description="Only pushes with a commit authored or committed by one of these "
        "(name, email or GitHub login, case-insensitive; a leading @ is ignored) are "
        "judged. Empty: everyone's.",
    )
    skip_label: NonEmpty | None = Field(
        default=DEFAULT_SKIP_LABEL,
        description="A pull request carrying this label is not judged. null: no skip label.",
    )
    limits: LimitsConfig = Field(
        default=LimitsConfig(),
        description="How much of one change is judged: max_files and max_chars_per_file.",
    )
    models: ModelsConfig = Field(
        default=ModelsConfig(),
        description="Models to use per tier (quick, deep, tiebreaker) instead of the "
        "installation's; a model never judges a change its own family wrote.",
    )
    task: TaskConfig = Field(
        default=TaskConfig(),
        description="Standing directives and acceptance criteria given to the judges with "
        "every change of this repository.",
    )


# ---------------------------------------------------------------------------
# Decisions


def effective_mode(config: RepoConfig, default: Mode = Mode.ADVISORY) -> Mode:
    """The repository's mode, else the installation default (from JUDGE_MODE)."""
    return config.mode if config.mode is not None else default


def _included(config: RepoConfig, path: str) -> bool:
    globs = (*config.paths.include, *config.paths.extra_include, *config.sensitive)
    return match_any(globs, path)


def _excluded(config: RepoConfig, path: str) -> bool:
    return match_any(config.paths.exclude, path)


def rubric_for(config: RepoConfig, path: str) -> RubricName:
    pattern = first_match(config.rubrics, path)
    return config.rubrics[pattern] if pattern is not None else RubricName.CONTENT


def is_sensitive(config: RepoConfig, path: str) -> bool:
    return match_any(config.sensitive, path)


def author_matches(config: RepoConfig, names: Iterable[str]) -> bool:
    """True when any of `names` (commit author/committer names, emails, logins)
    is listed in `authors`, or `authors` is empty."""
    if not config.authors:
        return True
    wanted = {a.casefold() for a in config.authors}
    return any(_normalise_author(n).casefold() in wanted for n in names)


@dataclass(frozen=True)
class LeftOut:
    """A changed file that is not judged, and why, in words a person reads in the check run
    (not watched, removed, binary, cut to a size...)."""

    path: str
    reason: str


def over_limit_reason(max_files: int) -> str:
    return f"over the limit of {max_files} file{'s' if max_files != 1 else ''} (limits.max_files)"


NOT_WATCHED = "not in the watched paths"
EXCLUDED = "excluded by paths.exclude"
REMOVED = "removed"


@dataclass(frozen=True)
class Selection:
    """The files to judge, in the order given, and every file left out with why."""

    files: tuple[ChangedPath, ...]
    left_out: tuple[LeftOut, ...] = ()
    max_files: int = DEFAULT_MAX_FILES
    sensitive: frozenset[str] = field(default_factory=frozenset)


def select_files(config: RepoConfig, changed: Sequence[ChangedPath]) -> Selection:
    """Keep watched files that still exist, at most `limits.max_files` of them.

    When there are more, sensitive files are chosen first, then the rest in the
    order given; the chosen files keep the order given. A path listed twice
    counts once, with its last entry (a caller may concatenate per-commit lists).
    """
    latest: dict[str, ChangedPath] = {}
    for item in changed:
        latest.pop(item.path, None)
        latest[item.path] = item
    left_out: list[LeftOut] = []
    candidates: list[ChangedPath] = []
    for item in latest.values():
        if item.removed:
            left_out.append(LeftOut(item.path, REMOVED))
        elif not _included(config, item.path):
            left_out.append(LeftOut(item.path, NOT_WATCHED))
        elif _excluded(config, item.path):
            left_out.append(LeftOut(item.path, EXCLUDED))
        else:
            candidates.append(item)
    limit = config.limits.max_files
    ranked = sorted(candidates, key=lambda f: not is_sensitive(config, f.path))
    keep = {f.path for f in ranked[:limit]}
    files = tuple(f for f in candidates if f.path in keep)
    over = over_limit_reason(limit)
    left_out.extend(LeftOut(f.path, over) for f in candidates if f.path not in keep)
    return Selection(
        files=files,
        left_out=tuple(left_out),
        max_files=limit,
        sensitive=frozenset(f.path for f in files if is_sensitive(config, f.path)),
    )


# ---------------------------------------------------------------------------
# Parsing


@dataclass(frozen=True)
class ConfigIssue:
    """One problem in the file. `line` and `column` are 1-based; `key` is the
    dotted path of the setting (`paths.include[2]`), None for syntax errors."""

    line: int
    column: int
    key: str | None
    message: str

    def sentence(self, path: str = CONFIG_PATH) -> str:
        if self.key is None:
            return f"{path} line {self.line}, column {self.column}: {self.message}"
        return f"{path} line {self.line}, key {self.key}: {self.message}"


class RepoConfigError(ValueError):
    """The configuration file is invalid. `line`, `column`, `key` and `message`
    describe the first problem (in file order); `issues` lists them all."""

    def __init__(self, issues: Sequence[ConfigIssue], path: str = CONFIG_PATH) -> None:
        if not issues:
            raise ValueError("RepoConfigError needs at least one issue")
        self.issues = tuple(sorted(issues, key=lambda i: (i.line, i.column, i.key or "")))
        self.path = path
        first = self.issues[0]
        self.line = first.line
        self.column = first.column
        self.key = first.key
        self.message = first.message
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.issues[0].sentence(self.path)
        more = len(self.issues) - 1
        if more:
            text += f" (and {more} more problem{'s' if more != 1 else ''})"
        return text


def parse_repo_config(text: str, *, path: str = CONFIG_PATH) -> RepoConfig:
    """Parse the file's text. An empty file, comments only, `---` or `{}` give the defaults."""
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        raise RepoConfigError([_syntax_issue(exc)], path) from exc
    except yaml.YAMLError as exc:
        # Errors without a position (rare: e.g. a reader error before any mark).
        raise RepoConfigError([ConfigIssue(1, 1, None, f"not valid YAML: {exc}")], path) from exc
    if root is None or data is None:
        # Nothing, comments only, or a bare `---`: an explicit "use the defaults".
        return RepoConfig()
    if not isinstance(root, yaml.MappingNode):
        issue = ConfigIssue(
            root.start_mark.line + 1,
            root.start_mark.column + 1,
            None,
            f"expected a mapping of settings (key: value lines), got {_describe(data, root)}",
        )
        raise RepoConfigError([issue], path)
    duplicates = list(_duplicate_keys(root, ()))
    if duplicates:
        raise RepoConfigError(duplicates, path)
    try:
        return RepoConfig.model_validate(data)
    except PydanticValidationError as exc:
        issues = [_validation_issue(root, err) for err in exc.errors(include_url=False)]
        raise RepoConfigError(issues, path) from exc


def _syntax_issue(exc: yaml.MarkedYAMLError) -> ConfigIssue:
    mark = exc.problem_mark or exc.context_mark
    line = mark.line + 1 if mark is not None else 1
    column = mark.column + 1 if mark is not None else 1
    problem = exc.problem or exc.context or "invalid YAML"
    if exc.context and exc.problem:
        where = ""
        if exc.context_mark is not None and exc.context_mark.line + 1 != line:
            where = f" (line {exc.context_mark.line + 1})"
        problem = f"{exc.context}{where}, {exc.problem}"
    return ConfigIssue(line, column, None, f"not valid YAML: {problem}")


def _duplicate_keys(node: yaml.Node, loc: tuple[str | int, ...]) -> Iterable[ConfigIssue]:
    # PyYAML silently keeps the last of two equal keys; a repeated key is
    # almost always an edit gone wrong, so say so.
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if isinstance(key_node, yaml.ScalarNode):
                name = key_node.value
                line = key_node.start_mark.line + 1
                if name in seen:
                    yield ConfigIssue(
                        line,
                        key_node.start_mark.column + 1,
                        _format_loc((*loc, name)),
                        f"this key appears twice (first on line {seen[name]}); keep one",
                    )
                else:
                    seen[name] = line
                yield from _duplicate_keys(value_node, (*loc, name))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            yield from _duplicate_keys(item, (*loc, i))


def _validation_issue(root: yaml.Node, err: Mapping[str, Any]) -> ConfigIssue:
    loc: tuple[str | int, ...] = tuple(err["loc"])
    on_key = err["type"] == "extra_forbidden" or (bool(loc) and loc[-1] == "[key]")
    node = _node_at(root, loc, want_key=on_key)
    key_loc = tuple(p for p in loc if p != "[key]")
    message = _explain(err, node, key_loc)
    return ConfigIssue(
        node.start_mark.line + 1, node.start_mark.column + 1, _format_loc(key_loc), message
    )


def _node_at(root: yaml.Node, loc: tuple[str | int, ...], *, want_key: bool) -> yaml.Node:
    """The deepest node along `loc`: the key node when the key itself is at
    fault, else the value node."""
    node = root
    for i, part in enumerate(loc):
        if part == "[key]":
            break
        last = i == len(loc) - 1 or (i == len(loc) - 2 and loc[-1] == "[key]")
        if isinstance(node, yaml.MappingNode):
            pair = next(
                (
                    (k, v)
                    for k, v in node.value
                    if isinstance(k, yaml.ScalarNode) and k.value == str(part)
                ),
                None,
            )
            if pair is None:
                return node
            node = pair[0] if (last and want_key) else pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if not 0 <= part < len(node.value):
                return node
            node = node.value[part]
        else:
            return node
    return node


_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


def _format_loc(loc: Sequence[str | int]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif _IDENTIFIER.match(part):
            out += f".{part}" if out else part
        else:
            out += f"[{json.dumps(part)}]"
    return out or "(top level)"


_YAML_BOOLEAN_WORDS = {"yes", "no", "on", "off", "true", "false", "y", "n"}


def _describe(value: Any, node: yaml.Node | None = None) -> str:
    """Name a YAML value for a message, quoting short scalars as written."""
    source = node.value if isinstance(node, yaml.ScalarNode) else None
    shown = source if source is not None else repr(value)
    if len(shown) > 40:
        shown = shown[:37] + "..."
    if value is None:
        return "an empty value"
    if isinstance(value, bool):
        return f"a boolean ({shown})"
    if isinstance(value, int | float):
        return f"a number ({shown})"
    if isinstance(value, str):
        return f"the string {json.dumps(value) if source is None else json.dumps(source)}"
    if isinstance(value, datetime | date):
        return f"a date ({shown})"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return f"a {type(value).__name__}"


def _hint(value: Any, node: yaml.Node | None) -> str:
    if (
        isinstance(value, bool)
        and isinstance(node, yaml.ScalarNode)
        and node.value.lower() in _YAML_BOOLEAN_WORDS
    ):
        return f"; YAML reads {node.value} as a boolean, quote it: '{node.value}'"
    if isinstance(value, int | float | datetime | date) and isinstance(node, yaml.ScalarNode):
        return f"; quote it to make it a string: '{node.value}'"
    return ""


def _explain(err: Mapping[str, Any], node: yaml.Node, loc: tuple[str | int, ...]) -> str:
    kind = err["type"]
    value = err.get("input")
    ctx: Mapping[str, Any] = err.get("ctx") or {}
    got = _describe(value, node)
    if kind == "extra_forbidden":
        return _unknown_key(loc)
    if kind == "string_type":
        return f"expected a string, got {got}{_hint(value, node)}"
    if kind == "string_too_short":
        return "expected a non-empty string"
    if kind in ("int_type", "int_parsing", "int_from_float"):
        return f"expected a whole number, got {got}"
    if kind == "greater_than_equal":
        return f"expected a whole number of at least {ctx.get('ge')}, got {got}"
    if kind == "less_than_equal":
        return f"expected a whole number of at most {ctx.get('le')}, got {got}"
    if kind in ("list_type", "tuple_type"):
        extra = "; write [] for an empty list" if value is None else ""
        if isinstance(value, str):
            extra = f"; write a list even for one item: [{json.dumps(value)}]"
        return f"expected a list, got {got}{extra}"
    if kind in ("dict_type", "model_type", "model_attributes_type"):
        extra = "; write {} for an empty mapping" if value is None else ""
        return f"expected a mapping (key: value lines), got {got}{extra}"
    if kind == "literal_error":
        return f"expected one of {ctx.get('expected')}, got {got}"
    if kind == "enum":
        return f"expected one of {ctx.get('expected')}, got {got}"
    if kind == "value_error":
        error = ctx.get("error")
        if isinstance(error, GlobError):
            return f"invalid glob {json.dumps(value)}: {error}"
        return str(error) if error is not None else str(err["msg"])
    return f"{str(err['msg']).rstrip('.')}, got {got}"


def _unknown_key(loc: tuple[str | int, ...]) -> str:
    name = str(loc[-1]) if loc else ""
    allowed = _keys_at(loc[:-1])
    if not allowed:
        return f"unknown key {json.dumps(name)}"
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    suggestion = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key {json.dumps(name)}{suggestion}; expected one of: {', '.join(allowed)}"


def _keys_at(loc: tuple[str | int, ...]) -> list[str]:
    model: type[BaseModel] = RepoConfig
    for part in loc:
        info = model.model_fields.get(str(part))
        annotation = info.annotation if info is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)


# ---------------------------------------------------------------------------
# JSON Schema

_RUBRIC_DESCRIPTION = (
    "Rubric a file is judged against: content (prose; semantic, pragmatic and syntactic "
    "scores 1-5), code (correctness, scope adherence, code quality, completeness) or "
    "completion (did the change finish its task)."
)


def config_json_schema() -> dict[str, Any]:
    body = RepoConfig.model_json_schema(mode="validation")
    schema: dict[str, Any] = {"$schema": JSON_SCHEMA_DIALECT, "$id": SCHEMA_ID}
    schema.update(body)
    schema["title"] = "judge-bot repository configuration (.github/judge.yml)"
    schema["description"] = (
        "Settings of the judge-bot GitHub App for one repository. Every key is optional; "
        "an empty file means the defaults. Globs are gitignore-like, relative to the "
        "repository root."
    )
    rubric = schema.get("$defs", {}).get("RubricName")
    if rubric is not None:
        rubric["description"] = _RUBRIC_DESCRIPTION
    return schema


def render_schema() -> str:
    return json.dumps(config_json_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    sys.stdout.write(render_schema())

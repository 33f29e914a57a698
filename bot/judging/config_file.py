"""The file `.github/judge.yml`: where it is, and how its text becomes a `RepoConfig`.

`parse_repo_config` turns the file's text into a `RepoConfig` or raises
`RepoConfigError`, whose message names the line and key at fault and what was
expected, so a repository owner can fix the file from the check-run text alone.
Errors are mapped back to lines through PyYAML's composed node tree: pydantic
reports a location such as `("paths", "include", 2)`, which is walked down the
nodes to the one that holds the bad value. Every validation problem is reported,
sorted by line, not just the first; duplicate keys, which PyYAML would silently
merge, are reported before anything is validated.

The text comes from whoever can push to the default branch, so reading it must stay
cheap whatever it holds: a file over `MAX_CONFIG_BYTES` is refused unread, nesting
deeper than `MAX_NESTING` stops the composer before Python's recursion limit does,
and the composed node graph is measured before anything walks it expanded. Aliases
stay allowed, but each use counts towards `MAX_VALUES`, so a few hundred bytes of
"billion laughs" (or of merge keys) are refused instead of expanded, and an alias
inside its own anchor is named rather than followed forever. Every walk after that
(duplicate keys, construction, validation, error locations) is bounded by those caps.

What the settings mean and what they decide is `bot.judging.repo_config`; fetching
and caching the file is `bot.judging.config_store`. Nothing here performs I/O.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any

import yaml
from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from bot.globs import GlobError
from bot.judging.config_yaml import LimitExceeded, load_within_limits
from bot.judging.repo_config import RepoConfig

CONFIG_PATH = ".github/judge.yml"


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
    describe the first problem (in file order); `issues` lists them in file order and
    `problems` counts them, which can be more than `issues` when an error is rebuilt
    from the cache, where only the first few are kept."""

    def __init__(
        self, issues: Sequence[ConfigIssue], path: str = CONFIG_PATH, *, problems: int = 0
    ) -> None:
        if not issues:
            raise ValueError("RepoConfigError needs at least one issue")
        self.issues = tuple(sorted(issues, key=lambda i: (i.line, i.column, i.key or "")))
        self.problems = max(problems, len(self.issues))
        self.path = path
        first = self.issues[0]
        self.line = first.line
        self.column = first.column
        self.key = first.key
        self.message = first.message
        super().__init__(str(self))

    def __str__(self) -> str:
        text = self.issues[0].sentence(self.path)
        more = self.problems - 1
        if more:
            text += f" (and {more} more problem{'s' if more != 1 else ''})"
        return text


def parse_repo_config(text: str, *, path: str = CONFIG_PATH) -> RepoConfig:
    """Parse the file's text. An empty file, comments only, `---` or `{}` give the defaults.

    Raises RepoConfigError for anything wrong with the text, including a file over
    the limits above; the time and memory it takes are bounded by those limits."""
    try:
        root, data = load_within_limits(text)
    except LimitExceeded as exc:
        issue = ConfigIssue(exc.line, exc.column, None, exc.message)
        raise RepoConfigError([issue], path) from None
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
        lookup = _KeyLookup()
        issues = [
            _validation_issue(root, err, RepoConfig, lookup)
            for err in exc.errors(include_url=False)
        ]
        raise RepoConfigError(issues, path) from exc


def issues_at(text: str, problems: Sequence[tuple[Sequence[str | int], str]]) -> list[ConfigIssue]:
    """Issues for problems found in a file that parsed: each `(location, message)` is put
    on the line of the value at that location (`("models", "quick")`), or of the deepest
    section of it the file holds. Used for rules the file's own schema cannot know, such
    as the operator's `JUDGE_ALLOWED_MODELS`."""
    try:
        root, _ = load_within_limits(text)
    except (LimitExceeded, yaml.YAMLError):
        # Only a text that parsed reaches here; should it not compose now, the key still says where.
        root = None
    lookup = _KeyLookup()
    issues: list[ConfigIssue] = []
    for loc, message in problems:
        node = None if root is None else _node_at(root, tuple(loc), want_key=False, lookup=lookup)
        line = 1 if node is None else node.start_mark.line + 1
        column = 1 if node is None else node.start_mark.column + 1
        issues.append(ConfigIssue(line, column, _format_loc(loc), message))
    return issues


# -- locating problems ---------------------------------------------------------------------


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


def _validation_issue(
    root: yaml.Node, err: Mapping[str, Any], model: type[BaseModel], lookup: _KeyLookup
) -> ConfigIssue:
    loc: tuple[str | int, ...] = tuple(err["loc"])
    on_key = err["type"] == "extra_forbidden" or (bool(loc) and loc[-1] == "[key]")
    node = _node_at(root, loc, want_key=on_key, lookup=lookup)
    key_loc = tuple(p for p in loc if p != "[key]")
    message = _explain(err, node, key_loc, model)
    return ConfigIssue(
        node.start_mark.line + 1, node.start_mark.column + 1, _format_loc(key_loc), message
    )


class _KeyLookup:
    """Each mapping node's pairs by key, built on first use: a file with thousands of
    errors in one mapping would otherwise rescan that mapping once per error."""

    def __init__(self) -> None:
        self._pairs: dict[int, dict[str, tuple[yaml.Node, yaml.Node]]] = {}

    def pair(self, node: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
        pairs = self._pairs.get(id(node))
        if pairs is None:
            pairs = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode):
                    pairs.setdefault(k.value, (k, v))
            self._pairs[id(node)] = pairs
        return pairs.get(key)


def _node_at(
    root: yaml.Node, loc: tuple[str | int, ...], *, want_key: bool, lookup: _KeyLookup
) -> yaml.Node:
    """The deepest node along `loc`: the key node when the key itself is at
    fault, else the value node."""
    node = root
    for i, part in enumerate(loc):
        if part == "[key]":
            break
        last = i == len(loc) - 1 or (i == len(loc) - 2 and loc[-1] == "[key]")
        if isinstance(node, yaml.MappingNode):
            pair = lookup.pair(node, str(part))
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


@dataclass(frozen=True)
class _Failure:
    """One pydantic error with what a message about it needs: the bad value, the
    error's context (bounds, expected values, the raised exception), how the value
    reads in the file, and the YAML node that holds it."""

    value: Any
    ctx: Mapping[str, Any]
    got: str
    node: yaml.Node
    msg: str


def _expected_string(f: _Failure) -> str:
    return f"expected a string, got {f.got}{_hint(f.value, f.node)}"


def _expected_non_empty(f: _Failure) -> str:
    return "expected a non-empty string"


def _expected_whole_number(f: _Failure) -> str:
    return f"expected a whole number, got {f.got}"


def _expected_at_least(f: _Failure) -> str:
    return f"expected a whole number of at least {f.ctx.get('ge')}, got {f.got}"


def _expected_at_most(f: _Failure) -> str:
    return f"expected a whole number of at most {f.ctx.get('le')}, got {f.got}"


def _expected_list(f: _Failure) -> str:
    # The two usual slips: a key left empty, and one item written without brackets.
    extra = "; write [] for an empty list" if f.value is None else ""
    if isinstance(f.value, str):
        extra = f"; write a list even for one item: [{json.dumps(f.value)}]"
    return f"expected a list, got {f.got}{extra}"


def _expected_mapping(f: _Failure) -> str:
    extra = "; write {} for an empty mapping" if f.value is None else ""
    return f"expected a mapping (key: value lines), got {f.got}{extra}"


def _expected_one_of(f: _Failure) -> str:
    return f"expected one of {f.ctx.get('expected')}, got {f.got}"


def _invalid_value(f: _Failure) -> str:
    # Raised by our own validators (globs, authors): their words are already the message.
    error = f.ctx.get("error")
    if isinstance(error, GlobError):
        # A glob may be 1,000 characters long; the check run names it, not all of it.
        shown = str(f.value) if len(str(f.value)) <= 80 else str(f.value)[:77] + "..."
        return f"invalid glob {json.dumps(shown)}: {error}"
    return str(error) if error is not None else f.msg


# Pydantic error type -> message. A type not listed gets pydantic's own message.
_MESSAGES: Mapping[str, Callable[[_Failure], str]] = {
    "string_type": _expected_string,
    "string_too_short": _expected_non_empty,
    "int_type": _expected_whole_number,
    "int_parsing": _expected_whole_number,
    "int_from_float": _expected_whole_number,
    "greater_than_equal": _expected_at_least,
    "less_than_equal": _expected_at_most,
    "list_type": _expected_list,
    "tuple_type": _expected_list,
    "dict_type": _expected_mapping,
    "model_type": _expected_mapping,
    "model_attributes_type": _expected_mapping,
    "literal_error": _expected_one_of,
    "enum": _expected_one_of,
    "value_error": _invalid_value,
}


def _explain(
    err: Mapping[str, Any], node: yaml.Node, loc: tuple[str | int, ...], model: type[BaseModel]
) -> str:
    kind = err["type"]
    if kind == "extra_forbidden":
        return _unknown_key(loc, model)
    value = err.get("input")
    failure = _Failure(
        value=value,
        ctx=err.get("ctx") or {},
        got=_describe(value, node),
        node=node,
        msg=str(err["msg"]),
    )
    message = _MESSAGES.get(kind)
    if message is None:
        return f"{failure.msg.rstrip('.')}, got {failure.got}"
    return message(failure)


def _unknown_key(loc: tuple[str | int, ...], model: type[BaseModel]) -> str:
    name = str(loc[-1]) if loc else ""
    allowed = _keys_at(loc[:-1], model)
    if not allowed:
        return f"unknown key {json.dumps(name)}"
    close = difflib.get_close_matches(name, allowed, n=1, cutoff=0.6)
    suggestion = f" (did you mean {close[0]}?)" if close else ""
    return f"unknown key {json.dumps(name)}{suggestion}; expected one of: {', '.join(allowed)}"


def _keys_at(loc: tuple[str | int, ...], model: type[BaseModel]) -> list[str]:
    """The keys allowed in the section at `loc` of `model`, in declaration order."""
    for part in loc:
        info = model.model_fields.get(str(part))
        annotation = info.annotation if info is not None else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            return []
        model = annotation
    return list(model.model_fields)

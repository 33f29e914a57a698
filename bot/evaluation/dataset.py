"""The labelled dataset `judge-bot eval` reads: one JSON object per line (JSONL). Pure,
apart from `read_dataset`, which reads the file.

    {"id": "readme-typo", "task": {"description": "...", "acceptance": "..."},
     "files": [{"path": "README.md", "content": "..."}], "expected": "accept",
     "scores": {"semantic": 4}}

A change is given as `files` (each file whole, as `judge-bot judge` reads them) or as a
`diff` (a unified diff, `git diff` or `git show` output): each file of the diff is judged
as the lines its hunks show on the new side, with the hunks themselves as the review
context the App gives its judges. `expected` is what the change deserves: `accept`, or
`reject` for anything that must not pass (the panel's improve and escalate count as not
accepting it). `scores` are optional expected scores per rubric dimension.

A bad line is never skipped: every problem of the file is reported with its line number
and nothing is judged, so a typo in a label cannot quietly change the figures.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from bot.judge.engine.review_context import FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec
from bot.judge.rubrics import get_rubric

Expected = Literal["accept", "reject"]
MAX_PROBLEMS = 20
"""Problems listed before the rest are only counted: a file of the wrong kind has one
on every line."""
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@#+-]{0,199}$")


class DatasetError(Exception):
    """The dataset cannot be used; `problems` are its lines' errors, each naming the line."""

    def __init__(self, source: str, problems: Sequence[str], more: int = 0) -> None:
        self.source = source
        self.problems = list(problems)
        self.more = more
        listed = "; ".join(self.problems)
        tail = f" (and {more} more)" if more else ""
        super().__init__(f"{source}: {listed}{tail}")

    def lines(self) -> list[str]:
        """One line per problem, then how many were left unlisted."""
        shown = [f"{self.source}: {p}" for p in self.problems]
        if self.more:
            shown.append(f"{self.source}: … and {self.more} more problems")
        return shown


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, str_strip_whitespace=False)


class TaskText(_Strict):
    """What the change was meant to do: what the judges read as the task."""

    id: str | None = None
    description: str = Field(min_length=1)
    acceptance: str = ""
    directives: list[str] = Field(default_factory=list)


class ExampleFile(_Strict):
    path: str = Field(min_length=1)
    content: str


class Example(_Strict):
    """One labelled change."""

    id: str | None = None
    task: TaskText
    rubric: RubricName = RubricName.CONTENT
    files: list[ExampleFile] | None = None
    diff: str | None = None
    expected: Expected
    scores: dict[str, float] = Field(default_factory=dict)
    sensitive: bool = False
    source: dict[str, Any] = Field(default_factory=dict)
    """Where the example came from (`--from-history` says which record); not judged."""

    @field_validator("id")
    @classmethod
    def _id(cls, value: str | None) -> str | None:
        if value is not None and not _ID.match(value):
            raise ValueError(
                "must be 1 to 200 letters, digits or _.:/@#+- and start with a letter or digit"
            )
        return value

    @model_validator(mode="after")
    def _change(self) -> Example:
        if (self.files is None) == (self.diff is None):
            raise ValueError("give the change as either `files` or `diff`, not both or neither")
        if self.files is not None:
            _unique_paths([f.path for f in self.files], "files")
        if self.diff is not None:
            _unique_paths([d.path for d in diff_files(self.diff)], "diff")
        self._check_scores()
        return self

    def _check_scores(self) -> None:
        dimensions = get_rubric(self.rubric).dimensions
        for name, value in self.scores.items():
            if name not in dimensions:
                raise ValueError(
                    f"scores: {name!r} is not a dimension of the {self.rubric.value} rubric "
                    f"({', '.join(dimensions)})"
                )
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"scores: {name} must be a finite number, 0 or more")

    def judged_files(self) -> list[JudgedFile]:
        if self.files is not None:
            return [JudgedFile(path=f.path, content=f.content) for f in self.files]
        return [d.judged() for d in diff_files(self.diff or "")]

    def context(self) -> ReviewContext:
        if self.diff is None:
            return ReviewContext()
        return ReviewContext(diffs=[d.context() for d in diff_files(self.diff)])

    def task_spec(self, name: str) -> TaskSpec:
        return TaskSpec(
            task_id=self.task.id or name,
            description=self.task.description,
            acceptance=self.task.acceptance,
            directives=self.task.directives,
        )


class LabelledExample(BaseModel):
    """An example and the name reports use for it: its `id`, else `line N`."""

    model_config = ConfigDict(frozen=True)

    name: str
    line: int
    example: Example


def _unique_paths(paths: Sequence[str], where: str) -> None:
    if not paths:
        raise ValueError(f"{where}: the change holds no file")
    seen: set[str] = set()
    for path in paths:
        if path in seen:
            raise ValueError(f"{where}: {path!r} is given twice")
        seen.add(path)


# -- diffs ------------------------------------------------------------------------------

_DIFF_GIT = re.compile(r"^diff --git a/(.*) b/(.*)$")
_HUNK = re.compile(r"^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@")


class DiffFile(BaseModel):
    """One file of a unified diff: its path after the change, and its hunks."""

    model_config = ConfigDict(frozen=True)

    path: str
    removed: bool = False
    hunks: str = ""

    def new_side(self) -> tuple[str, list[int]]:
        """The lines the hunks show after the change, and the (1-based) numbers of the
        added ones within that text."""
        lines: list[str] = []
        added: list[int] = []
        for row in self.hunks.splitlines():
            if _HUNK.match(row) or row.startswith(("-", "\\")):
                continue
            if row.startswith("+"):
                added.append(len(lines) + 1)
            lines.append(row[1:])
        return "\n".join(lines) + ("\n" if lines else ""), added

    def judged(self) -> JudgedFile:
        if self.removed:
            return JudgedFile(path=self.path, content="", status="removed")
        content, added = self.new_side()
        return JudgedFile(path=self.path, content=content, added_lines=added)

    def context(self) -> FileDiff:
        return FileDiff(path=self.path, diff=self.hunks, note="from the evaluation dataset")


class _DiffReader:
    """Walks a diff's lines. Hunk lines are counted from their headers, so a removed line
    that reads `--- x` is never taken for the next file's header."""

    def __init__(self) -> None:
        self.files: list[DiffFile] = []
        self.current: dict[str, Any] | None = None
        self.hunks: list[str] = []
        self.old_left = 0
        self.new_left = 0

    def close(self) -> None:
        if self.current is not None:
            path, removed = self.current["path"], self.current["removed"]
            self.files.append(DiffFile(path=path, removed=removed, hunks="\n".join(self.hunks)))
        self.current, self.hunks = None, []

    def open(self, path: str, *, header: str) -> None:
        self.close()
        self.current = {"path": path, "removed": False, "header": header}

    def feed(self, row: str, following: str) -> None:
        if self.old_left > 0 or self.new_left > 0:
            self._hunk_line(row)
            return
        match = _DIFF_GIT.match(row)
        if match:
            self.open(match.group(2), header="git")
            return
        hunk = _HUNK.match(row)
        if hunk and self.current is not None:
            self.hunks.append(row)
            self.old_left = int(hunk.group(1) or 1)
            self.new_left = int(hunk.group(2) or 1)
            return
        if row.startswith("--- ") and following.startswith("+++ "):
            if self.current is None or self.current["header"] != "git" or self.hunks:
                self.open(_strip_prefix(following[4:]), header="plain")
            return
        if row.startswith("+++ ") and self.current is not None:
            self._target(row[4:])
        elif row.startswith("\\") and self.hunks:
            self.hunks.append(row)  # "\ No newline at end of file" after the last line

    def _hunk_line(self, row: str) -> None:
        self.hunks.append(row)
        kind = row[:1]
        if kind in (" ", ""):
            self.old_left -= 1
            self.new_left -= 1
        elif kind == "-":
            self.old_left -= 1
        elif kind == "+":
            self.new_left -= 1

    def _target(self, target: str) -> None:
        assert self.current is not None
        name = target.split("\t")[0]
        if name == "/dev/null":
            self.current["removed"] = True
        else:
            self.current["path"] = _strip_prefix(name)


def diff_files(diff: str) -> list[DiffFile]:
    """The files of a unified diff, in its order. Raises ValueError for text that holds
    no file header (`diff --git` or `---`/`+++`)."""
    reader = _DiffReader()
    rows = diff.splitlines()
    for index, row in enumerate(rows):
        reader.feed(row, rows[index + 1] if index + 1 < len(rows) else "")
    reader.close()
    if not reader.files:
        raise ValueError("diff: no file header (`diff --git a/... b/...` or `--- `/`+++ `)")
    return reader.files


def _strip_prefix(target: str) -> str:
    name = target.split("\t")[0]
    return name[2:] if name.startswith(("a/", "b/")) else name


# -- reading ------------------------------------------------------------------------------


def parse_dataset(lines: Iterable[str], source: str) -> list[LabelledExample]:
    """The examples of JSONL text; `DatasetError` listing every bad line (by number)."""
    examples: list[LabelledExample] = []
    problems: list[str] = []
    names: dict[str, int] = {}
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            example = _example(line)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        name = example.id or f"line-{number}"
        if name in names:
            problems.append(f"line {number}: id {name!r} is also line {names[name]}'s")
            continue
        names[name] = number
        examples.append(LabelledExample(name=name, line=number, example=example))
    if problems:
        raise DatasetError(source, problems[:MAX_PROBLEMS], max(len(problems) - MAX_PROBLEMS, 0))
    if not examples:
        raise DatasetError(source, ["holds no example (one JSON object per line)"])
    return examples


def _example(line: str) -> Example:
    try:
        raw = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg} at column {exc.colno})") from None
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    try:
        return Example.model_validate(raw)
    except ValidationError as exc:
        raise ValueError(_first_errors(exc)) from None


def _first_errors(exc: ValidationError) -> str:
    """pydantic's errors as `field: message` pairs, without the input (it may be a
    whole file's content)."""
    parts = []
    for error in exc.errors(include_input=False, include_url=False):
        where = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def read_dataset(path: Path) -> list[LabelledExample]:
    """The dataset in `path`; `DatasetError` when it cannot be read or has bad lines."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise DatasetError(str(path), [f"cannot read it ({exc.strerror or exc})"]) from None
    except UnicodeDecodeError:
        raise DatasetError(str(path), ["is not UTF-8 text"]) from None
    return parse_dataset(text.splitlines(), str(path))


def example_line(example: Example) -> str:
    """One JSONL line for an example (`--from-history --out`)."""
    return example.model_dump_json(exclude_defaults=True)

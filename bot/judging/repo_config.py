"""The per-repository configuration `.github/judge.yml`: its settings and the pure
decisions they drive: which changed files are judged, with which rubric, at which
depth, for which authors.

The settings are pydantic models (`RepoConfig` and its sections), frozen and closed
to unknown keys. Reading the file's text into them, with errors that name the line
and key at fault, is `bot.judging.config_file`.

Glob syntax is gitignore's (see `bot.globs`). The shape of the file, the
defaults and an example are in docs/repo-config.md; `python -m bot.judging.repo_config`
prints the JSON Schema and docs/judge-config.schema.json must equal it (a test
checks).

Nothing here performs I/O: the caller fetches the file and the list of changed
files and acts on the returned values.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StringConstraints

from bot.github.types import ChangedPath
from bot.globs import check_glob, first_match, match_any
from bot.judge.records import JSON_SCHEMA_DIALECT, RubricName
from bot.judge.rubrics.research_settings import ResearchOverrides
from bot.judge.settings import DEFAULT_WATCHED_PATHS, Mode, OnOutage
from bot.judge.tagging import TagTerms
from bot.judge.watched_authors import is_listed_author, normalise_author

SCHEMA_ID = "https://judge-bot.invalid/schemas/judge-config.json"


DEFAULT_INCLUDE: tuple[str, ...] = DEFAULT_WATCHED_PATHS
DEFAULT_SKIP_LABEL = "judge-skip"
DEFAULT_MAX_FILES = 50
DEFAULT_MAX_CHARS_PER_FILE = 100_000
# Upper bounds protect the App operator's model budget from one repository's file.
MAX_MAX_FILES = 500
MAX_MAX_CHARS_PER_FILE = 1_000_000

GlobPattern = Annotated[
    str,
    StringConstraints(min_length=1),
    AfterValidator(check_glob),
]
NonEmpty = Annotated[str, StringConstraints(min_length=1, strip_whitespace=True)]


def _check_author(name: str) -> str:
    normal = normalise_author(name)
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

    include: tuple[GlobPattern, ...] = Field(
        default=DEFAULT_INCLUDE,
        description="Globs of files to judge. Setting this replaces the default list; use "
        "extra_include to add to it instead. Default: Markdown under research/, knowledge/, "
        "docs/ and plans/.",
    )
    extra_include: tuple[GlobPattern, ...] = Field(
        default=(),
        description="Globs judged in addition to include (handy to keep the default list).",
    )
    exclude: tuple[GlobPattern, ...] = Field(
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
        description="Most files one judge request holds; a change with more is judged in "
        "several requests, all of which must accept (sensitive files are grouped first).",
    )
    max_chars_per_file: int = Field(
        default=DEFAULT_MAX_CHARS_PER_FILE,
        ge=1,
        le=MAX_MAX_CHARS_PER_FILE,
        strict=True,
        description="Longest file judged, in characters: a longer one is judged in part, "
        "which in blocking mode is not a pass (the run asks for a maintainer).",
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


class CiConfig(_Section):
    """Which CI results judging waits for when they end in an infrastructure failure."""

    wait_for: tuple[NonEmpty, ...] = Field(
        default=(),
        description="Slugs of CI apps (e.g. github-actions) whose check runs judging waits "
        "to see rerun after a timeout, cancellation or startup failure, besides the pull "
        "request's required checks. Any other check or status is shown to the judges as "
        "it is and never delays them.",
    )


MergeMethod = Literal["merge", "squash", "rebase"]
DEFAULT_HOLD_LABEL = "judge:hold"


class MergeConfig(_Section):
    """Merge on approve: pull requests the judge accepts are merged through a queue."""

    enabled: bool | None = Field(
        default=None,
        description="Merge accepted pull requests through the queue of their base branch. "
        "Unset: the installation default (JUDGE_MERGE_ON_APPROVE, itself off by default).",
    )
    method: MergeMethod | None = Field(
        default=None,
        description="merge, squash or rebase. Unset: the first of these the repository allows.",
    )
    label: NonEmpty | None = Field(
        default=None,
        description="Only pull requests carrying this label are merged. Unset: every "
        "accepted pull request.",
    )
    hold_label: NonEmpty = Field(
        default=DEFAULT_HOLD_LABEL,
        description="A pull request carrying this label is not merged, and leaves the queue "
        "when it is added.",
    )
    require_human_approval: bool = Field(
        default=False,
        description="Also require an approving review at the head commit by someone with "
        "write access who is not the author.",
    )
    delete_branch: bool = Field(
        default=False,
        description="Delete the pull request's branch after the queue merged it (branches "
        "of forks are never touched).",
    )
    batch_size: int = Field(
        default=1,
        ge=1,
        le=50,
        description="Pull requests tested together as one batch on a queue branch "
        "(docs/merge-queue.md). 1: one at a time; a strict branch the App may not push "
        "to stays one at a time whatever this says.",
    )
    parallel_checks: int = Field(
        default=1,
        ge=1,
        le=10,
        description="Batches tested at once, each on top of the one ahead (speculative "
        "checks). 1: one batch at a time.",
    )


class RepoConfig(_Section):
    """judge-bot settings for one repository, read from .github/judge.yml."""

    mode: Mode | None = Field(
        default=None,
        description="advisory: the judge check run never fails; blocking: a reject or "
        "improve verdict fails it. Unset: the installation default (JUDGE_MODE, itself "
        "advisory by default).",
    )
    on_outage: OnOutage | None = Field(
        default=None,
        description="In blocking mode, what a provider outage concludes: pass (neutral, "
        "fail-open) or block (action_required). Unset: the installation default "
        "(JUDGE_ON_OUTAGE, itself pass).",
    )
    paths: PathsConfig = Field(
        default=PathsConfig(),
        description="Which changed files are judged: include (replaces the default), "
        "extra_include (adds to it) and exclude (wins over both).",
    )
    rubrics: dict[GlobPattern, RubricName] = Field(
        default={"**/*.md": RubricName.CONTENT},
        description="Ordered mapping of glob to rubric (content, code, completion or "
        "research); the "
        "first glob that matches a file wins, and a file no glob matches gets content.",
    )
    sensitive: tuple[GlobPattern, ...] = Field(
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
    skip_marker_authors: tuple[Author, ...] = Field(
        default=(),
        description="In blocking mode, only these authors (name, email or GitHub login of "
        "the head commit's author or committer) skip the judge with `[skip judge]` in a "
        "commit message; in advisory mode anyone's marker is honoured.",
    )
    skip_label: NonEmpty | None = Field(
        default=DEFAULT_SKIP_LABEL,
        description="A pull request carrying this label is not judged. In blocking mode only "
        "when someone with write access who is not an author of the change added it. "
        "null: no skip label.",
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
    ci: CiConfig = Field(
        default=CiConfig(),
        description="CI that judging waits for after an infrastructure failure: wait_for "
        "(CI app slugs; the pull request's required checks always count).",
    )
    merge: MergeConfig = Field(
        default=MergeConfig(),
        description="Merge on approve: enabled, method, label, hold_label, "
        "require_human_approval, delete_branch, batch_size and parallel_checks "
        "(docs/merge-queue.md).",
    )
    review: bool | None = Field(
        default=None,
        description="Also submit the outcome at a pull request's head as a review: APPROVE "
        "on accept, REQUEST_CHANGES with the improvements on improve or reject, COMMENT on "
        "escalate. Unset: the installation default (JUDGE_REVIEW, itself off).",
    )
    research: ResearchOverrides = Field(
        default=ResearchOverrides(),
        description="Thresholds of the research rubric for this repository (the "
        "JUDGE_RESEARCH_* names without the prefix); unset keys keep the installation's.",
    )
    tags: TagTerms = Field(
        default=TagTerms(),
        description="Tags of this repository for its verdict records (docs/tagging.md): tag "
        "name -> phrases. A built-in tag's name adds phrases to it; any other name is a new tag.",
    )


# ---------------------------------------------------------------------------
# Decisions


def effective_mode(config: RepoConfig | None, default: Mode = Mode.ADVISORY) -> Mode:
    """The repository's mode, else the installation default (from JUDGE_MODE)."""
    if config is None or config.mode is None:
        return default
    return config.mode


def effective_on_outage(config: RepoConfig | None, default: OnOutage = OnOutage.PASS) -> OnOutage:
    """The repository's outage rule, else the installation default (JUDGE_ON_OUTAGE)."""
    if config is None or config.on_outage is None:
        return default
    return config.on_outage


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
    return is_listed_author(config.authors, names)


@dataclass(frozen=True)
class LeftOut:
    """A changed file that is not judged, and why, in words a person reads in the check run
    (not watched, removed, binary, cut to a size...)."""

    path: str
    reason: str
    unread: bool = False
    """A watched file no judge read in full (binary, undecodable, cut, unseen): in
    blocking mode it keeps the run from passing (bot/judging/conclusion.py)."""


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
    """Keep watched files that still exist, every one of them: a watched file left out
    would be a change nobody judged. (`limits.max_files` is how many files one judge
    request holds: bot/judging/judge_requests.py splits a larger change.)

    A path listed twice counts once, with its last entry (a caller may concatenate
    per-commit lists)."""
    latest: dict[str, ChangedPath] = {}
    for item in changed:
        latest.pop(item.path, None)
        latest[item.path] = item
    left_out: list[LeftOut] = []
    files: list[ChangedPath] = []
    for item in latest.values():
        if item.removed:
            left_out.append(LeftOut(item.path, REMOVED))
        elif not _included(config, item.path):
            left_out.append(LeftOut(item.path, NOT_WATCHED))
        elif _excluded(config, item.path):
            left_out.append(LeftOut(item.path, EXCLUDED))
        else:
            files.append(item)
    return Selection(
        files=tuple(files),
        left_out=tuple(left_out),
        max_files=config.limits.max_files,
        sensitive=frozenset(f.path for f in files if is_sensitive(config, f.path)),
    )


# ---------------------------------------------------------------------------
# JSON Schema

_RUBRIC_DESCRIPTION = (
    "Rubric a file is judged against: content (prose; semantic, pragmatic and syntactic "
    "scores 1-5), code (correctness, scope adherence, code quality, completeness), "
    "completion (did the change finish its task) or research (claims, evidence and "
    "sources, checked mechanically first)."
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

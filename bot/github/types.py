"""What GitHub says about a change, as plain data: changed paths, commits, files, patches,
the CI results on a commit, and what people wrote on a pull request.

Pure: webhook or REST shapes in, frozen values out. Every feature that reads a change
speaks in these types, whether the data came from a payload, a REST list or GraphQL.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

# What git and GitHub write for "no commit" (a branch created or deleted by a push).
NULL_SHA = "0" * 40

# GitHub's compare lists at most this many changed files, whatever the comparison holds: a
# list this long may have been cut short.
COMPARE_FILE_LIMIT = 300


def github_time(value: object) -> datetime | None:
    """A time GitHub stamps (`2024-05-01T12:00:00Z`); None when it is absent, unreadable
    or carries no timezone."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


@dataclass(frozen=True, slots=True)
class ChangedPath:
    path: str
    status: str  # added | modified | removed | renamed | copied | changed | unchanged
    patch: str | None = None
    previous_path: str | None = None

    @property
    def removed(self) -> bool:
        return self.status == "removed"


def changed_from_diff_entry(entry: Mapping[str, Any]) -> ChangedPath:
    """From a REST `diff-entry` (list pull request files, compare commits)."""
    previous = entry.get("previous_filename")
    patch = entry.get("patch")
    return ChangedPath(
        path=str(entry["filename"]),
        status=str(entry.get("status", "modified")),
        patch=str(patch) if patch is not None else None,
        previous_path=str(previous) if previous is not None else None,
    )


@dataclass(frozen=True, slots=True)
class CommitInfo:
    sha: str
    message: str
    author_name: str
    author_login: str | None
    committer_name: str
    committer_login: str | None

    @property
    def people(self) -> tuple[str, ...]:
        """Every name and login that authored or committed this commit."""
        found = [self.author_name, self.committer_name, self.author_login, self.committer_login]
        return tuple(value for value in found if value)


@dataclass(frozen=True, slots=True)
class RemoteFile:
    text: str
    blob_sha: str
    truncated: bool = False  # GitHub returns only the start of very large blobs


@dataclass(frozen=True, slots=True)
class CiCheck:
    """One check run or commit status on a commit. `state` is lower-case: a check run's
    conclusion once completed (success, failure, timed_out, ...), else `pending`; a
    status's state (success, failure, error, pending)."""

    name: str
    kind: str  # "check" (a check run) | "status" (a commit status)
    state: str
    required: bool | None = None
    """Required to merge the pull request; None when unknown (a push has no pull request)."""
    excerpt: str = ""
    """A check run's title and summary, a status's description, as the CI wrote them."""
    app_slug: str | None = None
    app_id: int | None = None


@dataclass(frozen=True, slots=True)
class Remark:
    """A review, an inline review comment or a conversation comment on a pull request.
    `can_push` is GitHub's word that the author has push access (reviews carry it)."""

    author: str
    kind: str  # "review" | "review comment" | "comment"
    body: str
    can_push: bool = False
    association: str = "NONE"
    is_bot: bool = False
    path: str | None = None


@dataclass(frozen=True, slots=True)
class LinkedIssue:
    """An issue the pull request closes (GitHub's closing references)."""

    number: int
    title: str
    body: str
    repository: str


_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@")


def added_lines_from_patch(patch: str | None) -> list[int] | None:
    """Line numbers (in the new file) that a unified-diff patch adds. None when unknown."""
    if patch is None:
        return None
    added: list[int] = []
    line = 0
    for row in patch.splitlines():
        hunk = _HUNK.match(row)
        if hunk:
            line = int(hunk.group(1))
            continue
        if row.startswith("+"):
            added.append(line)
            line += 1
        elif row.startswith("-") or row.startswith("\\"):
            continue
        else:
            line += 1
    return added


def commit_from_rest(item: Mapping[str, Any]) -> CommitInfo:
    commit = item.get("commit") or {}
    author = commit.get("author") or {}
    committer = commit.get("committer") or {}
    return CommitInfo(
        sha=str(item.get("sha", "")),
        message=str(commit.get("message", "")),
        author_name=str(author.get("name") or ""),
        author_login=_login(item.get("author")),
        committer_name=str(committer.get("name") or ""),
        committer_login=_login(item.get("committer")),
    )


def commit_from_push(item: Mapping[str, Any]) -> CommitInfo:
    author = item.get("author") or {}
    committer = item.get("committer") or {}
    return CommitInfo(
        sha=str(item.get("id", "")),
        message=str(item.get("message", "")),
        author_name=str(author.get("name") or ""),
        author_login=author.get("username") or None,
        committer_name=str(committer.get("name") or ""),
        committer_login=committer.get("username") or None,
    )


def _login(user: Any) -> str | None:
    if isinstance(user, dict) and isinstance(user.get("login"), str):
        return str(user["login"])
    return None

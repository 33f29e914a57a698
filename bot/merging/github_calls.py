"""The GitHub operations of the merge queue, for one repository, one typed call each.

Answers GitHub gives as errors but the queue decides on (405 not mergeable, 409 head
moved, 422 refused) come back as `Answer` values; anything else raises as usual.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import BadRequest

from bot.github.gateway import RepoGateway
from bot.github.types import ChangedPath, CommitInfo, changed_from_diff_entry, commit_from_rest

# The merge methods in the order a repository's allowed ones are tried.
METHOD_FLAGS = (
    ("merge", "allow_merge_commit"),
    ("squash", "allow_squash_merge"),
    ("rebase", "allow_rebase_merge"),
)
DECIDED_STATUSES = frozenset({405, 409, 422})


@dataclass(frozen=True)
class Answer:
    status: int
    message: str = ""


# What GitHub's compare lists at most: 300 changed files; 250 commits without paging.
COMPARE_FILES = 300
COMPARE_COMMITS = 250


@dataclass(frozen=True)
class GroupChange:
    """What a merge group adds to its base (`compare base...head`)."""

    files: list[ChangedPath]
    commits: list[CommitInfo]
    parents: dict[str, tuple[str, ...]]
    blobs: dict[str, str | None]
    complete: bool = True
    """False when GitHub may have cut the lists (compare lists at most 300 files and,
    unpaged, 250 commits): what it left out was never seen."""


def blobs_of(entries: Iterable[Mapping[str, Any]]) -> dict[str, str | None]:
    """{path: blob sha at the head} of REST diff entries; None for a removed file. A file
    GitHub gave no blob for is left out: its content is unknown, so it matches nothing."""
    blobs: dict[str, str | None] = {}
    for entry in entries:
        if entry.get("status") == "removed":
            blobs[str(entry["filename"])] = None
        elif entry.get("sha"):
            blobs[str(entry["filename"])] = str(entry["sha"])
    return blobs


def first_allowed_method(repository: dict[str, Any]) -> str:
    """The first merge method the repository allows (GitHub's defaults allow all three;
    a field the answer lacks counts as allowed, as GitHub's own default)."""
    for method, flag in METHOD_FLAGS:
        if repository.get(flag, True):
            return method
    return "merge"


def _message(exc: BadRequest) -> str:
    text = str(exc)
    return text if text and text != str(int(exc.status_code)) else exc.status_code.phrase


class MergeCalls(RepoGateway):
    """The repository gateway plus what only the merge queue asks of GitHub."""

    async def merge_method(self) -> str:
        answer = await self.client.getitem("/repos/{owner}/{repo}", self._vars())
        return first_allowed_method(dict(answer))

    async def branch_rules(self, branch: str) -> list[dict[str, Any]]:
        """Every active rule GitHub applies to `branch`, whatever ruleset it comes from."""
        return [
            dict(item)
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/rules/branches/{branch}{?per_page}",
                self._vars(branch=branch, per_page=100),
            )
        ]

    async def reviews(self, number: int) -> list[dict[str, Any]]:
        return [
            dict(item)
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/pulls/{pull_number}/reviews{?per_page}",
                self._vars(pull_number=number, per_page=100),
            )
        ]

    async def merge(self, number: int, sha: str, method: str) -> Answer:
        """`PUT .../merge` of exactly `sha`: GitHub refuses (409) if the head moved."""
        try:
            await self.client.put(
                "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
                self._vars(pull_number=number),
                data={"sha": sha, "merge_method": method},
            )
        except BadRequest as exc:
            if int(exc.status_code) not in DECIDED_STATUSES:
                raise
            return Answer(int(exc.status_code), _message(exc))
        return Answer(200)

    async def update_branch(self, number: int, expected_head_sha: str) -> Answer:
        """Merge the base into the head, only if the head is still `expected_head_sha`."""
        try:
            await self.client.put(
                "/repos/{owner}/{repo}/pulls/{pull_number}/update-branch",
                self._vars(pull_number=number),
                data={"expected_head_sha": expected_head_sha},
                accept="application/vnd.github+json",
            )
        except BadRequest as exc:
            if int(exc.status_code) not in DECIDED_STATUSES:
                raise
            return Answer(int(exc.status_code), _message(exc))
        return Answer(202)

    async def add_labels(self, number: int, labels: Sequence[str]) -> None:
        await self.client.post(
            "/repos/{owner}/{repo}/issues/{issue_number}/labels",
            self._vars(issue_number=number),
            data={"labels": list(labels)},
        )

    async def remove_label(self, number: int, label: str) -> None:
        """Take `label` off; one already gone is no error."""
        try:
            await self.client.delete(
                "/repos/{owner}/{repo}/issues/{issue_number}/labels/{name}",
                self._vars(issue_number=number, name=label),
            )
        except BadRequest as exc:
            if exc.status_code != 404:
                raise

    async def delete_branch(self, branch: str) -> Answer:
        """`DELETE .../git/refs/heads/<branch>`; GitHub's refusal comes back as an `Answer`
        (`branch_cleanup.deletion_result` reads it). The ref is one percent-encoded path
        value, as GitHub's clients send it."""
        try:
            await self.client.delete(
                "/repos/{owner}/{repo}/git/refs/{ref}", self._vars(ref=f"heads/{branch}")
            )
        except BadRequest as exc:
            return Answer(int(exc.status_code), _message(exc))
        return Answer(204)

    async def changed_since_fork(self, base: str, head: str) -> tuple[list[ChangedPath], str]:
        """What `head` changes since it left `base` (a three-dot compare), and the merge
        base it left from."""
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}", self._vars(basehead=f"{base}...{head}")
        )
        files = [changed_from_diff_entry(item) for item in answer.get("files") or []]
        return files, str((answer.get("merge_base_commit") or {}).get("sha") or "")

    async def group_commits(self, base: str, head: str) -> GroupChange:
        """The files and commits a merge group adds to its base, with each commit's parents
        and the blob each changed file has at the head."""
        answer = await self.client.getitem(
            "/repos/{owner}/{repo}/compare/{basehead}", self._vars(basehead=f"{base}...{head}")
        )
        entries = list(answer.get("files") or [])
        raw_commits = list(answer.get("commits") or [])
        return GroupChange(
            files=[changed_from_diff_entry(item) for item in entries],
            commits=[commit_from_rest(item) for item in raw_commits],
            parents={
                str(item["sha"]): tuple(str(p["sha"]) for p in item.get("parents") or ())
                for item in raw_commits
            },
            blobs=blobs_of(entries),
            complete=len(entries) < COMPARE_FILES and len(raw_commits) < COMPARE_COMMITS,
        )

    async def pulls_with_commit(self, sha: str) -> list[dict[str, Any]]:
        """The pull requests GitHub associates with a commit (open ones, while it is not on
        the default branch)."""
        return [
            dict(item)
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/commits/{commit_sha}/pulls{?per_page}",
                self._vars(commit_sha=sha, per_page=100),
            )
        ]

    async def pull_blobs(self, number: int) -> tuple[list[ChangedPath], dict[str, str | None]]:
        """The pull request's files, and the blob each has at its head."""
        entries = [
            dict(item)
            async for item in self.client.getiter(
                "/repos/{owner}/{repo}/pulls/{pull_number}/files{?per_page}",
                self._vars(pull_number=number, per_page=100),
            )
        ]
        return [changed_from_diff_entry(item) for item in entries], blobs_of(entries)

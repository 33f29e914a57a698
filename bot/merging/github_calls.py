"""The GitHub operations of the merge queue, for one repository, one typed call each.

Answers GitHub gives as errors but the queue decides on (405 not mergeable, 409 head
moved, 422 refused) come back as `Answer` values; anything else raises as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from gidgethub import BadRequest

from bot.github.gateway import RepoGateway

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

    async def delete_branch(self, branch: str) -> bool:
        """Delete `refs/heads/<branch>`; False when GitHub refuses (protected, gone)."""
        try:
            await self.client.delete(
                "/repos/{owner}/{repo}/git/refs/{+ref}", self._vars(ref=f"heads/{branch}")
            )
        except BadRequest:
            return False
        return True

"""After a merge: whether the queue deletes the pull request's branch (`merge.delete_branch`),
and how GitHub's answer reads to people. Pure.

    delete_branch off ─────────────────────────────────────────> keep
    head in another repository (a fork) or in none (deleted) ──> keep: not the App's to delete
    head is the base branch or the repository's default branch ─> keep
    otherwise ─────────────────────────────────────────────────> DELETE refs/heads/<head>

    204 ──────────────────────────────────> deleted
    422 "Reference does not exist" ───────> gone already (GitHub's own automatic deletion
                                            got there first): fine, not a failure
    any other refusal, or no answer ──────> kept, and the merge comment says why
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.gfm import code
from bot.merging.eligibility import PullFacts

_GONE = "reference does not exist"


class Deletion(enum.Enum):
    DELETED = "deleted"
    ALREADY_GONE = "already gone"
    REFUSED = "refused"


@dataclass(frozen=True)
class DeletionResult:
    outcome: Deletion
    message: str = ""


def branch_to_delete(
    wanted: bool, pull: PullFacts, repository: str, base_branch: str
) -> str | None:
    """The head branch to delete after `pull` merged into `base_branch` of `repository`,
    or None to keep it."""
    head = pull.head_ref
    if not wanted or not head or pull.head_repository is None:
        return None
    if pull.head_repository.casefold() != repository.casefold():
        return None
    if head in {base_branch, pull.base_ref, pull.default_branch}:
        return None
    return head


def deletion_result(status: int, message: str) -> DeletionResult:
    """GitHub's answer to `DELETE .../git/refs/heads/<branch>`."""
    if 200 <= status < 300:
        return DeletionResult(Deletion.DELETED)
    if status == 422 and _GONE in message.casefold():
        return DeletionResult(Deletion.ALREADY_GONE, message)
    return DeletionResult(Deletion.REFUSED, message or f"GitHub answered {status}")


def deletion_sentence(branch: str, result: DeletionResult | None) -> str:
    """What the merge comment adds about the branch ("" when it was kept by policy)."""
    if result is None:
        return ""
    if result.outcome is Deletion.DELETED:
        return f"The branch {code(branch)} was deleted."
    if result.outcome is Deletion.ALREADY_GONE:
        return f"The branch {code(branch)} was already deleted."
    return f"The branch {code(branch)} was not deleted: {code(result.message, 300)}."

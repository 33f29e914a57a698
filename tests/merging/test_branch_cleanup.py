"""Whether the queue deletes a merged pull request's branch, and what it says
(bot/merging/branch_cleanup.py)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bot.merging.branch_cleanup import (
    Deletion,
    DeletionResult,
    branch_to_delete,
    deletion_result,
    deletion_sentence,
)
from bot.merging.eligibility import PullFacts

REPO = "octo/hello"
PULL = PullFacts(
    number=5,
    state="closed",
    merged=True,
    draft=False,
    head_sha="a" * 40,
    head_ref="topic",
    head_repository="Octo/Hello",
    base_ref="main",
    labels=(),
    author="agent",
    mergeable=None,
    mergeable_state="unknown",
    default_branch="main",
)


@pytest.mark.parametrize(
    ("wanted", "changes", "base", "branch"),
    [
        (True, {}, "main", "topic"),
        (False, {}, "main", None),
        # A fork's branch, or one whose repository is gone, is never the App's to delete.
        (True, {"head_repository": "agent/hello"}, "main", None),
        (True, {"head_repository": None}, "main", None),
        (True, {"head_ref": ""}, "main", None),
        # Never the default branch (merged into a release branch), nor the base.
        (True, {"head_ref": "main", "base_ref": "release"}, "release", None),
        (True, {"head_ref": "release", "base_ref": "release"}, "release", None),
        (True, {"head_ref": "release"}, "release", None),
        (True, {"head_ref": "develop", "default_branch": "develop"}, "main", None),
    ],
)
def test_branch_to_delete(
    wanted: bool, changes: dict[str, str | None], base: str, branch: str | None
) -> None:
    pull = replace(PULL, **changes)  # type: ignore[arg-type]
    assert branch_to_delete(wanted, pull, REPO, base) == branch


@pytest.mark.parametrize(
    ("status", "message", "result"),
    [
        (204, "", DeletionResult(Deletion.DELETED)),
        (
            422,
            "Reference does not exist",
            DeletionResult(Deletion.ALREADY_GONE, "Reference does not exist"),
        ),
        (
            422,
            "Cannot delete the default branch",
            DeletionResult(Deletion.REFUSED, "Cannot delete the default branch"),
        ),
        (409, "", DeletionResult(Deletion.REFUSED, "GitHub answered 409")),
        (
            403,
            "Resource not accessible by integration",
            DeletionResult(Deletion.REFUSED, "Resource not accessible by integration"),
        ),
    ],
)
def test_deletion_result(status: int, message: str, result: DeletionResult) -> None:
    assert deletion_result(status, message) == result


@pytest.mark.parametrize(
    ("result", "sentence"),
    [
        (None, ""),
        (DeletionResult(Deletion.DELETED), "The branch `topic` was deleted."),
        (DeletionResult(Deletion.ALREADY_GONE, "gone"), "The branch `topic` was already deleted."),
        (
            DeletionResult(Deletion.REFUSED, "Cannot delete this protected branch"),
            "The branch `topic` was not deleted: `Cannot delete this protected branch`.",
        ),
    ],
)
def test_deletion_sentence(result: DeletionResult | None, sentence: str) -> None:
    assert deletion_sentence("topic", result) == sentence

"""What `disagreement/sync.py` remembers of each task's issue, read back as typed rows by
the packages that use it (reports, commands), on both storage backends."""

from __future__ import annotations

from typing import Any

import pytest

from bot.disagreement.lifecycle import issue_key, open_number, task_key
from bot.disagreement.sync import (
    BY_ISSUE,
    BY_TASK,
    IssueChange,
    KnownIssue,
    change_for_issue,
    remember_issue,
    tasks_known,
)
from bot.judging.target import Target
from bot.storage.base import Storage

SHA = "a" * 40
PULL = Target("Octo/Repo", 1, SHA, "main", "Octo/Repo#7", "t", pull_number=7)
PUSH = Target("octo/other", 1, "b" * 40, "main", "octo/other@bbbbbbb", "t")


async def test_what_sync_remembers_reads_back_typed(storage: Storage) -> None:
    await remember_issue(storage, PULL, 12, "open")
    await remember_issue(storage, PUSH, 3, "closed")

    known = await tasks_known(storage)
    assert known == [  # by key: the repository lower-cased, then the task
        KnownIssue(task_key(PUSH.repository, PUSH.task), None, "b" * 40),
        KnownIssue(task_key(PULL.repository, PULL.task), 12, SHA),
    ]
    assert await tasks_known(storage, task_key("octo/other", "")) == known[:1]

    assert await change_for_issue(storage, "octo/repo", 12) == IssueChange(PULL.task, SHA, 7)
    assert await change_for_issue(storage, "octo/other", 3) == IssueChange(
        PUSH.task, "b" * 40, None
    )
    assert await change_for_issue(storage, "octo/repo", 99) is None


@pytest.mark.parametrize(
    "row",
    [
        {"number": 12, "state": "open", "last_sha": SHA},
        {"number": 12, "state": "closed"},
        {"number": 0, "state": "open"},
        {"state": "opening", "owner": "delivery-1"},
        {"number": "12", "state": "open", "last_sha": 5},
        {},
    ],
)
def test_a_known_issue_is_open_as_lifecycle_says(row: dict[str, Any]) -> None:
    known = KnownIssue.of("octo/repo|octo/repo#7", row)
    assert known.open_number == open_number(row)
    assert known.last_sha == (row["last_sha"] if isinstance(row.get("last_sha"), str) else None)


async def test_rows_of_another_shape_read_as_before(storage: Storage) -> None:
    """Rows written by hand or by an older version read as the dict reads did: an open
    number as `int()` takes it, a last sha or pull number of another type as unknown."""
    await storage.kv_put(BY_TASK, "octo/repo|x", {"number": "12", "state": "open", "last_sha": 1})
    await storage.kv_put(BY_ISSUE, issue_key("octo/repo", 5), {"head_sha": SHA, "pull_number": "7"})
    assert await tasks_known(storage) == [KnownIssue("octo/repo|x", 12, None)]
    assert await change_for_issue(storage, "octo/repo", 5) == IssueChange("", SHA, None)

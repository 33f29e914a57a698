"""What `disagreement/sync.py` remembers of each task's issue, read back as typed rows by
the packages that use it (reports, commands), on both storage backends."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub import GitHubException

from bot.disagreement.lifecycle import TaskIssue, issue_key, links_for, task_key
from bot.disagreement.sync import (
    BY_ISSUE,
    BY_TASK,
    IssueChange,
    KnownIssue,
    change_for_issue,
    known_issue,
    open_once,
    remember_issue,
    tasks_known,
)
from bot.github.client import GitHubApp
from bot.github.gateway import RepoGateway
from bot.judging.target import Target
from bot.storage.base import Storage
from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import REPO

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
    ("row", "number", "last_sha"),
    [
        ({"number": 12, "state": "open", "last_sha": SHA}, 12, SHA),
        ({"number": 12, "state": "closed"}, None, None),
        ({"number": 0, "state": "open"}, None, None),
        ({"state": "opening", "owner": "delivery-1"}, None, None),
        ({"number": "12", "state": "open", "last_sha": 5}, 12, None),
        ({}, None, None),
    ],
)
async def test_a_known_issue_is_open_as_lifecycle_says(
    storage: Storage, row: dict[str, Any], number: int | None, last_sha: str | None
) -> None:
    """Each shape a `disagreement-by-task` row has had reads as the open number
    `lifecycle.open_number` gives its typed value."""
    await storage.kv_put(BY_TASK, "octo/repo|octo/repo#7", row)
    assert await tasks_known(storage) == [KnownIssue("octo/repo|octo/repo#7", number, last_sha)]


async def test_rows_of_another_shape_read_as_before(storage: Storage) -> None:
    """Rows written by hand or by an older version read as the dict reads did: an open
    number as `int()` takes it, a last sha or pull number of another type as unknown."""
    await storage.kv_put(BY_TASK, "octo/repo|x", {"number": "12", "state": "open", "last_sha": 1})
    await storage.kv_put(BY_ISSUE, issue_key("octo/repo", 5), {"head_sha": SHA, "pull_number": "7"})
    assert await tasks_known(storage) == [KnownIssue("octo/repo|x", 12, None)]
    assert await change_for_issue(storage, "octo/repo", 5) == IssueChange("", SHA, None)


@pytest.mark.parametrize("number", ["x", [3], {"n": 1}])
async def test_a_task_row_naming_no_readable_issue_fails_loudly(
    storage: Storage, number: object
) -> None:
    """Such a row was never written by the bot; reading it must fail where a person sees it
    (the delivery), not count as "no issue" and keep the disagreement issue from opening."""
    await storage.kv_put(BY_TASK, "octo/repo|x", {"number": number, "state": "open"})
    with pytest.raises(ValueError):
        await tasks_known(storage)


async def test_rows_written_keep_their_json(
    storage: Storage, fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    """The claim while an issue is being opened, then the task's and the issue's rows,
    in the JSON running installations hold; a claim another delivery holds is read."""
    gateway = RepoGateway(await github_app.installation_client(1), REPO)
    target = Target(REPO, 1, SHA, "main", f"{REPO}#7", "t", pull_number=7)
    links = links_for(target, "")
    fake_github.inject("issues/create", status=422)
    with pytest.raises(GitHubException):
        await open_once(gateway, storage, target, [], links, "delivery-1")
    by_task = task_key(REPO, target.task)
    assert await storage.kv_get(BY_TASK, by_task) == {"state": "opening", "owner": "delivery-1"}
    assert await open_once(gateway, storage, target, [], links, "delivery-2") is None

    number = await open_once(gateway, storage, target, [], links, "delivery-1")
    assert number is not None
    assert await storage.kv_get(BY_TASK, by_task) == {
        "number": number,
        "state": "open",
        "last_sha": SHA,
    }
    assert await storage.kv_get(BY_ISSUE, issue_key(REPO, number)) == {
        "task": target.task,
        "head_sha": SHA,
        "pull_number": 7,
    }
    known = await known_issue(gateway, storage, REPO, target.task, search=False)
    assert known == TaskIssue(number=number, state="open", last_sha=SHA)

"""The files a queued pull request changes, and those its base changed since it left
(`merging/batch_files.py`): read from GitHub once, kept in kv `merge-batch-files` in the
JSON running installations hold."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from bot.github.client import GitHubApp
from bot.merging.batch_files import queued_pulls
from bot.merging.batching import QueuedPull
from bot.merging.github_calls import MergeCalls
from bot.storage.base import MergeEntry, MergeOptions, MergeStatus, Storage
from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import REPO, commit_files

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
NAMESPACE = "merge-batch-files"


def entry(judged_sha: str) -> MergeEntry:
    return MergeEntry(
        id=3,
        repository=REPO,
        base_branch="main",
        pull_number=7,
        installation_id=1,
        judged_sha=judged_sha,
        judgment_version=1,
        status=MergeStatus.PENDING,
        method="merge",
        options=MergeOptions(),
        attempts=0,
        prechecks=0,
        nudged=False,
        updating_from=None,
        enqueued_at=NOW,
        next_attempt_at=NOW,
        lease_owner=None,
        lease_expires_at=None,
        updated_at=NOW,
        reason="",
    )


async def test_files_read_from_github_are_kept_as_before(
    storage: Storage, fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    fork = fake_github.repo(REPO).branches["main"]
    head = commit_files(fake_github, {"docs/a.md": "a\n"}, branch="feature")
    base_head = commit_files(fake_github, {"docs/b.md": "b\n"}, branch="main")
    calls = MergeCalls(await github_app.installation_client(1), REPO)

    [pull] = await queued_pulls(storage, calls, [entry(head)], base_head)

    assert pull == QueuedPull(7, 3, frozenset({"docs/a.md"}), frozenset({"docs/b.md"}))
    assert await storage.kv_get(NAMESPACE, f"{REPO}#7@{head}") == {
        "files": ["docs/a.md"],
        "fork": fork,
    }
    assert await storage.kv_get(NAMESPACE, f"{REPO}:{fork}..{base_head}") == {
        "files": ["docs/b.md"]
    }
    assert fake_github.count("repos/compare-commits") == 2
    assert await queued_pulls(storage, calls, [entry(head)], base_head) == [pull]
    assert fake_github.count("repos/compare-commits") == 2


async def test_rows_already_kept_answer_without_github(
    storage: Storage, fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    head, fork, base_head = "a" * 40, "f" * 40, "b" * 40
    await storage.kv_put(NAMESPACE, f"{REPO}#7@{head}", {"files": ["x.md", "y.md"], "fork": fork})
    await storage.kv_put(NAMESPACE, f"{REPO}:{fork}..{base_head}", {"files": ["y.md"]})
    # A pull request that left at the base's head: its base changed nothing.
    await storage.kv_put(NAMESPACE, f"{REPO}#8@{head}", {"files": ["z.md"], "fork": base_head})
    calls = MergeCalls(await github_app.installation_client(1), REPO)

    pulls = await queued_pulls(
        storage, calls, [entry(head), replace(entry(head), id=4, pull_number=8)], base_head
    )

    assert pulls == [
        QueuedPull(7, 3, frozenset({"x.md", "y.md"}), frozenset({"y.md"})),
        QueuedPull(8, 4, frozenset({"z.md"}), frozenset()),
    ]
    assert fake_github.count("repos/compare-commits") == 0

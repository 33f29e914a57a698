"""Replicas racing for one queue on one database (SQLite file or PostgreSQL): every pull
request is merged exactly once, and a worker that dies during a merge leaves it to the
next one after its lease, which completes it once."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.storage.base import MergeStatus
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.merge_helpers import (
    check_suite_completed,
    events_of,
    fast_settings,
    merge_harness,
    until_comment,
    until_status,
    wait_for,
)
from tests.support.storage_fixtures import StorageBackend

pytestmark = pytest.mark.usefixtures("fake_github")


async def test_two_replicas_merge_each_pull_request_once(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    storage_backend: StorageBackend,
) -> None:
    settings = fast_settings(merge_queue_retry_delay_ms=50)
    pem = github_keypair.private_pem
    async with (
        merge_harness(
            tmp_path / "a",
            pem,
            fake_github,
            github_app,
            fake_llm,
            settings,
            storage=storage_backend.new(),
        ) as one,
        merge_harness(
            tmp_path / "b",
            pem,
            fake_github,
            github_app,
            fake_llm,
            settings,
            storage=storage_backend.new(),
        ) as two,
    ):
        numbers = []
        for index in range(6):
            fake_llm.script(QUICK, scores(*ACCEPT))
            branch = f"topic-{index}"
            sha = commit_files(
                fake_github, {f"docs/n{index}.md": f"# N{index}\n\nok\n"}, branch=branch
            )
            number = open_pull(fake_github, sha, branch=branch)
            numbers.append(number)
            replica = one if index % 2 else two
            await replica.send("pull_request", pull_request_payload(fake_github, "opened", number))
        for number in numbers:
            await until_status(one, number, MergeStatus.MERGED)
        merged = [number for number, _, _ in fake_github.merges.merged]
        assert sorted(merged) == numbers
        assert fake_github.count("pulls/merge") == len(numbers)
        for number in numbers:
            await until_comment(one, number, "the judged commit")
            assert sum("the judged commit" in c for c in one.comments(number)) == 1


async def test_worker_killed_during_a_merge_is_completed_once_after_the_lease(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    storage_backend: StorageBackend,
) -> None:
    settings = fast_settings(merge_queue_claim_ttl_ms=1_000, merge_queue_retry_delay_ms=600_000)
    pem = github_keypair.private_pem
    fake_llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(fake_github, {"docs/notes.md": "# Notes\n\nok\n"})
    number = open_pull(fake_github, sha)
    fake_github.repo(REPO).pulls[number].checks_pending = True
    async with merge_harness(
        tmp_path / "a",
        pem,
        fake_github,
        github_app,
        fake_llm,
        settings,
        storage=storage_backend.new(),
    ) as doomed:
        await doomed.send("pull_request", pull_request_payload(fake_github, "opened", number))
        await until_status(doomed, number, MergeStatus.PENDING)
        fake_github.repo(REPO).pulls[number].checks_pending = False
        fake_github.hold("pulls/merge")
        await doomed.send("check_suite", check_suite_completed(fake_github, sha))
        await wait_for(fake_github.held.is_set, what="the merge request in flight")
    # The replica is gone mid-request; GitHub carries the merge out all the same.
    fake_github.release()
    await wait_for(lambda: bool(fake_github.merges.merged), what="GitHub's merge")
    async with merge_harness(
        tmp_path / "b",
        pem,
        fake_github,
        github_app,
        fake_llm,
        settings,
        storage=storage_backend.new(),
    ) as survivor:
        await until_status(survivor, number, MergeStatus.MERGED)
        await until_comment(survivor, number, "the judged commit")
        assert fake_github.merges.merged == [(number, sha, "merge")]
        assert fake_github.count("pulls/merge") == 1
        events = await events_of(survivor.storage, number)
        assert "lease expired: reclaimed" in [e.reason for e in events]
        assert sum("the judged commit" in c for c in survivor.comments(number)) == 1

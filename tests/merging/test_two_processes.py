"""Two `python -m bot serve` processes on one PostgreSQL database share one merge queue.

The fake GitHub and the fake LLM run in the test process; each server is its own OS process
with its own worker pool and merge-queue worker, as two replicas behind a load balancer are.
Webhooks go to the two servers in turn. Every pull request must be merged exactly once, in
queue order, with never two merges in flight (GitHub takes a while over each merge here, so
two overlapping merge requests would be seen).
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus, MergeEvent, MergeStatus, Storage
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    QUICK,
    REPO,
    TIEBREAKER,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.merge_helpers import check_suite_completed, wait_for
from tests.support.server_process import (
    ServerProcess,
    deliver,
    fresh_postgres_database,
    server_env,
    start_all,
    stop_all,
)
from tests.support.storage_fixtures import POSTGRES_URL_ENV

POSTGRES_URL = os.environ.get(POSTGRES_URL_ENV, "")
pytestmark = pytest.mark.skipif(
    not POSTGRES_URL,
    reason=f"{POSTGRES_URL_ENV} is not set: two server processes need one PostgreSQL database",
)

PULLS = 5


def replica_env(fake: FakeGitHub, key: KeyPair, llm: FakeOpenAIServer, url: str) -> dict[str, str]:
    """Merging on, and only GitHub's events move the queue: the fallback timer is an hour
    away, so a merge happens because a webhook said so, whichever process it reached."""
    return server_env(
        fake,
        key.private_pem,
        Path("unused.sqlite3"),
        DATABASE_URL=url,
        JUDGE_LLM_BASE_URL=llm.base_url,
        JUDGE_LLM_API_KEY=llm.api_key,
        JUDGE_LLM_PROVIDER="openai",
        JUDGE_QUICK_MODEL=QUICK,
        JUDGE_DEEP_MODEL=DEEP,
        JUDGE_TIEBREAKER_MODEL=TIEBREAKER,
        JUDGE_THROTTLE_PER_HOUR="1000",
        JUDGE_MERGE_ON_APPROVE="true",
        JUDGE_MERGE_QUEUE_RETRY_DELAY_MS="3600000",
        JUDGE_MERGE_QUEUE_CLAIM_TTL_MS="30000",
        JUDGE_PR_MERGEABLE_PRECHECK_DELAY_MS="20",
        JUDGE_POLL_INTERVAL="0.1",
        # GitHub asks for a second between writes; the fake needs none, and the test is
        # about order, not pacing.
        JUDGE_GITHUB_WRITE_INTERVAL="0",
    )


async def send(server: ServerProcess, store: Storage, event: str, data: dict[str, Any]) -> None:
    """Deliver a signed webhook to one process and wait until a worker has done it."""
    delivery_id = str(uuid.uuid4())
    assert await deliver(server, event, json.dumps(data).encode(), delivery_id) == 202

    async def done() -> bool:
        stored = await store.get_delivery(delivery_id)
        return stored is not None and stored.status is DeliveryStatus.DONE

    await wait_for(done, within=60, what=f"{event} done")


def first(events: list[MergeEvent], number: int, status: MergeStatus) -> int:
    return next(e.seq for e in events if e.pull_number == number and e.to_status is status)


async def test_two_processes_merge_each_pull_request_once_in_queue_order(
    fake_github: FakeGitHub, fake_llm: FakeOpenAIServer, github_keypair: KeyPair, tmp_path: Path
) -> None:
    fake_llm.default = scores(*ACCEPT)
    fake_github.merges.merge_delay = 0.05
    numbers = []
    for index in range(PULLS):
        branch = f"topic-{index}"
        sha = commit_files(fake_github, {f"docs/t{index}.md": f"# T{index}\n\nok\n"}, branch=branch)
        number = open_pull(fake_github, sha, branch=branch)
        fake_github.repo(REPO).pulls[number].checks_pending = True
        numbers.append(number)
    async with fresh_postgres_database(POSTGRES_URL) as url:
        env = replica_env(fake_github, github_keypair, fake_llm, url)
        servers = [ServerProcess(env, tmp_path, name) for name in ("one", "two")]
        store = storage_from_url(url)
        try:
            await start_all(servers)
            await store.open()
            # Judged and queued one after the other, by the two processes in turn: the
            # queue's order is the order of the accepts.
            for index, number in enumerate(numbers):
                payload = pull_request_payload(fake_github, "opened", number)
                await send(servers[index % 2], store, "pull_request", payload)
            queue = await store.merge_queue(REPO.lower(), "main")
            assert [entry.pull_number for entry in queue] == numbers
            assert fake_github.count("pulls/merge") == 0
            # The required check finishes on every pull request; GitHub tells both processes,
            # whose workers then race for each head in turn.
            pulls = [fake_github.repo(REPO).pulls[number] for number in numbers]
            for pull in pulls:
                pull.checks_pending = False
            for index, pull in enumerate(pulls):
                event = check_suite_completed(fake_github, pull.head_sha)
                await send(servers[(index + 1) % 2], store, "check_suite", event)
            await wait_for(
                lambda: len(fake_github.merges.merged) == PULLS, within=60, what="every merge"
            )

            async def recorded() -> bool:
                return await store.merge_queue(REPO.lower(), "main") == []

            await wait_for(recorded, within=60, what="every merge recorded")
            events = await store.list_merge_events(REPO.lower())
        finally:
            await stop_all(servers)
            await store.close()
    assert [number for number, _, _ in fake_github.merges.merged] == numbers
    merge_calls = [c.status for c in fake_github.calls if c.operation_id == "pulls/merge"]
    assert merge_calls == [200] * PULLS, "one merge call per pull request, none refused"
    assert fake_github.merges.max_merges_in_flight == 1
    for number in numbers:
        ended = [e for e in events if e.pull_number == number and e.from_status is not None]
        assert [e.to_status for e in ended][-1] is MergeStatus.MERGED
        assert sum(e.to_status is MergeStatus.MERGED for e in ended) == 1
    # One merge in flight per queue: the next head is claimed only once the one before it
    # was merged.
    for before, after in itertools.pairwise(numbers):
        merged_at = first(events, before, MergeStatus.MERGED)
        assert first(events, after, MergeStatus.PROCESSING) > merged_at
    for server in servers:
        log = server.log_path.read_text()
        assert "Traceback" not in log, log[-3000:]

"""One `judge` run per head sha, created once and completed once (bot.judging.run_handle).

End to end against the fake GitHub: a push and a pull request for one sha racing while
the installation's write pacing holds the first create back; a run GitHub has but storage
never learned of (a worker killed between the two); a retried delivery that had already
completed its run.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import SERVICES
from bot.github.client import GitHubApp, RetryPolicy
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judging.flow import judge_target
from bot.judging.run_handle import CREATOR_NAMESPACE, already_completed
from bot.judging.state import ShaState, load_state, state_key
from tests.support.fakes.github_fixtures import APP_ID, INSTALLATION_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    Harness,
    commit_files,
    harness,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)
from tests.support.webhook_helpers import webhook_headers

pytestmark = pytest.mark.usefixtures("fake_github")


@pytest.fixture
async def paced_bot(
    tmp_path: Path,
    github_keypair: KeyPair,
    fake_github: FakeGitHub,
    github_session: aiohttp.ClientSession,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """The bot with a real write pace (as on a busy installation): each create or update
    waits its turn, which is when the push/pull-request race used to make two runs."""
    paced = GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=fake_github.base_url,
        graphql_url=fake_github.graphql_url,
        policy=RetryPolicy(write_interval=0.3, backoff_base=0.001, backoff_cap=0.01),
    )
    async with harness(tmp_path, github_keypair.private_pem, fake_github, paced, fake_llm) as h:
        yield h


async def post(bot: Harness, event: str, data: dict[str, Any]) -> str:
    body = json.dumps(data).encode()
    delivery_id = str(uuid.uuid4())
    headers = webhook_headers(event, body, delivery_id=delivery_id)
    response = await bot.client.post(bot.webhook_path, data=body, headers=headers)
    assert response.status == 202, await response.text()
    return delivery_id


async def test_a_push_and_a_pull_request_racing_make_one_run(paced_bot: Harness) -> None:
    bot = paced_bot
    bot.llm.script(QUICK, *(scores(*ACCEPT) for _ in range(4)))
    before = bot.fake.repo(REPO).branches["main"]
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    push = push_payload(
        REPO, before=before, after=sha, commits=[{"id": sha, "added": ["docs/notes.md"]}]
    )
    first = await post(bot, "push", push)
    await asyncio.sleep(0.03)
    second = await post(bot, "pull_request", pull_request_payload(bot.fake, "opened", number))
    await asyncio.gather(bot.settled(first), bot.settled(second))
    runs = bot.check_runs(sha=sha)
    assert len(runs) == 1, [(r.id, r.status) for r in runs]
    assert (runs[0].status, runs[0].conclusion) == ("completed", "success")
    assert bot.fake.count("checks/create") == 1


async def test_a_run_github_has_but_storage_lost_is_reused(advisory_bot: Harness) -> None:
    bot = advisory_bot
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    services = bot.app[SERVICES].services
    gateway = RepoGateway(await services.github.installation_client(INSTALLATION_ID), REPO)
    # What a worker killed right after the create leaves: its creation token, the run on
    # GitHub, and no run id in storage.
    await bot.storage.kv_put(CREATOR_NAMESPACE, state_key(REPO, sha), {"owner": "killed"})
    orphan, _ = await gateway.create_check_run(
        {"name": "judge", "head_sha": sha, "status": "in_progress"}
    )
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    assert run.id == orphan
    assert (run.status, run.conclusion) == ("completed", "success")
    assert bot.fake.count("checks/create") == 1


async def test_a_retried_delivery_does_not_complete_the_run_twice(advisory_bot: Harness) -> None:
    bot = advisory_bot
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    delivery_id = await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    state = await load_state(bot.storage, state_key(REPO, sha))
    assert state is not None and already_completed(state, delivery_id)
    updates = bot.fake.count("checks/update")
    # The worker died after completing the run but before the delivery was marked done:
    # the retry runs the same handler with the same delivery.
    delivery = await bot.storage.get_delivery(delivery_id)
    assert delivery is not None
    context = Context(delivery, bot.storage, bot.app[SERVICES])
    target = state.judged_target("retry")
    assert target is not None
    await judge_target(target, context, owner=delivery_id)
    assert bot.fake.count("checks/update") == updates
    assert len(bot.llm.requests) == 1


def test_already_completed_is_only_for_the_same_delivery() -> None:
    done = ShaState(owner="d-1", check_run_id=5, completed_by="d-1")
    assert already_completed(done, "d-1")
    assert not already_completed(done, "d-2")
    assert not already_completed(done.model_copy(update={"check_run_id": None}), "d-1")
    assert not already_completed(ShaState(owner="d-1", check_run_id=5), "d-1")

"""The whole App through a thirty-minute GitHub outage: pull requests keep arriving while
GitHub's address answers nothing, and once it answers again every one is judged, once, with
none parked.

Real components: the app with its workers, real SQLite, the fake GitHub behind a loopback
relay that is cut (`GitHubSwitch`), the fake LLM. Time is virtual (one clock for the workers,
the GitHub client and the fake): the test moves it from one due try to the next.

`JUDGE_OUTAGE_DELIVERIES=200 pytest tests/intake/test_github_outage_recovery.py -s` runs the
measure of issue 24 (200 deliveries) and prints its figures; by default 24 keep it quick."""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections import Counter
from datetime import timedelta
from pathlib import Path

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.app import METRICS
from bot.github.client import GitHubApp, RetryPolicy, Timing
from bot.settings.features import FeatureSettings
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus, Storage
from tests.intake.github_switch import GitHubSwitch
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import T0, ManualClock
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    GOOD_DOC,
    QUICK,
    REPO,
    commit_files,
    judge_settings,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.webhook_helpers import webhook_headers

DELIVERIES = int(os.environ.get("JUDGE_OUTAGE_DELIVERIES", "24"))
OUTAGE = timedelta(minutes=30)


async def no_wait(seconds: float) -> None:
    """The client's backoff between tries of one request, in virtual time: instant."""


async def settled(storage: Storage, clock: ManualClock) -> None:
    """Until the workers have done all that is due now: nothing processing, every pending
    delivery due later."""
    async with asyncio.timeout(120):
        while True:
            counts = await storage.count_deliveries()
            if counts[DeliveryStatus.PROCESSING] == 0:
                waiting = await storage.list_deliveries(DeliveryStatus.PENDING, limit=100_000)
                if all(d.next_attempt_at > clock() for d in waiting):
                    return
            await asyncio.sleep(0.02)


async def send(client: TestClient[web.Request, web.Application], path: str, data: object) -> None:
    body = json.dumps(data).encode()
    response = await client.post(path, data=body, headers=webhook_headers("pull_request", body))
    assert response.status == 202, await response.text()


async def test_a_thirty_minute_outage_loses_no_judgment(
    tmp_path: Path,
    github_keypair: KeyPair,
    fake_github: FakeGitHub,
    fake_llm: FakeOpenAIServer,
    github_session: aiohttp.ClientSession,
) -> None:
    clock = ManualClock(T0)
    fake_github.clock = clock
    switch = GitHubSwitch(int(fake_github.origin.rsplit(":", 1)[1]))
    await switch.up()
    github = GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=switch.url,
        graphql_url=f"{switch.url}/graphql",
        policy=RetryPolicy(write_interval=0),
        timing=Timing(sleep=no_wait, monotonic=time.monotonic, now=clock),
    )
    fake_llm.default = scores(*ACCEPT)
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        JUDGE_WORKERS=4,
        JUDGE_POLL_INTERVAL=0.01,
        JUDGE_RETRY_BASE_SECONDS=2,
        JUDGE_RETRY_MAX_SECONDS=300,
    )
    numbers = []
    for n in range(DELIVERIES):
        sha = commit_files(fake_github, {f"docs/n{n}.md": GOOD_DOC}, branch=f"topic-{n}")
        numbers.append(open_pull(fake_github, sha, branch=f"topic-{n}"))
    store = storage_from_url(settings.database_url)
    started = time.perf_counter()
    async with running_app(
        settings,
        storage=store,
        github=github,
        judge_settings=judge_settings(fake_llm, throttle_per_hour=100_000),
        features=FeatureSettings(),
        clock=clock,
    ) as (client, app):
        await switch.down()
        step = OUTAGE / DELIVERIES
        for number in numbers:  # arriving all through the outage
            clock.now += step
            await send(
                client, settings.webhook_path, pull_request_payload(fake_github, "opened", number)
            )
            await settled(store, clock)
        counts = await store.count_deliveries()
        assert counts[DeliveryStatus.PENDING] == DELIVERIES, counts
        waits = app[METRICS].deferred.labels(event="pull_request")._value.get()
        assert waits >= DELIVERIES, "every delivery met the outage"

        await switch.up()
        back = clock()
        jumps = 0
        while (await store.count_deliveries())[DeliveryStatus.PENDING] and jumps < 10:
            waiting = await store.list_deliveries(DeliveryStatus.PENDING, limit=100_000)
            clock.now = max(clock(), min(d.next_attempt_at for d in waiting))
            await settled(store, clock)
            jumps += 1
        recovered_after = clock() - back

        counts = await store.count_deliveries()
        assert counts[DeliveryStatus.DONE] == DELIVERIES, counts
        assert counts[DeliveryStatus.FAILED] == 0, "none parked"
        runs = Counter(run.head_sha for run in fake_github.repo(REPO).check_runs.values())
        assert len(runs) == DELIVERIES and set(runs.values()) == {1}, "one run per head"
        assert {r.conclusion for r in fake_github.repo(REPO).check_runs.values()} == {"success"}
        verdicts = await store.list_verdicts()
        assert len({v.head_sha for v in verdicts}) == len(verdicts) == DELIVERIES, "none twice"
        assert len(fake_llm.requests_for(QUICK)) == DELIVERIES
        assert recovered_after <= timedelta(seconds=256), "due again within one longest wait"
    print(
        f"\n{DELIVERIES} deliveries over a {OUTAGE} outage: {int(waits)} tries met it "
        f"({waits / DELIVERIES:.1f} a delivery), 0 parked; all {DELIVERIES} judged once, "
        f"{recovered_after.total_seconds():.0f} s (virtual) after GitHub answered again, "
        f"in {jumps} step(s); {time.perf_counter() - started:.1f} s of wall time"
    )
    await switch.down()

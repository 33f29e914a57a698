"""Recovering missed deliveries: GitHub's delivery log read from the fake GitHub, claims and
stored deliveries in real storage, redeliveries asked for through the App's JWT client."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from gidgethub import BadRequest

from bot.app import METRICS, SERVICES, create_app
from bot.github.client import GitHubApp
from bot.intake.recovery import (
    CLAIMS_NAMESPACE,
    MAX_REQUESTS_PER_EVENT,
    RecoveryPolicy,
    missed_deliveries_ctx,
    recover_forever,
    recover_once,
)
from bot.metrics import Metrics
from bot.services import ServiceHub, Services
from bot.storage import storage_from_url
from bot.storage.base import NewDelivery, Storage
from tests.support.app_helpers import make_settings
from tests.support.fakes.github_hooks import Target
from tests.support.fakes.github_server import FakeGitHub
from tests.support.server_process import free_port
from tests.support.webhook_helpers import SECRET, example

POLICY = RecoveryPolicy(window=timedelta(hours=24), interval=300)


def now() -> datetime:
    return datetime.now(UTC)


def ago(hours: float) -> datetime:
    return now() - timedelta(hours=hours)


def counter(metrics: Metrics, name: str, **labels: str) -> float:
    value = metrics.registry.get_sample_value(f"{name}_total", labels)
    return 0.0 if value is None else value


async def stored(storage: Storage, guid: str) -> None:
    body = json.dumps({"action": "opened"}).encode()
    delivery = NewDelivery(guid, "pull_request", "opened", 1, "octo/hello", body, now())
    assert await storage.record_delivery(delivery)


async def test_a_pass_asks_again_only_for_failed_unstored_events(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    """Across several pages: failed and unknown is asked for once, oldest first; delivered,
    stored, or older than the window is left alone, and no page past the window is read."""
    hooks = fake_github.hooks
    hooks.add_attempt("too-old", status_code=0, delivered_at=ago(30))
    hooks.add_attempt("missed-old", status_code=0, delivered_at=ago(20))
    hooks.add_attempt("timed-out-but-stored", status_code=0, delivered_at=ago(10))
    await stored(storage, "timed-out-but-stored")
    for i in range(150):
        hooks.add_attempt(f"fine-{i}", status_code=202, delivered_at=ago(9))
    hooks.add_attempt("missed-new", status_code=502, delivered_at=ago(1), event="push")
    hooks.add_attempt("retried-ok", status_code=0, delivered_at=ago(3))
    hooks.add_attempt("retried-ok", status_code=202, delivered_at=ago(2), redelivery=True)
    metrics = Metrics()

    report = await recover_once(github_app, storage, metrics, now(), POLICY)

    assert report.requested == ["missed-old", "missed-new"]
    assert report.stopped is None
    assert report.read == 155
    assert hooks.guids_requested() == ["missed-old", "missed-new"]
    # 156 entries at 100 a page: both pages, and the cursor's page ended at the window.
    assert fake_github.count("apps/list-webhook-deliveries") == 2
    assert counter(metrics, "judge_missed_deliveries", event="pull_request") == 1
    assert counter(metrics, "judge_redeliveries_requested", event="push") == 1
    assert await storage.kv_get(CLAIMS_NAMESPACE, "missed-old:0") is not None


async def test_the_window_ends_paging(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    for i in range(120):
        fake_github.hooks.add_attempt(f"old-{i}", status_code=0, delivered_at=ago(48))
    fake_github.hooks.add_attempt("new", status_code=0, delivered_at=ago(1))

    report = await recover_once(github_app, storage, Metrics(), now(), POLICY)

    assert report.requested == ["new"]
    assert fake_github.count("apps/list-webhook-deliveries") == 1


async def test_an_event_is_asked_for_once_until_github_logs_the_redelivery(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    """Two replicas reading the same log compete for one claim; a redelivery GitHub logged
    as failed lets the event be asked for again, up to the limit."""
    hooks = fake_github.hooks
    hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    hooks.log_redeliveries = False

    first = await recover_once(github_app, storage, Metrics(), now(), POLICY)
    second = await recover_once(github_app, storage, Metrics(), now(), POLICY)

    assert (first.requested, second.requested) == (["down"], [])
    hooks.log_redeliveries = True
    hooks.add_attempt("down", status_code=0, redelivery=True)  # GitHub caught up: it failed
    for _ in range(MAX_REQUESTS_PER_EVENT + 2):
        await recover_once(github_app, storage, Metrics(), now(), POLICY)
    assert hooks.guids_requested() == ["down"] * MAX_REQUESTS_PER_EVENT


async def test_a_delivered_redelivery_drops_the_claims(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    hooks = fake_github.hooks
    hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    await recover_once(github_app, storage, Metrics(), now(), POLICY)  # logged as failed
    await recover_once(github_app, storage, Metrics(), now(), POLICY)
    assert await storage.kv_get(CLAIMS_NAMESPACE, "down:1") is not None
    hooks.add_attempt("down", status_code=202, redelivery=True)

    report = await recover_once(github_app, storage, Metrics(), now(), POLICY)

    assert report.requested == []
    for n in range(MAX_REQUESTS_PER_EVENT):
        assert await storage.kv_get(CLAIMS_NAMESPACE, f"down:{n}") is None


async def test_claims_keep_the_rows_shape(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    """A claim row says when and which log entry was asked for, as installations hold them;
    one written by an earlier version keeps the event from being asked for again."""
    hooks = fake_github.hooks
    down = hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    hooks.add_attempt("claimed", status_code=0, delivered_at=ago(2))
    at = now()
    earlier = {"requested_at": ago(1).isoformat(), "attempt_id": 1}
    await storage.kv_put(CLAIMS_NAMESPACE, "claimed:0", earlier)

    report = await recover_once(github_app, storage, Metrics(), at, POLICY)

    assert report.requested == ["down"]
    assert await storage.kv_get(CLAIMS_NAMESPACE, "down:0") == {
        "requested_at": at.isoformat(),
        "attempt_id": down.id,
    }


async def test_a_pass_is_capped(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    for i in range(5):
        fake_github.hooks.add_attempt(f"m{i}", status_code=0, delivered_at=ago(5 - i))
    policy = RecoveryPolicy(window=timedelta(hours=24), interval=300, max_redeliveries=2)

    first = await recover_once(github_app, storage, Metrics(), now(), policy)

    assert first.requested == ["m0", "m1"]


async def test_a_long_log_is_read_only_up_to_the_cap(
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    storage: Storage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    for i in range(5):
        fake_github.hooks.add_attempt(f"m{i}", status_code=0, delivered_at=ago(5 - i))
    policy = RecoveryPolicy(window=timedelta(hours=24), interval=300, max_log_entries=3)

    with caplog.at_level(logging.WARNING, logger="bot.intake.recovery"):
        report = await recover_once(github_app, storage, Metrics(), now(), policy)

    assert report.read == 3
    assert report.requested == ["m2", "m3", "m4"]
    assert "stopped after 3 entries" in caplog.text


async def test_a_used_up_rate_limit_stops_the_pass_before_any_request(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    fake_github.hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    fake_github.exhaust_rate_limit(None, now() + timedelta(hours=1))
    metrics = Metrics()

    report = await recover_once(github_app, storage, metrics, now(), POLICY)

    assert report.stopped == "rate-limited"
    assert report.requested == []
    assert counter(metrics, "judge_redelivery_failures", reason="rate-limited") == 1
    # Paused: the next pass sends nothing until the reset.
    calls = len(fake_github.calls)
    again = await recover_once(github_app, storage, metrics, now(), POLICY)
    assert again.stopped == "rate-limited"
    assert len(fake_github.calls) == calls


@pytest.mark.parametrize(
    ("status", "headers", "reason"),
    [
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "4102444800"}, "rate-limited"),
        (502, {}, "unavailable"),
    ],
)
async def test_github_refusing_more_stops_the_pass_and_gives_the_claim_back(
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    storage: Storage,
    status: int,
    headers: dict[str, str],
    reason: str,
) -> None:
    fake_github.hooks.add_attempt("first", status_code=0, delivered_at=ago(3))
    fake_github.hooks.add_attempt("second", status_code=0, delivered_at=ago(2))
    fake_github.inject("apps/redeliver-webhook-delivery", status=status, headers=headers, times=5)
    metrics = Metrics()

    report = await recover_once(github_app, storage, metrics, now(), POLICY)

    assert report.stopped == reason
    assert report.requested == []
    assert fake_github.hooks.redelivery_requests == []
    assert await storage.kv_get(CLAIMS_NAMESPACE, "first:0") is None
    assert counter(metrics, "judge_redelivery_failures", reason=reason) == 1


async def test_an_event_github_refuses_keeps_its_claim_and_the_pass_goes_on(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage
) -> None:
    fake_github.hooks.add_attempt("gone", status_code=0, delivered_at=ago(3))
    fake_github.hooks.add_attempt("fine", status_code=0, delivered_at=ago(2))
    fake_github.inject("apps/redeliver-webhook-delivery", status=422)
    metrics = Metrics()

    report = await recover_once(github_app, storage, metrics, now(), POLICY)

    assert report.requested == ["fine"]
    assert await storage.kv_get(CLAIMS_NAMESPACE, "gone:0") is not None
    assert counter(metrics, "judge_redelivery_failures", reason="refused") == 1
    again = await recover_once(github_app, storage, metrics, now(), POLICY)
    assert "gone" not in again.requested


@pytest.mark.parametrize(("status", "reason"), [(502, "unavailable"), (422, "refused")])
async def test_an_unreadable_log_ends_the_pass(
    fake_github: FakeGitHub, github_app: GitHubApp, storage: Storage, status: int, reason: str
) -> None:
    fake_github.inject("apps/list-webhook-deliveries", status=status, times=5)
    metrics = Metrics()

    report = await recover_once(github_app, storage, metrics, now(), POLICY)

    assert report.stopped == reason
    assert counter(metrics, "judge_redelivery_failures", reason=reason) == 1


async def test_the_loop_survives_a_failing_pass_and_stops_on_request(
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    storage: Storage,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A pass that fails unexpectedly is logged and counted; the loop goes on to the next."""
    fake_github.hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    hub = ServiceHub(Services(github_app, None, None, None))  # type: ignore[arg-type]
    metrics = Metrics()
    calls = 0

    def clock() -> datetime:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("clock broke")
        return now()

    stop = asyncio.Event()
    policy = RecoveryPolicy(window=timedelta(hours=24), interval=0.01)
    task = asyncio.create_task(recover_forever(hub, storage, metrics, policy, clock, stop))
    async with asyncio.timeout(10):
        while fake_github.hooks.redelivery_requests == []:
            await asyncio.sleep(0.01)
    stop.set()
    await task
    assert counter(metrics, "judge_redelivery_failures", reason="error") == 1
    assert "recovering missed deliveries failed" in caplog.text


async def test_the_loop_waits_for_services(storage: Storage) -> None:
    stop = asyncio.Event()
    stop.set()
    await recover_forever(ServiceHub(), storage, Metrics(), POLICY, now, stop)


async def test_missed_deliveries_arrive_again_through_intake(
    fake_github: FakeGitHub, github_app: GitHubApp, github_keypair: Any, tmp_path: Path
) -> None:
    """End to end: the app starts, reads the log, asks GitHub, and GitHub's redelivery goes
    through the real webhook handler into storage."""
    port = free_port()
    # The app's own settings turn recovery off, so only the context added here runs it.
    settings = make_settings(
        github_keypair.private_pem, tmp_path, PORT=port, JUDGE_REDELIVER_MISSED=False
    )
    recovering = make_settings(
        github_keypair.private_pem,
        tmp_path,
        PORT=port,
        JUDGE_REDELIVER_MISSED=True,
        JUDGE_REDELIVER_INTERVAL_SECONDS=0.05,
    )
    body = example("pull_request", "opened")
    fake_github.hooks.add_attempt("lost-1", status_code=0, delivered_at=ago(1), payload=body)
    store = storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, github=github_app, start_workers=False)
    app.cleanup_ctx.append(
        missed_deliveries_ctx(
            recovering, store, app[SERVICES], app[METRICS], now, first_pass_after=0
        )
    )
    client = TestClient(TestServer(app, host="127.0.0.1", port=port))
    await client.start_server()
    # Reachable only now: a redelivery asked for before (the first pass races the server's
    # start) fails, GitHub logs it, and the next pass asks again.
    fake_github.hooks.deliver_to = Target(f"http://127.0.0.1:{port}{settings.webhook_path}", SECRET)
    try:
        requested = 0.0
        async with asyncio.timeout(10):
            # GitHub's redelivery arrives before its 202 answers the request: wait for both.
            while await store.get_delivery("lost-1") is None or not requested:
                await asyncio.sleep(0.02)
                requested = counter(
                    app[METRICS], "judge_redeliveries_requested", event="pull_request"
                )
        delivery = await store.get_delivery("lost-1")
        assert delivery is not None and delivery.body == body
        scraped = await (await client.get("/metrics")).text()
    finally:
        await client.close()
    # Once, or twice when the first redelivery came before the server listened.
    assert 'judge_redeliveries_requested_total{event="pull_request"}' in scraped
    assert requested in (1, 2)
    assert fake_github.hooks.attempts[-1].status_code == 202


@pytest.mark.parametrize(
    "overrides",
    [{"JUDGE_REDELIVER_MISSED": False}, {"APP_ID": None, "JUDGE_REDELIVER_MISSED": True}],
)
async def test_recovery_is_off_when_disabled_or_unregistered(
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    github_keypair: Any,
    tmp_path: Path,
    overrides: dict[str, Any],
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path, **overrides)
    fake_github.hooks.add_attempt("down", status_code=0, delivered_at=ago(2))
    store = storage_from_url(settings.database_url)
    hub = ServiceHub(Services(github_app, None, None, None))  # type: ignore[arg-type]
    context = missed_deliveries_ctx(settings, store, hub, Metrics(), now)
    steps = context(web.Application())
    await anext(steps)
    with pytest.raises(StopAsyncIteration):
        await anext(steps)
    assert fake_github.count("apps/list-webhook-deliveries") == 0


async def test_the_fake_delivery_log_filters_pages_and_refuses_as_github_does(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    """The fake itself: `status`, `per_page` and cursor paging, and its refusals."""
    hooks = fake_github.hooks
    for i in range(3):
        hooks.add_attempt(f"ok-{i}", status_code=202)
        hooks.add_attempt(f"bad-{i}", status_code=502)
    client = github_app.app_client()
    failed = [e["guid"] async for e in client.getiter("/app/hook/deliveries?status=failure")]
    assert failed == ["bad-2", "bad-1", "bad-0"]
    paged = [e["guid"] async for e in client.getiter("/app/hook/deliveries?per_page=4")]
    assert len(paged) == 6 and paged[0] == "bad-2"
    assert fake_github.count("apps/list-webhook-deliveries") == 3
    with pytest.raises(BadRequest):
        await client.getitem("/app/hook/deliveries?cursor=nope")
    with pytest.raises(BadRequest):
        await client.post("/app/hook/deliveries/1/attempts", data=b"")

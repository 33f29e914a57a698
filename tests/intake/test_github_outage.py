"""GitHub unavailable (unreachable, 5xx, no answer in time): a delivery waits, pending and
with its attempts given back, on a capped backoff for `outage_window`, and is processed once
GitHub answers again, oldest first; each failed attempt logs one line naming host, request
and cause. The App's own failures still park.

Time is virtual: workers, the GitHub client and the fake GitHub share a clock the test moves;
GitHub is cut off by a real loopback relay (`GitHubSwitch`) or by the fake's 5xx answers."""

from __future__ import annotations

import itertools
import logging
import time
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from http import HTTPStatus

import aiohttp
import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.client import (
    GitHubApp,
    GitHubServerError,
    GitHubUnavailable,
    RateLimited,
    RetryPolicy,
    Timing,
)
from bot.intake.dispatch import Context, HandlerFailures
from bot.intake.worker import (
    AttemptPolicy,
    Defer,
    Park,
    Retry,
    Worker,
    outage_retry_at,
    settle_failure,
)
from bot.storage.base import Delivery, DeliveryStatus, Storage
from tests.intake.github_switch import GitHubSwitch
from tests.support.delivery_helpers import T0, ManualClock, make_worker, new_delivery
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub

POLICY = AttemptPolicy(
    max_attempts=2,
    base_seconds=10,
    max_seconds=60,
    outage_window=timedelta(hours=24),
    outage_base_seconds=2,
    outage_max_seconds=300,
)

# -- the schedule (pure) -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("waited", "gap"),
    [(0, 2), (1.9, 2), (4, 4), (7.9, 4), (100, 64), (255, 128), (256, 256), (86_400, 256)],
)
def test_the_wait_doubles_with_the_outage_up_to_the_cap(waited: float, gap: float) -> None:
    """The next multiple, since the epoch, of a wait that doubles from 2 s; at most 256 s,
    the longest power-of-two multiple of 2 s within 300 s."""
    now = T0 + timedelta(seconds=0.5)
    at = outage_retry_at(POLICY, waited, now)
    assert 0 < (at - now).total_seconds() <= gap
    assert at.timestamp() % gap == 0


def test_deliveries_of_one_outage_come_due_together() -> None:
    """Whenever each failed, deliveries waiting as long are due at the same instant; a
    shorter wait's instants include every longer wait's."""
    moments = [T0 + timedelta(seconds=s) for s in (3, 40, 97, 150)]  # T0 + 192 s is one
    assert {outage_retry_at(POLICY, 3600, moment) for moment in moments} == {
        T0 + timedelta(seconds=192)
    }
    assert outage_retry_at(POLICY, 10, T0 + timedelta(seconds=190)) == T0 + timedelta(seconds=192)


def down(since: datetime | None = T0) -> GitHubUnavailable:
    return GitHubUnavailable("GitHub at api.github.com unavailable", failing_since=since)


@pytest.mark.parametrize(
    ("exc", "attempts", "received", "expected"),
    [
        # Waiting for GitHub costs no attempt, however many there were.
        (down(), 2, T0, Defer(outage_retry_at(POLICY, 0, T0), outage=True)),
        (down(None), 9, T0, Defer(outage_retry_at(POLICY, 0, T0), outage=True)),
        (
            HandlerFailures({"a": down(), "b": RateLimited(1, T0 + timedelta(hours=1))}),
            1,
            T0,
            Defer(T0 + timedelta(hours=1), outage=True),
        ),
        # The outage's age counts, and the delivery's: the longer, the longer the wait.
        (
            down(T0 - timedelta(minutes=30)),
            1,
            T0,
            Defer(outage_retry_at(POLICY, 1800, T0), outage=True),
        ),
        # Past the window it is a failure like any other.
        (down(), 1, T0 - timedelta(hours=24), Retry(T0 + timedelta(seconds=10))),
        (down(), 2, T0 - timedelta(hours=25), Park()),
        # The App's own failure beside it costs the attempt, as always.
        (HandlerFailures({"a": down(), "b": RuntimeError("bug")}), 2, T0, Park()),
    ],
)
def test_settle_failure_waits_for_github(
    exc: Exception, attempts: int, received: datetime, expected: Defer | Retry | Park
) -> None:
    assert settle_failure(exc, attempts, POLICY, T0, received) == expected


# -- a worker, real storage, a GitHub cut off ----------------------------------------------


@pytest.fixture
async def switch(fake_github: FakeGitHub) -> AsyncIterator[GitHubSwitch]:
    relay = GitHubSwitch(int(fake_github.origin.rsplit(":", 1)[1]))
    await relay.up()
    try:
        yield relay
    finally:
        await relay.down()


async def no_wait(seconds: float) -> None:
    """The client's backoff between tries of one request, in virtual time: instant."""


def github_behind(
    url: str,
    fake: FakeGitHub,
    keypair: KeyPair,
    session: aiohttp.ClientSession,
    clock: ManualClock,
) -> GitHubApp:
    fake.clock = clock
    return GitHubApp(
        app_id=str(APP_ID),
        private_key=keypair.private_pem,
        session=session,
        api_url=url,
        graphql_url=f"{url}/graphql",
        policy=RetryPolicy(write_interval=0),
        timing=Timing(sleep=no_wait, monotonic=time.monotonic, now=clock),
    )


def reading_router(github: GitHubApp, done: list[str]) -> Router:
    router = Router()

    @router.register("push")
    async def read_repo(event: Event, context: Context) -> None:
        client = await github.installation_client(1)
        await client.getitem("/repos/octo/hello")
        done.append(context.delivery.delivery_id)

    return router


async def drain(worker: Worker) -> None:
    while await worker.run_once():
        pass


async def pending(storage: Storage) -> list[Delivery]:
    return await storage.list_deliveries(DeliveryStatus.PENDING, limit=10_000)


async def test_deliveries_wait_out_an_outage_and_run_oldest_first(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    switch: GitHubSwitch,
) -> None:
    """Thirty minutes without GitHub: each delivery is tried again and again (far more
    often than its two attempts), never more than 256 s apart, never parked; once GitHub
    listens again, they all run at the next try, in the order they arrived."""
    clock = ManualClock()
    github = github_behind(switch.url, fake_github, github_keypair, github_session, clock)
    done: list[str] = []
    worker = make_worker(storage, reading_router(github, done), clock, policy=POLICY)
    await switch.down()
    ids = [f"d-{n}" for n in range(3)]
    for n, delivery_id in enumerate(reversed(ids)):
        await storage.record_delivery(
            new_delivery(delivery_id, received_at=T0 - timedelta(seconds=n))
        )
    tries: dict[str, list[datetime]] = {delivery_id: [] for delivery_id in ids}
    while clock() < T0 + timedelta(minutes=30):
        for delivery in await pending(storage):
            if delivery.next_attempt_at <= clock():
                tries[delivery.delivery_id].append(clock())
        await drain(worker)
        waiting = await pending(storage)
        assert len(waiting) == 3 and {d.attempts for d in waiting} == {0}
        clock.now = min(d.next_attempt_at for d in waiting)
    for delivery_id, moments in tries.items():
        gaps = [(b - a).total_seconds() for a, b in itertools.pairwise(moments)]
        assert len(moments) > 10 and max(gaps) == 256, delivery_id
    [stored] = [d for d in await pending(storage) if d.delivery_id == "d-0"]
    assert stored.last_error is not None
    assert f"GitHub at 127.0.0.1:{switch.port} unavailable" in stored.last_error
    assert "POST /app/installations/1/access_tokens" in stored.last_error
    assert "ClientConnectorError" in stored.last_error
    assert github.health.failing_since is not None

    await switch.up()
    clock.now = min(d.next_attempt_at for d in await pending(storage))
    await drain(worker)
    assert done == ids, "oldest first"
    for delivery_id in ids:
        finished = await storage.get_delivery(delivery_id)
        assert finished is not None
        assert (finished.status, finished.attempts) == (DeliveryStatus.DONE, 1)
    assert not github.health.failing


async def test_5xx_answers_wait_like_an_unreachable_github(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
) -> None:
    """Three tries meet 503s (five requests, then one each while GitHub is known to fail):
    more tries than the two attempts allowed, and the delivery still runs."""
    clock = ManualClock()
    github = github_behind(fake_github.base_url, fake_github, github_keypair, github_session, clock)
    await github.installation_client(1)  # the token: only repos/get fails
    done: list[str] = []
    worker = make_worker(storage, reading_router(github, done), clock, policy=POLICY)
    fake_github.inject("repos/get", status=503, times=7)
    await storage.record_delivery(new_delivery("d-5xx"))
    for _ in range(3):
        await drain(worker)
        [waiting] = await pending(storage)
        assert waiting.attempts == 0
        assert waiting.last_error is not None and "answered 503" in waiting.last_error
        clock.now = waiting.next_attempt_at
    await drain(worker)
    assert done == ["d-5xx"]
    assert fake_github.count("repos/get") == 8
    fake_github.errors.clear()  # the injected 503s are not GitHub's documented answers


async def test_past_the_window_an_outage_parks_the_delivery(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    switch: GitHubSwitch,
) -> None:
    clock = ManualClock(T0 + timedelta(hours=2))
    github = github_behind(switch.url, fake_github, github_keypair, github_session, clock)
    policy = AttemptPolicy(max_attempts=2, base_seconds=10, outage_window=timedelta(hours=1))
    worker = make_worker(storage, reading_router(github, []), clock, policy=policy)
    await switch.down()
    await storage.record_delivery(new_delivery("d-old"))
    await drain(worker)
    clock.advance(10)
    await drain(worker)
    parked = await storage.get_delivery("d-old")
    assert parked is not None and parked.status is DeliveryStatus.FAILED
    assert parked.last_error is not None and "unavailable" in parked.last_error


async def test_the_apps_own_failure_against_github_still_parks(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
) -> None:
    """GitHub answering 404 is an answer: the attempts are spent and the delivery parked,
    its error naming the request."""
    clock = ManualClock()
    github = github_behind(fake_github.base_url, fake_github, github_keypair, github_session, clock)
    router = Router()

    @router.register("push")
    async def read_missing(event: Event, context: Context) -> None:
        client = await github.installation_client(1)
        await client.getitem("/repos/octo/gone")

    worker = make_worker(storage, router, clock, policy=POLICY)
    await storage.record_delivery(new_delivery("d-404"))
    await drain(worker)
    clock.advance(10)
    await drain(worker)
    parked = await storage.get_delivery("d-404")
    assert parked is not None and parked.status is DeliveryStatus.FAILED
    assert parked.last_error is not None and "GET /repos/octo/gone" in parked.last_error


# -- what a failure logs ------------------------------------------------------------------------


async def test_each_failed_attempt_logs_one_line_naming_host_request_and_cause(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    switch: GitHubSwitch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: a traceback from the dispatcher and one from the worker, and a warning for
    every try of every request. Now: one line, no traceback (those are at DEBUG)."""
    caplog.set_level(logging.DEBUG)
    clock = ManualClock()
    github = github_behind(switch.url, fake_github, github_keypair, github_session, clock)
    worker = make_worker(storage, reading_router(github, []), clock, policy=POLICY)
    await switch.down()
    await storage.record_delivery(new_delivery("d-log"))
    for _ in range(3):
        await drain(worker)
        [waiting] = await pending(storage)
        clock.now = waiting.next_attempt_at
    loud = [r for r in caplog.records if r.levelno >= logging.INFO and r.name.startswith("bot.")]
    assert len(loud) == 3
    for record in loud:
        assert record.name == "bot.intake.worker" and record.exc_info is None
        message = record.getMessage()
        assert message.startswith("delivery waits for GitHub, next try at ")
        assert f"127.0.0.1:{switch.port}" in message
        assert "POST /app/installations/1/access_tokens" in message
        assert "Connect call failed" in message or "Connection refused" in message
    assert any(r.exc_info for r in caplog.records if r.levelno == logging.DEBUG)


def test_a_server_error_is_a_wait_for_github() -> None:
    """A GitHubServerError (5xx after every retry) is an outage to the worker too."""
    error = GitHubServerError(HTTPStatus(502), "GitHub at h unavailable", failing_since=T0)
    outcome = settle_failure(error, 5, POLICY, T0, T0)
    assert isinstance(outcome, Defer) and outcome.outage

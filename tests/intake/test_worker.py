"""Workers: retries with backoff, parking, deferral while GitHub's rate limit is used up,
lease heartbeats, and crash-and-restart recovery.

Handler isolation (a retry runs only the handlers that failed) is tested in test_dispatch.py.
Recovery of a killed server process is tested in test_crash_recovery.py."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta

import aiohttp
import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.client import GitHubApp, RateLimited, Timing
from bot.github.client import RetryPolicy as ClientPolicy
from bot.intake.dispatch import Context, HandlerFailures
from bot.intake.worker import (
    AttemptPolicy,
    Defer,
    Park,
    Retry,
    Worker,
    next_attempt_at,
    settle_failure,
)
from bot.metrics import Metrics
from bot.storage.base import Delivery, DeliveryStatus, Storage
from tests.support.delivery_helpers import T0, ManualClock, make_worker, new_delivery
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub

# -- backoff schedule (pure) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [(1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (5, None)],
)
def test_backoff_doubles_then_parks(attempts: int, expected: float | None) -> None:
    policy = AttemptPolicy(max_attempts=5, base_seconds=2, max_seconds=300)
    result = next_attempt_at(policy, attempts, T0)
    if expected is None:
        assert result is None
    else:
        assert result == T0 + timedelta(seconds=expected)


def test_backoff_is_capped() -> None:
    policy = AttemptPolicy(max_attempts=50, base_seconds=2, max_seconds=60)
    assert next_attempt_at(policy, 20, T0) == T0 + timedelta(seconds=60)


def test_single_attempt_policy_parks_at_once() -> None:
    assert next_attempt_at(AttemptPolicy(max_attempts=1), 1, T0) is None


# -- defer, retry or park (pure) ---------------------------------------------------------------

RESET = T0 + timedelta(seconds=3554)
LATER_RESET = T0 + timedelta(seconds=7000)
POLICY = AttemptPolicy(max_attempts=3, base_seconds=10, max_seconds=60)


def limited(installation_id: int | None = 1, reset: datetime = RESET) -> RateLimited:
    return RateLimited(installation_id, reset)


def failures(*excs: Exception) -> HandlerFailures:
    return HandlerFailures({f"handler{n}": exc for n, exc in enumerate(excs)})


@pytest.mark.parametrize(
    ("exc", "attempts", "expected"),
    [
        # A real failure: backoff, then parked on the last attempt.
        (RuntimeError("boom"), 1, Retry(T0 + timedelta(seconds=10))),
        (RuntimeError("boom"), 3, Park()),
        (failures(RuntimeError("boom")), 2, Retry(T0 + timedelta(seconds=20))),
        # GitHub's limit is used up: wait for the reset, whatever the attempts.
        (limited(), 1, Defer(RESET)),
        (limited(), 3, Defer(RESET)),
        (limited(None), 50, Defer(RESET)),
        (failures(limited()), 3, Defer(RESET)),
        (failures(limited(), limited(None, LATER_RESET)), 1, Defer(LATER_RESET)),
        # A reset already past (clocks differ): due again at once, never in the past.
        (limited(reset=T0 - timedelta(seconds=5)), 1, Defer(T0)),
        # Some handler really failed: that costs an attempt, retried no earlier than the reset.
        (failures(limited(), RuntimeError("boom")), 1, Retry(RESET)),
        (
            failures(RuntimeError("boom"), limited(reset=T0 + timedelta(seconds=1))),
            2,
            Retry(T0 + timedelta(seconds=20)),
        ),
        (failures(limited(), RuntimeError("boom")), 3, Park()),
    ],
)
def test_settle_failure(exc: Exception, attempts: int, expected: Defer | Retry | Park) -> None:
    assert settle_failure(exc, attempts, POLICY, T0) == expected


# -- worker behaviour on real storage --------------------------------------------------------


async def test_failing_handler_is_retried_with_backoff_then_parked(storage: Storage) -> None:
    """Never lost, never looping: three attempts at growing intervals, then failed."""
    clock = ManualClock()
    calls: list[datetime] = []
    router = Router()

    @router.register("push")
    async def broken(event: Event, context: Context) -> None:
        calls.append(clock())
        raise RuntimeError("boom")

    await storage.record_delivery(new_delivery("d-1"))
    worker = make_worker(storage, router, clock)
    assert await worker.run_once() == 1
    stored = await storage.get_delivery("d-1")
    assert stored is not None and stored.status is DeliveryStatus.PENDING
    assert stored.last_error is not None and "boom" in stored.last_error
    assert await worker.run_once() == 0, "not due before its backoff"
    clock.advance(10)
    assert await worker.run_once() == 1
    clock.advance(19)
    assert await worker.run_once() == 0
    clock.advance(1)
    assert await worker.run_once() == 1
    parked = await storage.get_delivery("d-1")
    assert parked is not None and parked.status is DeliveryStatus.FAILED
    assert parked.attempts == 3
    clock.advance(10_000)
    assert await worker.run_once() == 0
    assert len(calls) == 3


async def test_killed_worker_delivery_completes_once_after_restart(storage: Storage) -> None:
    """A worker killed mid-delivery leaves a lease; after it expires a new worker (as after
    a restart) finishes the delivery, and its effect happens exactly once."""
    clock = ManualClock()
    started = asyncio.Event()
    effects: list[str] = []
    attempt = {"n": 0}
    router = Router()

    @router.register("push")
    async def slow_then_fast(event: Event, context: Context) -> None:
        attempt["n"] += 1
        if attempt["n"] == 1:
            started.set()
            await asyncio.sleep(3600)  # killed before this returns
        effects.append(context.delivery.delivery_id)

    await storage.record_delivery(new_delivery("d-4"))
    first = make_worker(storage, router, clock, worker_id="first", lease_seconds=30)
    task = asyncio.create_task(first.run_once())
    await started.wait()
    task.cancel()  # the process dies: no release, no completion
    with pytest.raises(asyncio.CancelledError):
        await task
    stuck = await storage.get_delivery("d-4")
    assert stuck is not None and stuck.status is DeliveryStatus.PROCESSING

    second = make_worker(storage, router, clock, worker_id="second", lease_seconds=30)
    assert await second.run_once() == 0, "the lease still belongs to the dead worker"
    clock.advance(31)
    assert await second.run_once() == 1
    done = await storage.get_delivery("d-4")
    assert done is not None and done.status is DeliveryStatus.DONE
    assert effects == ["d-4"]
    assert await first.storage.complete_delivery("d-4", "first", clock()) is False


async def test_many_workers_process_each_delivery_once(storage: Storage) -> None:
    clock = ManualClock()
    seen: list[str] = []
    router = Router()

    @router.register("push")
    async def record(event: Event, context: Context) -> None:
        await asyncio.sleep(0)
        seen.append(context.delivery.delivery_id)

    for n in range(60):
        await storage.record_delivery(new_delivery(f"m-{n}"))
    workers = [make_worker(storage, router, clock, worker_id=f"w{i}") for i in range(4)]

    async def drain(worker: Worker) -> None:
        while await worker.run_once():
            pass

    await asyncio.gather(*(drain(worker) for worker in workers))
    assert sorted(seen) == sorted(f"m-{n}" for n in range(60))
    counts = await storage.count_deliveries()
    assert counts[DeliveryStatus.DONE] == 60


async def test_rate_limited_delivery_waits_for_the_reset_without_using_attempts(
    storage: Storage,
) -> None:
    """Deferred again and again (more often than max_attempts), never parked: waiting on
    GitHub's reset is not a failure. Once GitHub answers, it completes."""
    clock = ManualClock()
    metrics = Metrics()
    resets = [clock() + timedelta(minutes=10 * n) for n in range(1, 6)]
    router = Router()

    @router.register("push")
    async def handler(event: Event, context: Context) -> None:
        if resets:
            raise RateLimited(context.installation_id, resets.pop(0))

    await storage.record_delivery(new_delivery("d-rl"))
    worker = make_worker(storage, router, clock, metrics=metrics)
    for n in range(1, 6):
        assert await worker.run_once() == 1
        deferred = await storage.get_delivery("d-rl")
        assert deferred is not None and deferred.status is DeliveryStatus.PENDING
        assert deferred.attempts == 0
        assert deferred.next_attempt_at == T0 + timedelta(minutes=10 * n)
        assert await worker.run_once() == 0, "not before the reset"
        clock.now = deferred.next_attempt_at
    assert await worker.run_once() == 1
    done = await storage.get_delivery("d-rl")
    assert done is not None and done.status is DeliveryStatus.DONE and done.attempts == 1
    assert metrics.deferred.labels(event="push")._value.get() == 5
    assert metrics.retried.labels(event="push")._value.get() == 0


def github_on(
    fake: FakeGitHub, keypair: KeyPair, session: aiohttp.ClientSession, clock: ManualClock
) -> GitHubApp:
    """The real App client on the fake, on the test's clock (so resets are virtual time)."""
    fake.clock = clock

    async def no_sleep(seconds: float) -> None:
        raise AssertionError(f"the client slept {seconds} s instead of deferring")

    return GitHubApp(
        app_id=str(APP_ID),
        private_key=keypair.private_pem,
        session=session,
        api_url=fake.base_url,
        graphql_url=fake.graphql_url,
        policy=ClientPolicy(write_interval=0),
        timing=Timing(sleep=no_sleep, monotonic=time.monotonic, now=clock),
    )


async def drain(worker: Worker) -> int:
    count = 0
    while await worker.run_once():
        count += 1
    return count


async def test_exhausted_installation_waits_while_another_progresses(
    storage: Storage,
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
) -> None:
    """Installation 1 has used up its hourly limit, installation 2 has not. Installation 2's
    deliveries complete at once; installation 1's wait, pending and with no attempt used,
    after one single refused request, and resume in arrival order after the reset."""
    clock = ManualClock(T0 + timedelta(minutes=1))
    fake_github.add_repo("other/repo", installation_id=2)
    github = github_on(fake_github, github_keypair, github_session, clock)
    reset = (clock() + timedelta(seconds=3554)).replace(microsecond=0)
    fake_github.exhaust_rate_limit(1, reset)
    done: list[str] = []
    router = Router()

    @router.register("push")
    async def read_repo(event: Event, context: Context) -> None:
        assert context.installation_id is not None and context.delivery.repository is not None
        gh = await github.installation_client(context.installation_id)
        await gh.getitem(f"/repos/{context.delivery.repository}")
        done.append(context.delivery.delivery_id)

    for n in range(3):
        for installation, repo in ((1, "octo/hello"), (2, "other/repo")):
            await storage.record_delivery(
                new_delivery(
                    f"i{installation}-{n}",
                    installation_id=installation,
                    repository=repo,
                    received_at=T0 + timedelta(seconds=2 * n + installation),
                )
            )
    metrics = Metrics()
    worker = make_worker(storage, router, clock, metrics=metrics)

    assert await drain(worker) == 6
    assert done == ["i2-0", "i2-1", "i2-2"]
    for n in range(3):
        waiting = await storage.get_delivery(f"i1-{n}")
        assert waiting is not None
        assert (waiting.status, waiting.attempts) == (DeliveryStatus.PENDING, 0)
        assert waiting.next_attempt_at == reset
    refused = [c for c in fake_github.calls if c.status == 403]
    assert [c.path for c in refused] == ["/repos/octo/hello"], "one request found the limit"
    assert metrics.deferred.labels(event="push")._value.get() == 3

    clock.now = reset - timedelta(seconds=1)
    assert await drain(worker) == 0, "nothing is due before the reset"
    clock.now = reset
    assert await drain(worker) == 3
    assert done[3:] == ["i1-0", "i1-1", "i1-2"]
    for n in range(3):
        finished = await storage.get_delivery(f"i1-{n}")
        assert finished is not None
        assert (finished.status, finished.attempts) == (DeliveryStatus.DONE, 1)
    assert len([c for c in fake_github.calls if c.status == 403]) == 1


# -- leases: heartbeat, loss, maximum run time -------------------------------------------------


async def wait_for(predicate: Callable[[], Awaitable[bool]], seconds: float = 5.0) -> None:
    async with asyncio.timeout(seconds):
        while not await predicate():
            await asyncio.sleep(0.01)


def handler_blocked_until(release: asyncio.Event, log: list[str]) -> Router:
    router = Router()

    @router.register("push")
    async def slow(event: Event, context: Context) -> None:
        log.append("started")
        try:
            await release.wait()
        except asyncio.CancelledError:
            log.append("cancelled")
            raise
        log.append("finished")

    return router


async def test_heartbeat_keeps_a_long_handlers_lease(storage: Storage) -> None:
    """While the handler runs the worker renews its lease, so however long it takes, no other
    worker takes the delivery over, and it completes once, on its first attempt."""
    clock = ManualClock()
    release = asyncio.Event()
    log: list[str] = []
    router = handler_blocked_until(release, log)
    await storage.record_delivery(new_delivery("d-long"))
    first = make_worker(
        storage, router, clock, worker_id="first", lease_seconds=30, heartbeat_seconds=0.01
    )
    second = make_worker(storage, router, clock, worker_id="second", lease_seconds=30)
    task = asyncio.create_task(first.run_once())

    async def lease_reaches(moment: datetime) -> bool:
        held = await storage.get_delivery("d-long")
        return held is not None and held.lease_expires_at == moment

    for _ in range(10):  # five minutes of virtual time, ten lease lengths
        clock.advance(29)
        await wait_for(lambda: lease_reaches(clock() + timedelta(seconds=30)))
        assert await second.run_once() == 0
    release.set()
    assert await task == 1
    done = await storage.get_delivery("d-long")
    assert done is not None
    assert (done.status, done.attempts, done.lease_owner) == (DeliveryStatus.DONE, 1, "first")
    assert log == ["started", "finished"]


async def test_a_handler_may_run_longer_than_the_lease(storage: Storage) -> None:
    """On the wall clock: a handler taking three lease lengths is not cut off."""
    router = Router()

    @router.register("push")
    async def slow(event: Event, context: Context) -> None:
        await asyncio.sleep(0.6)

    await storage.record_delivery(new_delivery("d-slow", received_at=datetime.now(UTC)))
    worker = make_worker(storage, router, lambda: datetime.now(UTC), lease_seconds=0.2)
    assert await worker.run_once() == 1
    done = await storage.get_delivery("d-slow")
    assert done is not None
    assert (done.status, done.attempts, done.last_error) == (DeliveryStatus.DONE, 1, None)


async def test_a_worker_that_lost_its_lease_stops_its_handler(storage: Storage) -> None:
    """If the lease was taken over (this worker stalled past it: here the successor's clock
    is a lease ahead), the next heartbeat finds out, the handler is cancelled, and the
    loser neither completes nor releases the delivery."""
    clock = ManualClock()
    release = asyncio.Event()
    log: list[str] = []
    router = handler_blocked_until(release, log)
    metrics = Metrics()
    await storage.record_delivery(new_delivery("d-lost"))
    stalled = make_worker(
        storage,
        router,
        clock,
        worker_id="stalled",
        lease_seconds=30,
        heartbeat_seconds=0.01,
        metrics=metrics,
    )
    task = asyncio.create_task(stalled.run_once())
    await wait_for(lambda: asyncio.sleep(0, bool(log)))
    [taken] = await storage.claim_deliveries("successor", 1, 30, clock() + timedelta(seconds=31))
    async with asyncio.timeout(5):
        assert await task == 1
    assert log == ["started", "cancelled"]
    assert await storage.get_delivery("d-lost") == taken
    assert metrics.lease_lost.labels(event="push")._value.get() == 1
    assert metrics.processed.labels(event="push")._value.get() == 0


async def test_max_run_time_stops_a_stuck_handler(storage: Storage) -> None:
    """The heartbeat would keep a stuck handler's lease forever; the maximum run time ends
    it as a failed attempt, retried like any other."""
    release = asyncio.Event()
    log: list[str] = []
    router = handler_blocked_until(release, log)
    clock = ManualClock()
    await storage.record_delivery(new_delivery("d-stuck"))
    worker = make_worker(
        storage, router, clock, lease_seconds=30, heartbeat_seconds=0.01, max_run_seconds=0.1
    )
    async with asyncio.timeout(5):
        assert await worker.run_once() == 1
    stuck = await storage.get_delivery("d-stuck")
    assert stuck is not None
    assert (stuck.status, stuck.attempts) == (DeliveryStatus.PENDING, 1)
    assert stuck.last_error is not None and "TimeoutError" in stuck.last_error
    assert log == ["started", "cancelled"]


@pytest.mark.parametrize("fails", [False, True])
async def test_finishing_after_losing_the_lease_is_not_counted(
    storage: Storage, fails: bool
) -> None:
    """Handlers that end just as the lease was taken over (before a heartbeat noticed) must
    not count as processed, retried or failed: storage refuses the completion or release,
    and the worker reports the lost lease; the new owner settles the delivery."""
    clock = ManualClock()
    metrics = Metrics()
    router = Router()

    @router.register("push")
    async def overtaken(event: Event, context: Context) -> None:
        clock.advance(31)
        await context.storage.claim_deliveries("successor", 1, 30, clock())
        if fails:
            raise RuntimeError("boom")

    await storage.record_delivery(new_delivery("d-race"))
    worker = make_worker(storage, router, clock, heartbeat_seconds=3600, metrics=metrics)
    assert await worker.run_once() == 1
    held = await storage.get_delivery("d-race")
    assert held is not None and held.lease_owner == "successor"
    assert (held.status, held.last_error) == (DeliveryStatus.PROCESSING, None)
    assert metrics.lease_lost.labels(event="push")._value.get() == 1
    for counter in (metrics.processed, metrics.retried, metrics.failed):
        assert counter.labels(event="push")._value.get() == 0


async def test_default_heartbeat_is_a_third_of_the_lease(storage: Storage) -> None:
    worker = make_worker(storage, Router(), ManualClock(), lease_seconds=30)
    assert worker.heartbeat_seconds == 10


async def test_a_failed_renewal_does_not_stop_the_handler(
    storage: Storage, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A storage hiccup on a heartbeat proves nothing about the lease: the handler goes on,
    and the next heartbeat renews it."""
    clock = ManualClock()
    renewals: list[bool] = []
    renew = storage.renew_lease

    async def flaky_renew(delivery_id: str, worker_id: str, until: datetime) -> bool:
        if not renewals:
            renewals.append(False)
            raise ConnectionError("database restarting")
        renewals.append(await renew(delivery_id, worker_id, until))
        return renewals[-1]

    monkeypatch.setattr(storage, "renew_lease", flaky_renew)
    router = Router()

    @router.register("push")
    async def until_renewed(event: Event, context: Context) -> None:
        async with asyncio.timeout(5):
            while True not in renewals:
                await asyncio.sleep(0.01)

    await storage.record_delivery(new_delivery("d-hiccup"))
    worker = make_worker(storage, router, clock, heartbeat_seconds=0.01)
    assert await worker.run_once() == 1
    done = await storage.get_delivery("d-hiccup")
    assert done is not None and done.status is DeliveryStatus.DONE
    assert renewals[0] is False and True in renewals
    assert "could not renew the lease" in caplog.text


async def test_a_timeout_of_its_own_is_an_ordinary_failure(storage: Storage) -> None:
    """Only the worker's budget is reported as the maximum run time; a TimeoutError from the
    dispatch itself (say, storage not answering in time) is an ordinary failed attempt."""

    async def dispatch(delivery: Delivery) -> None:
        raise TimeoutError("storage did not answer in 5 s")

    await storage.record_delivery(new_delivery("d-own-timeout"))
    clock = ManualClock()
    worker = Worker(
        storage,
        dispatch,
        Metrics(),
        policy=POLICY,
        lease_seconds=30,
        poll_interval=0.01,
        clock=clock,
        max_run_seconds=30,
    )
    assert await worker.run_once() == 1
    failed = await storage.get_delivery("d-own-timeout")
    assert failed is not None and failed.status is DeliveryStatus.PENDING
    assert failed.last_error == "TimeoutError: storage did not answer in 5 s"

"""Workers: retries with backoff, parking, and crash-and-restart recovery.

Handler isolation (a retry runs only the handlers that failed) is tested in test_dispatch.py."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.intake.worker import RetryPolicy, Worker, next_attempt_at
from bot.storage.base import DeliveryStatus, Storage
from tests.support.delivery_helpers import T0, ManualClock, make_worker, new_delivery

# -- backoff schedule (pure) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [(1, 2.0), (2, 4.0), (3, 8.0), (4, 16.0), (5, None)],
)
def test_backoff_doubles_then_parks(attempts: int, expected: float | None) -> None:
    policy = RetryPolicy(max_attempts=5, base_seconds=2, max_seconds=300)
    result = next_attempt_at(policy, attempts, T0)
    if expected is None:
        assert result is None
    else:
        assert result == T0 + timedelta(seconds=expected)


def test_backoff_is_capped() -> None:
    policy = RetryPolicy(max_attempts=50, base_seconds=2, max_seconds=60)
    assert next_attempt_at(policy, 20, T0) == T0 + timedelta(seconds=60)


def test_single_attempt_policy_parks_at_once() -> None:
    assert next_attempt_at(RetryPolicy(max_attempts=1), 1, T0) is None


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

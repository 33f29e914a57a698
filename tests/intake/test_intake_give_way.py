"""Intake first (`bot/intake/worker.py`): while webhook requests are being answered, workers
give way before each claim, for a bounded time, and stopping the pool ends the wait.

The webhook handler's side, each request counted while it is answered, is in
test_intake_load.py."""

from __future__ import annotations

import asyncio

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.intake.worker import GIVE_WAY_SECONDS, IntakeLoad, WorkerPool, give_way_for
from bot.storage.base import DeliveryStatus, Storage
from tests.support.delivery_helpers import ManualClock, make_worker, new_delivery, until_status


@pytest.mark.parametrize(
    ("answering", "waited", "limit", "expected"),
    [
        (0, 0.0, 1.0, 0.0),  # nothing to give way to: claim now
        (0, 5.0, 1.0, 0.0),
        (1, 0.0, 1.0, 1.0),  # a request in progress: wait for it, up to the limit
        (32, 0.25, 1.0, 0.75),
        (3, 1.0, 1.0, 0.0),  # waited the limit: claim even though intake is busy
        (3, 7.0, 1.0, 0.0),
        (1, 0.0, 0.0, 0.0),  # no limit, no waiting
    ],
)
def test_give_way_for(answering: int, waited: float, limit: float, expected: float) -> None:
    assert give_way_for(answering, waited, limit) == pytest.approx(expected)


def test_by_default_a_worker_gives_way_for_at_most_a_second() -> None:
    assert IntakeLoad().limit == GIVE_WAY_SECONDS == 1.0


def test_requests_are_counted_while_answered_even_when_one_fails() -> None:
    load = IntakeLoad()
    with load.request():
        with pytest.raises(RuntimeError), load.request():
            assert load.answering == 2
            raise RuntimeError("refused")
        assert load.answering == 1
    assert load.answering == 0


def recording_router(seen: list[str]) -> Router:
    router = Router()

    @router.register("push")
    async def record(event: Event, context: Context) -> None:
        seen.append(context.delivery.delivery_id)

    return router


async def test_workers_claim_only_once_the_requests_in_progress_are_answered(
    storage: Storage,
) -> None:
    seen: list[str] = []
    load = IntakeLoad(limit=3600)  # far longer than this test: only the quiet lets them claim
    pool = WorkerPool(
        [make_worker(storage, recording_router(seen), ManualClock()) for _ in range(2)], load
    )
    await storage.record_delivery(new_delivery("g-1"))
    with load.request():
        pool.start()
        try:
            pool.notify()
            # Many turns of the loop, each a chance to claim; none is taken.
            for _ in range(50):
                await asyncio.sleep(0)
            stored = await storage.get_delivery("g-1")
            assert stored is not None and stored.status is DeliveryStatus.PENDING
            assert stored.attempts == 0
        except BaseException:
            await pool.close()
            raise
    try:
        await until_status(storage, "g-1")
    finally:
        await pool.close()
    assert seen == ["g-1"]


async def test_a_flood_without_end_still_has_its_deliveries_processed(storage: Storage) -> None:
    seen: list[str] = []
    load = IntakeLoad(limit=0.01)
    pool = WorkerPool([make_worker(storage, recording_router(seen), ManualClock())], load)
    for n in range(3):
        await storage.record_delivery(new_delivery(f"f-{n}"))
    with load.request():  # never answered while the workers run
        pool.start()
        try:
            for n in range(3):
                await until_status(storage, f"f-{n}")
        finally:
            await pool.close()
        assert load.answering == 1
    assert seen == ["f-0", "f-1", "f-2"]


async def test_stopping_the_pool_ends_the_wait_at_once(storage: Storage) -> None:
    load = IntakeLoad(limit=3600)
    pool = WorkerPool([make_worker(storage, recording_router([]), ManualClock())], load)
    with load.request():
        pool.start()
        await asyncio.sleep(0)
        # Without the stop ending the wait, close would wait out the hour; the timeout
        # turns that into a failure.
        async with asyncio.timeout(10):
            await pool.close(grace_seconds=3600)
        assert load.answering == 1


async def test_wake_ups_are_bounded_by_the_workers(storage: Storage) -> None:
    """One token per worker at most: during a burst every stored delivery notifies, and the
    wake-ups beyond one per worker add nothing."""
    workers = [make_worker(storage, recording_router([]), ManualClock()) for _ in range(3)]
    pool = WorkerPool(workers)
    for _ in range(10):
        pool.notify()
    assert pool.wake.qsize() == 3

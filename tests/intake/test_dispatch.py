"""The dispatcher (`bot/intake/dispatch.py`): one handler's failure neither stops the others
nor makes them act twice on a retry, and every failure is reported."""

from __future__ import annotations

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context, Dispatcher, HandlerFailures
from bot.storage.base import DeliveryStatus, Storage
from tests.support.delivery_helpers import ManualClock, make_worker, new_delivery


async def test_retry_runs_only_the_handlers_that_failed(storage: Storage) -> None:
    """One feature's failure neither stops the others nor makes them act twice."""
    clock = ManualClock()
    counts = {"good": 0, "flaky": 0}
    router = Router()

    @router.register("push")
    async def good(event: Event, context: Context) -> None:
        counts["good"] += 1

    @router.register("push")
    async def flaky(event: Event, context: Context) -> None:
        counts["flaky"] += 1
        if counts["flaky"] == 1:
            raise RuntimeError("transient")

    await storage.record_delivery(new_delivery("d-2"))
    worker = make_worker(storage, router, clock)
    await worker.run_once()
    assert counts == {"good": 1, "flaky": 1}
    clock.advance(10)
    await worker.run_once()
    assert counts == {"good": 1, "flaky": 2}
    done = await storage.get_delivery("d-2")
    assert done is not None and done.status is DeliveryStatus.DONE


async def test_dispatcher_reports_every_failure(storage: Storage) -> None:
    router = Router()

    @router.register("push")
    async def first(event: Event, context: Context) -> None:
        raise ValueError("one")

    @router.register("push")
    async def second(event: Event, context: Context) -> None:
        raise KeyError("two")

    await storage.record_delivery(new_delivery("d-3"))
    delivery = await storage.get_delivery("d-3")
    assert delivery is not None
    with pytest.raises(HandlerFailures) as raised:
        await Dispatcher(router, storage)(delivery)
    assert len(raised.value.failures) == 2

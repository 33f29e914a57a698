"""Deliveries on real storage for the intake tests: a stored event, a clock the test moves,
and a worker wired to a dispatcher with a short retry policy."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from gidgethub.routing import Router

from bot.intake.dispatch import Dispatcher
from bot.intake.worker import AttemptPolicy, Worker
from bot.metrics import Metrics
from bot.storage.base import DeliveryStatus, NewDelivery, Storage

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


async def until_status(
    store: Storage, delivery_id: str, status: DeliveryStatus = DeliveryStatus.DONE
) -> None:
    """Until the stored delivery reaches `status` (10 s at most): workers run in their own
    tasks, so tests wait for what they do, never for a fixed time."""
    async with asyncio.timeout(10):
        while True:
            stored = await store.get_delivery(delivery_id)
            if stored is not None and stored.status is status:
                return
            await asyncio.sleep(0.02)


class ManualClock:
    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def new_delivery(
    delivery_id: str,
    event: str = "push",
    *,
    installation_id: int = 1,
    repository: str = "octo/hello",
    received_at: datetime = T0,
    **payload: Any,
) -> NewDelivery:
    body = json.dumps({"action": None, **payload}).encode()
    return NewDelivery(delivery_id, event, None, installation_id, repository, body, received_at)


def make_worker(
    storage: Storage, router: Router, clock: Callable[[], datetime], **kwargs: Any
) -> Worker:
    policy = kwargs.pop("policy", AttemptPolicy(max_attempts=3, base_seconds=10, max_seconds=60))
    return Worker(
        storage,
        Dispatcher(router, storage, clock=clock),
        kwargs.pop("metrics", None) or Metrics(),
        policy=policy,
        lease_seconds=kwargs.pop("lease_seconds", 30.0),
        poll_interval=0.01,
        clock=clock,
        **kwargs,
    )

"""Delivery workers: claim stored deliveries, dispatch them, retry with backoff, park failures.

    storage --claim (lease)--> Worker --dispatch--> handlers (one router per feature)
        ^                        |
        +-- done / retry_at / failed (parked, never lost, never looping)

A worker that dies mid-delivery leaves its lease behind; when the lease expires another
worker (or this process after a restart) claims the delivery again. Each handler's success
is remembered per delivery, so a retried delivery does not repeat handlers that finished.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.metrics import Metrics
from bot.storage.base import Delivery, Storage

log = logging.getLogger(__name__)

Dispatch = Callable[[Delivery], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_attempts: int = 5
    base_seconds: float = 2.0
    max_seconds: float = 300.0


def next_attempt_at(policy: RetryPolicy, attempts: int, now: datetime) -> datetime | None:
    """When to try a delivery again after `attempts` failed tries; None parks it.

    Exponential (base * 2^(n-1)) and capped, so a broken handler costs a bounded number of
    tries spread over minutes rather than a tight loop."""
    if attempts >= policy.max_attempts:
        return None
    delay = min(policy.max_seconds, policy.base_seconds * (2 ** max(0, attempts - 1)))
    return now + timedelta(seconds=delay)


def describe_error(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text[:2000]


class Worker:
    """One claim-and-process loop. Several run concurrently per process."""

    def __init__(
        self,
        storage: Storage,
        dispatch: Dispatch,
        metrics: Metrics,
        *,
        policy: RetryPolicy,
        lease_seconds: float,
        poll_interval: float,
        worker_id: str | None = None,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.storage = storage
        self.dispatch = dispatch
        self.metrics = metrics
        self.policy = policy
        self.lease_seconds = lease_seconds
        self.poll_interval = poll_interval
        self.worker_id = worker_id or f"worker-{uuid.uuid4().hex[:12]}"
        self.clock = clock

    async def run_once(self) -> int:
        """Claim one delivery and process it; returns how many were claimed (0 or 1).

        One at a time: a lease starts at the claim, so deliveries claimed in a batch
        would age while their predecessors run."""
        claimed = await self.storage.claim_deliveries(
            self.worker_id, 1, self.lease_seconds, self.clock()
        )
        for delivery in claimed:
            await self.process(delivery)
        return len(claimed)

    async def process(self, delivery: Delivery) -> None:
        context = {
            "delivery_id": delivery.delivery_id,
            "event": delivery.event,
            "action": delivery.action,
            "installation": delivery.installation_id,
            "repository": delivery.repository,
            "attempt": delivery.attempts,
        }
        started = time.perf_counter()
        try:
            # Finish well inside the lease, so no other worker takes the delivery over
            # while this one is still acting on it.
            async with asyncio.timeout(self.lease_seconds * 0.9):
                await self.dispatch(delivery)
        except asyncio.CancelledError:
            # Shutdown: leave the lease to expire so the delivery is picked up again.
            raise
        except Exception as exc:
            retry_at = next_attempt_at(self.policy, delivery.attempts, self.clock())
            error = describe_error(exc)
            await self.storage.release_delivery(
                delivery.delivery_id, self.worker_id, error, retry_at, self.clock()
            )
            if retry_at is None:
                self.metrics.failed.labels(event=delivery.event).inc()
                log.error("delivery parked as failed: %s", error, exc_info=exc, extra=context)
            else:
                self.metrics.retried.labels(event=delivery.event).inc()
                log.warning(
                    "delivery failed, retry at %s: %s",
                    retry_at.isoformat(),
                    error,
                    exc_info=exc,
                    extra=context,
                )
            return
        await self.storage.complete_delivery(delivery.delivery_id, self.worker_id, self.clock())
        self.metrics.processed.labels(event=delivery.event).inc()
        self.metrics.processing_seconds.labels(event=delivery.event).observe(
            time.perf_counter() - started
        )
        log.debug("delivery processed", extra=context)

    async def run(self, stop: asyncio.Event, wake: asyncio.Queue[None]) -> None:
        """Loop until `stop` is set: drain due work, then sleep until woken or polled.

        Each stored delivery wakes one worker (a token in `wake`), not all of them: a
        herd of workers racing for one delivery costs every loser a storage round trip."""
        while not stop.is_set():
            try:
                claimed = await self.run_once()
            except asyncio.CancelledError:
                raise
            except Exception:
                # Storage hiccup: keep the loop alive; /healthz reports the store's state.
                log.exception("worker loop error", extra={"event": None})
                claimed = 0
            if claimed:
                continue
            try:
                async with asyncio.timeout(self.poll_interval):
                    await wake.get()
            except TimeoutError:
                pass


class WorkerPool:
    """Starts and stops N workers sharing one wake-up signal."""

    def __init__(self, workers: list[Worker]) -> None:
        self.workers = workers
        self.stop = asyncio.Event()
        # Bounded: once every worker has a token waiting, more wake-ups add nothing.
        self.wake: asyncio.Queue[None] = asyncio.Queue(maxsize=max(1, len(workers)))
        self._tasks: list[asyncio.Task[None]] = []

    def notify(self) -> None:
        with contextlib.suppress(asyncio.QueueFull):
            self.wake.put_nowait(None)

    def start(self) -> None:
        self.stop.clear()
        self._tasks = [
            asyncio.create_task(worker.run(self.stop, self.wake), name=worker.worker_id)
            for worker in self.workers
        ]

    async def close(self, grace_seconds: float = 10.0) -> None:
        self.stop.set()
        for _ in self.workers:
            self.notify()
        if not self._tasks:
            return
        _done, pending = await asyncio.wait(self._tasks, timeout=grace_seconds)
        for task in pending:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []

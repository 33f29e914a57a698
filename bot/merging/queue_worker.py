"""The merge queue's worker: claims due queue heads and runs their steps.

Event-driven: a handler that makes a head due (an approval, a GitHub event saying
something changed) rings the hub's doorbell and the worker claims at once. Otherwise it
sleeps until the earliest head is due (a step's own retry or precheck delay, or a lease
that runs out), never longer than the retry delay, so work another replica left behind
is found too. An event that lands while a head is being stepped is kept by storage, and
the step's settle leaves that head due at once: a round that claimed anything is
followed by another claim straight away. Claims are leases in storage: several replicas
share the queues, one merge in flight per queue. A queue that asks for batches
(`merge.batch_size` or `merge.parallel_checks` above 1) is stepped as a whole by the
worker holding its head (`batch_driver`).

`merge_queue_ctx` is the aiohttp cleanup context the app installs; a second one on the
same hub (installed twice) starts nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import AsyncIterator, Callable
from datetime import datetime

from aiohttp import web

from bot.github.client import RateLimited
from bot.lifetime import CleanupContext
from bot.merging.batch_driver import run_batch_step, wants_batches
from bot.merging.driver import run_step
from bot.services import ServiceHub
from bot.settings.merge import MergeSettings, default_merge_settings
from bot.storage.base import MergeEntry, MergeSettle, MergeStatus, Storage

log = logging.getLogger(__name__)

# Heads of different queues are worked on at once, up to this many per claim.
CLAIM_BATCH = 8
# While the app has no services yet (setup mode), look again this often.
IDLE_SECONDS = 5.0


def new_worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class MergeQueueWorker:
    def __init__(
        self,
        storage: Storage,
        hub: ServiceHub,
        clock: Callable[[], datetime],
        worker_id: str | None = None,
    ) -> None:
        self.storage = storage
        self.hub = hub
        self.clock = clock
        self.worker_id = worker_id or new_worker_id()

    @property
    def settings(self) -> MergeSettings:
        return self.hub.services.merge if self.hub.ready else default_merge_settings()

    async def run_once(self) -> int:
        """Claim the due heads and step each; returns how many were claimed."""
        if not self.hub.ready:
            return 0
        claimed = await self.storage.claim_merge_heads(
            self.worker_id, CLAIM_BATCH, self.settings.claim_ttl_seconds, self.clock()
        )
        if claimed:
            await asyncio.gather(*(self.step(entry) for entry in claimed))
        return len(claimed)

    async def step(self, entry: MergeEntry) -> None:
        try:
            if wants_batches(entry) or await self._has_batches(entry):
                await run_batch_step(entry, self.hub, self.storage, self.clock, self.worker_id)
            else:
                await run_step(entry, self.hub.services, self.storage, self.clock, self.worker_id)
        except Exception as exc:  # one entry's failure must not stop the loop
            until = self.clock() + self.settings.retry_delay
            if isinstance(exc, RateLimited):
                until = max(until, exc.reset_at)
            else:
                log.warning(
                    "merge queue step of %s#%s failed: %s",
                    entry.repository,
                    entry.pull_number,
                    exc,
                    exc_info=exc,
                )
            # Not the pull request's fault: waits without spending an attempt.
            settle = MergeSettle(
                MergeStatus.PENDING,
                f"step failed ({type(exc).__name__}); tried again later",
                f"merge queue ({self.worker_id})",
                next_attempt_at=until,
            )
            await self.storage.settle_merge(entry.id, self.worker_id, settle, self.clock())

    async def _has_batches(self, entry: MergeEntry) -> bool:
        """Batches in flight although the head asks for none (the setting was lowered):
        the batch step ends them before the queue goes on one at a time."""
        return bool(await self.storage.merge_batches(entry.repository, entry.base_branch))

    async def seconds_to_wait(self) -> float:
        cap = self.settings.merge_queue_retry_delay_ms / 1000 if self.hub.ready else IDLE_SECONDS
        due = await self.storage.next_merge_due()
        if due is None:
            return max(cap, 0.05)
        return min(max((due - self.clock()).total_seconds(), 0.0), max(cap, 0.05))

    async def run_forever(self) -> None:
        doorbell = self.hub.merge_doorbell
        while True:
            try:
                if await self.run_once():
                    continue
                wait = await self.seconds_to_wait()
            except Exception:  # storage hiccups: log and keep the loop alive
                log.exception("merge queue worker: claim failed; trying again")
                wait = IDLE_SECONDS
            await doorbell.wait(wait)


def merge_queue_ctx(
    storage: Storage,
    hub: ServiceHub,
    clock: Callable[[], datetime],
    *,
    enabled: bool = True,
) -> CleanupContext:
    """The worker for the app's lifetime (`app.cleanup_ctx.append(merge_queue_ctx(...))`,
    after the services context)."""

    async def merge_queue(app: web.Application) -> AsyncIterator[None]:
        doorbell = hub.merge_doorbell
        if not enabled or doorbell.listening:
            yield
            return
        doorbell.listening = True
        worker = MergeQueueWorker(storage, hub, clock)
        task = asyncio.create_task(worker.run_forever())
        try:
            yield
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            doorbell.listening = False

    return merge_queue

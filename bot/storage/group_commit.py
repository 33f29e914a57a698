"""Group commit: callers that arrive together share one transaction, each with its own answer.

Both backends record webhook deliveries through `GroupCommit`: every commit has a cost of
its own (on PostgreSQL, a WAL flush to disk), so one commit per delivery would cap how
many webhooks a second are acknowledged. Items submitted in the same turn of the event
loop go to `commit` together; each caller returns only after the commit that holds its
item, with its own result.

A shared commit must never fail because of someone else's item: the backends refuse
what their tables cannot hold before submitting, and if a batch fails anyway its items
are committed one by one, so only the item at fault fails its caller. Except for an
error the backend names as the store's own (`outage`: unreachable, locked, full): that is
no item's fault, and retrying each item in turn would keep the last caller of a batch
waiting for as many failures as there are items, so every caller gets it at once. A
caller that is cancelled only stops waiting: its item is still committed, and the
others' answers are unaffected.

With `max_in_flight`, at most that many commits run at once; items arriving meanwhile
wait together for the next free slot, so under load the batches grow instead of the
number of transactions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

Item = TypeVar("Item")
Result = TypeVar("Result")

# Results in the order of the items given; raises if the transaction was rolled back.
CommitBatch = Callable[[Sequence[Item]], Awaitable[Sequence[Result]]]


def _settle(waiter: asyncio.Future[Result], outcome: Result | Exception) -> None:
    if waiter.done():  # the caller gave up (cancelled request)
        return
    if isinstance(outcome, Exception):
        waiter.set_exception(outcome)
    else:
        waiter.set_result(outcome)


class GroupCommit(Generic[Item, Result]):
    """Batches `submit` calls into calls of `commit`, one transaction per call."""

    def __init__(
        self,
        commit: CommitBatch[Item, Result],
        *,
        max_in_flight: int | None = None,
        outage: tuple[type[Exception], ...] = (),
    ) -> None:
        if max_in_flight is not None and max_in_flight < 1:
            raise ValueError(f"max_in_flight must be at least 1, got {max_in_flight}")
        self._commit = commit
        self._outage = outage
        self._slots = None if max_in_flight is None else asyncio.Semaphore(max_in_flight)
        self._arrivals: list[tuple[Item, asyncio.Future[Result]]] = []
        self._flush_pending = False
        # The event loop keeps only weak references to tasks: a flush must not be collected
        # while callers wait on it.
        self._flushes: set[asyncio.Task[None]] = set()

    async def submit(self, item: Item) -> Result:
        """`item`'s result, once the transaction holding it has committed."""
        waiter: asyncio.Future[Result] = asyncio.get_running_loop().create_future()
        self._arrivals.append((item, waiter))
        if not self._flush_pending:
            # Runs on the next loop turn, after every caller of this turn has joined.
            self._flush_pending = True
            flush = asyncio.create_task(self._flush())
            self._flushes.add(flush)
            flush.add_done_callback(self._flushes.discard)
        return await waiter

    async def _flush(self) -> None:
        batch: list[tuple[Item, asyncio.Future[Result]]] | None = None
        try:
            async with self._slots if self._slots is not None else contextlib.nullcontext():
                # Taken once a slot is free: whoever arrived while waiting joins this batch.
                batch, self._arrivals, self._flush_pending = self._arrivals, [], False
                await self._commit_batch(batch)
        except BaseException:
            # Cancelled (the loop is shutting down): nobody is left to answer these callers.
            # Not yet holding a batch, this flush was the one pending: the arrivals waiting
            # for it are its own. Holding one, the arrivals are a later flush's to take.
            if batch is None:
                batch, self._arrivals, self._flush_pending = self._arrivals, [], False
            for _, waiter in batch:
                waiter.cancel()
            raise

    async def _commit_batch(self, batch: list[tuple[Item, asyncio.Future[Result]]]) -> None:
        try:
            results = await self._commit([item for item, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to the callers, see below
            if len(batch) == 1 or isinstance(exc, self._outage):
                for _, waiter in batch:
                    _settle(waiter, exc)
                return
            # The batch was rolled back whole, and not for an outage: a commit per item finds
            # the item at fault and gives each caller its own answer.
            outage: Exception | None = None
            for item, waiter in batch:
                if outage is not None:
                    _settle(waiter, outage)
                    continue
                try:
                    [result] = await self._commit([item])
                except Exception as item_exc:  # noqa: BLE001 - this caller's own failure
                    _settle(waiter, item_exc)
                    if isinstance(item_exc, self._outage):
                        outage = item_exc  # the store failed meanwhile: the rest fail with it
                else:
                    _settle(waiter, result)
            return
        for (_, waiter), result in zip(batch, results, strict=True):
            _settle(waiter, result)

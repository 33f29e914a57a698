"""`GroupCommit` on its own, with a recording fake for the transaction: who shares a batch,
what each caller is answered when a batch fails, and what cancellation does and does not
undo. The backends' use of it is tested on real databases (`test_postgres_intake_batches`,
`test_sqlite_delivery_bodies`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from bot.storage.group_commit import GroupCommit


class Refused(Exception):
    """What the fake transaction raises for an item it cannot hold."""


class StoreDown(Exception):
    """What the fake transaction raises while the store is down (an outage)."""


class FakeTransactions:
    """Doubles each item; any batch holding a negative item fails whole. With `gate`
    cleared, a commit waits for it, so that arrivals meanwhile can be made. From the
    commit numbered `down_from` on (0 is the first), every commit fails with StoreDown."""

    def __init__(self) -> None:
        self.down_from: int | None = None
        self.batches: list[list[int]] = []
        self.committed: list[int] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.gate = asyncio.Event()
        self.gate.set()

    async def commit(self, items: Sequence[int]) -> list[int]:
        self.batches.append(list(items))
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.gate.wait()
        finally:
            self.in_flight -= 1
        if self.down_from is not None and len(self.batches) > self.down_from:
            raise StoreDown("the store is down")
        if any(item < 0 for item in items):
            raise Refused(f"refused {[item for item in items if item < 0]}")
        self.committed.extend(items)
        return [item * 2 for item in items]


async def turns(count: int) -> None:
    for _ in range(count):
        await asyncio.sleep(0)


async def test_callers_of_one_loop_turn_share_one_commit() -> None:
    fake = FakeTransactions()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    assert await asyncio.gather(*(batcher.submit(n) for n in range(5))) == [0, 2, 4, 6, 8]
    assert fake.batches == [[0, 1, 2, 3, 4]]
    assert await batcher.submit(7) == 14
    assert fake.batches[1:] == [[7]]


async def test_without_a_limit_each_turn_commits_at_once() -> None:
    """The SQLite store's behaviour: a batch per loop turn, however many are in flight."""
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    first = asyncio.gather(batcher.submit(1), batcher.submit(2))
    await turns(3)
    second = asyncio.gather(batcher.submit(3))
    await turns(3)
    assert fake.batches == [[1, 2], [3]] and fake.in_flight == 2
    fake.gate.set()
    assert (list(await first), list(await second)) == ([2, 4], [6])


async def test_with_a_limit_arrivals_wait_together_for_a_free_slot() -> None:
    """One commit in flight: whoever arrives meanwhile, over several loop turns, goes in the
    next batch, together."""
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, max_in_flight=1)
    first = asyncio.create_task(batcher.submit(1))
    await turns(3)
    later = []
    for n in (2, 3, 4):
        later.append(asyncio.create_task(batcher.submit(n)))
        await turns(2)
    assert fake.batches == [[1]]
    fake.gate.set()
    assert await first == 2
    assert await asyncio.gather(*later) == [4, 6, 8]
    assert fake.batches == [[1], [2, 3, 4]]
    assert fake.most_in_flight == 1


async def test_a_failed_batch_is_retried_item_by_item() -> None:
    """Only the refused item's caller gets the error; the others' items are committed, each
    in a transaction of its own."""
    fake = FakeTransactions()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, max_in_flight=2)
    results = await asyncio.gather(
        batcher.submit(1), batcher.submit(-2), batcher.submit(3), return_exceptions=True
    )
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], Refused)
    assert fake.batches == [[1, -2, 3], [1], [-2], [3]]
    assert fake.committed == [1, 3]


async def test_a_failed_lone_item_is_not_tried_again() -> None:
    fake = FakeTransactions()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    with pytest.raises(Refused):
        await batcher.submit(-1)
    assert fake.batches == [[-1]]


async def test_a_cancelled_caller_stops_waiting_and_its_item_is_still_committed() -> None:
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    callers = [asyncio.create_task(batcher.submit(n)) for n in (1, 2, 3)]
    await turns(3)
    callers[1].cancel()
    fake.gate.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert results[0] == 2 and results[2] == 6
    assert isinstance(results[1], asyncio.CancelledError)
    assert fake.committed == [1, 2, 3]


async def test_a_cancelled_caller_in_a_failed_batch_leaves_the_retries_alone() -> None:
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    callers = [asyncio.create_task(batcher.submit(n)) for n in (1, -2, 3)]
    await turns(3)
    callers[0].cancel()
    fake.gate.set()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert isinstance(results[0], asyncio.CancelledError)
    assert isinstance(results[1], Refused)
    assert results[2] == 6
    assert fake.committed == [1, 3]


async def test_a_cancelled_commit_cancels_its_callers_instead_of_leaving_them_waiting() -> None:
    """When the loop shuts down mid-commit, the callers are not left hanging."""
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit)
    callers = [asyncio.create_task(batcher.submit(n)) for n in (1, 2)]
    await turns(3)
    [flush] = batcher._flushes
    flush.cancel()
    await turns(3)
    assert all(caller.done() for caller in callers)
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert all(isinstance(result, asyncio.CancelledError) for result in results)
    fake.gate.set()
    assert await batcher.submit(5) == 10


async def test_a_flush_cancelled_while_waiting_for_a_slot_cancels_its_callers() -> None:
    """Its callers are not left waiting, and later arrivals still get a flush of their own."""
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, max_in_flight=1)
    running = asyncio.create_task(batcher.submit(1))
    await turns(3)
    committing = set(batcher._flushes)
    waiting = [asyncio.create_task(batcher.submit(n)) for n in (2, 3)]
    await turns(3)
    [queued] = batcher._flushes - committing
    queued.cancel()
    await turns(3)
    assert all(caller.done() for caller in waiting)
    results = await asyncio.gather(*waiting, return_exceptions=True)
    assert all(isinstance(result, asyncio.CancelledError) for result in results)
    fake.gate.set()
    assert await running == 2
    assert await batcher.submit(4) == 8
    assert fake.batches == [[1], [4]]


async def test_an_outage_fails_every_caller_of_the_batch_at_once() -> None:
    """Retried item by item, each would wait out its own failure in turn."""
    fake = FakeTransactions()
    fake.down_from = 0
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, outage=(StoreDown,))
    results = await asyncio.gather(*(batcher.submit(n) for n in range(5)), return_exceptions=True)
    assert all(isinstance(result, StoreDown) for result in results)
    assert fake.batches == [[0, 1, 2, 3, 4]]


async def test_an_outage_during_the_retries_fails_the_rest_without_trying_them() -> None:
    fake = FakeTransactions()
    fake.down_from = 2  # the batch fails for its bad item, the first retry commits
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, outage=(StoreDown,))
    results = await asyncio.gather(
        *(batcher.submit(n) for n in (1, 2, -3, 4)), return_exceptions=True
    )
    assert results[0] == 2
    assert all(isinstance(result, StoreDown) for result in results[1:])
    assert fake.batches == [[1, 2, -3, 4], [1], [2]]


async def test_a_commit_cancelled_with_another_queued_leaves_the_queued_callers_alone() -> None:
    fake = FakeTransactions()
    fake.gate.clear()
    batcher: GroupCommit[int, int] = GroupCommit(fake.commit, max_in_flight=1)
    committing_caller = asyncio.create_task(batcher.submit(1))
    await turns(3)
    [committing] = batcher._flushes
    queued_callers = [asyncio.create_task(batcher.submit(n)) for n in (2, 3)]
    await turns(3)
    committing.cancel()
    await turns(3)
    # The cancelled commit's own caller is answered (cancelled), not left waiting ...
    assert committing_caller.done() and committing_caller.cancelled()
    fake.gate.set()
    # ... and the callers queued behind it are committed by their own flush.
    assert await asyncio.gather(*queued_callers) == [4, 6]
    assert fake.batches == [[1], [2, 3]]


def test_max_in_flight_must_allow_a_commit() -> None:
    async def commit(items: Sequence[int]) -> list[int]:
        return list(items)

    with pytest.raises(ValueError, match="at least 1"):
        GroupCommit(commit, max_in_flight=0)

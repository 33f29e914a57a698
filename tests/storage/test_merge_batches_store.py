"""The App's queue's batches in storage, on SQLite and PostgreSQL: written only under the
lease on the queue's head, marked on their members' entries, ended as history."""

from __future__ import annotations

from datetime import timedelta

from bot.storage.base import (
    BatchFailure,
    BatchState,
    BatchUpdate,
    CheckResult,
    MergeSettle,
    MergeStatus,
    NewMergeBatch,
    QueueLease,
    Storage,
)
from tests.storage.test_merge_queue_store import NOW, REPO, enqueue


def new_batch(*numbers: int, review: tuple[str, ...] = ()) -> NewMergeBatch:
    members = tuple((number, f"{number:040x}") for number in numbers)
    return NewMergeBatch(REPO, "main", members, "b" * 40, review, None)


async def _lease(storage: Storage, worker: str = "w1") -> QueueLease:
    [head] = await storage.claim_merge_heads(worker, 10, 60, NOW)
    return QueueLease(head.id, worker)


async def test_a_batch_is_opened_marked_and_ended(storage: Storage) -> None:
    await enqueue(storage, 1, 2, 3)
    lease = await _lease(storage)
    batch = await storage.open_merge_batch(new_batch(1, 2), lease, NOW)
    assert batch is not None
    assert (batch.state, batch.ci, batch.review) == (
        BatchState.BUILDING,
        CheckResult.PENDING,
        CheckResult.PASSED,
    )
    assert batch.members == ((1, f"{1:040x}"), (2, f"{2:040x}")) and batch.numbers == (1, 2)
    assert [e.batch for e in await storage.merge_queue(REPO, "main")] == [batch.id] * 2 + [None]
    later = NOW + timedelta(seconds=1)
    failure = BatchFailure("ci", "https://ci.example/1", ("a.py",))
    update = BatchUpdate(BatchState.TESTING, "c" * 40, CheckResult.FAILED, None, failure, "red")
    assert await storage.update_merge_batch(batch.id, update, lease, later)
    [stored] = await storage.merge_batches(REPO, "main")
    assert (stored.tip, stored.ci, stored.failure, stored.reason) == (
        "c" * 40,
        CheckResult.FAILED,
        failure,
        "red",
    )
    assert stored.updated_at == later and stored.created_at == NOW
    assert await storage.update_merge_batch(
        batch.id, BatchUpdate(BatchState.DISCARDED), lease, later
    )
    assert await storage.merge_batches(REPO, "main") == []
    assert [e.batch for e in await storage.merge_queue(REPO, "main")] == [None] * 3
    # An ended batch is history: nothing changes it.
    assert not await storage.update_merge_batch(batch.id, BatchUpdate(tip="d" * 40), lease, later)


async def test_a_batch_with_files_to_re_read_waits_for_the_judges(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    batch = await storage.open_merge_batch(
        new_batch(1, 2, review=("x.py",)), await _lease(storage), NOW
    )
    assert batch is not None and batch.review is CheckResult.PENDING
    assert batch.review_files == ("x.py",) and batch.failure is None


async def test_only_the_head_lease_holder_writes_batches(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    lease = await _lease(storage)
    assert (
        await storage.open_merge_batch(new_batch(1), QueueLease(lease.head_id, "w2"), NOW) is None
    )
    batch = await storage.open_merge_batch(new_batch(1), lease, NOW)
    assert batch is not None
    # The lease ran out: another replica reclaims the head, the first one writes nothing.
    expired = NOW + timedelta(seconds=61)
    assert not await storage.update_merge_batch(batch.id, BatchUpdate(tip="c" * 40), lease, expired)
    [head] = await storage.claim_merge_heads("w2", 10, 60, expired)
    assert await storage.update_merge_batch(
        batch.id, BatchUpdate(tip="c" * 40), QueueLease(head.id, "w2"), expired
    )
    settle = MergeSettle(MergeStatus.PENDING, "wait", "w2", next_attempt_at=expired)
    assert await storage.settle_merge(head.id, "w2", settle, expired)
    assert not await storage.update_merge_batch(
        batch.id, BatchUpdate(tip="d" * 40), QueueLease(head.id, "w2"), expired
    )
    assert await storage.open_merge_batch(new_batch(2), QueueLease(head.id, "w2"), expired) is None

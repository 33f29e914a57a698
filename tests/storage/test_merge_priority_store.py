"""Priority in the merge queues, on SQLite and PostgreSQL: it orders the waiting entries
(urgent, high, normal, then the oldest), never displaces the entry being worked on, is
recorded with who and when, and survives its migration running again."""

from __future__ import annotations

from datetime import timedelta

from bot.storage.base import MergePriority, MergeSettle, MergeStatus, Storage
from bot.storage.postgres import PostgresStorage
from bot.storage.sqlite import SqliteStorage
from tests.storage.test_merge_queue_store import NOW, REPO, enqueue
from tests.support.storage_fixtures import StorageBackend

LATER = NOW + timedelta(minutes=5)


async def numbers(storage: Storage) -> list[int]:
    return [entry.pull_number for entry in await storage.merge_queue(REPO, "main")]


async def test_priority_orders_the_queue_and_its_head(storage: Storage) -> None:
    await enqueue(storage, 1, 2, 3, 4)
    high = await storage.set_merge_priority(
        REPO, 3, MergePriority.HIGH, actor="maintainer", now=LATER
    )
    assert high is not None
    assert (high.priority, high.priority_by, high.priority_at) == (
        MergePriority.HIGH,
        "maintainer",
        LATER,
    )
    await storage.set_merge_priority(REPO, 4, MergePriority.URGENT, actor="lead", now=LATER)
    assert await numbers(storage) == [4, 3, 1, 2]
    [head] = await storage.claim_merge_heads("w1", 10, 60, LATER)
    assert head.pull_number == 4
    [active] = [e for e in await storage.list_active_merges() if e.pull_number == 1]
    assert active.priority is MergePriority.NORMAL and active.priority_by is None


async def test_a_claimed_head_stays_the_head_whatever_comes_first_later(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    await storage.set_merge_priority(REPO, 2, MergePriority.URGENT, actor="lead", now=NOW)
    assert await storage.claim_merge_heads("w2", 10, 60, NOW) == []
    assert await numbers(storage) == [1, 2]
    settle = MergeSettle(MergeStatus.MERGED, "merged", "w1")
    assert await storage.settle_merge(head.id, "w1", settle, NOW)
    [urgent] = await storage.claim_merge_heads("w2", 10, 60, NOW)
    assert urgent.pull_number == 2


async def test_back_to_normal_restores_queue_order(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    await storage.set_merge_priority(REPO, 2, MergePriority.HIGH, actor="lead", now=NOW)
    await storage.set_merge_priority(REPO, 2, MergePriority.NORMAL, actor="lead", now=LATER)
    assert await numbers(storage) == [1, 2]


async def test_priority_is_recorded_as_a_transition(storage: Storage) -> None:
    await enqueue(storage, 1)
    await storage.set_merge_priority(REPO, 1, MergePriority.URGENT, actor="lead", now=LATER)
    last = (await storage.list_merge_events(REPO, 1))[-1]
    assert (last.from_status, last.to_status) == (MergeStatus.PENDING, MergeStatus.PENDING)
    assert (last.actor, last.reason, last.at) == ("lead", "priority urgent, set by @lead", LATER)


async def test_no_active_entry_no_priority(storage: Storage) -> None:
    assert await storage.set_merge_priority(REPO, 9, MergePriority.HIGH, actor="x", now=NOW) is None


async def test_the_priority_migration_runs_again_over_its_own_work(
    storage_backend: StorageBackend,
) -> None:
    store = await storage_backend.opened()
    await enqueue(store, 1)
    await store.set_merge_priority(REPO, 1, MergePriority.HIGH, actor="lead", now=NOW)
    version = 7 if isinstance(store, PostgresStorage) else 8
    sql = f"DELETE FROM schema_version WHERE version = {version}"
    if isinstance(store, PostgresStorage):
        await store._db.execute(sql)
    else:
        assert isinstance(store, SqliteStorage)
        await store._execute(sql)
    reopened = await storage_backend.opened()
    entry = await reopened.active_merge(REPO, 1)
    assert entry is not None and entry.priority is MergePriority.HIGH


def test_ranks_round_trip_and_out_of_range_ranks_clamp() -> None:
    for priority in MergePriority:
        assert MergePriority.of_rank(priority.rank) is priority
    assert MergePriority.of_rank(-1) is MergePriority.NORMAL
    assert MergePriority.of_rank(7) is MergePriority.URGENT

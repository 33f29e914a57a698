"""The merge queues in storage, the same tests on SQLite and PostgreSQL: order, head-only
claims, leases, settling, leaving, nudges and the recorded transitions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

from bot.storage.base import MergeSettle, MergeStatus, NewMergeEntry, Storage
from tests.support.storage_fixtures import StorageBackend

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
REPO = "octo/hello"


def new(number: int, *, base: str = "main", sha: str | None = None) -> NewMergeEntry:
    return NewMergeEntry(
        repository=REPO,
        base_branch=base,
        pull_number=number,
        installation_id=1,
        judged_sha=sha or f"{number:040x}",
        method="squash",
        options={"hold_label": "judge:hold", "delete_branch": True},
    )


async def enqueue(storage: Storage, *numbers: int, base: str = "main") -> None:
    for number in numbers:
        await storage.enqueue_merge(
            new(number, base=base), actor="judge", reason="accepted", now=NOW
        )


async def test_entries_queue_in_order_and_only_heads_are_claimed(storage: Storage) -> None:
    await enqueue(storage, 1, 2, 3)
    await enqueue(storage, 9, base="dev")
    queue = await storage.merge_queue(REPO, "main")
    assert [e.pull_number for e in queue] == [1, 2, 3]
    assert queue[0].options == {"hold_label": "judge:hold", "delete_branch": True}
    claimed = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert sorted(e.pull_number for e in claimed) == [1, 9]
    assert all(e.status is MergeStatus.PROCESSING and e.lease_owner == "w1" for e in claimed)
    assert await storage.claim_merge_heads("w2", 10, 60, NOW) == []


async def test_a_waiting_head_holds_its_queue(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    later = NOW + timedelta(seconds=30)
    wait = MergeSettle(MergeStatus.PENDING, "checks", "w1", next_attempt_at=later, attempts=1)
    assert await storage.settle_merge(head.id, "w1", wait, NOW)
    assert await storage.claim_merge_heads("w1", 10, 60, NOW) == []
    assert await storage.next_merge_due() == later
    [again] = await storage.claim_merge_heads("w1", 10, 60, later)
    assert (again.pull_number, again.attempts) == (1, 1)


async def test_nudge_makes_the_head_due_now(storage: Storage) -> None:
    await enqueue(storage, 1)
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    wait = MergeSettle(
        MergeStatus.PENDING, "checks", "w1", next_attempt_at=NOW + timedelta(hours=1)
    )
    await storage.settle_merge(head.id, "w1", wait, NOW)
    assert await storage.nudge_merge_queue("other/repo", NOW) == 0
    assert await storage.nudge_merge_queue(REPO, NOW, pull_number=2) == 0
    assert await storage.nudge_merge_queue(REPO, NOW, pull_number=1) == 1
    [claimed] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert claimed.nudged
    done = MergeSettle(MergeStatus.MERGED, "merged", "w1")
    assert await storage.settle_merge(claimed.id, "w1", done, NOW)
    assert await storage.active_merge(REPO, 1) is None
    assert await storage.next_merge_due() is None


async def test_expired_lease_is_reclaimed_and_the_old_worker_cannot_settle(
    storage: Storage,
) -> None:
    await enqueue(storage, 1)
    [first] = await storage.claim_merge_heads("w1", 1, 10, NOW)
    assert await storage.next_merge_due() == NOW + timedelta(seconds=10)
    assert await storage.claim_merge_heads("w2", 1, 10, NOW + timedelta(seconds=5)) == []
    [second] = await storage.claim_merge_heads("w2", 1, 10, NOW + timedelta(seconds=11))
    assert second.id == first.id and second.lease_owner == "w2"
    merged = MergeSettle(MergeStatus.MERGED, "merged", "w1")
    assert not await storage.settle_merge(first.id, "w1", merged, NOW)
    assert await storage.settle_merge(first.id, "w2", merged, NOW)
    events = await storage.list_merge_events(REPO, 1)
    assert [(e.from_status, e.to_status, e.actor) for e in events] == [
        (None, MergeStatus.PENDING, "judge"),
        (MergeStatus.PENDING, MergeStatus.PROCESSING, "w1"),
        (MergeStatus.PROCESSING, MergeStatus.PROCESSING, "w2"),
        (MergeStatus.PROCESSING, MergeStatus.MERGED, "w1"),
    ]
    assert events[2].reason == "lease expired: reclaimed"


async def test_reapproval_keeps_the_place_and_bumps_the_judgment(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    [head] = await storage.claim_merge_heads("w1", 1, 60, NOW)
    updating = MergeSettle(
        MergeStatus.PENDING, "updated", "w1", updating_from=head.judged_sha, clear_judgment=True
    )
    assert await storage.settle_merge(head.id, "w1", updating, NOW)
    waiting = await storage.active_merge(REPO, 1)
    assert waiting is not None and waiting.judged_sha is None
    assert waiting.updating_from == head.judged_sha
    again = await storage.enqueue_merge(new(1, sha="f" * 40), actor="judge", reason="ok", now=NOW)
    assert (again.id, again.judged_sha, again.judgment_version) == (head.id, "f" * 40, 2)
    assert again.updating_from is None and again.status is MergeStatus.PENDING
    assert [e.pull_number for e in await storage.merge_queue(REPO, "main")] == [1, 2]


async def test_leaving_ends_the_active_entry_only(storage: Storage) -> None:
    await enqueue(storage, 1, 2)
    left = await storage.leave_merge_queue(
        REPO, 1, status=MergeStatus.DROPPED, actor="octocat", reason="closed", now=NOW
    )
    assert left is not None and left.status is MergeStatus.DROPPED
    assert (
        await storage.leave_merge_queue(
            REPO, 1, status=MergeStatus.DROPPED, actor="octocat", reason="again", now=NOW
        )
        is None
    )
    await enqueue(storage, 1)
    assert [e.pull_number for e in await storage.merge_queue(REPO, "main")] == [2, 1]
    everything = await storage.list_merge_events(REPO)
    assert [e.pull_number for e in everything] == [1, 2, 1, 1]


async def test_replicas_racing_claim_each_head_once(storage_backend: StorageBackend) -> None:
    """Several stores on one database (replicas) claim at the same moment."""
    stores = [await storage_backend.opened() for _ in range(3)]
    await enqueue(stores[0], 1, 2)
    for base in ("a", "b", "c", "d"):
        await enqueue(stores[0], 10 + ord(base), base=base)
    results = await asyncio.gather(
        *(store.claim_merge_heads(f"w{i}", 10, 60, NOW) for i, store in enumerate(stores))
    )
    claimed = [entry.pull_number for result in results for entry in result]
    assert sorted(claimed) == [1, 107, 108, 109, 110]

"""The merge queues in storage, the same tests on SQLite and PostgreSQL: order, head-only
claims, leases, settling, leaving, nudges (also one that lands while a head is being
stepped) and the recorded transitions."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest

from bot.storage.base import MergeOptions, MergeSettle, MergeStatus, NewMergeEntry, Storage
from bot.storage.postgres import PostgresStorage
from bot.storage.sql import Sql, SqlStore
from bot.storage.sqlite import SqliteStorage
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
        options=MergeOptions(hold_label="judge:hold", delete_branch=True),
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
    assert queue[0].options == MergeOptions(hold_label="judge:hold", delete_branch=True)
    claimed = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert sorted(e.pull_number for e in claimed) == [1, 9]
    assert all(e.status is MergeStatus.PROCESSING and e.lease_owner == "w1" for e in claimed)
    assert await storage.claim_merge_heads("w2", 10, 60, NOW) == []


SET_OPTIONS = Sql("UPDATE merge_queue SET options = :options WHERE pull_number = :number")


@pytest.mark.parametrize(
    ("stored", "expected"),
    [
        # as the first merge queue wrote them, before batches
        (
            '{"label": "automerge", "hold_label": "judge:hold", "delete_branch": true}',
            MergeOptions("automerge", "judge:hold", True),
        ),
        ("{}", MergeOptions()),
        # a newer version's key is ignored, the rest still read
        (
            '{"hold_label": "hold", "batch_size": 3, "merge_train": {"cars": 2}}',
            MergeOptions(hold_label="hold", batch_size=3),
        ),
    ],
)
async def test_options_stored_by_other_versions_load(
    storage: Storage, stored: str, expected: MergeOptions
) -> None:
    await enqueue(storage, 1)
    assert isinstance(storage, SqlStore)
    assert await storage._sql.run(SET_OPTIONS, options=stored, number=1) == 1
    [entry] = await storage.merge_queue(REPO, "main")
    assert entry.options == expected
    [claimed] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert claimed.options == expected


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


HOUR = timedelta(hours=1)
STEPPED = NOW + timedelta(seconds=5)


def waits(until: datetime, attempts: int = 1) -> MergeSettle:
    return MergeSettle(
        MergeStatus.PENDING, "checks", "w1", next_attempt_at=until, attempts=attempts
    )


async def head_after_settle(storage: Storage, *nudges: datetime) -> tuple[datetime, bool]:
    """Claim pull request 1 at NOW, nudge at each time given, settle it waiting for an hour
    at STEPPED: when it is due next, and whether its next step counts as nudged."""
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    for at in nudges:
        assert await storage.nudge_merge_queue(REPO, at, pull_number=1) == 1
    assert await storage.settle_merge(head.id, "w1", waits(NOW + HOUR), STEPPED)
    entry = await storage.active_merge(REPO, 1)
    assert entry is not None and entry.status is MergeStatus.PENDING
    return entry.next_attempt_at, entry.nudged


async def test_a_nudge_during_the_step_makes_the_wait_end_at_once(storage: Storage) -> None:
    """GitHub said something changed after the step read the pull request: the entry is
    due when settled, and its next step is a nudged one (a wait there spends no attempt)."""
    await enqueue(storage, 1)
    due, nudged = await head_after_settle(storage, NOW + timedelta(seconds=2))
    assert (due, nudged) == (STEPPED, True)
    [again] = await storage.claim_merge_heads("w1", 10, 60, STEPPED)
    assert again.nudged and again.attempts == 1


async def test_without_a_nudge_the_wait_lasts_as_asked(storage: Storage) -> None:
    await enqueue(storage, 1)
    assert await head_after_settle(storage) == (NOW + HOUR, False)
    assert await storage.claim_merge_heads("w1", 10, 60, STEPPED) == []


async def test_a_nudge_before_the_claim_does_not_leak_into_its_settle(storage: Storage) -> None:
    """The step that a nudge set off read GitHub after it: its own wait stands."""
    await enqueue(storage, 1)
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert await storage.settle_merge(head.id, "w1", waits(NOW + HOUR), NOW)
    assert await storage.nudge_merge_queue(REPO, NOW) == 1
    [nudged] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    assert nudged.nudged
    assert await storage.settle_merge(nudged.id, "w1", waits(NOW + HOUR), STEPPED)
    entry = await storage.active_merge(REPO, 1)
    assert entry is not None and (entry.next_attempt_at, entry.nudged) == (NOW + HOUR, False)


async def test_a_nudged_settle_keeps_an_earlier_time_and_the_queue_moves_on(
    storage: Storage,
) -> None:
    await enqueue(storage, 1, 2)
    [head] = await storage.claim_merge_heads("w1", 10, 60, NOW)
    await storage.nudge_merge_queue(REPO, NOW)
    assert await storage.settle_merge(head.id, "w1", waits(NOW), STEPPED)
    entry = await storage.active_merge(REPO, 1)
    assert entry is not None and (entry.next_attempt_at, entry.nudged) == (NOW, True)
    [head] = await storage.claim_merge_heads("w1", 10, 60, STEPPED)
    await storage.nudge_merge_queue(REPO, STEPPED)
    merged = MergeSettle(MergeStatus.MERGED, "merged", "w1")
    assert await storage.settle_merge(head.id, "w1", merged, STEPPED)
    [second] = await storage.merge_queue(REPO, "main")
    assert second.pull_number == 2 and second.nudged and second.next_attempt_at <= STEPPED


async def test_a_nudge_is_forgotten_by_a_reclaim_and_a_new_judgment(storage: Storage) -> None:
    """A reclaiming worker reads GitHub after the nudge, and a re-approved entry is due
    anyway: neither's settle is brought forward by a nudge its step came after."""
    await enqueue(storage, 1)
    [first] = await storage.claim_merge_heads("w1", 10, 10, NOW)
    await storage.nudge_merge_queue(REPO, NOW)
    [second] = await storage.claim_merge_heads("w2", 10, 10, NOW + timedelta(seconds=11))
    assert second.id == first.id
    assert await storage.settle_merge(second.id, "w2", waits(NOW + HOUR), STEPPED)
    entry = await storage.active_merge(REPO, 1)
    assert entry is not None and entry.next_attempt_at == NOW + HOUR

    [third] = await storage.claim_merge_heads("w1", 10, 60, NOW + HOUR)
    await storage.nudge_merge_queue(REPO, NOW + HOUR)
    await storage.enqueue_merge(new(1, sha="e" * 40), actor="judge", reason="ok", now=NOW + HOUR)
    [fourth] = await storage.claim_merge_heads("w1", 10, 60, NOW + HOUR)
    assert fourth.id == third.id and fourth.judgment_version == 2
    assert await storage.settle_merge(fourth.id, "w1", waits(NOW + 2 * HOUR), NOW + HOUR)
    entry = await storage.active_merge(REPO, 1)
    assert entry is not None and (entry.next_attempt_at, entry.nudged) == (NOW + 2 * HOUR, False)


async def test_the_nudge_column_migration_runs_again_over_its_own_work(
    storage_backend: StorageBackend,
) -> None:
    """A lost version row makes migration 5 run again: the column is there, nothing fails."""
    store = await storage_backend.opened()
    await enqueue(store, 1)
    await _forget_migration(store, 5)
    reopened = await storage_backend.opened()
    [head] = await reopened.claim_merge_heads("w1", 10, 60, NOW)
    await reopened.nudge_merge_queue(REPO, NOW)
    assert await reopened.settle_merge(head.id, "w1", waits(NOW + HOUR), STEPPED)
    entry = await reopened.active_merge(REPO, 1)
    assert entry is not None and entry.next_attempt_at == STEPPED


async def _forget_migration(store: Storage, version: int) -> None:
    sql = f"DELETE FROM schema_version WHERE version = {version}"
    if isinstance(store, PostgresStorage):
        await store._db.execute(sql)
    else:
        assert isinstance(store, SqliteStorage)
        await store._execute(sql)

"""The storage contract, run unchanged against SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from bot.storage import storage_from_url
from bot.storage.base import (
    Delivery,
    DeliveryStatus,
    Installation,
    NewDelivery,
    Storage,
)
from bot.storage.postgres import MIGRATIONS as POSTGRES_MIGRATIONS
from bot.storage.postgres import PostgresStorage
from bot.storage.sqlite import BUSY_TIMEOUT_MS, SqliteStorage
from bot.storage.sqlite import MIGRATIONS as SQLITE_MIGRATIONS
from tests.support.storage_fixtures import StorageBackend

T0 = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
WORKER_A = "worker-a"
WORKER_B = "worker-b"


def new_delivery(n: int = 0, **overrides: Any) -> NewDelivery:
    fields: dict[str, Any] = {
        "delivery_id": f"d-{n:05d}",
        "event": "pull_request",
        "action": "opened",
        "installation_id": 42,
        "repository": "octo/repo",
        "body": b'{"action":"opened","n":' + str(n).encode() + b"}",
        "received_at": T0 + timedelta(seconds=n),
    }
    fields.update(overrides)
    return NewDelivery(**fields)


def installation(installation_id: int = 7, **overrides: Any) -> Installation:
    fields: dict[str, Any] = {
        "installation_id": installation_id,
        "account": "octo",
        "account_type": "Organization",
        "repository_selection": "selected",
        "suspended": False,
        "updated_at": T0,
    }
    fields.update(overrides)
    return Installation(**fields)


async def record_many(storage: Storage, count: int) -> list[str]:
    for n in range(count):
        assert await storage.record_delivery(new_delivery(n))
    return [new_delivery(n).delivery_id for n in range(count)]


async def claim_one(storage: Storage, worker: str = WORKER_A, now: datetime = T0) -> Delivery:
    claimed = await storage.claim_deliveries(worker, 1, 60, now + timedelta(hours=1))
    assert len(claimed) == 1
    return claimed[0]


# -- lifecycle -----------------------------------------------------------------


async def test_ping_answers_while_open_and_not_after_close(
    storage_backend: StorageBackend,
) -> None:
    """ping is True on an open store and False (not an exception) once closed."""
    store = await storage_backend.opened()
    assert await store.ping() is True
    await store.close()
    assert await store.ping() is False


async def test_open_and_close_are_idempotent(storage_backend: StorageBackend) -> None:
    """A second open() or close() is harmless."""
    store = await storage_backend.opened()
    await store.open()
    assert await store.record_delivery(new_delivery())
    await store.close()
    await store.close()


async def test_reopen_keeps_data_and_migrations_are_idempotent(
    storage_backend: StorageBackend,
) -> None:
    """Closing and opening a new instance on the same database keeps every kind of row."""
    first = await storage_backend.opened()
    assert await first.record_delivery(new_delivery(1))
    await first.upsert_installation(installation())
    seq = await first.append_verdict(
        task_id="t",
        repository=None,
        head_sha=None,
        verdict="accept",
        created_at=T0,
        record={"a": 1},
    )
    await first.kv_put("ns", "k", {"v": 1})
    await first.record_usage("scope", T0, 3)
    await first.close()

    second = await storage_backend.opened()
    third = await storage_backend.opened()  # migrating an up-to-date schema is a no-op
    for store in (second, third):
        delivery = await store.get_delivery(new_delivery(1).delivery_id)
        assert delivery is not None
        assert delivery.body == new_delivery(1).body
        assert await store.get_installation(7) == installation()
        assert [v.seq for v in await store.list_verdicts()] == [seq]
        assert await store.kv_get("ns", "k") == {"v": 1}
        assert await store.usage_since("scope", T0) == 3
    next_seq = await third.append_verdict(
        task_id="t",
        repository=None,
        head_sha=None,
        verdict="accept",
        created_at=T0,
        record={},
    )
    assert next_seq > seq


async def test_concurrent_opens_migrate_once(storage_backend: StorageBackend) -> None:
    """Several replicas opening a fresh database at once all succeed."""
    stores = [storage_backend.new() for _ in range(4)]
    await asyncio.gather(*(store.open() for store in stores))
    for store in stores:
        assert await store.ping()
    assert await stores[0].record_delivery(new_delivery())
    assert not await stores[3].record_delivery(new_delivery())


async def test_naive_datetime_is_refused(storage: Storage) -> None:
    """A naive datetime is a caller bug; the store refuses it instead of guessing a zone."""
    with pytest.raises(ValueError, match="naive"):
        await storage.record_delivery(new_delivery(received_at=datetime(2026, 1, 1)))  # noqa: DTZ001
    assert await storage.count_deliveries() == dict.fromkeys(DeliveryStatus, 0)


# -- deliveries ----------------------------------------------------------------


async def test_record_delivery_stores_pending_fields(storage: Storage) -> None:
    """A new delivery is pending, due at once, with no attempts and its body intact."""
    body = bytes(range(256)) * 4  # every byte value, including NUL
    incoming = new_delivery(3, body=body, action=None, installation_id=None, repository=None)
    assert await storage.record_delivery(incoming) is True
    stored = await storage.get_delivery(incoming.delivery_id)
    assert stored == Delivery(
        delivery_id=incoming.delivery_id,
        event="pull_request",
        action=None,
        installation_id=None,
        repository=None,
        body=body,
        status=DeliveryStatus.PENDING,
        attempts=0,
        received_at=incoming.received_at,
        next_attempt_at=incoming.received_at,
        lease_owner=None,
        lease_expires_at=None,
        last_error=None,
        finished_at=None,
    )
    assert stored.received_at.tzinfo is not None
    assert stored.received_at.utcoffset() == timedelta(0)


async def test_record_delivery_normalises_other_zones_to_utc(storage: Storage) -> None:
    """An aware non-UTC datetime comes back as the same instant in UTC."""
    plus_two = timezone(timedelta(hours=2))
    local = datetime(2026, 3, 1, 14, 0, 0, 1, tzinfo=plus_two)
    assert await storage.record_delivery(new_delivery(received_at=local))
    stored = await storage.get_delivery(new_delivery().delivery_id)
    assert stored is not None
    assert stored.received_at == local
    assert stored.received_at.utcoffset() == timedelta(0)
    assert stored.received_at.hour == 12


async def test_duplicate_delivery_is_refused_and_unchanged(storage: Storage) -> None:
    """A redelivered id returns False and leaves the first copy untouched."""
    first = new_delivery(1)
    assert await storage.record_delivery(first) is True
    again = new_delivery(1, body=b"other", event="push", received_at=T0 + timedelta(days=1))
    assert await storage.record_delivery(again) is False
    stored = await storage.get_delivery(first.delivery_id)
    assert stored is not None
    assert (stored.body, stored.event, stored.received_at) == (
        first.body,
        first.event,
        first.received_at,
    )
    assert (await storage.count_deliveries())[DeliveryStatus.PENDING] == 1


async def test_concurrent_duplicate_deliveries_store_one(storage: Storage) -> None:
    """GitHub retrying while the first copy is being stored still yields one row."""
    results = await asyncio.gather(*(storage.record_delivery(new_delivery(9)) for _ in range(20)))
    assert sorted(results) == [False] * 19 + [True]


async def test_get_unknown_delivery_is_none(storage: Storage) -> None:
    """An id never recorded is simply absent."""
    assert await storage.get_delivery("nope") is None


async def test_claim_takes_oldest_first_up_to_limit(storage: Storage) -> None:
    """Claims are ordered by arrival and never exceed the limit."""
    # Record out of arrival order to show ordering is by received_at, not insertion.
    for n in (4, 1, 3, 0, 2):
        assert await storage.record_delivery(new_delivery(n))
    now = T0 + timedelta(minutes=5)
    first = await storage.claim_deliveries(WORKER_A, 2, 30, now)
    assert [d.delivery_id for d in first] == ["d-00000", "d-00001"]
    second = await storage.claim_deliveries(WORKER_A, 10, 30, now)
    assert [d.delivery_id for d in second] == ["d-00002", "d-00003", "d-00004"]
    assert await storage.claim_deliveries(WORKER_A, 10, 30, now) == []
    assert await storage.claim_deliveries(WORKER_A, 0, 30, now) == []


async def test_claim_skips_deliveries_not_yet_due(storage: Storage) -> None:
    """A delivery received after `now` is not due yet."""
    assert await storage.record_delivery(new_delivery(0))
    assert await storage.record_delivery(new_delivery(100))
    claimed = await storage.claim_deliveries(WORKER_A, 10, 30, T0 + timedelta(seconds=50))
    assert [d.delivery_id for d in claimed] == ["d-00000"]


async def test_claim_sets_lease_and_increments_attempts(storage: Storage) -> None:
    """Claiming marks the row processing, leased to the worker, one attempt more."""
    assert await storage.record_delivery(new_delivery())
    now = T0 + timedelta(seconds=10)
    [claimed] = await storage.claim_deliveries(WORKER_A, 5, 30.5, now)
    assert claimed.status is DeliveryStatus.PROCESSING
    assert claimed.attempts == 1
    assert claimed.lease_owner == WORKER_A
    assert claimed.lease_expires_at == now + timedelta(seconds=30.5)
    assert await storage.get_delivery(claimed.delivery_id) == claimed


async def test_unexpired_lease_is_not_reclaimed(storage: Storage) -> None:
    """While a live worker holds the lease nobody else gets the delivery."""
    assert await storage.record_delivery(new_delivery())
    now = T0 + timedelta(seconds=10)
    assert len(await storage.claim_deliveries(WORKER_A, 5, 60, now)) == 1
    almost = now + timedelta(seconds=59, microseconds=999999)
    assert await storage.claim_deliveries(WORKER_B, 5, 60, almost) == []


async def test_expired_lease_is_reclaimed_after_a_crash(storage: Storage) -> None:
    """A worker that died mid-delivery loses it once the lease runs out."""
    assert await storage.record_delivery(new_delivery())
    now = T0 + timedelta(seconds=10)
    [first] = await storage.claim_deliveries(WORKER_A, 5, 60, now)
    later = now + timedelta(seconds=61)
    [second] = await storage.claim_deliveries(WORKER_B, 5, 60, later)
    assert second.delivery_id == first.delivery_id
    assert second.attempts == 2
    assert second.lease_owner == WORKER_B
    assert second.lease_expires_at == later + timedelta(seconds=60)
    # The crashed worker can no longer finish or release it.
    assert await storage.complete_delivery(first.delivery_id, WORKER_A, later) is False
    assert await storage.release_delivery(first.delivery_id, WORKER_A, "x", None, later) is False
    assert await storage.complete_delivery(first.delivery_id, WORKER_B, later) is True


async def test_concurrent_claimers_never_share_a_delivery(
    storage_backend: StorageBackend,
) -> None:
    """Two replicas (two connections or pools) claiming at once split the work exactly."""
    count = 200
    writer = await storage_backend.opened()
    ids = await record_many(writer, count)
    replicas = [await storage_backend.opened(), await storage_backend.opened()]
    now = T0 + timedelta(hours=1)
    taken: dict[str, list[str]] = {}

    async def drain(store: Storage, worker: str) -> None:
        mine = taken.setdefault(worker, [])
        while True:
            batch = await store.claim_deliveries(worker, 7, 300, now)
            if not batch:
                return
            mine.extend(d.delivery_id for d in batch)

    await asyncio.gather(
        *(
            drain(store, f"{name}-{task}")
            for name, store in (("r1", replicas[0]), ("r2", replicas[1]))
            for task in range(3)
        )
    )
    every = [delivery_id for batch in taken.values() for delivery_id in batch]
    assert len(every) == len(set(every)), "a delivery was handed to two workers"
    assert sorted(every) == sorted(ids)
    assert (await writer.count_deliveries())[DeliveryStatus.PROCESSING] == count
    for delivery_id in ids[:10]:
        stored = await writer.get_delivery(delivery_id)
        assert stored is not None
        assert stored.attempts == 1


async def test_complete_marks_done_for_the_lease_holder_only(storage: Storage) -> None:
    """complete_delivery succeeds once, for the worker holding the lease."""
    assert await storage.record_delivery(new_delivery())
    claimed = await claim_one(storage)
    done_at = T0 + timedelta(hours=2)
    assert await storage.complete_delivery(claimed.delivery_id, WORKER_B, done_at) is False
    unchanged = await storage.get_delivery(claimed.delivery_id)
    assert unchanged == claimed
    assert await storage.complete_delivery(claimed.delivery_id, WORKER_A, done_at) is True
    assert await storage.complete_delivery(claimed.delivery_id, WORKER_A, done_at) is False
    done = await storage.get_delivery(claimed.delivery_id)
    assert done is not None
    assert done.status is DeliveryStatus.DONE
    assert done.finished_at == done_at
    assert done.attempts == 1
    assert await storage.claim_deliveries(WORKER_B, 5, 60, done_at + timedelta(days=9)) == []


async def test_complete_unknown_or_unclaimed_delivery_is_false(storage: Storage) -> None:
    """Nobody holds a lease on a missing or still-pending delivery."""
    assert await storage.complete_delivery("missing", WORKER_A, T0) is False
    assert await storage.record_delivery(new_delivery())
    assert await storage.complete_delivery(new_delivery().delivery_id, WORKER_A, T0) is False
    assert await storage.release_delivery(new_delivery().delivery_id, WORKER_A, "e", T0, T0) is (
        False
    )


async def test_release_with_retry_reschedules_as_pending(storage: Storage) -> None:
    """A failed attempt with retry_at goes back to pending and is not claimable earlier."""
    assert await storage.record_delivery(new_delivery())
    claimed = await claim_one(storage)
    now = T0 + timedelta(hours=1)
    retry_at = now + timedelta(minutes=5)
    assert await storage.release_delivery(claimed.delivery_id, WORKER_B, "e", retry_at, now) is (
        False
    )
    assert await storage.release_delivery(claimed.delivery_id, WORKER_A, "boom", retry_at, now)
    pending = await storage.get_delivery(claimed.delivery_id)
    assert pending is not None
    assert pending.status is DeliveryStatus.PENDING
    assert pending.next_attempt_at == retry_at
    assert pending.last_error == "boom"
    assert pending.lease_owner is None
    assert pending.lease_expires_at is None
    assert pending.finished_at is None
    before = retry_at - timedelta(microseconds=1)
    assert await storage.claim_deliveries(WORKER_B, 5, 60, before) == []
    [again] = await storage.claim_deliveries(WORKER_B, 5, 60, retry_at)
    assert again.attempts == 2
    assert again.last_error == "boom"
    # The earlier holder lost the lease when it released.
    assert await storage.complete_delivery(again.delivery_id, WORKER_A, retry_at) is False


async def test_release_without_retry_parks_as_failed(storage: Storage) -> None:
    """retry_at None parks the delivery as failed for good."""
    assert await storage.record_delivery(new_delivery())
    claimed = await claim_one(storage)
    now = T0 + timedelta(hours=1)
    assert await storage.release_delivery(claimed.delivery_id, WORKER_A, "fatal: ü", None, now)
    failed = await storage.get_delivery(claimed.delivery_id)
    assert failed is not None
    assert failed.status is DeliveryStatus.FAILED
    assert failed.last_error == "fatal: ü"
    assert failed.finished_at == now
    assert failed.lease_expires_at is None
    assert await storage.claim_deliveries(WORKER_B, 5, 60, now + timedelta(days=30)) == []
    assert await storage.release_delivery(claimed.delivery_id, WORKER_A, "x", None, now) is False


async def test_defer_puts_back_pending_without_using_an_attempt(storage: Storage) -> None:
    """A deferral (GitHub's rate limit) hands the delivery back due at `until`, and the
    claim's attempt is given back: waiting on GitHub is not a failure."""
    assert await storage.record_delivery(new_delivery())
    claimed = await claim_one(storage)
    assert claimed.attempts == 1
    now = T0 + timedelta(hours=1)
    until = now + timedelta(seconds=3554)
    assert await storage.defer_delivery(claimed.delivery_id, WORKER_B, until) is False
    assert await storage.defer_delivery(claimed.delivery_id, WORKER_A, until) is True
    deferred = await storage.get_delivery(claimed.delivery_id)
    assert deferred is not None
    assert deferred.status is DeliveryStatus.PENDING
    assert deferred.attempts == 0
    assert deferred.next_attempt_at == until
    assert (deferred.lease_owner, deferred.lease_expires_at) == (None, None)
    assert deferred.last_error is None and deferred.finished_at is None
    # The lease went with the deferral: nothing more to defer, complete or release.
    assert await storage.defer_delivery(claimed.delivery_id, WORKER_A, until) is False
    assert await storage.complete_delivery(claimed.delivery_id, WORKER_A, now) is False
    before = until - timedelta(microseconds=1)
    assert await storage.claim_deliveries(WORKER_B, 5, 60, before) == []
    [again] = await storage.claim_deliveries(WORKER_B, 5, 60, until)
    assert again.attempts == 1


async def test_deferred_deliveries_resume_oldest_first(storage: Storage) -> None:
    """Deliveries deferred to one reset come back in arrival order, whatever order they
    were deferred in, ahead of deliveries that arrived after them."""
    ids = await record_many(storage, 4)
    now = T0 + timedelta(hours=1)
    claimed = await storage.claim_deliveries(WORKER_A, 3, 60, now)
    reset = now + timedelta(hours=1)
    for delivery in reversed(claimed):
        assert await storage.defer_delivery(delivery.delivery_id, WORKER_A, reset)
    resumed = await storage.claim_deliveries(WORKER_B, 10, 60, reset)
    assert [d.delivery_id for d in resumed] == ids
    assert [d.attempts for d in resumed] == [1, 1, 1, 1]


async def test_renew_lease_extends_only_the_holders_lease(storage: Storage) -> None:
    """A heartbeat keeps a live worker's delivery; one whose lease was taken over is told
    so (False) and changes nothing."""
    assert await storage.record_delivery(new_delivery())
    now = T0 + timedelta(seconds=10)
    [claimed] = await storage.claim_deliveries(WORKER_A, 1, 30, now)
    renewed_until = now + timedelta(seconds=50)
    assert await storage.renew_lease(claimed.delivery_id, WORKER_B, renewed_until) is False
    assert await storage.renew_lease(claimed.delivery_id, WORKER_A, renewed_until) is True
    held = await storage.get_delivery(claimed.delivery_id)
    assert held is not None
    assert (held.lease_owner, held.lease_expires_at) == (WORKER_A, renewed_until)
    assert held.attempts == 1
    # Past the claim's lease, but inside the renewed one: nobody else gets it.
    assert await storage.claim_deliveries(WORKER_B, 1, 30, now + timedelta(seconds=40)) == []
    taken_at = renewed_until + timedelta(seconds=1)
    [taken] = await storage.claim_deliveries(WORKER_B, 1, 30, taken_at)
    assert taken.lease_owner == WORKER_B
    assert await storage.renew_lease(claimed.delivery_id, WORKER_A, taken_at + timedelta(60)) is (
        False
    )
    assert await storage.get_delivery(claimed.delivery_id) == taken
    assert await storage.complete_delivery(claimed.delivery_id, WORKER_B, taken_at)
    assert await storage.renew_lease(claimed.delivery_id, WORKER_B, taken_at) is False
    assert await storage.renew_lease("missing", WORKER_A, taken_at) is False


@pytest.mark.parametrize("installation_id", [2**63, -(2**63) - 1, 10**30])
async def test_out_of_range_installation_id_fails_only_its_own_request(
    storage: Storage, installation_id: int
) -> None:
    """A value no 64-bit column holds is refused with ValueError for its own request;
    requests stored alongside it (SQLite commits them together) are unaffected."""
    bad = new_delivery(1, installation_id=installation_id)
    outcomes = await asyncio.gather(
        storage.record_delivery(new_delivery(0)),
        storage.record_delivery(bad),
        storage.record_delivery(new_delivery(2, installation_id=2**63 - 1)),
        return_exceptions=True,
    )
    assert outcomes[0] is True and outcomes[2] is True
    assert isinstance(outcomes[1], ValueError)
    assert "installation_id" in str(outcomes[1])
    assert await storage.get_delivery(bad.delivery_id) is None
    biggest = await storage.get_delivery(new_delivery(2).delivery_id)
    assert biggest is not None and biggest.installation_id == 2**63 - 1
    assert (await storage.count_deliveries())[DeliveryStatus.PENDING] == 2


async def test_a_row_the_database_refuses_fails_only_its_own_request(storage: Storage) -> None:
    """Whatever makes one insert fail (here a NOT NULL column, which no check before the
    insert looks at), the other requests committed with it still succeed."""
    refused = new_delivery(1, event=None)
    outcomes = await asyncio.gather(
        *(storage.record_delivery(new_delivery(n)) for n in (0, 2, 3)),
        storage.record_delivery(refused),
        storage.record_delivery(new_delivery(3)),
        return_exceptions=True,
    )
    assert outcomes[:2] == [True, True]
    assert isinstance(outcomes[3], Exception)
    # Two concurrent requests for one id: either may win (PostgreSQL runs them on two
    # connections), but exactly one does, even when the batch is retried row by row.
    assert {outcomes[2], outcomes[4]} == {False, True}
    assert await storage.get_delivery(refused.delivery_id) is None
    assert (await storage.count_deliveries())[DeliveryStatus.PENDING] == 3


async def test_naive_datetime_in_a_batch_fails_only_its_own_request(storage: Storage) -> None:
    naive = new_delivery(1, received_at=datetime(2026, 1, 1))  # noqa: DTZ001
    outcomes = await asyncio.gather(
        storage.record_delivery(new_delivery(0)),
        storage.record_delivery(naive),
        return_exceptions=True,
    )
    assert outcomes[0] is True
    assert isinstance(outcomes[1], ValueError) and "naive" in str(outcomes[1])


async def test_count_deliveries_reports_every_status(storage: Storage) -> None:
    """Counts cover all statuses, zero included."""
    assert await storage.count_deliveries() == dict.fromkeys(DeliveryStatus, 0)
    await record_many(storage, 5)
    now = T0 + timedelta(hours=1)
    claimed = await storage.claim_deliveries(WORKER_A, 3, 60, now)
    assert await storage.complete_delivery(claimed[0].delivery_id, WORKER_A, now)
    assert await storage.release_delivery(claimed[1].delivery_id, WORKER_A, "e", None, now)
    assert await storage.count_deliveries() == {
        DeliveryStatus.PENDING: 2,
        DeliveryStatus.PROCESSING: 1,
        DeliveryStatus.DONE: 1,
        DeliveryStatus.FAILED: 1,
    }


async def test_list_deliveries_newest_first_with_filter_and_limit(storage: Storage) -> None:
    """Listing runs newest first, optionally by status, capped by limit."""
    ids = await record_many(storage, 5)
    claimed = await claim_one(storage)
    assert [d.delivery_id for d in await storage.list_deliveries()] == ids[::-1]
    assert [d.delivery_id for d in await storage.list_deliveries(limit=2)] == [ids[4], ids[3]]
    pending = await storage.list_deliveries(DeliveryStatus.PENDING)
    assert [d.delivery_id for d in pending] == [ids[4], ids[3], ids[2], ids[1]]
    assert await storage.list_deliveries(DeliveryStatus.PROCESSING) == [claimed]
    assert await storage.list_deliveries(DeliveryStatus.DONE) == []


# -- installations -------------------------------------------------------------


async def test_installation_upsert_get_delete(storage: Storage) -> None:
    """Upsert inserts then replaces every field; delete removes it and only it."""
    assert await storage.get_installation(7) is None
    await storage.upsert_installation(installation(7))
    await storage.upsert_installation(installation(3, account="other", account_type="User"))
    assert await storage.get_installation(7) == installation(7)
    changed = installation(
        7,
        account="octo-renamed",
        repository_selection="all",
        suspended=True,
        updated_at=T0 + timedelta(days=1),
    )
    await storage.upsert_installation(changed)
    await storage.upsert_installation(changed)
    assert await storage.get_installation(7) == changed

    await storage.delete_installation(7)
    await storage.delete_installation(7)
    assert await storage.get_installation(7) is None
    assert await storage.get_installation(3) == installation(
        3, account="other", account_type="User"
    )


async def test_deleting_an_installation_forgets_the_repositories_older_versions_kept(
    tmp_path: Path,
) -> None:
    """Rows an earlier version wrote to `installation_repositories` (which this one neither
    writes nor reads) go with their installation, and only with theirs."""
    path = tmp_path / "older.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    await store.upsert_installation(installation(7))
    await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db, db:
        db.executemany(
            "INSERT INTO installation_repositories (installation_id, full_name) VALUES (?, ?)",
            [(7, "octo/a"), (3, "other/x")],
        )
    store = SqliteStorage(str(path))
    await store.open()
    try:
        await store.delete_installation(7)
    finally:
        await store.close()
    with contextlib.closing(sqlite3.connect(path)) as db:
        rows = db.execute("SELECT installation_id, full_name FROM installation_repositories")
        assert rows.fetchall() == [(3, "other/x")]


# -- verdicts ------------------------------------------------------------------


async def append(storage: Storage, n: int, **overrides: Any) -> int:
    fields: dict[str, Any] = {
        "task_id": f"task-{n % 2}",
        "repository": "octo/a" if n % 3 else "octo/b",
        "head_sha": f"sha{n % 4}",
        "verdict": "accept",
        "created_at": T0 + timedelta(minutes=n),
        "record": {"n": n},
    }
    fields.update(overrides)
    return await storage.append_verdict(**fields)


async def test_verdict_seq_is_monotonic_and_listing_oldest_first(storage: Storage) -> None:
    """Each append gets a larger seq; the unfiltered list is in append order."""
    seqs = [await append(storage, n) for n in range(8)]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)
    listed = await storage.list_verdicts()
    assert [v.seq for v in listed] == seqs
    assert [v.record for v in listed] == [{"n": n} for n in range(8)]
    assert listed[2].created_at == T0 + timedelta(minutes=2)
    assert listed[2].created_at.utcoffset() == timedelta(0)


async def test_verdict_concurrent_appends_get_distinct_seqs(storage: Storage) -> None:
    """Concurrent appends never share a seq and none is lost."""
    seqs = await asyncio.gather(*(append(storage, n) for n in range(20)))
    assert len(set(seqs)) == 20
    assert sorted(v.seq for v in await storage.list_verdicts()) == sorted(seqs)


async def test_verdict_filters_combine(storage: Storage) -> None:
    """Each filter narrows the list; together they all apply."""
    for n in range(12):
        await append(storage, n)

    async def ns(**filters: Any) -> list[int]:
        return [v.record["n"] for v in await storage.list_verdicts(**filters)]

    assert await ns(task_id="task-1") == [1, 3, 5, 7, 9, 11]
    assert await ns(repository="octo/b") == [0, 3, 6, 9]
    assert await ns(head_sha="sha2") == [2, 6, 10]
    assert await ns(since=T0 + timedelta(minutes=9)) == [9, 10, 11]
    assert await ns(limit=3) == [0, 1, 2]
    assert await ns(limit=0) == []
    assert await ns(task_id="task-1", repository="octo/b") == [3, 9]
    assert await ns(task_id="task-1", repository="octo/b", since=T0 + timedelta(minutes=4)) == [9]
    assert await ns(task_id="task-0", head_sha="sha2", limit=1) == [2]
    assert await ns(task_id="nope") == []


async def test_verdict_with_null_fields_and_rich_json_round_trips(storage: Storage) -> None:
    """Nested objects, unicode, floats, big ints and nulls come back equal."""
    record: dict[str, Any] = {
        "task_id": "issue-18",
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
        "average": 4.33,
        "improvements": ["naïve → better", "日本語", "emoji 🚀", 'quote " and \\ slash'],
        "nested": {"deep": [{"a": None, "b": True, "c": [1, 2.5, -3]}], "empty": {}},
        "big": 2**53 + 1,
    }
    seq = await storage.append_verdict(
        task_id="issue-18",
        repository=None,
        head_sha=None,
        verdict="escalate",
        created_at=T0,
        record=record,
    )
    [stored] = await storage.list_verdicts(task_id="issue-18")
    assert stored.seq == seq
    assert stored.repository is None
    assert stored.head_sha is None
    assert stored.verdict == "escalate"
    assert stored.created_at == T0
    assert stored.record == record


async def test_verdict_refuses_non_json_values(storage: Storage) -> None:
    """NaN is not JSON; refusing it keeps both backends consistent."""
    with pytest.raises(ValueError):
        await append(storage, 0, record={"x": float("nan")})
    assert await storage.list_verdicts() == []


# -- key/value -----------------------------------------------------------------


async def test_kv_put_get_replace_delete(storage: Storage) -> None:
    """put inserts or replaces, delete is idempotent, namespaces are separate."""
    assert await storage.kv_get("checks", "octo/a#1") is None
    await storage.kv_put("checks", "octo/a#1", {"check_run_id": 1, "nested": {"ü": [1, None]}})
    assert await storage.kv_get("checks", "octo/a#1") == {
        "check_run_id": 1,
        "nested": {"ü": [1, None]},
    }
    await storage.kv_put("checks", "octo/a#1", {"check_run_id": 2})
    assert await storage.kv_get("checks", "octo/a#1") == {"check_run_id": 2}
    # Namespaces keep equal keys apart.
    await storage.kv_put("issues", "octo/a#1", {"issue": 9})
    assert await storage.kv_get("checks", "octo/a#1") == {"check_run_id": 2}
    await storage.kv_delete("checks", "octo/a#1")
    await storage.kv_delete("checks", "octo/a#1")
    assert await storage.kv_get("checks", "octo/a#1") is None
    assert await storage.kv_get("issues", "octo/a#1") == {"issue": 9}


async def test_kv_put_if_absent_only_first_wins(storage: Storage) -> None:
    """A second put_if_absent neither succeeds nor overwrites; after delete it can."""
    assert await storage.kv_put_if_absent("ns", "k", {"v": 1}) is True
    assert await storage.kv_put_if_absent("ns", "k", {"v": 2}) is False
    assert await storage.kv_get("ns", "k") == {"v": 1}
    await storage.kv_delete("ns", "k")
    assert await storage.kv_put_if_absent("ns", "k", {"v": 3}) is True
    assert await storage.kv_get("ns", "k") == {"v": 3}


async def test_kv_put_if_absent_race_has_one_winner(storage_backend: StorageBackend) -> None:
    """20 concurrent callers across two stores: exactly one inserts, its value stays."""
    stores = [await storage_backend.opened(), await storage_backend.opened()]
    results = await asyncio.gather(
        *(stores[i % 2].kv_put_if_absent("lock", "pr-1", {"owner": i}) for i in range(20))
    )
    assert results.count(True) == 1
    winner = results.index(True)
    assert await stores[1].kv_get("lock", "pr-1") == {"owner": winner}


async def test_kv_empty_object_round_trips(storage: Storage) -> None:
    """An empty key and an empty object are valid."""
    await storage.kv_put("ns", "", {})
    assert await storage.kv_get("ns", "") == {}


# -- usage ---------------------------------------------------------------------


async def test_usage_since_sums_the_window_per_scope(storage: Storage) -> None:
    """Amounts at or after `since` count; earlier ones and other scopes do not."""
    assert await storage.usage_since("llm:octo", T0) == 0
    await storage.record_usage("llm:octo", T0 - timedelta(microseconds=1), 100)
    await storage.record_usage("llm:octo", T0)
    await storage.record_usage("llm:octo", T0 + timedelta(minutes=1), 5)
    await storage.record_usage("llm:octo", T0 + timedelta(hours=1), 7)
    await storage.record_usage("llm:other", T0, 1000)
    assert await storage.usage_since("llm:octo", T0) == 13
    assert await storage.usage_since("llm:octo", T0 + timedelta(seconds=1)) == 12
    assert await storage.usage_since("llm:octo", T0 - timedelta(days=1)) == 113
    assert await storage.usage_since("llm:octo", T0 + timedelta(days=1)) == 0
    assert await storage.usage_since("llm:other", T0) == 1000


async def test_usage_concurrent_records_all_count(storage: Storage) -> None:
    """Concurrent increments are all kept."""
    await asyncio.gather(*(storage.record_usage("s", T0, 2) for _ in range(25)))
    assert await storage.usage_since("s", T0) == 50


# -- SQLite specifics and URL parsing --------------------------------------------


async def test_sqlite_connection_settings(
    sqlite_storage: SqliteStorage,
) -> None:
    """WAL, synchronous=NORMAL and a busy timeout are set on the connection."""
    db = sqlite_storage._db

    async def pragma(name: str) -> Any:
        rows = list(await db.execute_fetchall(f"PRAGMA {name}"))
        return rows[0][0]

    assert await pragma("journal_mode") == "wal"
    assert await pragma("synchronous") == 1  # NORMAL
    assert await pragma("busy_timeout") == BUSY_TIMEOUT_MS


async def test_schema_version_lists_every_migration_once(
    storage_backend: StorageBackend,
) -> None:
    """Opening twice records each migration exactly once."""
    await storage_backend.opened()
    store = await storage_backend.opened()
    if isinstance(store, PostgresStorage):
        rows = await store._db.fetch("SELECT version FROM schema_version ORDER BY version")
        expected = [version for version, _ in POSTGRES_MIGRATIONS]
    else:
        assert isinstance(store, SqliteStorage)
        rows = list(
            await store._db.execute_fetchall("SELECT version FROM schema_version ORDER BY version")
        )
        expected = [version for version, _ in SQLITE_MIGRATIONS]
    assert [row[0] for row in rows] == expected


async def test_sqlite_use_before_open_is_a_clear_error(tmp_path: Path) -> None:
    """Forgetting open() fails with a message saying so, and ping reports it."""
    store = SqliteStorage(str(tmp_path / "x.db"))
    assert await store.ping() is False
    with pytest.raises(RuntimeError, match="open"):
        await store.kv_get("ns", "k")


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///judge.db", "judge.db"),
        ("sqlite:///data/sub/judge.db", "data/sub/judge.db"),
        ("sqlite:////var/lib/judge/judge.db", "/var/lib/judge/judge.db"),
    ],
)
def test_storage_from_url_sqlite(url: str, path: str) -> None:
    store = storage_from_url(url)
    assert isinstance(store, SqliteStorage)
    assert store._path == path


@pytest.mark.parametrize(
    "url", ["postgresql://u@127.0.0.1:5432/db", "postgres://u:secret@db.internal/judge"]
)
def test_storage_from_url_postgres(url: str) -> None:
    store = storage_from_url(url)
    assert isinstance(store, PostgresStorage)
    assert store._dsn == url


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://u@h/db", "'mysql'"),
        ("redis://h", "'redis'"),
        ("judge.db", "no scheme"),
        ("sqlite://judge.db", "sqlite:///"),
        ("sqlite:///", "no database file"),
    ],
)
def test_storage_from_url_rejects_others(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        storage_from_url(url)


def test_storage_from_url_error_does_not_echo_credentials() -> None:
    with pytest.raises(ValueError) as excinfo:
        storage_from_url("mysql://user:hunter2@h/db")
    assert "hunter2" not in str(excinfo.value)


async def test_nul_characters_are_stored_as_replacement_characters(storage: Storage) -> None:
    """jsonb refuses U+0000 (model output may carry it): both backends store U+FFFD."""
    record = {"reasoning": "a\x00b", "nested": [{"k\x00": "v"}], "plain": "back\\u0000slash"}
    await storage.append_verdict(
        task_id="t",
        repository=None,
        head_sha=None,
        verdict="accept",
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        record=record,
    )
    [stored] = await storage.list_verdicts(task_id="t")
    assert stored.record == {
        "reasoning": "a\ufffdb",
        "nested": [{"k\ufffd": "v"}],
        "plain": "back\\u0000slash",
    }
    await storage.kv_put("ns", "k", {"v": "\x00"})
    assert await storage.kv_get("ns", "k") == {"v": "\ufffd"}


async def test_concurrent_deliveries_each_get_their_own_answer(storage: Storage) -> None:
    """Many webhooks at once (SQLite commits them together): new ids True, repeats False."""
    ids = [f"c-{n % 40}" for n in range(50)]  # ten repeats
    results = await asyncio.gather(
        *(storage.record_delivery(new_delivery(delivery_id=i)) for i in ids)
    )
    assert sum(results) == 40
    first_seen = {i: ids.index(i) for i in set(ids)}
    assert all(results[index] for index in first_seen.values())
    assert (await storage.count_deliveries())[DeliveryStatus.PENDING] == 40


async def test_recording_on_a_closed_store_fails_every_caller(storage: Storage) -> None:
    await storage.close()
    with pytest.raises(RuntimeError, match="not open"):
        await storage.record_delivery(new_delivery(9))
    outcomes = await asyncio.gather(
        *(storage.record_delivery(new_delivery(n)) for n in range(3)),
        return_exceptions=True,
    )
    assert all(isinstance(outcome, Exception) for outcome in outcomes)


async def test_sqlite_checkpoints_in_the_background(tmp_path: Path) -> None:
    """The store's connection never checkpoints (no event-loop stalls); a background
    thread copies the WAL into the database file. Random bodies, which are stored whole
    (lz4 cannot shrink them), so the file's size shows what was copied."""
    path = tmp_path / "wal.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        bodies = random.Random(0)
        for n in range(200):
            await store.record_delivery(new_delivery(n, body=bodies.randbytes(5000)))
        assert path.stat().st_size < 200 * 5000, "rows are still only in the WAL"
        async with asyncio.timeout(10):
            while path.stat().st_size < 200 * 5000:
                await asyncio.sleep(0.05)
    finally:
        await store.close()

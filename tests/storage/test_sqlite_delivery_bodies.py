"""Delivery bodies in a table of their own on SQLite (schema migration 6): every way a
delivery is read returns its own body, a body is written once and never again by a status
change, duplicates and pruning leave no body behind, and a database from before the move
keeps every delivery.

The round trip runs on both backends, like `test_storage.py`; the rest is about SQLite's
tables."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.storage import sqlite_connection, sqlite_schema
from bot.storage.base import DeliveryStatus, NewDelivery, Storage
from bot.storage.body_codec import decode_body
from bot.storage.sqlite import SqliteStorage
from tests.support.storage_fixtures import sqlite_file_at_version

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)


def body_of(n: int, size: int = 3000) -> bytes:
    """A body no other delivery has, every byte value included (NUL too)."""
    return (n.to_bytes(4, "big") + bytes(range(256)) * (size // 256 + 1))[:size]


def delivery(n: int, body: bytes | None = None, **overrides: Any) -> NewDelivery:
    fields: dict[str, Any] = {
        "delivery_id": f"b-{n:04d}",
        "event": "pull_request",
        "action": "opened",
        "installation_id": 7,
        "repository": "octo/bodies",
        "body": body_of(n) if body is None else body,
        "received_at": T0 + timedelta(seconds=n),
    }
    fields.update(overrides)
    return NewDelivery(**fields)


async def body_rows(store: SqliteStorage) -> dict[int, bytes]:
    """Each body row, decoded (stored compressed since migration 7)."""
    rows = await store._db.execute_fetchall("SELECT seq, body, compression FROM delivery_bodies")
    return {seq: decode_body(body, compression) for seq, body, compression in rows}


def wal_bytes(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.fixture
def no_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """The WAL only grows, so its growth is what a statement wrote."""
    monkeypatch.setattr(sqlite_connection, "CHECKPOINT_SECONDS", 3600)


async def test_every_read_returns_each_delivery_its_own_body(storage: Storage) -> None:
    """Inserted in one group commit, read back by get, list and claim: no body swapped,
    the empty body included."""
    sizes = {1: 0, 2: 1, 3: 5000, 4: 70_000, 5: 300}
    bodies = {n: body_of(n, size) for n, size in sizes.items()}
    stored = await asyncio.gather(
        *(storage.record_delivery(delivery(n, b)) for n, b in bodies.items())
    )
    assert stored == [True] * len(bodies)
    for n, body in bodies.items():
        got = await storage.get_delivery(f"b-{n:04d}")
        assert got is not None and got.body == body
    listed = await storage.list_deliveries()
    assert {d.delivery_id: d.body for d in listed} == {f"b-{n:04d}": b for n, b in bodies.items()}
    pending = await storage.list_deliveries(DeliveryStatus.PENDING, limit=2)
    assert [(d.delivery_id, d.body) for d in pending] == [
        ("b-0005", bodies[5]),
        ("b-0004", bodies[4]),
    ]
    claimed = await storage.claim_deliveries("w", 3, 60, T0 + timedelta(minutes=1))
    assert [(d.delivery_id, d.body) for d in claimed] == [
        (f"b-{n:04d}", bodies[n]) for n in (1, 2, 3)
    ]
    assert await storage.complete_delivery("b-0002", "w", T0 + timedelta(minutes=2))
    done = await storage.get_delivery("b-0002")
    assert done is not None and done.status is DeliveryStatus.DONE and done.body == bodies[2]


async def test_a_duplicate_writes_no_second_body(sqlite_storage: SqliteStorage) -> None:
    """A redelivery, in a later commit or in the same group commit, adds neither a row nor
    a body, and the first body stays."""
    assert await sqlite_storage.record_delivery(delivery(1, b"first"))
    assert await sqlite_storage.record_delivery(delivery(1, b"later")) is False
    together = await asyncio.gather(
        sqlite_storage.record_delivery(delivery(2, b"one")),
        sqlite_storage.record_delivery(delivery(2, b"two")),
        sqlite_storage.record_delivery(delivery(3, b"three")),
    )
    assert list(together) == [True, False, True]
    assert sorted((await body_rows(sqlite_storage)).values()) == [b"first", b"one", b"three"]
    first = await sqlite_storage.get_delivery("b-0001")
    assert first is not None and first.body == b"first"


async def test_pruning_deletes_the_bodies_of_the_deliveries_it_deletes(
    sqlite_storage: SqliteStorage,
) -> None:
    for n in range(1, 7):
        assert await sqlite_storage.record_delivery(delivery(n, done=n >= 4))
    [failed] = await sqlite_storage.claim_deliveries("w", 1, 60, T0 + timedelta(minutes=1))
    assert await sqlite_storage.release_delivery(
        failed.delivery_id, "w", "boom", None, T0 + timedelta(minutes=1)
    )
    seqs_before = await sqlite_storage._db.execute_fetchall("SELECT MAX(seq) FROM deliveries")
    assert await sqlite_storage.prune_deliveries(T0 + timedelta(hours=1)) == 4
    kept = await sqlite_storage._db.execute_fetchall("SELECT seq FROM deliveries")
    bodies = await body_rows(sqlite_storage)
    assert sorted(bodies) == sorted(seq for (seq,) in kept)
    assert sorted(bodies.values()) == sorted(body_of(n) for n in (2, 3))
    # The newest rows went, so SQLite hands out their seqs again: each new delivery gets
    # its own body, not one left behind.
    assert await sqlite_storage.record_delivery(delivery(7))
    [(reused,)] = await sqlite_storage._db.execute_fetchall(
        "SELECT seq FROM deliveries WHERE delivery_id = 'b-0007'"
    )
    assert reused <= seqs_before[0][0]
    again = await sqlite_storage.get_delivery("b-0007")
    assert again is not None and again.body == body_of(7)


async def test_status_changes_leave_the_body_unwritten(
    no_checkpoints: None, tmp_path: Path
) -> None:
    """A 1 MB body: recording writes it to the WAL once; the claim, the lease renewals, the
    deferral, the second claim and the completion together write less than a tenth of it
    (each rewrote the whole body when it lived in the delivery's row). Random bytes, which
    lz4 cannot shrink, so the body is stored whole and the WAL shows it."""
    path = tmp_path / "wal.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        body = random.Random(1).randbytes(1_000_000)
        before = wal_bytes(path)
        assert await store.record_delivery(delivery(1, body))
        recorded = wal_bytes(path)
        assert recorded - before > len(body)
        now = T0 + timedelta(minutes=1)
        [claimed] = await store.claim_deliveries("w", 1, 60, now)
        assert claimed.body == body
        for seconds in (90, 120, 150):
            assert await store.renew_lease("b-0001", "w", now + timedelta(seconds=seconds))
        assert await store.defer_delivery("b-0001", "w", now + timedelta(seconds=5))
        [again] = await store.claim_deliveries("w", 1, 60, now + timedelta(seconds=10))
        assert again.body == body
        assert await store.complete_delivery("b-0001", "w", now + timedelta(seconds=20))
        assert wal_bytes(path) - recorded < len(body) // 10
    finally:
        await store.close()


async def version_5_database(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file as judge-bot left it at schema version 5, bodies in the deliveries rows."""
    await sqlite_file_at_version(path, 5, monkeypatch)
    micros = int(T0.timestamp() * 1_000_000)
    rows = [
        # delivery_id, body, status, attempts, lease_owner, lease_expires_at, last_error, finished
        ("old-pending", body_of(1, 29_000), "pending", 0, None, None, None, None),
        ("old-failed", body_of(2, 40_000), "failed", 5, "w0", None, "boom", micros + 9),
        ("old-leased", body_of(3, 0), "processing", 1, "w0", micros + 10, None, None),
        ("old-done", body_of(4, 100), "done", 1, "w0", None, None, micros + 8),
    ]
    with sqlite3.connect(path) as db:
        db.executemany(
            "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,"
            " body, status, attempts, received_at, next_attempt_at, lease_owner,"
            " lease_expires_at, last_error, finished_at)"
            " VALUES (?, 'push', NULL, 1, 'octo/old', ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (d, body, status, attempts, micros + n, micros + n, owner, expires, error, end)
                for n, (d, body, status, attempts, owner, expires, error, end) in enumerate(rows)
            ],
        )
    db.close()


async def test_a_version_5_database_keeps_every_delivery_and_body(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v5.sqlite3"
    await version_5_database(path, monkeypatch)
    store = SqliteStorage(str(path))
    await store.open()
    try:
        db = store._db
        columns = [row[1] for row in await db.execute_fetchall("PRAGMA table_info(deliveries)")]
        assert "body" not in columns
        indexes = await db.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries'"
            " AND name LIKE 'deliveries_%' ORDER BY name"
        )
        assert [row[0] for row in indexes] == ["deliveries_claim", "deliveries_received"]
        versions = await db.execute_fetchall("SELECT version FROM schema_version ORDER BY 1")
        assert [row[0] for row in versions] == [v for v, _ in sqlite_schema.MIGRATIONS]

        expected = {
            "old-pending": (DeliveryStatus.PENDING, body_of(1, 29_000)),
            "old-failed": (DeliveryStatus.FAILED, body_of(2, 40_000)),
            "old-leased": (DeliveryStatus.PROCESSING, body_of(3, 0)),
            "old-done": (DeliveryStatus.DONE, body_of(4, 100)),
        }
        listed = await store.list_deliveries()
        assert {d.delivery_id: (d.status, d.body) for d in listed} == expected
        failed = await store.get_delivery("old-failed")
        assert failed is not None and (failed.attempts, failed.last_error) == (5, "boom")

        # The pending one and the lapsed lease are claimable; the failed one once requeued.
        later = T0 + timedelta(minutes=5)
        claimed = await store.claim_deliveries("w1", 5, 60, later)
        assert [(d.delivery_id, d.body) for d in claimed] == [
            ("old-pending", body_of(1, 29_000)),
            ("old-leased", body_of(3, 0)),
        ]
        assert await store.requeue_failed("old-failed", later)
        [requeued] = await store.claim_deliveries("w1", 5, 60, later)
        assert (requeued.delivery_id, requeued.body) == ("old-failed", body_of(2, 40_000))
        # New deliveries go on beside the moved ones, and pruning takes the old bodies too.
        assert await store.record_delivery(delivery(9))
        assert await store.prune_deliveries(later) == 1
        assert len(await body_rows(store)) == 4
    finally:
        await store.close()


async def test_migration_6_run_again_over_its_own_work_changes_nothing(
    sqlite_storage: SqliteStorage,
) -> None:
    """A lost version row makes the migration run again; the body column is gone by then,
    and the bodies stay where they are."""
    assert await sqlite_storage.record_delivery(delivery(1))
    db = sqlite_storage._db
    await db.execute("DELETE FROM schema_version WHERE version = 6")
    await sqlite_schema.migrate(db)
    got = await sqlite_storage.get_delivery("b-0001")
    assert got is not None and got.body == body_of(1)
    assert len(await body_rows(sqlite_storage)) == 1

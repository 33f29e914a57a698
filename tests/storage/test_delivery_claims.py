"""Deliveries stored done at intake, and claims that cost the same whatever the history.

Run against SQLite and PostgreSQL like `test_storage.py`, whose claim contract (oldest first,
leases, limits, concurrent claimers) these add to."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bot.storage.base import DeliveryStatus, NewDelivery, Storage
from bot.storage.postgres import PostgresStorage
from bot.storage.postgres_deliveries import CLAIM_SQL as POSTGRES_CLAIM
from bot.storage.sqlite import SqliteStorage
from bot.storage.sqlite_deliveries import CLAIM_SQL as SQLITE_CLAIM
from bot.storage.sqlite_deliveries import DUE_SQL as SQLITE_DUE
from bot.storage.sqlite_schema import MIGRATIONS as SQLITE_MIGRATIONS
from tests.support.storage_fixtures import StorageBackend

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BODY = b'{"action":"submitted","padding":"' + b"x" * 20_000 + b'"}'


def delivery(n: int, **overrides: Any) -> NewDelivery:
    fields: dict[str, Any] = {
        "delivery_id": f"c-{n:05d}",
        "event": "pull_request_review",
        "action": "submitted",
        "installation_id": 42,
        "repository": "octo/repo",
        "body": BODY,
        "received_at": T0 + timedelta(seconds=n),
    }
    fields.update(overrides)
    return NewDelivery(**fields)


async def test_a_delivery_recorded_done_is_finished_and_never_claimed(storage: Storage) -> None:
    assert await storage.record_delivery(delivery(1, done=True)) is True
    stored = await storage.get_delivery("c-00001")
    assert stored is not None
    assert stored.status is DeliveryStatus.DONE
    assert stored.attempts == 0
    assert stored.finished_at == stored.received_at == T0 + timedelta(seconds=1)
    assert stored.lease_owner is None and stored.lease_expires_at is None
    assert stored.body == BODY
    assert await storage.claim_deliveries("w", 10, 30, T0 + timedelta(days=1)) == []
    # A redelivery is a duplicate whichever way the first copy was stored.
    assert await storage.record_delivery(delivery(1)) is False
    assert await storage.prune_deliveries(T0 + timedelta(seconds=2)) == 1


async def test_claims_take_pending_and_expired_leases_in_arrival_order(storage: Storage) -> None:
    """One claim order across both kinds of due delivery, the limit over both together."""
    for n in range(6):
        assert await storage.record_delivery(delivery(n))
    # A worker takes all six, gives 1, 3 and 5 back, and dies holding 0, 2 and 4.
    first = await storage.claim_deliveries("dead", 6, 60, T0 + timedelta(seconds=10))
    assert [d.delivery_id for d in first] == [f"c-{n:05d}" for n in range(6)]
    for n in (1, 3, 5):
        assert await storage.defer_delivery(f"c-{n:05d}", "dead", T0 + timedelta(seconds=20))
    later = T0 + timedelta(seconds=80)  # the dead worker's leases ran out at 70 s
    taken = await storage.claim_deliveries("alive", 4, 60, later)
    assert [d.delivery_id for d in taken] == [f"c-{n:05d}" for n in range(4)]
    assert {d.lease_owner for d in taken} == {"alive"}
    rest = await storage.claim_deliveries("alive", 4, 60, later)
    assert [d.delivery_id for d in rest] == ["c-00004", "c-00005"]


async def test_claims_skip_history_and_deliveries_not_yet_due(storage: Storage) -> None:
    """Finished deliveries older than every due one, and pending ones due later, are passed
    over; the oldest due one is taken."""
    for n in range(50):
        assert await storage.record_delivery(delivery(n, done=True))
    assert await storage.record_delivery(delivery(50))
    assert await storage.record_delivery(delivery(51))
    [claimed] = await storage.claim_deliveries("w", 1, 60, T0 + timedelta(seconds=60))
    assert await storage.release_delivery(
        claimed.delivery_id, "w", "boom", T0 + timedelta(hours=1), T0 + timedelta(seconds=60)
    )
    [next_due] = await storage.claim_deliveries("w", 5, 60, T0 + timedelta(seconds=60))
    assert (claimed.delivery_id, next_due.delivery_id) == ("c-00050", "c-00051")


async def test_claims_read_only_the_claim_index(storage_backend: StorageBackend) -> None:
    """The claim's plan walks deliveries_claim once per status, in claim order: no pass over
    the table (on SQLite a row's received_at lies behind its body's overflow pages), no walk
    past finished deliveries, and no sort but the last one, of at most twice the limit."""
    store = await storage_backend.opened()
    for n in range(20):
        assert await store.record_delivery(delivery(n, done=n < 10))
    if isinstance(store, SqliteStorage):
        params = {
            "processing": "processing",
            "pending": "pending",
            "worker": "w",
            "expires": 2,
            "now": 1,
            "limit": 1,
        }
        rows = await store._db.execute_fetchall(f"EXPLAIN QUERY PLAN {SQLITE_CLAIM}", params)
        plan = [str(row[-1]) for row in rows]
        walks = [line for line in plan if " deliveries " in f"{line} "]
        assert walks == [
            "SEARCH deliveries USING INTEGER PRIMARY KEY (rowid=?)",
            "SEARCH deliveries USING COVERING INDEX deliveries_claim (status=?)",
            "SEARCH deliveries USING COVERING INDEX deliveries_claim (status=?)",
        ], plan
        assert sum("TEMP B-TREE" in line for line in plan) == 1, plan
        # The look whether anything is due, before the write lock is taken: the same walks.
        rows = await store._db.execute_fetchall(f"EXPLAIN QUERY PLAN {SQLITE_DUE}", params)
        walks = [str(row[-1]) for row in rows if " deliveries " in f"{row[-1]} "]
        assert walks == [
            "SEARCH deliveries USING COVERING INDEX deliveries_claim (status=?)",
            "SEARCH deliveries USING COVERING INDEX deliveries_claim (status=?)",
        ], walks
    else:
        assert isinstance(store, PostgresStorage)
        async with store._db.acquire() as conn, conn.transaction():
            # A table this small is cheaper to scan; the question is what the index allows.
            await conn.execute("SET LOCAL enable_seqscan = off")
            rows = await conn.fetch(
                f"EXPLAIN {POSTGRES_CLAIM}", "processing", "w", T0, "pending", T0, 1
            )
        text = "\n".join(row[0] for row in rows)
        assert text.count("Index Scan using deliveries_claim") == 2, text
        assert text.count("Sort  (cost") == 1, text


async def test_a_version_1_sqlite_database_gets_the_claim_index(tmp_path: Path) -> None:
    """Migration 2 replaces the two claim indexes of version 1 and keeps every row."""
    path = tmp_path / "v1.sqlite3"
    first = SqliteStorage(str(path))
    await first.open()
    assert await first.record_delivery(delivery(1))
    db = first._db
    await db.execute("BEGIN IMMEDIATE")
    await db.execute("DROP INDEX deliveries_claim")
    await db.execute("CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)")
    await db.execute("CREATE INDEX deliveries_lease ON deliveries (status, lease_expires_at)")
    await db.execute("DELETE FROM schema_version WHERE version > 1")
    await db.commit()
    await first.close()

    reopened = SqliteStorage(str(path))
    await reopened.open()
    try:
        rows = await reopened._db.execute_fetchall(
            "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'deliveries'"
            " AND name LIKE 'deliveries_%' ORDER BY name"
        )
        assert [row[0] for row in rows] == ["deliveries_claim", "deliveries_received"]
        versions = await reopened._db.execute_fetchall("SELECT version FROM schema_version")
        assert [row[0] for row in versions] == [v for v, _ in SQLITE_MIGRATIONS]
        [claimed] = await reopened.claim_deliveries("w", 5, 30, T0 + timedelta(minutes=1))
        assert claimed.delivery_id == "c-00001"
    finally:
        await reopened.close()


async def test_a_claim_that_finds_nothing_due_takes_no_write_lock(tmp_path: Path) -> None:
    """Another connection holds the write lock: a claim with nothing due still answers
    (no BEGIN IMMEDIATE, which would wait for the lock and then fail)."""
    path = tmp_path / "locked.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        assert await store.record_delivery(delivery(1, done=True))
        assert await store.record_delivery(delivery(2, received_at=T0 + timedelta(hours=1)))
        holder = sqlite3.connect(path, isolation_level=None)
        try:
            holder.execute("PRAGMA busy_timeout = 0")
            holder.execute("BEGIN IMMEDIATE")
            assert await store.claim_deliveries("w", 5, 60, T0) == []
            holder.execute("ROLLBACK")
        finally:
            holder.close()
        [claimed] = await store.claim_deliveries("w", 5, 60, T0 + timedelta(hours=2))
        assert claimed.delivery_id == "c-00002"
    finally:
        await store.close()

"""SQLite stores delivery bodies lz4-compressed (schema migration 7, `body_codec`): on disk
the body is lz4's block format, every read returns the bytes received, rows written
before the migration read as they were, and an encoding this version does not know is
refused by name."""

from __future__ import annotations

import random
import sqlite3
from datetime import UTC, datetime, timedelta
from pathlib import Path

import lz4.block
import pytest

from bot.storage import sqlite_schema
from bot.storage.base import DeliveryStatus, NewDelivery
from bot.storage.body_codec import UnknownBodyCompression, decode_body
from bot.storage.sqlite import SqliteStorage
from tests.storage.test_body_codec import pull_request_body
from tests.support.storage_fixtures import sqlite_file_at_version

T0 = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)


def delivery(n: int, body: bytes) -> NewDelivery:
    return NewDelivery(
        delivery_id=f"z-{n:04d}",
        event="pull_request_review",
        action="submitted",
        installation_id=7,
        repository="octo/zipped",
        body=body,
        received_at=T0 + timedelta(seconds=n),
    )


def stored_rows(path: Path) -> dict[str, tuple[bytes, str | None]]:
    """Each delivery's body row as it is on disk, read by a connection of its own."""
    with sqlite3.connect(path) as db:
        rows = db.execute(
            "SELECT d.delivery_id, b.body, b.compression"
            " FROM deliveries d JOIN delivery_bodies b USING (seq)"
        ).fetchall()
    db.close()
    return {delivery_id: (bytes(body), compression) for delivery_id, body, compression in rows}


async def test_a_body_is_stored_compressed(tmp_path: Path) -> None:
    path = tmp_path / "z.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        body = pull_request_body(29_568)
        assert await store.record_delivery(delivery(1, body))
    finally:
        await store.close()
    [(blob, compression)] = stored_rows(path).values()
    assert compression == "lz4"
    assert len(blob) < len(body) // 3
    assert lz4.block.decompress(blob) == body


BODIES = {
    "z-0001": pull_request_body(3_000_000),
    "z-0002": '{"body": "Grüße, 世界 🚀"}'.encode() * 200 + b"\xff\xfe",
    "z-0003": random.Random(3).randbytes(29_568),
    "z-0004": b"{}",
}


async def test_every_read_returns_the_bytes_received(tmp_path: Path) -> None:
    """A 3 MB body, non-ASCII and invalid UTF-8, random bytes (stored as received: lz4
    would not shrink them), a body of two bytes: get, list and claim return each exactly."""
    path = tmp_path / "z.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        for n, body in enumerate(BODIES.values(), start=1):
            assert await store.record_delivery(delivery(n, body))
        for delivery_id, body in BODIES.items():
            got = await store.get_delivery(delivery_id)
            assert got is not None and got.body == body
        listed = await store.list_deliveries(DeliveryStatus.PENDING)
        assert {d.delivery_id: d.body for d in listed} == BODIES
        claimed = await store.claim_deliveries("w", 10, 60, LATER)
        assert {d.delivery_id: d.body for d in claimed} == BODIES
    finally:
        await store.close()
    on_disk = stored_rows(path)
    assert {d: compression for d, (_, compression) in on_disk.items()} == {
        "z-0001": "lz4",
        "z-0002": "lz4",
        "z-0003": None,
        "z-0004": None,
    }
    assert on_disk["z-0003"][0] == BODIES["z-0003"]


async def version_6_database(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file as judge-bot left it at schema version 6: bodies in delivery_bodies, raw."""
    await sqlite_file_at_version(path, 6, monkeypatch)
    micros = int(T0.timestamp() * 1_000_000)
    with sqlite3.connect(path) as db:
        for seq, (delivery_id, body) in enumerate(BODIES.items(), start=1):
            db.execute(
                "INSERT INTO deliveries (seq, delivery_id, event, status, received_at,"
                " next_attempt_at) VALUES (?, ?, 'push', 'pending', ?, ?)",
                (seq, delivery_id, micros + seq, micros + seq),
            )
            db.execute("INSERT INTO delivery_bodies (seq, body) VALUES (?, ?)", (seq, body))
    db.close()


async def test_a_version_6_database_reads_its_raw_bodies_unchanged(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v6.sqlite3"
    await version_6_database(path, monkeypatch)
    store = SqliteStorage(str(path))
    await store.open()
    try:
        versions = await store._db.execute_fetchall("SELECT version FROM schema_version")
        assert [row[0] for row in versions] == [v for v, _ in sqlite_schema.MIGRATIONS]
        for delivery_id, body in BODIES.items():
            got = await store.get_delivery(delivery_id)
            assert got is not None and got.body == body
        claimed = await store.claim_deliveries("w", 10, 60, LATER)
        assert {d.delivery_id: d.body for d in claimed} == BODIES
        # New deliveries beside them are compressed.
        assert await store.record_delivery(delivery(9, pull_request_body(29_568)))
    finally:
        await store.close()
    on_disk = stored_rows(path)
    assert {d: row for d, row in on_disk.items() if d != "z-0009"} == {
        d: (body, None) for d, body in BODIES.items()
    }
    assert on_disk["z-0009"][1] == "lz4"


async def test_migration_7_run_again_over_its_own_work_changes_nothing(
    sqlite_storage: SqliteStorage,
) -> None:
    body = pull_request_body(29_568)
    assert await sqlite_storage.record_delivery(delivery(1, body))
    await sqlite_storage._execute("DELETE FROM schema_version WHERE version = 7")
    await sqlite_schema.migrate(sqlite_storage._db)
    got = await sqlite_storage.get_delivery("z-0001")
    assert got is not None and got.body == body


async def test_a_body_in_an_unknown_encoding_is_refused_by_name(
    sqlite_storage: SqliteStorage,
) -> None:
    """A database written by a newer version: the body is refused by name, and the row is
    still read, with an empty body, so that it can be listed and retried."""
    assert await sqlite_storage.record_delivery(delivery(1, pull_request_body(29_568)))
    [(stored, _)] = await sqlite_storage._db.execute_fetchall(
        "SELECT body, compression FROM delivery_bodies"
    )
    with pytest.raises(UnknownBodyCompression, match="'zstd'"):
        decode_body(stored, "zstd")
    await sqlite_storage._execute("UPDATE delivery_bodies SET compression = 'zstd'")
    got = await sqlite_storage.get_delivery("z-0001")
    assert got is not None and (got.delivery_id, got.body) == ("z-0001", b"")
    [listed] = await sqlite_storage.list_deliveries()
    assert (listed.delivery_id, listed.status, listed.body) == (
        "z-0001",
        DeliveryStatus.PENDING,
        b"",
    )


async def statuses(store: SqliteStorage) -> dict[str, tuple[object, ...]]:
    rows = await store._db.execute_fetchall(
        "SELECT delivery_id, status, attempts, lease_expires_at, last_error FROM deliveries"
    )
    return {row[0]: tuple(row[1:]) for row in rows}


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        ("UPDATE delivery_bodies SET compression = 'zstd' WHERE seq = 1", "'zstd'"),
        ("UPDATE delivery_bodies SET body = substr(body, 1, 100) WHERE seq = 1", "lz4"),
    ],
    ids=["newer encoding", "damaged block"],
)
async def test_an_unreadable_body_is_parked_and_the_queue_moves_on(
    sqlite_storage: SqliteStorage,
    caplog: pytest.LogCaptureFixture,
    damage: str,
    reason: str,
) -> None:
    """Claims take the oldest due delivery first. A claim rolled back for an unreadable body
    took the same row again every time, and no delivery behind it was ever processed: the
    row is failed in the claim's own transaction, with the reason, and the next is handed
    over. `requeue_failed` (retry, Redeliver) queues it again."""
    body = pull_request_body(29_568)
    for n in (1, 2):
        assert await sqlite_storage.record_delivery(delivery(n, body))
    await sqlite_storage._execute(damage)

    [first] = await sqlite_storage.claim_deliveries("w", 1, 60, LATER)
    assert (first.delivery_id, first.body) == ("z-0002", body)
    rows = await statuses(sqlite_storage)
    status, attempts, lease_expires, error = rows["z-0001"]
    assert (status, attempts, lease_expires) == ("failed", 1, None)
    assert isinstance(error, str) and reason in error
    assert rows["z-0002"][:2] == ("processing", 1)
    assert [r.getMessage() for r in caplog.records if r.levelname == "ERROR"] == [
        f"delivery parked as failed: {error}"
    ]
    # Nothing else is due: the parked row is not claimed again.
    assert await sqlite_storage.claim_deliveries("w", 10, 60, LATER) == []

    assert await sqlite_storage.requeue_failed("z-0001", LATER)
    assert await sqlite_storage.claim_deliveries("w", 10, 60, LATER) == []
    assert (await statuses(sqlite_storage))["z-0001"][:2] == ("failed", 1)


async def test_a_claim_of_only_readable_bodies_parks_nothing(
    sqlite_storage: SqliteStorage,
) -> None:
    for n in (1, 2, 3):
        assert await sqlite_storage.record_delivery(delivery(n, pull_request_body(2_000)))
    claimed = await sqlite_storage.claim_deliveries("w", 10, 60, LATER)
    assert [d.delivery_id for d in claimed] == ["z-0001", "z-0002", "z-0003"]
    assert {row[0] for row in (await statuses(sqlite_storage)).values()} == {"processing"}

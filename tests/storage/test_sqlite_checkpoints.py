"""The SQLite store's background checkpoints and closing the store while one runs.

A checkpoint runs in a thread; cancelling the await does not stop it. Closing its connection
from another thread meanwhile crashed the process (pytest segfaulted in `_checkpoint`)."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
from pathlib import Path

import pytest

from bot.storage import sqlite_connection
from bot.storage.sqlite import SqliteStorage
from bot.storage.sqlite_connection import QUIET_PASS_AFTER_FRAMES, AfterPassive, after_passive
from tests.support.delivery_helpers import new_delivery


async def test_close_waits_for_the_checkpoint_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entered = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []
    real_checkpoint = sqlite_connection._checkpoint

    def held_checkpoint(connection: sqlite3.Connection) -> None:
        entered.set()
        release.wait(10)
        try:
            real_checkpoint(connection)  # on a connection closed meanwhile: error or crash
        except BaseException as exc:
            errors.append(exc)
            raise

    monkeypatch.setattr(sqlite_connection, "_checkpoint", held_checkpoint)
    monkeypatch.setattr(sqlite_connection, "CHECKPOINT_SECONDS", 0.01)
    store = SqliteStorage(str(tmp_path / "held.sqlite3"))
    await store.open()
    try:
        assert await store.record_delivery(new_delivery("c-1"))
        assert await asyncio.to_thread(entered.wait, 10)
        closing = asyncio.create_task(store.close())
        await asyncio.sleep(0.1)
        assert not closing.done(), "close must wait for the checkpoint in progress"
    finally:
        release.set()
    async with asyncio.timeout(10):
        await closing
    assert errors == []
    assert await store.ping() is False


async def test_closing_during_checkpoints_again_and_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Checkpoints back to back, with WAL to copy, and the store closed among them: a close
    lands inside a running checkpoint many times over, and nothing fails."""
    monkeypatch.setattr(sqlite_connection, "CHECKPOINT_SECONDS", 0)
    path = tmp_path / "busy.sqlite3"
    padding = "x" * 20_000
    with caplog.at_level(logging.WARNING, logger="bot.storage.sqlite"):
        for round_ in range(30):
            store = SqliteStorage(str(path))
            await store.open()
            for n in range(5):
                await store.record_delivery(new_delivery(f"r{round_}-{n}", padding=padding))
            await asyncio.sleep(0.002 * (round_ % 5))
            await store.close()
    assert [r.getMessage() for r in caplog.records] == []
    reopened = SqliteStorage(str(path))
    await reopened.open()
    try:
        assert sum((await reopened.count_deliveries()).values()) == 150
    finally:
        await reopened.close()


# -- the WAL's size --------------------------------------------------------------------


def wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@pytest.mark.parametrize(
    ("frames", "previous", "step"),
    [
        (100, None, AfterPassive.DONE),  # small enough: the next idle moment resets it
        (101, None, AfterPassive.AGAIN),  # large: the first pass copied the bulk
        (5000, 1000, AfterPassive.AGAIN),  # writers added a lot during that pass
        (5000, 5000 - QUIET_PASS_AFTER_FRAMES, AfterPassive.QUIET),  # a short pass
        (5000, 4999, AfterPassive.QUIET),
        (5000, 5000, AfterPassive.DONE),  # nothing writing: the next write resets it
        (50, 5000, AfterPassive.DONE),  # it was reset meanwhile
    ],
)
def test_after_a_passive_pass(frames: int, previous: int | None, step: AfterPassive) -> None:
    assert after_passive(frames, previous, catch_up_frames=100) is step


async def test_the_wal_starts_over_during_a_sustained_write_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Writes back to back, never a pause for a PASSIVE checkpoint to catch up: the WAL still
    starts over now and then (it grew by everything written before), and once the load
    stops it is truncated back to the limit."""
    limit = 2**20
    monkeypatch.setattr(sqlite_connection, "CHECKPOINT_SECONDS", 0.02)
    monkeypatch.setattr(sqlite_connection, "JOURNAL_SIZE_LIMIT_BYTES", limit)
    monkeypatch.setattr(sqlite_connection, "CATCH_UP_PAST_BYTES", limit // 2)
    path = tmp_path / "load.sqlite3"
    store = SqliteStorage(str(path))
    await store.open()
    try:
        padding = "x" * 20_000
        written, largest = 0, 0
        while written < 48 * 2**20:
            batch = [new_delivery(f"l-{written}-{n}", padding=padding) for n in range(8)]
            assert all(await asyncio.gather(*(store.record_delivery(d) for d in batch)))
            written += sum(len(d.body) for d in batch)
            largest = max(largest, wal_size(path))
        assert largest < written // 2, (largest, written)
        async with asyncio.timeout(10):
            while True:
                await asyncio.sleep(0.05)
                await store.kv_put("after", "load", {"written": written})
                if wal_size(path) <= limit:
                    break
    finally:
        await store.close()


async def test_the_store_limits_the_wal_file(sqlite_storage: SqliteStorage) -> None:
    [(limit,)] = await sqlite_storage._db.execute_fetchall("PRAGMA journal_size_limit")
    assert limit == sqlite_connection.JOURNAL_SIZE_LIMIT_BYTES

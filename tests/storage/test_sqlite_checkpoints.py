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

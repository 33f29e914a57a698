"""Storage fixtures: every test taking `storage` runs on SQLite and on PostgreSQL.

SQLite uses a file in tmp_path. PostgreSQL uses JUDGE_TEST_POSTGRES_URL with a
fresh schema per test, dropped afterwards, so tests never see each other's rows.
`storage_backend` hands out further stores on the same file or schema, for tests
about reopening or about several replicas claiming at once.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import pytest

from bot.storage import sqlite_schema
from bot.storage._inline_sqlite import connect as connect_inline
from bot.storage.base import Storage
from bot.storage.postgres import PostgresStorage, quote_ident
from bot.storage.sqlite import SqliteStorage

POSTGRES_URL_ENV = "JUDGE_TEST_POSTGRES_URL"


class StorageBackend:
    """Makes unopened stores that all point at one database; closes them at teardown."""

    def __init__(self, name: str, *, sqlite_path: Path | None = None, pg: str = "") -> None:
        self.name = name
        self._sqlite_path = sqlite_path
        self._pg_url = pg
        self.schema = f"judge_test_{uuid.uuid4().hex}"
        self._made: list[Storage] = []

    def new(self) -> Storage:
        store: Storage
        if self._sqlite_path is not None:
            store = SqliteStorage(str(self._sqlite_path))
        else:
            store = PostgresStorage(self._pg_url, schema=self.schema, min_size=1, max_size=5)
        self._made.append(store)
        return store

    async def opened(self) -> Storage:
        store = self.new()
        await store.open()
        return store

    async def teardown(self) -> None:
        for store in self._made:
            await store.close()
        if self._sqlite_path is None:
            conn = await asyncpg.connect(self._pg_url)
            try:
                await conn.execute(f"DROP SCHEMA IF EXISTS {quote_ident(self.schema)} CASCADE")
            finally:
                await conn.close()


def _postgres_backend() -> StorageBackend:
    url = os.environ.get(POSTGRES_URL_ENV)
    if not url:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set: PostgreSQL backend not tested")
    return StorageBackend("postgres", pg=url)


@pytest.fixture(params=["sqlite", "postgres"])
async def storage_backend(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[StorageBackend]:
    if request.param == "sqlite":
        backend = StorageBackend("sqlite", sqlite_path=tmp_path / "judge.db")
    else:
        backend = _postgres_backend()
    try:
        yield backend
    finally:
        await backend.teardown()


@pytest.fixture
async def postgres_backend() -> AsyncIterator[StorageBackend]:
    """`storage_backend` on PostgreSQL only, for what only PostgreSQL does."""
    backend = _postgres_backend()
    try:
        yield backend
    finally:
        await backend.teardown()


@pytest.fixture
async def storage(storage_backend: StorageBackend) -> Storage:
    """An opened store; closed (and its schema dropped) by `storage_backend`."""
    return await storage_backend.opened()


@pytest.fixture
async def sqlite_storage(tmp_path: Path) -> AsyncIterator[SqliteStorage]:
    store = SqliteStorage(str(tmp_path / "judge.db"))
    await store.open()
    try:
        yield store
    finally:
        await store.close()


async def sqlite_file_at_version(path: Path, version: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A SQLite file with the schema as judge-bot left it at `version` (the migrations up to
    it applied, none after), for tests of upgrading an existing database."""
    with monkeypatch.context() as patch:
        patch.setattr(sqlite_schema, "MIGRATIONS", sqlite_schema.MIGRATIONS[:version])
        conn = await connect_inline(str(path))
        try:
            await sqlite_schema.migrate(conn)
        finally:
            await conn.close()

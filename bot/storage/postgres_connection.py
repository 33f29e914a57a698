"""The PostgreSQL store's connection pool: opening it, its settings, and access to it.

Every pooled connection decodes jsonb to Python objects itself, so the table
mixins (`postgres_deliveries`, and those written once for both backends, see `sql`)
read documents straight from rows. They build on `PostgresConnectionBase` and reach the
database through its `_db` pool, or its executors.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Final, cast

import asyncpg

from bot.storage._codec import load_json, require_utc
from bot.storage.postgres_schema import migrate
from bot.storage.sql import Executor, Row, Sql, SqlStore, Transaction

PING_TIMEOUT_SECONDS: Final = 5.0


def quote_ident(name: str) -> str:
    """A safely quoted SQL identifier (schema names come from configuration)."""
    if not name or "\x00" in name:
        raise ValueError(f"invalid schema name {name!r}")
    return '"' + name.replace('"', '""') + '"'


def changed_rows(command_status: str) -> int:
    """Row count from a command tag such as 'INSERT 0 1' or 'UPDATE 3'."""
    return int(command_status.rsplit(" ", 1)[-1])


def _encode_jsonb(value: object) -> str:
    # Callers serialise with dump_json first, so invalid documents raise a plain
    # ValueError/TypeError there rather than asyncpg's DataError here.
    if not isinstance(value, str):
        raise TypeError("jsonb parameters must be passed as text produced by dump_json")
    return value


async def _init_connection(conn: asyncpg.Connection) -> None:
    await conn.set_type_codec(
        "jsonb", encoder=_encode_jsonb, decoder=load_json, schema="pg_catalog", format="text"
    )


class PostgresValues:
    """Values as asyncpg gives and takes them: aware datetimes for timestamptz, booleans,
    jsonb decoded by the connection (`_init_connection`)."""

    @staticmethod
    def time(value: datetime) -> datetime:
        return require_utc(value)

    @staticmethod
    def time_of(value: Any) -> datetime:
        return cast(datetime, value)

    @staticmethod
    def optional_time_of(value: Any) -> datetime | None:
        return value if isinstance(value, datetime) else None

    @staticmethod
    def flag(value: bool) -> bool:
        return value

    @staticmethod
    def document_of(value: Any) -> dict[str, Any]:
        return cast(dict[str, Any], value)


class PostgresExecutor(PostgresValues):
    """`Executor` on the pool (a statement on its own) or on one connection (inside its
    transaction)."""

    def __init__(self, db: asyncpg.Pool | asyncpg.Connection) -> None:
        self._db = db

    async def run(self, statement: Sql, /, **params: Any) -> int:
        return changed_rows(await self._db.execute(statement.postgres, *statement.args(params)))

    async def rows(self, statement: Sql, /, **params: Any) -> list[Row]:
        return list(await self._db.fetch(statement.postgres, *statement.args(params)))

    async def row(self, statement: Sql, /, **params: Any) -> Row | None:
        row: Row | None = await self._db.fetchrow(statement.postgres, *statement.args(params))
        return row

    async def many(self, statement: Sql, params: Iterable[Mapping[str, Any]], /) -> None:
        await self._db.executemany(statement.postgres, [statement.args(p) for p in params])


class PostgresConnectionBase(SqlStore):
    """Owns the pool; the table mixins add the `Storage` methods."""

    _unique_violation: tuple[type[Exception], ...] = (asyncpg.UniqueViolationError,)
    _values = PostgresValues()

    def __init__(
        self,
        dsn: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
    ) -> None:
        self._dsn = dsn
        self._schema = schema
        self._min_size = min_size
        self._max_size = max_size
        self._pool: asyncpg.Pool | None = None

    # -- lifecycle ---------------------------------------------------------
    async def open(self) -> None:
        if self._pool is not None:
            return
        server_settings: dict[str, str] = {"application_name": "judge-bot"}
        if self._schema is not None:
            quoted = quote_ident(self._schema)
            conn = await asyncpg.connect(self._dsn)
            try:
                await conn.execute(f"CREATE SCHEMA IF NOT EXISTS {quoted}")
            except asyncpg.UniqueViolationError:
                # Another replica created it between the existence check and ours.
                pass
            finally:
                await conn.close()
            server_settings["search_path"] = quoted
        pool = await asyncpg.create_pool(
            self._dsn,
            min_size=self._min_size,
            max_size=self._max_size,
            server_settings=server_settings,
            init=_init_connection,
        )
        try:
            await migrate(pool)
        except BaseException:
            await pool.close()
            raise
        self._pool = pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    async def ping(self) -> bool:
        if self._pool is None:
            return False
        try:
            # The timeout covers waiting for a free pool connection too.
            async with asyncio.timeout(PING_TIMEOUT_SECONDS):
                value = await self._pool.fetchval("SELECT 1")
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, TimeoutError):
            return False
        return bool(value == 1)

    # -- access for the table mixins -----------------------------------------
    @property
    def _db(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("PostgresStorage is not open; call open() first")
        return self._pool

    @property
    def _sql(self) -> Executor:
        return PostgresExecutor(self._db)

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Transaction]:
        async with self._db.acquire() as conn, conn.transaction():
            yield PostgresExecutor(conn)

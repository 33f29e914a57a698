"""The PostgreSQL store's connection pool: opening it, its settings, and access to it.

Every pooled connection decodes jsonb to Python objects itself, so the table
mixins (`postgres_deliveries`, `postgres_keyed`, `postgres_ledger`) read documents
straight from rows. They build on `PostgresConnectionBase` and reach the database
through its `_db` pool.
"""

from __future__ import annotations

import asyncio
from typing import Final

import asyncpg

from bot.storage._codec import load_json
from bot.storage.postgres_schema import migrate

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


class PostgresConnectionBase:
    """Owns the pool; the table mixins add the `Storage` methods."""

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

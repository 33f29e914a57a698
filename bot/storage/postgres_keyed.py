"""PostgreSQL tables whose rows are replaced in place by key: installations and kv.

Installations (with their repository lists) and the small keyed state both hold
the latest value only: writes upsert or delete, reads look one key up.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import asyncpg

from bot.storage._codec import dump_json, require_utc
from bot.storage.base import Installation
from bot.storage.postgres_connection import PostgresConnectionBase, changed_rows

_INSTALLATION_COLUMNS: Final = (
    "installation_id, account, account_type, repository_selection, suspended, updated_at"
)


def _installation(row: asyncpg.Record) -> Installation:
    return Installation(
        installation_id=row["installation_id"],
        account=row["account"],
        account_type=row["account_type"],
        repository_selection=row["repository_selection"],
        suspended=row["suspended"],
        updated_at=row["updated_at"],
    )


class PostgresKeyedTables(PostgresConnectionBase):
    """The `Storage` installation and kv methods."""

    # -- installations -------------------------------------------------------
    async def upsert_installation(self, installation: Installation) -> None:
        await self._db.execute(
            f"INSERT INTO installations ({_INSTALLATION_COLUMNS})"
            " VALUES ($1, $2, $3, $4, $5, $6)"
            " ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account,"
            " account_type = excluded.account_type,"
            " repository_selection = excluded.repository_selection,"
            " suspended = excluded.suspended, updated_at = excluded.updated_at",
            installation.installation_id,
            installation.account,
            installation.account_type,
            installation.repository_selection,
            installation.suspended,
            require_utc(installation.updated_at),
        )

    async def delete_installation(self, installation_id: int) -> None:
        async with self._db.acquire() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM installation_repositories WHERE installation_id = $1",
                installation_id,
            )
            await conn.execute(
                "DELETE FROM installations WHERE installation_id = $1", installation_id
            )

    async def get_installation(self, installation_id: int) -> Installation | None:
        row = await self._db.fetchrow(
            f"SELECT {_INSTALLATION_COLUMNS} FROM installations WHERE installation_id = $1",
            installation_id,
        )
        return None if row is None else _installation(row)

    async def list_installations(self) -> list[Installation]:
        rows = await self._db.fetch(
            f"SELECT {_INSTALLATION_COLUMNS} FROM installations ORDER BY installation_id"
        )
        return [_installation(row) for row in rows]

    async def update_installation_repositories(
        self, installation_id: int, added: Sequence[str], removed: Sequence[str]
    ) -> None:
        # Removals run last, so a name in both lists ends up removed.
        async with self._db.acquire() as conn, conn.transaction():
            await conn.execute(
                "INSERT INTO installation_repositories (installation_id, full_name)"
                " SELECT $1, name FROM unnest($2::text[]) AS name"
                " ON CONFLICT DO NOTHING",
                installation_id,
                list(added),
            )
            await conn.execute(
                "DELETE FROM installation_repositories"
                " WHERE installation_id = $1 AND full_name = ANY($2::text[])",
                installation_id,
                list(removed),
            )

    async def list_installation_repositories(self, installation_id: int) -> list[str]:
        # COLLATE "C" sorts by code point, the same order SQLite and Python use.
        rows = await self._db.fetch(
            "SELECT full_name FROM installation_repositories WHERE installation_id = $1"
            ' ORDER BY full_name COLLATE "C"',
            installation_id,
        )
        return [row["full_name"] for row in rows]

    # -- small keyed state ---------------------------------------------------
    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None:
        value: dict[str, Any] | None = await self._db.fetchval(
            "SELECT value FROM kv WHERE namespace = $1 AND key = $2", namespace, key
        )
        return value

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        await self._db.execute(
            "INSERT INTO kv (namespace, key, value) VALUES ($1, $2, $3)"
            " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
            namespace,
            key,
            dump_json(value),
        )

    async def kv_put_if_absent(self, namespace: str, key: str, value: dict[str, Any]) -> bool:
        status = await self._db.execute(
            "INSERT INTO kv (namespace, key, value) VALUES ($1, $2, $3)"
            " ON CONFLICT (namespace, key) DO NOTHING",
            namespace,
            key,
            dump_json(value),
        )
        return changed_rows(status) == 1

    async def kv_delete(self, namespace: str, key: str) -> None:
        await self._db.execute("DELETE FROM kv WHERE namespace = $1 AND key = $2", namespace, key)

    async def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        # left(), not LIKE: a prefix may hold % or _. COLLATE "C": code point order, as
        # SQLite sorts.
        rows = await self._db.fetch(
            "SELECT key, value FROM kv WHERE namespace = $1 AND left(key, $2) = $3"
            ' ORDER BY key COLLATE "C"',
            namespace,
            len(prefix),
            prefix,
        )
        return [(row["key"], row["value"]) for row in rows]

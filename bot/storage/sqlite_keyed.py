"""SQLite tables whose rows are replaced in place by key: installations and kv.

Installations (with their repository lists) and the small keyed state both hold
the latest value only: writes upsert or delete, reads look one key up.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from bot.storage._codec import dump_json, from_micros, load_json, to_micros
from bot.storage.base import Installation
from bot.storage.sqlite_connection import SqliteConnectionBase


def _installation(row: sqlite3.Row | tuple[Any, ...]) -> Installation:
    return Installation(
        installation_id=row[0],
        account=row[1],
        account_type=row[2],
        repository_selection=row[3],
        suspended=bool(row[4]),
        updated_at=from_micros(row[5]),
    )


class SqliteKeyedTables(SqliteConnectionBase):
    """The `Storage` installation and kv methods."""

    # -- installations -------------------------------------------------------
    async def upsert_installation(self, installation: Installation) -> None:
        await self._execute(
            "INSERT INTO installations (installation_id, account, account_type,"
            " repository_selection, suspended, updated_at) VALUES (?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account,"
            " account_type = excluded.account_type,"
            " repository_selection = excluded.repository_selection,"
            " suspended = excluded.suspended, updated_at = excluded.updated_at",
            (
                installation.installation_id,
                installation.account,
                installation.account_type,
                installation.repository_selection,
                int(installation.suspended),
                to_micros(installation.updated_at),
            ),
        )

    async def delete_installation(self, installation_id: int) -> None:
        async with self._write_transaction() as db:
            await db.execute(
                "DELETE FROM installation_repositories WHERE installation_id = ?",
                (installation_id,),
            )
            await db.execute(
                "DELETE FROM installations WHERE installation_id = ?", (installation_id,)
            )

    async def get_installation(self, installation_id: int) -> Installation | None:
        rows = await self._fetchall(
            "SELECT installation_id, account, account_type, repository_selection, suspended,"
            " updated_at FROM installations WHERE installation_id = ?",
            (installation_id,),
        )
        return _installation(rows[0]) if rows else None

    async def list_installations(self) -> list[Installation]:
        rows = await self._fetchall(
            "SELECT installation_id, account, account_type, repository_selection, suspended,"
            " updated_at FROM installations ORDER BY installation_id"
        )
        return [_installation(row) for row in rows]

    async def update_installation_repositories(
        self, installation_id: int, added: Sequence[str], removed: Sequence[str]
    ) -> None:
        # Removals run last, so a name in both lists ends up removed.
        async with self._write_transaction() as db:
            await db.executemany(
                "INSERT INTO installation_repositories (installation_id, full_name)"
                " VALUES (?, ?) ON CONFLICT DO NOTHING",
                [(installation_id, name) for name in added],
            )
            await db.executemany(
                "DELETE FROM installation_repositories WHERE installation_id = ? AND full_name = ?",
                [(installation_id, name) for name in removed],
            )

    async def list_installation_repositories(self, installation_id: int) -> list[str]:
        rows = await self._fetchall(
            "SELECT full_name FROM installation_repositories WHERE installation_id = ?"
            " ORDER BY full_name",
            (installation_id,),
        )
        return [row[0] for row in rows]

    # -- small keyed state ---------------------------------------------------
    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None:
        rows = await self._fetchall(
            "SELECT value FROM kv WHERE namespace = ? AND key = ?", (namespace, key)
        )
        return load_json(rows[0][0]) if rows else None

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        await self._execute(
            "INSERT INTO kv (namespace, key, value) VALUES (?, ?, ?)"
            " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value",
            (namespace, key, dump_json(value)),
        )

    async def kv_put_if_absent(self, namespace: str, key: str, value: dict[str, Any]) -> bool:
        changed = await self._execute(
            "INSERT INTO kv (namespace, key, value) VALUES (?, ?, ?)"
            " ON CONFLICT (namespace, key) DO NOTHING",
            (namespace, key, dump_json(value)),
        )
        return changed == 1

    async def kv_delete(self, namespace: str, key: str) -> None:
        await self._execute("DELETE FROM kv WHERE namespace = ? AND key = ?", (namespace, key))

    async def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        # substr, not LIKE: a prefix may hold % or _; SQLite compares text bytewise, which
        # for UTF-8 is code point order.
        rows = await self._fetchall(
            "SELECT key, value FROM kv WHERE namespace = ? AND substr(key, 1, ?) = ? ORDER BY key",
            (namespace, len(prefix), prefix),
        )
        return [(row[0], load_json(row[1])) for row in rows]

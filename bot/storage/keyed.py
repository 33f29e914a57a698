"""Tables whose rows are replaced in place by key: installations and kv (both backends).

Installations and the small keyed state both hold the latest value only: writes upsert or
delete, reads look one key up.

Listings sort by code point, as Python does: SQLite compares text bytewise (code point
order for UTF-8), PostgreSQL needs COLLATE "C" for it. A kv prefix is compared with
substr/left, not LIKE, since it may hold % or _.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Final

from bot.storage._codec import dump_json
from bot.storage.base import Installation
from bot.storage.sql import Executor, Row, Sql, SqlStore

_INSTALLATION_COLUMNS: Final = (
    "installation_id, account, account_type, repository_selection, suspended, updated_at"
)
UPSERT_INSTALLATION: Final = Sql(
    f"INSERT INTO installations ({_INSTALLATION_COLUMNS})"
    " VALUES (:id, :account, :account_type, :selection, :suspended, :updated_at)"
    " ON CONFLICT (installation_id) DO UPDATE SET account = excluded.account,"
    " account_type = excluded.account_type,"
    " repository_selection = excluded.repository_selection,"
    " suspended = excluded.suspended, updated_at = excluded.updated_at"
)
# Earlier versions kept each installation's repository names in `installation_repositories`
# (nothing read them, and a rename left them stale): forgetting an installation still
# forgets what they kept of it.
DELETE_REPOSITORIES: Final = Sql(
    "DELETE FROM installation_repositories WHERE installation_id = :id"
)
DELETE_INSTALLATION: Final = Sql("DELETE FROM installations WHERE installation_id = :id")
GET_INSTALLATION: Final = Sql(
    f"SELECT {_INSTALLATION_COLUMNS} FROM installations WHERE installation_id = :id"
)

# One row, rewritten by `write_probe`: /healthz's proof that writes work again.
PROBE_NAMESPACE: Final = "storage-write-probe"
KV_GET: Final = Sql("SELECT value FROM kv WHERE namespace = :namespace AND key = :key")
KV_PUT: Final = Sql(
    "INSERT INTO kv (namespace, key, value) VALUES (:namespace, :key, :value)"
    " ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value"
)
KV_PUT_IF_ABSENT: Final = Sql(
    "INSERT INTO kv (namespace, key, value) VALUES (:namespace, :key, :value)"
    " ON CONFLICT (namespace, key) DO NOTHING"
)
KV_DELETE: Final = Sql("DELETE FROM kv WHERE namespace = :namespace AND key = :key")
KV_LIST: Final = Sql(
    "SELECT key, value FROM kv WHERE namespace = :namespace"
    " AND substr(key, 1, :length) = :prefix ORDER BY key",
    postgres="SELECT key, value FROM kv WHERE namespace = :namespace"
    ' AND left(key, :length) = :prefix ORDER BY key COLLATE "C"',
)


def _installation(db: Executor, row: Row) -> Installation:
    return Installation(
        installation_id=row[0],
        account=row[1],
        account_type=row[2],
        repository_selection=row[3],
        suspended=bool(row[4]),
        updated_at=db.time_of(row[5]),
    )


class KeyedTables(SqlStore):
    """The `Storage` installation and kv methods."""

    # -- installations -------------------------------------------------------
    async def upsert_installation(self, installation: Installation) -> None:
        db = self._sql
        await db.run(
            UPSERT_INSTALLATION,
            id=installation.installation_id,
            account=installation.account,
            account_type=installation.account_type,
            selection=installation.repository_selection,
            suspended=db.flag(installation.suspended),
            updated_at=db.time(installation.updated_at),
        )

    async def delete_installation(self, installation_id: int) -> None:
        async with self._transaction() as db:
            await db.run(DELETE_REPOSITORIES, id=installation_id)
            await db.run(DELETE_INSTALLATION, id=installation_id)

    async def get_installation(self, installation_id: int) -> Installation | None:
        db = self._sql
        row = await db.row(GET_INSTALLATION, id=installation_id)
        return None if row is None else _installation(db, row)

    # -- small keyed state ---------------------------------------------------
    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None:
        db = self._sql
        row = await db.row(KV_GET, namespace=namespace, key=key)
        return None if row is None else db.document_of(row[0])

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None:
        await self._sql.run(KV_PUT, namespace=namespace, key=key, value=dump_json(value))

    async def kv_put_if_absent(self, namespace: str, key: str, value: dict[str, Any]) -> bool:
        changed = await self._sql.run(
            KV_PUT_IF_ABSENT, namespace=namespace, key=key, value=dump_json(value)
        )
        return changed == 1

    async def kv_delete(self, namespace: str, key: str) -> None:
        await self._sql.run(KV_DELETE, namespace=namespace, key=key)

    async def write_probe(self, now: datetime) -> None:
        await self._sql.run(
            KV_PUT, namespace=PROBE_NAMESPACE, key="write", value=dump_json({"at": now.isoformat()})
        )

    async def kv_list(self, namespace: str, prefix: str = "") -> list[tuple[str, dict[str, Any]]]:
        db = self._sql
        rows = await db.rows(KV_LIST, namespace=namespace, length=len(prefix), prefix=prefix)
        return [(row[0], db.document_of(row[1])) for row in rows]

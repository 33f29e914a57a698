"""SQLite backend: the embedded default for a single replica.

One sqlite3 connection per store, driven inline on the event loop (see
`_inline_sqlite` for why not a thread). An explicit transaction spans several
awaits, so an asyncio lock keeps other tasks' statements from landing inside
someone else's transaction. Writes
that read first (claims, migrations) use BEGIN IMMEDIATE: in WAL mode a deferred
transaction that upgrades to a writer can fail with SQLITE_BUSY_SNAPSHOT when
another connection (another process on the same file) wrote meanwhile, and
busy_timeout does not retry that case.

Datetimes are stored as integer microseconds since the epoch (exact, and they
compare as numbers); JSON documents as text.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from datetime import datetime, timedelta
from typing import Any, Final

from bot.storage._codec import (
    dump_json,
    from_micros,
    load_json,
    optional_from_micros,
    require_utc,
    to_micros,
)
from bot.storage._inline_sqlite import InlineConnection
from bot.storage._inline_sqlite import connect as connect_inline
from bot.storage.base import (
    Delivery,
    DeliveryStatus,
    Installation,
    NewDelivery,
    StoredVerdict,
)

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS: Final = 5000
CHECKPOINT_SECONDS: Final = 0.5


def _checkpoint(connection: sqlite3.Connection) -> None:
    # PASSIVE never waits for writers or readers: it copies what it can and returns.
    connection.execute("PRAGMA wal_checkpoint(PASSIVE)").close()


# Append only: a released version never changes, later features add new entries.
MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (
        1,
        (
            """
            CREATE TABLE deliveries (
                seq INTEGER PRIMARY KEY,
                delivery_id TEXT NOT NULL UNIQUE,
                event TEXT NOT NULL,
                action TEXT,
                installation_id INTEGER,
                repository TEXT,
                body BLOB NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                received_at INTEGER NOT NULL,
                next_attempt_at INTEGER NOT NULL,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                last_error TEXT,
                finished_at INTEGER
            )
            """,
            "CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)",
            "CREATE INDEX deliveries_lease ON deliveries (status, lease_expires_at)",
            "CREATE INDEX deliveries_received ON deliveries (received_at, seq)",
            """
            CREATE TABLE installations (
                installation_id INTEGER PRIMARY KEY,
                account TEXT NOT NULL,
                account_type TEXT NOT NULL,
                repository_selection TEXT NOT NULL,
                suspended INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )
            """,
            """
            CREATE TABLE installation_repositories (
                installation_id INTEGER NOT NULL,
                full_name TEXT NOT NULL,
                PRIMARY KEY (installation_id, full_name)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE verdicts (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                task_id TEXT NOT NULL,
                repository TEXT,
                head_sha TEXT,
                verdict TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                record TEXT NOT NULL
            )
            """,
            "CREATE INDEX verdicts_task ON verdicts (task_id, seq)",
            "CREATE INDEX verdicts_repository ON verdicts (repository, seq)",
            "CREATE INDEX verdicts_head_sha ON verdicts (head_sha, seq)",
            "CREATE INDEX verdicts_created ON verdicts (created_at)",
            """
            CREATE TABLE kv (
                namespace TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (namespace, key)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE usage (
                scope TEXT NOT NULL,
                at INTEGER NOT NULL,
                amount INTEGER NOT NULL
            )
            """,
            "CREATE INDEX usage_scope_at ON usage (scope, at)",
        ),
    ),
)

_DELIVERY_COLUMNS: Final = (
    "delivery_id, event, action, installation_id, repository, body, status, attempts, "
    "received_at, next_attempt_at, lease_owner, lease_expires_at, last_error, finished_at"
)


def _delivery(row: sqlite3.Row | tuple[Any, ...]) -> Delivery:
    return Delivery(
        delivery_id=row[0],
        event=row[1],
        action=row[2],
        installation_id=row[3],
        repository=row[4],
        body=bytes(row[5]),
        status=DeliveryStatus(row[6]),
        attempts=row[7],
        received_at=from_micros(row[8]),
        next_attempt_at=from_micros(row[9]),
        lease_owner=row[10],
        lease_expires_at=optional_from_micros(row[11]),
        last_error=row[12],
        finished_at=optional_from_micros(row[13]),
    )


def _installation(row: sqlite3.Row | tuple[Any, ...]) -> Installation:
    return Installation(
        installation_id=row[0],
        account=row[1],
        account_type=row[2],
        repository_selection=row[3],
        suspended=bool(row[4]),
        updated_at=from_micros(row[5]),
    )


class SqliteStorage:
    """`Storage` on one SQLite file (WAL mode)."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: InlineConnection | None = None
        self._lock = asyncio.Lock()
        self._arrivals: list[tuple[NewDelivery, asyncio.Future[bool]]] = []
        self._flush: asyncio.Task[None] | None = None
        self._checkpointer: asyncio.Task[None] | None = None

    # -- lifecycle ---------------------------------------------------------
    async def open(self) -> None:
        if self._conn is not None:
            return
        # Autocommit mode: the module's implicit transactions would wrap single
        # statements needlessly and fight our explicit BEGIN IMMEDIATE.
        conn = await connect_inline(self._path)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await _enable_wal(conn)
            await conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints copy the WAL into the database and sync it: tens of milliseconds
            # that would stall the event loop inside some unlucky commit. So the store's own
            # connection never checkpoints; a thread with its own connection does.
            await conn.execute("PRAGMA wal_autocheckpoint = 0")
            await _migrate(conn)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self._checkpointer = asyncio.create_task(self._checkpoint_forever())

    async def close(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checkpointer
        conn, self._conn = self._conn, None
        if conn is not None:
            async with self._lock:
                await conn.close()

    async def _checkpoint_forever(self) -> None:
        connection = await asyncio.to_thread(
            sqlite3.connect, self._path, check_same_thread=False, isolation_level=None
        )
        try:
            while True:
                await asyncio.sleep(CHECKPOINT_SECONDS)
                try:
                    await asyncio.to_thread(_checkpoint, connection)
                except sqlite3.Error:
                    log.warning("WAL checkpoint failed; will try again", exc_info=True)
        finally:
            await asyncio.to_thread(connection.close)

    async def ping(self) -> bool:
        if self._conn is None:
            return False
        try:
            async with self._lock:
                rows = await self._conn.execute_fetchall("SELECT 1")
        except (sqlite3.Error, ValueError):
            # sqlite3 raises ProgrammingError (an Error) once the connection is closed.
            return False
        return list(rows) == [(1,)]

    @property
    def _db(self) -> InlineConnection:
        if self._conn is None:
            raise RuntimeError("SqliteStorage is not open; call open() first")
        return self._conn

    @asynccontextmanager
    async def _write_transaction(self) -> AsyncIterator[InlineConnection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error, under the lock."""
        async with self._lock:
            db = self._db
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await db.rollback()
                raise
            await db.commit()

    async def _fetchall(self, sql: str, params: Sequence[Any] = ()) -> list[Any]:
        async with self._lock:
            return list(await self._db.execute_fetchall(sql, params))

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in autocommit mode; returns the changed row count."""
        async with self._lock:
            cursor = await self._db.execute(sql, params)
            try:
                return int(cursor.rowcount)
            finally:
                await cursor.close()

    # -- webhook deliveries --------------------------------------------------
    async def record_delivery(self, delivery: NewDelivery) -> bool:
        """Group commit: deliveries that arrive in the same turn of the event loop are
        inserted in one transaction. Each caller still returns only after the commit that
        holds its row, so the acknowledgement stays durable; the commit is shared."""
        waiter: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._arrivals.append((delivery, waiter))
        if self._flush is None:
            # Runs on the next loop turn, after every request of this turn has joined.
            self._flush = asyncio.create_task(self._flush_arrivals())
        return await waiter

    async def _flush_arrivals(self) -> None:
        batch, self._arrivals, self._flush = self._arrivals, [], None
        try:
            inserted = await self._insert_deliveries([delivery for delivery, _ in batch])
        except Exception as exc:  # noqa: BLE001 - handed to every caller waiting on it
            for _, waiter in batch:
                if not waiter.done():
                    waiter.set_exception(exc)
            return
        for (_, waiter), new in zip(batch, inserted, strict=True):
            if not waiter.done():
                waiter.set_result(new)

    async def _insert_deliveries(self, deliveries: Sequence[NewDelivery]) -> list[bool]:
        results: list[bool] = []
        async with self._write_transaction() as db:
            for delivery in deliveries:
                received = to_micros(delivery.received_at)
                cursor = await db.execute(
                    "INSERT INTO deliveries (delivery_id, event, action, installation_id,"
                    " repository, body, status, attempts, received_at, next_attempt_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?) ON CONFLICT (delivery_id) DO NOTHING",
                    (
                        delivery.delivery_id,
                        delivery.event,
                        delivery.action,
                        delivery.installation_id,
                        delivery.repository,
                        delivery.body,
                        DeliveryStatus.PENDING.value,
                        received,
                        received,
                    ),
                )
                results.append(cursor.rowcount == 1)
                await cursor.close()
        return results

    async def claim_deliveries(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[Delivery]:
        if limit <= 0:
            return []
        now_us = to_micros(now)
        expires_us = to_micros(require_utc(now) + timedelta(seconds=lease_seconds))
        async with self._write_transaction() as db:
            rows = await db.execute_fetchall(
                "UPDATE deliveries SET status = ?, attempts = attempts + 1,"
                " lease_owner = ?, lease_expires_at = ?"
                # Two index lookups instead of one OR: with an OR, SQLite walks the
                # received_at index past every finished delivery, so each claim would
                # cost time proportional to the whole history.
                " WHERE seq IN ("
                "  SELECT seq FROM ("
                "   SELECT seq, received_at FROM deliveries"
                "   WHERE status = ? AND next_attempt_at <= ?"
                "   UNION ALL"
                "   SELECT seq, received_at FROM deliveries"
                "   WHERE status = ? AND lease_expires_at <= ?"
                "  ) ORDER BY received_at, seq LIMIT ?"
                f") RETURNING received_at, seq, {_DELIVERY_COLUMNS}",
                (
                    DeliveryStatus.PROCESSING.value,
                    worker_id,
                    expires_us,
                    DeliveryStatus.PENDING.value,
                    now_us,
                    DeliveryStatus.PROCESSING.value,
                    now_us,
                    limit,
                ),
            )
        # RETURNING gives no order guarantee; sort on the claim order keys.
        ordered = sorted(rows, key=lambda row: (row[0], row[1]))
        return [_delivery(row[2:]) for row in ordered]

    async def complete_delivery(self, delivery_id: str, worker_id: str, now: datetime) -> bool:
        changed = await self._execute(
            "UPDATE deliveries SET status = ?, finished_at = ?, lease_expires_at = NULL"
            " WHERE delivery_id = ? AND status = ? AND lease_owner = ?",
            (
                DeliveryStatus.DONE.value,
                to_micros(now),
                delivery_id,
                DeliveryStatus.PROCESSING.value,
                worker_id,
            ),
        )
        return changed == 1

    async def release_delivery(
        self,
        delivery_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        now_us = to_micros(now)
        if retry_at is None:
            sql = (
                "UPDATE deliveries SET status = ?, last_error = ?, finished_at = ?,"
                " lease_expires_at = NULL"
                " WHERE delivery_id = ? AND status = ? AND lease_owner = ?"
            )
            params: tuple[Any, ...] = (DeliveryStatus.FAILED.value, error, now_us)
        else:
            sql = (
                "UPDATE deliveries SET status = ?, last_error = ?, next_attempt_at = ?,"
                " lease_owner = NULL, lease_expires_at = NULL"
                " WHERE delivery_id = ? AND status = ? AND lease_owner = ?"
            )
            params = (DeliveryStatus.PENDING.value, error, to_micros(retry_at))
        changed = await self._execute(
            sql, (*params, delivery_id, DeliveryStatus.PROCESSING.value, worker_id)
        )
        return changed == 1

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        rows = await self._fetchall(
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE delivery_id = ?", (delivery_id,)
        )
        return _delivery(rows[0]) if rows else None

    async def count_deliveries(self) -> dict[DeliveryStatus, int]:
        rows = await self._fetchall("SELECT status, COUNT(*) FROM deliveries GROUP BY status")
        counts = dict.fromkeys(DeliveryStatus, 0)
        for status, count in rows:
            counts[DeliveryStatus(status)] = count
        return counts

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        if status is None:
            rows = await self._fetchall(
                f"SELECT {_DELIVERY_COLUMNS} FROM deliveries"
                " ORDER BY received_at DESC, seq DESC LIMIT ?",
                (limit,),
            )
        else:
            rows = await self._fetchall(
                f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE status = ?"
                " ORDER BY received_at DESC, seq DESC LIMIT ?",
                (DeliveryStatus(status).value, limit),
            )
        return [_delivery(row) for row in rows]

    async def prune_deliveries(self, finished_before: datetime) -> int:
        return await self._execute(
            "DELETE FROM deliveries WHERE status IN (?, ?) AND finished_at < ?",
            (
                DeliveryStatus.DONE.value,
                DeliveryStatus.FAILED.value,
                to_micros(finished_before),
            ),
        )

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

    # -- verdict records -----------------------------------------------------
    async def append_verdict(
        self,
        *,
        task_id: str,
        repository: str | None,
        head_sha: str | None,
        verdict: str,
        created_at: datetime,
        record: dict[str, Any],
    ) -> int:
        async with self._lock:
            seq = await self._db.execute_insert(
                "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at,"
                " record) VALUES (?, ?, ?, ?, ?, ?)",
                (task_id, repository, head_sha, verdict, to_micros(created_at), dump_json(record)),
            )
        if seq is None:
            raise RuntimeError("SQLite did not report the appended verdict's rowid")
        return int(seq[0])

    async def list_verdicts(
        self,
        *,
        task_id: str | None = None,
        repository: str | None = None,
        head_sha: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredVerdict]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("task_id", task_id),
            ("repository", repository),
            ("head_sha", head_sha),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(to_micros(since))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = ""
        if limit is not None:
            tail = " LIMIT ?"
            params.append(limit)
        rows = await self._fetchall(
            "SELECT seq, task_id, repository, head_sha, verdict, created_at, record"
            f" FROM verdicts{where} ORDER BY seq{tail}",
            params,
        )
        return [
            StoredVerdict(
                seq=row[0],
                task_id=row[1],
                repository=row[2],
                head_sha=row[3],
                verdict=row[4],
                created_at=from_micros(row[5]),
                record=load_json(row[6]),
            )
            for row in rows
        ]

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

    # -- usage counters ------------------------------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None:
        await self._execute(
            "INSERT INTO usage (scope, at, amount) VALUES (?, ?, ?)",
            (scope, to_micros(at), amount),
        )

    async def usage_since(self, scope: str, since: datetime) -> int:
        rows = await self._fetchall(
            "SELECT COALESCE(SUM(amount), 0) FROM usage WHERE scope = ? AND at >= ?",
            (scope, to_micros(since)),
        )
        return int(rows[0][0])


async def _enable_wal(conn: InlineConnection) -> None:
    """Switch the file to WAL, retrying while another connection holds it.

    Changing the journal mode needs an exclusive lock, and SQLite reports
    "database is locked" without consulting busy_timeout when replicas open a
    fresh file together, so the wait is done here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.01)
            continue
        mode = str(rows[0][0]).lower() if rows else ""
        if mode != "wal":
            raise RuntimeError(f"SQLite refused WAL mode (journal_mode is {mode!r})")
        return


async def _migrate(conn: InlineConnection) -> None:
    """Apply every migration newer than the recorded version, all in one transaction.

    The write lock is taken before the version is read, so two processes opening
    the same file at once apply each migration exactly once.
    """
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        rows = list(await conn.execute_fetchall("SELECT MAX(version) FROM schema_version"))
        current = rows[0][0] or 0
        for version, statements in MIGRATIONS:
            if version <= current:
                continue
            for statement in statements:
                await conn.execute(statement)
            await conn.execute(
                "INSERT INTO schema_version (version, applied_at)"
                " VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (version,),
            )
    except BaseException:
        await conn.rollback()
        raise
    await conn.commit()

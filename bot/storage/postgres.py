"""PostgreSQL backend: shared by several replicas behind a load balancer.

Claims lock the due rows with FOR UPDATE SKIP LOCKED, so replicas claiming at
the same moment split the work instead of queueing behind each other or taking
the same delivery twice. Migrations run under a transaction-scoped advisory lock
(per schema), so replicas starting together apply each one exactly once.

JSON documents are jsonb, bodies bytea, datetimes timestamptz (asyncpg returns
them as aware UTC).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Final

import asyncpg

from bot.storage._codec import dump_json, load_json, require_utc
from bot.storage.base import (
    Delivery,
    DeliveryStatus,
    Installation,
    NewDelivery,
    StoredVerdict,
)

PING_TIMEOUT_SECONDS: Final = 5.0

# First key of the two-key advisory lock; the second is a hash of the schema name.
_MIGRATION_LOCK_CLASS: Final = 0x6A62  # "jb"

# Append only: a released version never changes, later features add new entries.
MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (
        1,
        (
            """
            CREATE TABLE deliveries (
                seq bigint GENERATED ALWAYS AS IDENTITY,
                delivery_id text PRIMARY KEY,
                event text NOT NULL,
                action text,
                installation_id bigint,
                repository text,
                body bytea NOT NULL,
                status text NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                received_at timestamptz NOT NULL,
                next_attempt_at timestamptz NOT NULL,
                lease_owner text,
                lease_expires_at timestamptz,
                last_error text,
                finished_at timestamptz
            )
            """,
            "CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)",
            "CREATE INDEX deliveries_lease ON deliveries (status, lease_expires_at)",
            "CREATE INDEX deliveries_received ON deliveries (received_at, seq)",
            """
            CREATE TABLE installations (
                installation_id bigint PRIMARY KEY,
                account text NOT NULL,
                account_type text NOT NULL,
                repository_selection text NOT NULL,
                suspended boolean NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE installation_repositories (
                installation_id bigint NOT NULL,
                full_name text NOT NULL,
                PRIMARY KEY (installation_id, full_name)
            )
            """,
            """
            CREATE TABLE verdicts (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                task_id text NOT NULL,
                repository text,
                head_sha text,
                verdict text NOT NULL,
                created_at timestamptz NOT NULL,
                record jsonb NOT NULL
            )
            """,
            "CREATE INDEX verdicts_task ON verdicts (task_id, seq)",
            "CREATE INDEX verdicts_repository ON verdicts (repository, seq)",
            "CREATE INDEX verdicts_head_sha ON verdicts (head_sha, seq)",
            "CREATE INDEX verdicts_created ON verdicts (created_at)",
            """
            CREATE TABLE kv (
                namespace text NOT NULL,
                key text NOT NULL,
                value jsonb NOT NULL,
                PRIMARY KEY (namespace, key)
            )
            """,
            """
            CREATE TABLE usage (
                scope text NOT NULL,
                at timestamptz NOT NULL,
                amount bigint NOT NULL
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
_INSTALLATION_COLUMNS: Final = (
    "installation_id, account, account_type, repository_selection, suspended, updated_at"
)


def quote_ident(name: str) -> str:
    """A safely quoted SQL identifier (schema names come from configuration)."""
    if not name or "\x00" in name:
        raise ValueError(f"invalid schema name {name!r}")
    return '"' + name.replace('"', '""') + '"'


def _delivery(row: asyncpg.Record) -> Delivery:
    return Delivery(
        delivery_id=row["delivery_id"],
        event=row["event"],
        action=row["action"],
        installation_id=row["installation_id"],
        repository=row["repository"],
        body=bytes(row["body"]),
        status=DeliveryStatus(row["status"]),
        attempts=row["attempts"],
        received_at=row["received_at"],
        next_attempt_at=row["next_attempt_at"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        last_error=row["last_error"],
        finished_at=row["finished_at"],
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


class PostgresStorage:
    """`Storage` on PostgreSQL through an asyncpg pool."""

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
            await _migrate(pool)
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

    @property
    def _db(self) -> asyncpg.Pool:
        if self._pool is None:
            raise RuntimeError("PostgresStorage is not open; call open() first")
        return self._pool

    # -- webhook deliveries --------------------------------------------------
    async def record_delivery(self, delivery: NewDelivery) -> bool:
        received = require_utc(delivery.received_at)
        status = await self._db.execute(
            "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,"
            " body, status, attempts, received_at, next_attempt_at)"
            " VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8)"
            " ON CONFLICT (delivery_id) DO NOTHING",
            delivery.delivery_id,
            delivery.event,
            delivery.action,
            delivery.installation_id,
            delivery.repository,
            delivery.body,
            DeliveryStatus.PENDING.value,
            received,
        )
        return _changed(status) == 1

    async def claim_deliveries(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[Delivery]:
        if limit <= 0:
            return []
        now = require_utc(now)
        rows = await self._db.fetch(
            "UPDATE deliveries SET status = $1, attempts = attempts + 1,"
            " lease_owner = $2, lease_expires_at = $3"
            " WHERE delivery_id IN ("
            "  SELECT delivery_id FROM deliveries"
            "  WHERE (status = $4 AND next_attempt_at <= $5)"
            "     OR (status = $1 AND lease_expires_at <= $5)"
            "  ORDER BY received_at, seq LIMIT $6"
            "  FOR UPDATE SKIP LOCKED"
            f") RETURNING seq, {_DELIVERY_COLUMNS}",
            DeliveryStatus.PROCESSING.value,
            worker_id,
            now + timedelta(seconds=lease_seconds),
            DeliveryStatus.PENDING.value,
            now,
            limit,
        )
        # RETURNING gives no order guarantee; sort on the claim order keys.
        ordered = sorted(rows, key=lambda row: (row["received_at"], row["seq"]))
        return [_delivery(row) for row in ordered]

    async def complete_delivery(self, delivery_id: str, worker_id: str, now: datetime) -> bool:
        status = await self._db.execute(
            "UPDATE deliveries SET status = $1, finished_at = $2, lease_expires_at = NULL"
            " WHERE delivery_id = $3 AND status = $4 AND lease_owner = $5",
            DeliveryStatus.DONE.value,
            require_utc(now),
            delivery_id,
            DeliveryStatus.PROCESSING.value,
            worker_id,
        )
        return _changed(status) == 1

    async def release_delivery(
        self,
        delivery_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        now = require_utc(now)
        if retry_at is None:
            status = await self._db.execute(
                "UPDATE deliveries SET status = $1, last_error = $2, finished_at = $3,"
                " lease_expires_at = NULL"
                " WHERE delivery_id = $4 AND status = $5 AND lease_owner = $6",
                DeliveryStatus.FAILED.value,
                error,
                now,
                delivery_id,
                DeliveryStatus.PROCESSING.value,
                worker_id,
            )
        else:
            status = await self._db.execute(
                "UPDATE deliveries SET status = $1, last_error = $2, next_attempt_at = $3,"
                " lease_owner = NULL, lease_expires_at = NULL"
                " WHERE delivery_id = $4 AND status = $5 AND lease_owner = $6",
                DeliveryStatus.PENDING.value,
                error,
                require_utc(retry_at),
                delivery_id,
                DeliveryStatus.PROCESSING.value,
                worker_id,
            )
        return _changed(status) == 1

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        row = await self._db.fetchrow(
            f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE delivery_id = $1", delivery_id
        )
        return None if row is None else _delivery(row)

    async def count_deliveries(self) -> dict[DeliveryStatus, int]:
        rows = await self._db.fetch("SELECT status, COUNT(*) AS n FROM deliveries GROUP BY status")
        counts = dict.fromkeys(DeliveryStatus, 0)
        for row in rows:
            counts[DeliveryStatus(row["status"])] = row["n"]
        return counts

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        if status is None:
            rows = await self._db.fetch(
                f"SELECT {_DELIVERY_COLUMNS} FROM deliveries"
                " ORDER BY received_at DESC, seq DESC LIMIT $1",
                limit,
            )
        else:
            rows = await self._db.fetch(
                f"SELECT {_DELIVERY_COLUMNS} FROM deliveries WHERE status = $1"
                " ORDER BY received_at DESC, seq DESC LIMIT $2",
                DeliveryStatus(status).value,
                limit,
            )
        return [_delivery(row) for row in rows]

    async def prune_deliveries(self, finished_before: datetime) -> int:
        status = await self._db.execute(
            "DELETE FROM deliveries WHERE status = ANY($1::text[]) AND finished_at < $2",
            [DeliveryStatus.DONE.value, DeliveryStatus.FAILED.value],
            require_utc(finished_before),
        )
        # asyncpg returns the command tag, e.g. "DELETE 3".
        return int(status.split()[-1])

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
        seq = await self._db.fetchval(
            "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at, record)"
            " VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
            task_id,
            repository,
            head_sha,
            verdict,
            require_utc(created_at),
            dump_json(record),
        )
        return int(seq)

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
                params.append(value)
                clauses.append(f"{column} = ${len(params)}")
        if since is not None:
            params.append(require_utc(since))
            clauses.append(f"created_at >= ${len(params)}")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = ""
        if limit is not None:
            params.append(limit)
            tail = f" LIMIT ${len(params)}"
        rows = await self._db.fetch(
            "SELECT seq, task_id, repository, head_sha, verdict, created_at, record"
            f" FROM verdicts{where} ORDER BY seq{tail}",
            *params,
        )
        return [
            StoredVerdict(
                seq=row["seq"],
                task_id=row["task_id"],
                repository=row["repository"],
                head_sha=row["head_sha"],
                verdict=row["verdict"],
                created_at=row["created_at"],
                record=row["record"],
            )
            for row in rows
        ]

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
        return _changed(status) == 1

    async def kv_delete(self, namespace: str, key: str) -> None:
        await self._db.execute("DELETE FROM kv WHERE namespace = $1 AND key = $2", namespace, key)

    # -- usage counters ------------------------------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None:
        await self._db.execute(
            "INSERT INTO usage (scope, at, amount) VALUES ($1, $2, $3)",
            scope,
            require_utc(at),
            amount,
        )

    async def usage_since(self, scope: str, since: datetime) -> int:
        total = await self._db.fetchval(
            "SELECT COALESCE(SUM(amount), 0) FROM usage WHERE scope = $1 AND at >= $2",
            scope,
            require_utc(since),
        )
        return int(total)


def _changed(command_status: str) -> int:
    """Row count from a command tag such as 'INSERT 0 1' or 'UPDATE 3'."""
    return int(command_status.rsplit(" ", 1)[-1])


async def _migrate(pool: asyncpg.Pool) -> None:
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))",
            _MIGRATION_LOCK_CLASS,
        )
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        current = await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_version")
        for version, statements in MIGRATIONS:
            if version <= current:
                continue
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", version)

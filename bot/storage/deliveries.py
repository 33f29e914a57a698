"""The webhook delivery queue on both backends: a lease's end (complete, release, defer),
renewal, re-queueing, the reads and pruning.

Recording (group commit) and claiming are each backend's own, on the webhook
acknowledgement path and the workers' polls (`sqlite_deliveries`, `postgres_deliveries`).
Every statement that ends or renews a lease names the worker holding it, so a worker
whose lease was taken over changes nothing.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any, Final

from bot.storage.base import Delivery, DeliveryStatus
from bot.storage.body_codec import UnreadableBody, decode_body
from bot.storage.sql import Row, Sql, SqlStore, Values

# Only SQLite stores a body it may not read back (`body_codec`); logged under that
# backend's name, as before the backends shared this module.
_body_log = logging.getLogger("bot.storage.sqlite")

PENDING: Final = DeliveryStatus.PENDING.value
PROCESSING: Final = DeliveryStatus.PROCESSING.value
DONE: Final = DeliveryStatus.DONE.value
FAILED: Final = DeliveryStatus.FAILED.value

# The columns `delivery_of` reads, the body and how it is stored last. SQLite keeps the
# body in delivery_bodies (its migration 6), looked up by primary key for each delivery
# read, and only for those: two scalar subqueries, because RETURNING cannot join.
# PostgreSQL keeps it in the row, as received (the server compresses it).
SQLITE_COLUMNS: Final = (
    "delivery_id, event, action, installation_id, repository, status, attempts,"
    " received_at, next_attempt_at, lease_owner, lease_expires_at, last_error, finished_at,"
    " (SELECT body FROM delivery_bodies WHERE delivery_bodies.seq = deliveries.seq),"
    " (SELECT compression FROM delivery_bodies WHERE delivery_bodies.seq = deliveries.seq)"
)
POSTGRES_COLUMNS: Final = (
    "delivery_id, event, action, installation_id, repository, status, attempts,"
    " received_at, next_attempt_at, lease_owner, lease_expires_at, last_error, finished_at,"
    " body, NULL::text AS compression"
)

# Where a lease ends or is renewed: this worker's, still processing.
_LEASED: Final = " WHERE delivery_id = :id AND status = :processing AND lease_owner = :worker"
# A leased delivery parked for good: by its worker after the last attempt, and by a SQLite
# claim for a body that cannot be read (see `SqliteDeliveryQueue.claim_deliveries`).
FAIL: Final = Sql(
    "UPDATE deliveries SET status = :failed, last_error = :error, finished_at = :now,"
    " lease_expires_at = NULL" + _LEASED
)
RETRY: Final = Sql(
    "UPDATE deliveries SET status = :pending, last_error = :error, next_attempt_at = :retry_at,"
    " lease_owner = NULL, lease_expires_at = NULL" + _LEASED
)
COMPLETE: Final = Sql(
    "UPDATE deliveries SET status = :done, finished_at = :now, lease_expires_at = NULL" + _LEASED
)


def _defer(greatest: str) -> str:
    return (
        f"UPDATE deliveries SET status = :pending, attempts = {greatest}(attempts - 1, 0),"
        " next_attempt_at = :until, last_error = COALESCE(:error, last_error),"
        " lease_owner = NULL, lease_expires_at = NULL" + _LEASED
    )


DEFER: Final = Sql(_defer("MAX"), postgres=_defer("GREATEST"))
# An expired lease nobody claimed yet is still this worker's: renewing it is safe, because
# a claim replaces lease_owner in the same statement that takes it.
RENEW: Final = Sql("UPDATE deliveries SET lease_expires_at = :until" + _LEASED)
REQUEUE: Final = Sql(
    "UPDATE deliveries SET status = :pending, attempts = 0, next_attempt_at = :now,"
    " finished_at = NULL, lease_owner = NULL, lease_expires_at = NULL"
    " WHERE delivery_id = :id AND status = :failed"
)
_GET: Final = "SELECT {columns} FROM deliveries WHERE delivery_id = :id"
GET: Final = Sql(
    _GET.format(columns=SQLITE_COLUMNS), postgres=_GET.format(columns=POSTGRES_COLUMNS)
)
_LIST: Final = "SELECT {columns} FROM deliveries ORDER BY received_at DESC, seq DESC LIMIT :limit"
LIST: Final = Sql(
    _LIST.format(columns=SQLITE_COLUMNS), postgres=_LIST.format(columns=POSTGRES_COLUMNS)
)
_LIST_STATUS: Final = (
    "SELECT {columns} FROM deliveries WHERE status = :status"
    " ORDER BY received_at DESC, seq DESC LIMIT :limit"
)
LIST_STATUS: Final = Sql(
    _LIST_STATUS.format(columns=SQLITE_COLUMNS),
    postgres=_LIST_STATUS.format(columns=POSTGRES_COLUMNS),
)
COUNT: Final = Sql("SELECT status, COUNT(*) FROM deliveries GROUP BY status")
# On SQLite the schema's trigger deletes each row's body in the same statement.
PRUNE: Final = Sql(
    "DELETE FROM deliveries WHERE status IN (:done, :failed) AND finished_at < :before"
)


def stored_body(row: Row) -> bytes:
    """The body of a row read with the columns above; UnreadableBody if it cannot be."""
    return decode_body(row[13], row[14])


def delivery_of(values: Values, row: Row, body: bytes) -> Delivery:
    return Delivery(
        delivery_id=row[0],
        event=row[1],
        action=row[2],
        installation_id=row[3],
        repository=row[4],
        status=DeliveryStatus(row[5]),
        attempts=row[6],
        received_at=values.time_of(row[7]),
        next_attempt_at=values.time_of(row[8]),
        lease_owner=row[9],
        lease_expires_at=values.optional_time_of(row[10]),
        last_error=row[11],
        finished_at=values.optional_time_of(row[12]),
        body=body,
    )


def _listed(values: Values, row: Row) -> Delivery:
    """A row read to be looked at, not processed: one whose body cannot be read is still
    shown (and can be retried), with an empty body (see `Storage.get_delivery`)."""
    try:
        body = stored_body(row)
    except UnreadableBody as exc:
        _body_log.warning("delivery body unreadable: %s", exc, extra={"delivery_id": row[0]})
        body = b""
    return delivery_of(values, row, body)


class DeliveryLeases(SqlStore):
    """The `Storage` delivery methods both backends share."""

    async def _on_lease(
        self, statement: Sql, delivery_id: str, worker_id: str, **params: Any
    ) -> bool:
        """Runs a statement that ends or renews a lease (`_LEASED`): False (nothing changes)
        when the lease is no longer `worker_id`'s."""
        changed = await self._sql.run(
            statement, id=delivery_id, processing=PROCESSING, worker=worker_id, **params
        )
        return changed == 1

    async def complete_delivery(self, delivery_id: str, worker_id: str, now: datetime) -> bool:
        return await self._on_lease(
            COMPLETE, delivery_id, worker_id, done=DONE, now=self._values.time(now)
        )

    async def release_delivery(
        self,
        delivery_id: str,
        worker_id: str,
        error: str,
        retry_at: datetime | None,
        now: datetime,
    ) -> bool:
        at = self._values.time(now)
        if retry_at is None:
            return await self._on_lease(
                FAIL, delivery_id, worker_id, failed=FAILED, error=error, now=at
            )
        return await self._on_lease(
            RETRY,
            delivery_id,
            worker_id,
            pending=PENDING,
            error=error,
            retry_at=self._values.time(retry_at),
        )

    async def defer_delivery(
        self, delivery_id: str, worker_id: str, until: datetime, error: str | None = None
    ) -> bool:
        return await self._on_lease(
            DEFER,
            delivery_id,
            worker_id,
            pending=PENDING,
            until=self._values.time(until),
            error=error,
        )

    async def renew_lease(self, delivery_id: str, worker_id: str, until: datetime) -> bool:
        return await self._on_lease(RENEW, delivery_id, worker_id, until=self._values.time(until))

    async def requeue_failed(self, delivery_id: str, now: datetime) -> bool:
        changed = await self._sql.run(
            REQUEUE, pending=PENDING, now=self._values.time(now), id=delivery_id, failed=FAILED
        )
        return changed == 1

    async def get_delivery(self, delivery_id: str) -> Delivery | None:
        db = self._sql
        row = await db.row(GET, id=delivery_id)
        return None if row is None else _listed(db, row)

    async def count_deliveries(self) -> dict[DeliveryStatus, int]:
        counts = dict.fromkeys(DeliveryStatus, 0)
        for row in await self._sql.rows(COUNT):
            counts[DeliveryStatus(row[0])] = row[1]
        return counts

    async def list_deliveries(
        self, status: DeliveryStatus | None = None, limit: int = 100
    ) -> list[Delivery]:
        db = self._sql
        if status is None:
            rows = await db.rows(LIST, limit=limit)
        else:
            rows = await db.rows(LIST_STATUS, status=DeliveryStatus(status).value, limit=limit)
        return [_listed(db, row) for row in rows]

    async def prune_deliveries(self, finished_before: datetime) -> int:
        return await self._sql.run(
            PRUNE, done=DONE, failed=FAILED, before=self._values.time(finished_before)
        )

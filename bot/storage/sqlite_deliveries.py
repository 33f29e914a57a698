"""The SQLite webhook delivery queue: recording and claiming (the rest is `deliveries`,
written once).

Recording is group-committed (`group_commit`), because it sits on the webhook
acknowledgement path and one commit per delivery would cap how many webhooks a second
are accepted.
A shared commit must never fail because of someone else's row: values the table
cannot hold are refused before a row joins a batch, and if a batch fails anyway its
rows are committed one by one, so only the row at fault fails.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from typing import Final

from bot.storage._codec import require_int64, require_utc, to_micros
from bot.storage.base import Delivery, DeliveryStatus, NewDelivery
from bot.storage.body_codec import UnreadableBody, encode_body
from bot.storage.deliveries import (
    DONE,
    FAIL,
    FAILED,
    PENDING,
    PROCESSING,
    SQLITE_COLUMNS,
    delivery_of,
    stored_body,
)
from bot.storage.group_commit import GroupCommit
from bot.storage.sql import Row
from bot.storage.sqlite_connection import SqliteConnectionBase, SqliteValues

log = logging.getLogger("bot.storage.sqlite")

# One status at a time, each walked in claim order on the deliveries_claim index and
# stopped at the limit, so a claim reads no row it does not take. With one OR, SQLite walks
# the received_at index past every finished delivery; with an index per status, it sorts
# every due row, each read from the table behind its body's overflow pages: either way a
# claim cost time in proportion to the history or the backlog. Only the rows claimed have
# their bodies read, by the RETURNING clause.
CLAIM_SQL: Final = (
    "UPDATE deliveries SET status = :processing, attempts = attempts + 1,"
    " lease_owner = :worker, lease_expires_at = :expires"
    " WHERE seq IN ("
    "  SELECT seq FROM ("
    "   SELECT * FROM (SELECT seq, received_at FROM deliveries"
    "    WHERE status = :pending AND next_attempt_at <= :now"
    "    ORDER BY received_at, seq LIMIT :limit)"
    "   UNION ALL"
    "   SELECT * FROM (SELECT seq, received_at FROM deliveries"
    "    WHERE status = :processing AND lease_expires_at <= :now"
    "    ORDER BY received_at, seq LIMIT :limit)"
    "  ) ORDER BY received_at, seq LIMIT :limit"
    f") RETURNING received_at, seq, {SQLITE_COLUMNS}"
)
# Whether a claim would find anything, read without taking the write lock: a caught-up
# worker's claims mostly find nothing, and a write transaction that changes nothing still
# costs a BEGIN IMMEDIATE and a COMMIT. The same two walks of deliveries_claim as CLAIM_SQL.
DUE_SQL: Final = (
    "SELECT EXISTS (SELECT 1 FROM deliveries"
    "  WHERE status = :pending AND next_attempt_at <= :now)"
    " OR EXISTS (SELECT 1 FROM deliveries"
    "  WHERE status = :processing AND lease_expires_at <= :now)"
)
_VALUES: Final = SqliteValues()


def _readable(rows: Iterable[Row]) -> tuple[list[Delivery], list[tuple[Row, str]]]:
    """The claimed rows as deliveries, and each row whose body cannot be read with why."""
    claimed: list[Delivery] = []
    unreadable: list[tuple[Row, str]] = []
    for row in rows:
        try:
            claimed.append(delivery_of(_VALUES, row, stored_body(row)))
        except UnreadableBody as exc:
            unreadable.append((row, str(exc)))
    return claimed, unreadable


class SqliteDeliveryQueue(SqliteConnectionBase):
    """The `Storage` delivery methods on the `deliveries` table."""

    def __init__(self, path: str) -> None:
        super().__init__(path)
        # No limit on commits in flight: the write lock already queues them, and each
        # loop turn's arrivals wait for it together.
        # OperationalError: locked past the busy timeout, disk full, I/O error; a row's own
        # fault is an IntegrityError, a DataError or a driver error.
        self._intake: GroupCommit[NewDelivery, bool] = GroupCommit(
            self._insert_deliveries, outage=(sqlite3.OperationalError,)
        )

    async def record_delivery(self, delivery: NewDelivery) -> bool:
        """Group commit (see `group_commit`): deliveries that arrive in the same turn of the
        event loop are inserted in one transaction. Each caller still returns only after the
        commit that holds its row, so the acknowledgement stays durable; the commit is shared."""
        # Refused here, before joining: the row never reaches anyone else's batch.
        require_int64(delivery.installation_id, "installation_id")
        require_utc(delivery.received_at)
        return await self._intake.submit(delivery)

    async def _insert_deliveries(self, deliveries: Sequence[NewDelivery]) -> list[bool]:
        """Each new row and its body, in one transaction; a duplicate adds neither. Bodies
        are compressed here (`body_codec`), only those of rows inserted."""
        results: list[bool] = []
        bodies: list[tuple[int, bytes, str | None]] = []
        async with self._write_transaction() as db:
            for delivery in deliveries:
                received = to_micros(delivery.received_at)
                cursor = await db.execute(
                    "INSERT INTO deliveries (delivery_id, event, action, installation_id,"
                    " repository, status, attempts, received_at, next_attempt_at,"
                    " finished_at) VALUES (?, ?, ?, ?, ?, ?, 0, ?, ?, ?)"
                    " ON CONFLICT (delivery_id) DO NOTHING",
                    (
                        delivery.delivery_id,
                        delivery.event,
                        delivery.action,
                        delivery.installation_id,
                        delivery.repository,
                        DONE if delivery.done else PENDING,
                        received,
                        received,
                        received if delivery.done else None,
                    ),
                )
                # Cheaper than RETURNING (no result rows to fetch); lastrowid is only read
                # when this statement inserted, so it is this row's.
                new = cursor.rowcount == 1
                results.append(new)
                if new:
                    seq = cursor.lastrowid
                    assert seq is not None, "an insert into a rowid table sets lastrowid"
                    bodies.append((seq, *encode_body(delivery.body)))
                await cursor.close()
            await db.executemany(
                "INSERT INTO delivery_bodies (seq, body, compression) VALUES (?, ?, ?)", bodies
            )
        return results

    async def claim_deliveries(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[Delivery]:
        if limit <= 0:
            return []
        now_us = to_micros(now)
        expires_us = to_micros(require_utc(now) + timedelta(seconds=lease_seconds))
        statuses = {"processing": DeliveryStatus.PROCESSING.value, "pending": PENDING}
        [(due,)] = await self._fetchall(DUE_SQL, {**statuses, "now": now_us})
        if not due:
            return []
        claimed: list[Delivery] = []
        parked: list[tuple[Row, str]] = []
        leased = {"processing": PROCESSING, "worker": worker_id}
        async with self._write_transaction() as db:
            # Again while a row was parked (below) and the limit is not reached: a worker
            # handed nothing sleeps until its next poll, though more is due.
            while len(claimed) < limit:
                rows = await db.execute_fetchall(
                    CLAIM_SQL,
                    {
                        **statuses,
                        "worker": worker_id,
                        "expires": expires_us,
                        "now": now_us,
                        "limit": limit - len(claimed),
                    },
                )
                # RETURNING gives no order guarantee; sort on the claim order keys. Decoded
                # before the commit, so that a body this version cannot read is parked in
                # the same transaction, never leased to a worker that does not get it.
                # Claims take the oldest due delivery first: rolled back for that body, every
                # claim would take the same row again, and the queue would wait behind it.
                ordered = sorted(rows, key=lambda row: (row[0], row[1]))
                readable, unreadable = _readable(row[2:] for row in ordered)
                claimed += readable
                parked += unreadable
                for row, error in unreadable:
                    await db.execute(
                        FAIL.sqlite,
                        FAIL.args(
                            {"failed": FAILED, "error": error, "now": now_us, "id": row[0]} | leased
                        ),
                    )
                if not unreadable:
                    break
        for row, error in parked:
            log.error(
                "delivery parked as failed: %s",
                error,
                extra={"delivery_id": row[0], "event": row[1], "repository": row[4]},
            )
        return claimed

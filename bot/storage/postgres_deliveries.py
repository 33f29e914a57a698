"""The PostgreSQL webhook delivery queue: recording and claiming (the rest is
`deliveries`, written once).

Recording is group-committed (`group_commit`), because it sits on the webhook
acknowledgement path and, with synchronous_commit on, every commit waits for a WAL
flush: deliveries that arrive together are inserted in one transaction. Values the
table cannot hold are refused before a row joins a batch, and a batch that fails
anyway is retried one row per transaction, so only the row at fault fails.

Claims lock the due rows with FOR UPDATE SKIP LOCKED, so replicas claiming at
the same moment split the work instead of queueing behind each other or taking
the same delivery twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from functools import cached_property
from typing import Final

import asyncpg

from bot.storage._codec import require_int64, require_utc
from bot.storage.base import Delivery, DeliveryStatus, NewDelivery
from bot.storage.deliveries import DONE, PENDING, POSTGRES_COLUMNS, delivery_of, stored_body
from bot.storage.group_commit import GroupCommit
from bot.storage.postgres_connection import PostgresConnectionBase

# Run once per row of a batch, pipelined in one implicit transaction (asyncpg's fetchmany is
# atomic): a batch commits whole or not at all. Measured against one INSERT ... SELECT FROM
# unnest(arrays), it cost the server process less CPU per delivery (bodies are not copied
# into a bytea[] first). RETURNING names the rows that were new.
INSERT_SQL: Final = (
    "INSERT INTO deliveries (delivery_id, event, action, installation_id, repository,"
    " body, status, attempts, received_at, next_attempt_at, finished_at)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, 0, $8, $8, $9)"
    " ON CONFLICT (delivery_id) DO NOTHING RETURNING delivery_id"
)
# Batches committing at once, each on a pooled connection. Arrivals meanwhile wait for a
# free slot together, so under load batches grow rather than transactions multiply, and the
# pool keeps connections for the workers.
INTAKE_COMMITS_IN_FLIGHT: Final = 2
# Failures of the server or the way to it, never of a row: a batch failing with one fails
# all its deliveries at once (each retried alone would wait out its own connect timeout).
# (Not asyncpg.InterfaceError: its DataError is the driver refusing one row's value.)
OUTAGE: Final = (
    OSError,
    TimeoutError,
    asyncpg.PostgresConnectionError,
    asyncpg.InsufficientResourcesError,
    asyncpg.OperatorInterventionError,
)

# One status at a time, each walked in claim order on deliveries_claim and stopped at the
# limit: with one OR, the planner walks received_at past every finished delivery. Up to
# twice the limit is locked; the surplus is let go when the statement ends. Parameters:
# processing, worker, lease expiry, pending, now, limit.
CLAIM_SQL: Final = (
    "WITH pending AS ("
    "  SELECT delivery_id, received_at, seq FROM deliveries"
    "  WHERE status = $4 AND next_attempt_at <= $5"
    "  ORDER BY received_at, seq LIMIT $6 FOR UPDATE SKIP LOCKED"
    "), expired AS ("
    "  SELECT delivery_id, received_at, seq FROM deliveries"
    "  WHERE status = $1 AND lease_expires_at <= $5"
    "  ORDER BY received_at, seq LIMIT $6 FOR UPDATE SKIP LOCKED"
    ") UPDATE deliveries SET status = $1, attempts = attempts + 1,"
    " lease_owner = $2, lease_expires_at = $3"
    " WHERE delivery_id IN ("
    "  SELECT delivery_id FROM (SELECT * FROM pending UNION ALL SELECT * FROM expired)"
    "  AS due ORDER BY received_at, seq LIMIT $6"
    f") RETURNING {POSTGRES_COLUMNS}, seq"
)


def _insert_args(delivery: NewDelivery) -> tuple[object, ...]:
    received = require_utc(delivery.received_at)
    return (
        delivery.delivery_id,
        delivery.event,
        delivery.action,
        delivery.installation_id,
        delivery.repository,
        delivery.body,
        DONE if delivery.done else PENDING,
        received,
        received if delivery.done else None,
    )


class PostgresDeliveryQueue(PostgresConnectionBase):
    """The `Storage` delivery methods on the `deliveries` table."""

    @cached_property
    def _intake(self) -> GroupCommit[NewDelivery, bool]:
        # Made on first use: PostgresConnectionBase owns __init__, and the table mixins add
        # no constructor arguments of their own.
        return GroupCommit(
            self._insert_deliveries, max_in_flight=INTAKE_COMMITS_IN_FLIGHT, outage=OUTAGE
        )

    async def record_delivery(self, delivery: NewDelivery) -> bool:
        """Group commit (see `group_commit`): deliveries that arrive together are inserted
        in one transaction. Each caller still returns only after the commit that holds its
        row, so the acknowledgement stays durable."""
        # Refused here, before joining: the row never reaches anyone else's batch, and both
        # backends raise the same ValueError instead of asyncpg's DataError.
        require_int64(delivery.installation_id, "installation_id")
        require_utc(delivery.received_at)
        return await self._intake.submit(delivery)

    async def _insert_deliveries(self, deliveries: Sequence[NewDelivery]) -> list[bool]:
        """Each new delivery's row; True for the deliveries that added one."""
        # A redelivery in the same batch is not sent: the earlier arrival is the one a
        # commit per delivery would have stored, and the later one gets False either way.
        first_arrival: dict[str, int] = {}
        for position, delivery in enumerate(deliveries):
            first_arrival.setdefault(delivery.delivery_id, position)
        # Every batch inserts in id order, so two batches sharing ids (two replicas', or two
        # in flight here) wait on one another in one direction only: an insert waits for the
        # other's uncommitted row of the same id, and unordered, they deadlocked.
        rows = sorted(
            (deliveries[position] for position in first_arrival.values()),
            key=lambda delivery: delivery.delivery_id,
        )
        inserted = await self._db.fetchmany(INSERT_SQL, [_insert_args(row) for row in rows])
        new_ids = {row["delivery_id"] for row in inserted}
        return [
            first_arrival[delivery.delivery_id] == position and delivery.delivery_id in new_ids
            for position, delivery in enumerate(deliveries)
        ]

    async def claim_deliveries(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[Delivery]:
        if limit <= 0:
            return []
        now = require_utc(now)
        rows = await self._db.fetch(
            CLAIM_SQL,
            DeliveryStatus.PROCESSING.value,
            worker_id,
            now + timedelta(seconds=lease_seconds),
            DeliveryStatus.PENDING.value,
            now,
            limit,
        )
        # RETURNING gives no order guarantee; sort on the claim order keys.
        ordered = sorted(rows, key=lambda row: (row["received_at"], row["seq"]))
        return [delivery_of(self._values, row, stored_body(row)) for row in ordered]

"""The PostgreSQL merge queues' claims (the rest is `merge_queue`, written once).

A claim is one conditional UPDATE: a second replica claiming the same head at the same
moment waits for the first one's row lock, then finds the row no longer due (PostgreSQL
re-checks the WHERE clause on the updated row) and takes nothing. The claims'
`merge_events` rows are appended by the same statement.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from bot.storage.base import MergeEntry
from bot.storage.merge_queue import COLUMNS, IS_HEAD, entry_of
from bot.storage.postgres_connection import PostgresConnectionBase
from bot.storage.sql import Sql

# The due test is repeated outside the subquery so that a replica that waited for
# another's row lock re-checks it.
CLAIM: Final = Sql(
    "WITH claimed AS ("
    " UPDATE merge_queue SET status = 'processing', lease_owner = :worker,"
    " lease_expires_at = :expires, updated_at = :now, nudged_at = NULL,"
    " reason = CASE WHEN status = 'processing' THEN 'lease expired: reclaimed'"
    " ELSE 'claimed' END"
    " WHERE id IN (SELECT q.id FROM merge_queue q WHERE q.status IN ('pending', 'processing')"
    f" AND {IS_HEAD} AND ((q.status = 'pending' AND q.next_attempt_at <= :now)"
    " OR (q.status = 'processing' AND q.lease_expires_at <= :now)) ORDER BY q.id LIMIT :limit)"
    " AND ((status = 'pending' AND next_attempt_at <= :now)"
    " OR (status = 'processing' AND lease_expires_at <= :now))"
    f" RETURNING {COLUMNS}"
    "), recorded AS ("
    " INSERT INTO merge_events (entry_id, repository, pull_number, judged_sha, from_status,"
    " to_status, actor, reason, at)"
    " SELECT id, repository, pull_number, judged_sha,"
    " CASE WHEN reason = 'claimed' THEN 'pending' ELSE 'processing' END,"
    " 'processing', :worker, reason, :now FROM claimed"
    f") SELECT {COLUMNS} FROM claimed ORDER BY id"
)


class PostgresMergeQueue(PostgresConnectionBase):
    """`Storage.claim_merge_heads` on PostgreSQL."""

    async def claim_merge_heads(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[MergeEntry]:
        if limit <= 0:
            return []
        now = self._values.time(now)
        rows = await self._sql.rows(
            CLAIM,
            worker=worker_id,
            expires=now + timedelta(seconds=lease_seconds),
            now=now,
            limit=limit,
        )
        return [entry_of(self._values, row) for row in rows]

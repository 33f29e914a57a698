"""The SQLite merge queues' claims (the rest is `merge_queue`, written once).

A claim runs in one BEGIN IMMEDIATE transaction, so two processes on the same file never
both take one head; the claims' `merge_events` rows are appended in that transaction.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Final

from bot.storage._codec import require_utc
from bot.storage.base import MergeEntry, MergeStatus
from bot.storage.merge_queue import ACTIVE, COLUMNS, IS_HEAD, entry_of, record_event
from bot.storage.sql import Sql
from bot.storage.sqlite_connection import SqliteConnectionBase

_DUE: Final = (
    "((status = 'pending' AND next_attempt_at <= :now)"
    " OR (status = 'processing' AND lease_expires_at <= :now))"
)
CLAIM: Final = Sql(
    "UPDATE merge_queue SET status = 'processing', lease_owner = :worker,"
    " lease_expires_at = :expires, updated_at = :now, nudged_at = NULL,"
    " reason = CASE WHEN status = 'processing' THEN 'lease expired: reclaimed'"
    " ELSE 'claimed' END"
    f" WHERE id IN (SELECT id FROM merge_queue q WHERE {ACTIVE} AND {IS_HEAD} AND {_DUE}"
    f" ORDER BY id LIMIT :limit) RETURNING {COLUMNS}"
)


class SqliteMergeQueue(SqliteConnectionBase):
    """`Storage.claim_merge_heads` on SQLite."""

    async def claim_merge_heads(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[MergeEntry]:
        if limit <= 0:
            return []
        at = self._values.time(now)
        expires = self._values.time(require_utc(now) + timedelta(seconds=lease_seconds))
        async with self._transaction() as db:
            rows = await db.rows(CLAIM, worker=worker_id, expires=expires, now=at, limit=limit)
            claimed = sorted((entry_of(db, row) for row in rows), key=lambda e: e.id)
            for entry in claimed:
                before = (
                    MergeStatus.PROCESSING
                    if entry.reason.startswith("lease expired")
                    else MergeStatus.PENDING
                )
                await record_event(db, entry, before, worker_id, entry.reason, at)
        return claimed

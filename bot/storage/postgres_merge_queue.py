"""The PostgreSQL merge queues: one per (repository, base branch), leased at the head.

A claim is one conditional UPDATE: a second replica claiming the same head at the same
moment waits for the first one's row lock, then finds the row no longer due (PostgreSQL
re-checks the WHERE clause on the updated row) and takes nothing. Every transition
appends its `merge_events` row in the same statement or transaction.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any, Final

import asyncpg

from bot.storage._codec import dump_json, require_utc
from bot.storage.base import (
    MergeEntry,
    MergeEvent,
    MergeSettle,
    MergeStatus,
    NewMergeEntry,
)
from bot.storage.postgres_connection import PostgresConnectionBase, changed_rows

_COLUMNS: Final = (
    "id, repository, base_branch, pull_number, installation_id, judged_sha, judgment_version,"
    " status, method, options, attempts, prechecks, nudged, updating_from, enqueued_at,"
    " next_attempt_at, lease_owner, lease_expires_at, updated_at, reason"
)
_ACTIVE: Final = "status IN ('pending', 'processing')"
_IS_HEAD: Final = (
    "id = (SELECT MIN(h.id) FROM merge_queue h WHERE h.repository = q.repository"
    " AND h.base_branch = q.base_branch AND h.status IN ('pending', 'processing'))"
)
# Claims clear `nudged_at`, so at a settle it says GitHub reported a change while the step
# ran on what it had read before: an entry left waiting is due at once, as a nudged one.
# Parameters: the settle's status ($1) and now ($3).
_NUDGED_DURING_STEP: Final = "$1 = 'pending' AND nudged_at IS NOT NULL"
# Parameters: worker, lease expiry, now, limit. The due test is repeated outside the
# subquery so that a replica that waited for another's row lock re-checks it.
CLAIM_SQL: Final = (
    "WITH claimed AS ("
    " UPDATE merge_queue SET status = 'processing', lease_owner = $1,"
    " lease_expires_at = $2, updated_at = $3, nudged_at = NULL,"
    " reason = CASE WHEN status = 'processing' THEN 'lease expired: reclaimed'"
    " ELSE 'claimed' END"
    " WHERE id IN (SELECT q.id FROM merge_queue q WHERE q.status IN ('pending', 'processing')"
    f" AND {_IS_HEAD} AND ((q.status = 'pending' AND q.next_attempt_at <= $3)"
    " OR (q.status = 'processing' AND q.lease_expires_at <= $3)) ORDER BY q.id LIMIT $4)"
    " AND ((status = 'pending' AND next_attempt_at <= $3)"
    " OR (status = 'processing' AND lease_expires_at <= $3))"
    f" RETURNING {_COLUMNS}"
    "), recorded AS ("
    " INSERT INTO merge_events (entry_id, repository, pull_number, judged_sha, from_status,"
    " to_status, actor, reason, at)"
    " SELECT id, repository, pull_number, judged_sha,"
    " CASE WHEN reason = 'claimed' THEN 'pending' ELSE 'processing' END,"
    " 'processing', $1, reason, $3 FROM claimed"
    f") SELECT {_COLUMNS} FROM claimed ORDER BY id"
)
_EVENT_SQL: Final = (
    "INSERT INTO merge_events (entry_id, repository, pull_number, judged_sha, from_status,"
    " to_status, actor, reason, at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)"
)


def _entry(row: asyncpg.Record) -> MergeEntry:
    return MergeEntry(
        id=row["id"],
        repository=row["repository"],
        base_branch=row["base_branch"],
        pull_number=row["pull_number"],
        installation_id=row["installation_id"],
        judged_sha=row["judged_sha"],
        judgment_version=row["judgment_version"],
        status=MergeStatus(row["status"]),
        method=row["method"],
        options=dict(row["options"]),
        attempts=row["attempts"],
        prechecks=row["prechecks"],
        nudged=bool(row["nudged"]),
        updating_from=row["updating_from"],
        enqueued_at=row["enqueued_at"],
        next_attempt_at=row["next_attempt_at"],
        lease_owner=row["lease_owner"],
        lease_expires_at=row["lease_expires_at"],
        updated_at=row["updated_at"],
        reason=row["reason"],
    )


async def _record(
    conn: asyncpg.Connection,
    entry: MergeEntry,
    from_status: MergeStatus | None,
    actor: str,
    reason: str,
    at: datetime,
) -> None:
    await conn.execute(
        _EVENT_SQL,
        entry.id,
        entry.repository,
        entry.pull_number,
        entry.judged_sha,
        None if from_status is None else from_status.value,
        entry.status.value,
        actor,
        reason,
        at,
    )


async def _active(
    conn: asyncpg.Connection | asyncpg.Pool, repository: str, pull_number: int, *, lock: bool
) -> MergeEntry | None:
    row = await conn.fetchrow(
        f"SELECT {_COLUMNS} FROM merge_queue WHERE repository = $1 AND pull_number = $2"
        f" AND {_ACTIVE}" + (" FOR UPDATE" if lock else ""),
        repository,
        pull_number,
    )
    return None if row is None else _entry(row)


class PostgresMergeQueue(PostgresConnectionBase):
    """The `Storage` merge-queue methods on `merge_queue` and `merge_events`."""

    async def enqueue_merge(
        self, entry: NewMergeEntry, *, actor: str, reason: str, now: datetime
    ) -> MergeEntry:
        now = require_utc(now)
        # Two approvals of one pull request at once: the unique index on active entries
        # refuses the second insert; its retry finds the row and updates it.
        for _ in range(3):
            try:
                return await self._enqueue_once(entry, actor, reason, now)
            except asyncpg.UniqueViolationError:
                continue
        return await self._enqueue_once(entry, actor, reason, now)

    async def _enqueue_once(
        self, entry: NewMergeEntry, actor: str, reason: str, now: datetime
    ) -> MergeEntry:
        async with self._db.acquire() as conn, conn.transaction():
            current = await _active(conn, entry.repository, entry.pull_number, lock=True)
            if current is None:
                row = await conn.fetchrow(
                    "INSERT INTO merge_queue (repository, base_branch, pull_number,"
                    " installation_id, judged_sha, judgment_version, status, method, options,"
                    " enqueued_at, next_attempt_at, updated_at, reason)"
                    " VALUES ($1, $2, $3, $4, $5, 1, 'pending', $6, $7, $8, $8, $8, $9)"
                    f" RETURNING {_COLUMNS}",
                    entry.repository,
                    entry.base_branch,
                    entry.pull_number,
                    entry.installation_id,
                    entry.judged_sha,
                    entry.method,
                    dump_json(entry.options),
                    now,
                    reason,
                )
            else:
                row = await conn.fetchrow(
                    "UPDATE merge_queue SET judged_sha = $1,"
                    " judgment_version = judgment_version + 1, status = 'pending',"
                    " method = $2, options = $3, attempts = 0, prechecks = 0, nudged = false,"
                    " nudged_at = NULL, updating_from = NULL, next_attempt_at = $4,"
                    " lease_owner = NULL, lease_expires_at = NULL, updated_at = $4, reason = $5"
                    f" WHERE id = $6 RETURNING {_COLUMNS}",
                    entry.judged_sha,
                    entry.method,
                    dump_json(entry.options),
                    now,
                    reason,
                    current.id,
                )
            assert row is not None
            stored = _entry(row)
            await _record(
                conn, stored, None if current is None else current.status, actor, reason, now
            )
        return stored

    async def active_merge(self, repository: str, pull_number: int) -> MergeEntry | None:
        return await _active(self._db, repository, pull_number, lock=False)

    async def merge_queue(self, repository: str, base_branch: str) -> list[MergeEntry]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM merge_queue WHERE repository = $1 AND base_branch = $2"
            f" AND {_ACTIVE} ORDER BY id",
            repository,
            base_branch,
        )
        return [_entry(row) for row in rows]

    async def list_active_merges(self) -> list[MergeEntry]:
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM merge_queue WHERE {_ACTIVE}"
            ' ORDER BY repository COLLATE "C", base_branch COLLATE "C", id'
        )
        return [_entry(row) for row in rows]

    async def claim_merge_heads(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[MergeEntry]:
        if limit <= 0:
            return []
        now = require_utc(now)
        rows = await self._db.fetch(
            CLAIM_SQL, worker_id, now + timedelta(seconds=lease_seconds), now, limit
        )
        return [_entry(row) for row in rows]

    async def settle_merge(
        self, entry_id: int, worker_id: str, settle: MergeSettle, now: datetime
    ) -> bool:
        now = require_utc(now)
        due = require_utc(settle.next_attempt_at) if settle.next_attempt_at is not None else now
        async with self._db.acquire() as conn, conn.transaction():
            row = await conn.fetchrow(
                "UPDATE merge_queue SET status = $1, reason = $2, updated_at = $3,"
                f" next_attempt_at = CASE WHEN {_NUDGED_DURING_STEP}"
                " THEN LEAST($4::timestamptz, $3) ELSE $4 END,"
                f" nudged = ({_NUDGED_DURING_STEP}), nudged_at = NULL,"
                " attempts = COALESCE($5, attempts), prechecks = COALESCE($6, prechecks),"
                " updating_from = COALESCE($7, updating_from),"
                " judged_sha = CASE WHEN $8 THEN NULL ELSE judged_sha END,"
                " lease_owner = NULL, lease_expires_at = NULL"
                " WHERE id = $9 AND status = 'processing' AND lease_owner = $10"
                f" RETURNING {_COLUMNS}",
                settle.status.value,
                settle.reason,
                now,
                due,
                settle.attempts,
                settle.prechecks,
                settle.updating_from,
                settle.clear_judgment,
                entry_id,
                worker_id,
            )
            if row is None:
                return False
            await _record(
                conn, _entry(row), MergeStatus.PROCESSING, settle.actor, settle.reason, now
            )
        return True

    async def leave_merge_queue(
        self,
        repository: str,
        pull_number: int,
        *,
        status: MergeStatus,
        actor: str,
        reason: str,
        now: datetime,
    ) -> MergeEntry | None:
        now = require_utc(now)
        async with self._db.acquire() as conn, conn.transaction():
            current = await _active(conn, repository, pull_number, lock=True)
            if current is None:
                return None
            row = await conn.fetchrow(
                "UPDATE merge_queue SET status = $1, reason = $2, updated_at = $3,"
                f" lease_owner = NULL, lease_expires_at = NULL WHERE id = $4"
                f" RETURNING {_COLUMNS}",
                MergeStatus(status).value,
                reason,
                now,
                current.id,
            )
            assert row is not None
            ended = _entry(row)
            await _record(conn, ended, current.status, actor, reason, now)
        return ended

    async def nudge_merge_queue(
        self, repository: str, now: datetime, *, pull_number: int | None = None
    ) -> int:
        now = require_utc(now)
        sql = (
            "UPDATE merge_queue SET nudged_at = $1,"
            " nudged = CASE WHEN status = 'pending' THEN true ELSE nudged END,"
            " next_attempt_at = CASE WHEN status = 'pending'"
            " THEN LEAST(next_attempt_at, $1) ELSE next_attempt_at END"
            f" WHERE repository = $2 AND {_ACTIVE}"
        )
        params: list[Any] = [now, repository]
        if pull_number is not None:
            sql += " AND pull_number = $3"
            params.append(pull_number)
        return changed_rows(await self._db.execute(sql, *params))

    async def next_merge_due(self) -> datetime | None:
        value = await self._db.fetchval(
            "SELECT MIN(CASE WHEN status = 'pending' THEN next_attempt_at"
            f" ELSE lease_expires_at END) FROM merge_queue q WHERE {_ACTIVE} AND {_IS_HEAD}"
        )
        return value if isinstance(value, datetime) else None

    async def list_merge_events(
        self, repository: str, pull_number: int | None = None
    ) -> list[MergeEvent]:
        sql = (
            "SELECT seq, entry_id, repository, pull_number, judged_sha, from_status, to_status,"
            " actor, reason, at FROM merge_events WHERE repository = $1"
        )
        params: list[Any] = [repository]
        if pull_number is not None:
            sql += " AND pull_number = $2"
            params.append(pull_number)
        rows = await self._db.fetch(sql + " ORDER BY seq", *params)
        return [
            MergeEvent(
                seq=row["seq"],
                entry_id=row["entry_id"],
                repository=row["repository"],
                pull_number=row["pull_number"],
                judged_sha=row["judged_sha"],
                from_status=None if row["from_status"] is None else MergeStatus(row["from_status"]),
                to_status=MergeStatus(row["to_status"]),
                actor=row["actor"],
                reason=row["reason"],
                at=row["at"],
            )
            for row in rows
        ]

"""The SQLite merge queues: one per (repository, base branch), leased at the head.

Claims run in one BEGIN IMMEDIATE transaction, so two processes on the same file never
both take one head; every transition appends its `merge_events` row in the transaction
that makes it.
"""

from __future__ import annotations

import sqlite3
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
from bot.storage.base import (
    MergeEntry,
    MergeEvent,
    MergeSettle,
    MergeStatus,
    NewMergeEntry,
)
from bot.storage.sqlite_connection import SqliteConnectionBase

_COLUMNS: Final = (
    "id, repository, base_branch, pull_number, installation_id, judged_sha, judgment_version,"
    " status, method, options, attempts, prechecks, nudged, updating_from, enqueued_at,"
    " next_attempt_at, lease_owner, lease_expires_at, updated_at, reason"
)
_ACTIVE: Final = "status IN ('pending', 'processing')"
# A queue's head: its oldest active entry. Only heads are claimed or waited for.
_IS_HEAD: Final = (
    "id = (SELECT MIN(h.id) FROM merge_queue h WHERE h.repository = merge_queue.repository"
    " AND h.base_branch = merge_queue.base_branch AND h.status IN ('pending', 'processing'))"
)
_DUE: Final = (
    "((status = 'pending' AND next_attempt_at <= :now)"
    " OR (status = 'processing' AND lease_expires_at <= :now))"
)
# Claims clear `nudged_at`, so at a settle it says GitHub reported a change while the step
# ran on what it had read before: an entry left waiting is due at once, as a nudged one.
_NUDGED_DURING_STEP: Final = ":status = 'pending' AND nudged_at IS NOT NULL"
CLAIM_SQL: Final = (
    "UPDATE merge_queue SET status = 'processing', lease_owner = :worker,"
    " lease_expires_at = :expires, updated_at = :now, nudged_at = NULL,"
    " reason = CASE WHEN status = 'processing' THEN 'lease expired: reclaimed'"
    " ELSE 'claimed' END"
    f" WHERE id IN (SELECT id FROM merge_queue WHERE {_ACTIVE} AND {_IS_HEAD} AND {_DUE}"
    f" ORDER BY id LIMIT :limit) RETURNING {_COLUMNS}"
)


def _entry(row: sqlite3.Row | tuple[Any, ...]) -> MergeEntry:
    return MergeEntry(
        id=row[0],
        repository=row[1],
        base_branch=row[2],
        pull_number=row[3],
        installation_id=row[4],
        judged_sha=row[5],
        judgment_version=row[6],
        status=MergeStatus(row[7]),
        method=row[8],
        options=load_json(row[9]),
        attempts=row[10],
        prechecks=row[11],
        nudged=bool(row[12]),
        updating_from=row[13],
        enqueued_at=from_micros(row[14]),
        next_attempt_at=from_micros(row[15]),
        lease_owner=row[16],
        lease_expires_at=optional_from_micros(row[17]),
        updated_at=from_micros(row[18]),
        reason=row[19],
    )


def _event(row: sqlite3.Row | tuple[Any, ...]) -> MergeEvent:
    return MergeEvent(
        seq=row[0],
        entry_id=row[1],
        repository=row[2],
        pull_number=row[3],
        judged_sha=row[4],
        from_status=None if row[5] is None else MergeStatus(row[5]),
        to_status=MergeStatus(row[6]),
        actor=row[7],
        reason=row[8],
        at=from_micros(row[9]),
    )


async def _record(
    db: InlineConnection,
    entry: MergeEntry,
    from_status: MergeStatus | None,
    actor: str,
    reason: str,
    at: int,
) -> None:
    cursor = await db.execute(
        "INSERT INTO merge_events (entry_id, repository, pull_number, judged_sha, from_status,"
        " to_status, actor, reason, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            entry.id,
            entry.repository,
            entry.pull_number,
            entry.judged_sha,
            None if from_status is None else from_status.value,
            entry.status.value,
            actor,
            reason,
            at,
        ),
    )
    await cursor.close()


async def _active(db: InlineConnection, repository: str, pull_number: int) -> MergeEntry | None:
    rows = list(
        await db.execute_fetchall(
            f"SELECT {_COLUMNS} FROM merge_queue WHERE repository = ? AND pull_number = ?"
            f" AND {_ACTIVE}",
            (repository, pull_number),
        )
    )
    return _entry(rows[0]) if rows else None


class SqliteMergeQueue(SqliteConnectionBase):
    """The `Storage` merge-queue methods on `merge_queue` and `merge_events`."""

    async def enqueue_merge(
        self, entry: NewMergeEntry, *, actor: str, reason: str, now: datetime
    ) -> MergeEntry:
        at = to_micros(now)
        async with self._write_transaction() as db:
            current = await _active(db, entry.repository, entry.pull_number)
            if current is None:
                rows = list(
                    await db.execute_fetchall(
                        "INSERT INTO merge_queue (repository, base_branch, pull_number,"
                        " installation_id, judged_sha, judgment_version, status, method,"
                        " options, enqueued_at, next_attempt_at, updated_at, reason)"
                        " VALUES (?, ?, ?, ?, ?, 1, 'pending', ?, ?, ?, ?, ?, ?)"
                        f" RETURNING {_COLUMNS}",
                        (
                            entry.repository,
                            entry.base_branch,
                            entry.pull_number,
                            entry.installation_id,
                            entry.judged_sha,
                            entry.method,
                            dump_json(entry.options),
                            at,
                            at,
                            at,
                            reason,
                        ),
                    )
                )
            else:
                rows = list(
                    await db.execute_fetchall(
                        "UPDATE merge_queue SET judged_sha = ?,"
                        " judgment_version = judgment_version + 1, status = 'pending',"
                        " method = ?, options = ?, attempts = 0, prechecks = 0, nudged = 0,"
                        " nudged_at = NULL, updating_from = NULL, next_attempt_at = ?,"
                        " lease_owner = NULL, lease_expires_at = NULL, updated_at = ?,"
                        " reason = ?"
                        f" WHERE id = ? RETURNING {_COLUMNS}",
                        (
                            entry.judged_sha,
                            entry.method,
                            dump_json(entry.options),
                            at,
                            at,
                            reason,
                            current.id,
                        ),
                    )
                )
            stored = _entry(rows[0])
            await _record(
                db, stored, None if current is None else current.status, actor, reason, at
            )
        return stored

    async def active_merge(self, repository: str, pull_number: int) -> MergeEntry | None:
        async with self._lock:
            return await _active(self._db, repository, pull_number)

    async def merge_queue(self, repository: str, base_branch: str) -> list[MergeEntry]:
        rows = await self._fetchall(
            f"SELECT {_COLUMNS} FROM merge_queue WHERE repository = ? AND base_branch = ?"
            f" AND {_ACTIVE} ORDER BY id",
            (repository, base_branch),
        )
        return [_entry(row) for row in rows]

    async def list_active_merges(self) -> list[MergeEntry]:
        rows = await self._fetchall(
            f"SELECT {_COLUMNS} FROM merge_queue WHERE {_ACTIVE}"
            " ORDER BY repository, base_branch, id"
        )
        return [_entry(row) for row in rows]

    async def claim_merge_heads(
        self, worker_id: str, limit: int, lease_seconds: float, now: datetime
    ) -> list[MergeEntry]:
        if limit <= 0:
            return []
        at = to_micros(now)
        expires = to_micros(require_utc(now) + timedelta(seconds=lease_seconds))
        async with self._write_transaction() as db:
            rows = await db.execute_fetchall(
                CLAIM_SQL, {"worker": worker_id, "expires": expires, "now": at, "limit": limit}
            )
            claimed = sorted((_entry(row) for row in rows), key=lambda e: e.id)
            for entry in claimed:
                before = (
                    MergeStatus.PROCESSING
                    if entry.reason.startswith("lease expired")
                    else MergeStatus.PENDING
                )
                await _record(db, entry, before, worker_id, entry.reason, at)
        return claimed

    async def settle_merge(
        self, entry_id: int, worker_id: str, settle: MergeSettle, now: datetime
    ) -> bool:
        at = to_micros(now)
        due = to_micros(settle.next_attempt_at) if settle.next_attempt_at is not None else at
        async with self._write_transaction() as db:
            rows = list(
                await db.execute_fetchall(
                    "UPDATE merge_queue SET status = :status, reason = :reason,"
                    f" updated_at = :now, next_attempt_at = CASE WHEN {_NUDGED_DURING_STEP}"
                    " THEN MIN(:due, :now) ELSE :due END,"
                    f" nudged = CASE WHEN {_NUDGED_DURING_STEP} THEN 1 ELSE 0 END,"
                    " nudged_at = NULL,"
                    " attempts = COALESCE(:attempts, attempts),"
                    " prechecks = COALESCE(:prechecks, prechecks),"
                    " updating_from = COALESCE(:updating, updating_from),"
                    " judged_sha = CASE WHEN :clear THEN NULL ELSE judged_sha END,"
                    " lease_owner = NULL, lease_expires_at = NULL"
                    " WHERE id = :id AND status = 'processing' AND lease_owner = :worker"
                    f" RETURNING {_COLUMNS}",
                    {
                        "status": settle.status.value,
                        "reason": settle.reason,
                        "now": at,
                        "due": due,
                        "attempts": settle.attempts,
                        "prechecks": settle.prechecks,
                        "updating": settle.updating_from,
                        "clear": int(settle.clear_judgment),
                        "id": entry_id,
                        "worker": worker_id,
                    },
                )
            )
            if not rows:
                return False
            await _record(
                db, _entry(rows[0]), MergeStatus.PROCESSING, settle.actor, settle.reason, at
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
        at = to_micros(now)
        async with self._write_transaction() as db:
            current = await _active(db, repository, pull_number)
            if current is None:
                return None
            rows = list(
                await db.execute_fetchall(
                    "UPDATE merge_queue SET status = ?, reason = ?, updated_at = ?,"
                    f" lease_owner = NULL, lease_expires_at = NULL WHERE id = ?"
                    f" RETURNING {_COLUMNS}",
                    (MergeStatus(status).value, reason, at, current.id),
                )
            )
            ended = _entry(rows[0])
            await _record(db, ended, current.status, actor, reason, at)
        return ended

    async def nudge_merge_queue(
        self, repository: str, now: datetime, *, pull_number: int | None = None
    ) -> int:
        at = to_micros(now)
        sql = (
            "UPDATE merge_queue SET nudged_at = ?1,"
            " nudged = CASE WHEN status = 'pending' THEN 1 ELSE nudged END,"
            " next_attempt_at = CASE WHEN status = 'pending'"
            " THEN MIN(next_attempt_at, ?1) ELSE next_attempt_at END"
            f" WHERE repository = ?2 AND {_ACTIVE}"
        )
        params: tuple[Any, ...] = (at, repository)
        if pull_number is not None:
            sql += " AND pull_number = ?3"
            params += (pull_number,)
        return await self._execute(sql, params)

    async def next_merge_due(self) -> datetime | None:
        rows = await self._fetchall(
            "SELECT MIN(CASE WHEN status = 'pending' THEN next_attempt_at"
            f" ELSE lease_expires_at END) FROM merge_queue WHERE {_ACTIVE} AND {_IS_HEAD}"
        )
        return optional_from_micros(rows[0][0]) if rows else None

    async def list_merge_events(
        self, repository: str, pull_number: int | None = None
    ) -> list[MergeEvent]:
        sql = (
            "SELECT seq, entry_id, repository, pull_number, judged_sha, from_status, to_status,"
            " actor, reason, at FROM merge_events WHERE repository = ?"
        )
        params: tuple[Any, ...] = (repository,)
        if pull_number is not None:
            sql += " AND pull_number = ?"
            params += (pull_number,)
        rows = await self._fetchall(sql + " ORDER BY seq", params)
        return [_event(row) for row in rows]

"""The merge queues on both backends: one per (repository, base branch), leased at the head.

Every transition appends its `merge_events` row in the transaction that makes it. Reads
of a pull request's active entry inside a transaction lock the row on PostgreSQL (FOR
UPDATE); SQLite's BEGIN IMMEDIATE already holds the file's write lock. Claiming heads
is each backend's own (`sqlite_merge_queue`, `postgres_merge_queue`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from bot.storage._codec import dump_json
from bot.storage.base import (
    MergeEntry,
    MergeEvent,
    MergeOptions,
    MergePriority,
    MergeSettle,
    MergeStatus,
    NewMergeEntry,
)
from bot.storage.merge_queue_batches import MergeQueueBatches
from bot.storage.sql import Executor, Row, Sql, Values

COLUMNS: Final = (
    "id, repository, base_branch, pull_number, installation_id, judged_sha, judgment_version,"
    " status, method, options, attempts, prechecks, nudged, updating_from, enqueued_at,"
    " next_attempt_at, lease_owner, lease_expires_at, updated_at, reason, priority,"
    " priority_by, priority_at, batch"
)
ACTIVE: Final = "status IN ('pending', 'processing')"


def _head_order(row: str = "") -> str:
    """Queue order (of the row named `row`, with its dot): an entry being worked on first
    (so a priority set meanwhile never puts a second one in flight), then by priority,
    then the oldest."""
    return f"CASE WHEN {row}status = 'processing' THEN 0 ELSE 1 END, {row}priority DESC, {row}id"


HEAD_ORDER: Final = _head_order()
# A queue's head: its first active entry in that order (of the row named q). Only heads
# are claimed or waited for.
IS_HEAD: Final = (
    "id = (SELECT h.id FROM merge_queue h WHERE h.repository = q.repository"
    " AND h.base_branch = q.base_branch AND h.status IN ('pending', 'processing')"
    f" ORDER BY {_head_order('h.')} LIMIT 1)"
)
_EVENT_COLUMNS: Final = (
    "seq, entry_id, repository, pull_number, judged_sha, from_status, to_status, actor, reason, at"
)

_SELECT_ACTIVE: Final = (
    f"SELECT {COLUMNS} FROM merge_queue WHERE repository = :repository"
    f" AND pull_number = :pull_number AND {ACTIVE}"
)
GET_ACTIVE: Final = Sql(_SELECT_ACTIVE)
# Inside the transaction that changes it.
LOCK_ACTIVE: Final = Sql(_SELECT_ACTIVE, postgres=_SELECT_ACTIVE + " FOR UPDATE")
INSERT_ENTRY: Final = Sql(
    "INSERT INTO merge_queue (repository, base_branch, pull_number, installation_id,"
    " judged_sha, judgment_version, status, method, options, enqueued_at, next_attempt_at,"
    " updated_at, reason) VALUES (:repository, :base_branch, :pull_number, :installation_id,"
    " :judged_sha, 1, 'pending', :method, :options, :now, :now, :now, :reason)"
    f" RETURNING {COLUMNS}"
)
REAPPROVE_ENTRY: Final = Sql(
    "UPDATE merge_queue SET judged_sha = :judged_sha,"
    " judgment_version = judgment_version + 1, status = 'pending',"
    " method = :method, options = :options, attempts = 0, prechecks = 0, nudged = false,"
    " nudged_at = NULL, updating_from = NULL, next_attempt_at = :now,"
    " lease_owner = NULL, lease_expires_at = NULL, updated_at = :now, reason = :reason"
    f" WHERE id = :id RETURNING {COLUMNS}"
)
QUEUE: Final = Sql(
    f"SELECT {COLUMNS} FROM merge_queue WHERE repository = :repository"
    f" AND base_branch = :base_branch AND {ACTIVE} ORDER BY {HEAD_ORDER}"
)
LIST_ACTIVE: Final = Sql(
    f"SELECT {COLUMNS} FROM merge_queue WHERE {ACTIVE}"
    f" ORDER BY repository, base_branch, {HEAD_ORDER}",
    postgres=f"SELECT {COLUMNS} FROM merge_queue WHERE {ACTIVE}"
    f' ORDER BY repository COLLATE "C", base_branch COLLATE "C", {HEAD_ORDER}',
)
SET_PRIORITY: Final = Sql(
    "UPDATE merge_queue SET priority = :priority, priority_by = :actor,"
    f" priority_at = :now, updated_at = :now WHERE id = :id RETURNING {COLUMNS}"
)
# Claims clear `nudged_at`, so at a settle it says GitHub reported a change while the step
# ran on what it had read before: an entry left waiting is due at once, as a nudged one.
_NUDGED_DURING_STEP: Final = ":status = 'pending' AND nudged_at IS NOT NULL"


def _settle(earlier_of_due_and_now: str) -> str:
    return (
        "UPDATE merge_queue SET status = :status, reason = :reason, updated_at = :now,"
        f" next_attempt_at = CASE WHEN {_NUDGED_DURING_STEP}"
        f" THEN {earlier_of_due_and_now} ELSE :due END,"
        f" nudged = CASE WHEN {_NUDGED_DURING_STEP} THEN true ELSE false END,"
        " nudged_at = NULL,"
        " attempts = COALESCE(:attempts, attempts),"
        " prechecks = COALESCE(:prechecks, prechecks),"
        " updating_from = COALESCE(:updating, updating_from),"
        " judged_sha = CASE WHEN :clear THEN NULL ELSE judged_sha END,"
        " lease_owner = NULL, lease_expires_at = NULL"
        " WHERE id = :id AND status = 'processing' AND lease_owner = :worker"
        f" RETURNING {COLUMNS}"
    )


SETTLE: Final = Sql(_settle("MIN(:due, :now)"), postgres=_settle("LEAST(:due::timestamptz, :now)"))
LEAVE: Final = Sql(
    "UPDATE merge_queue SET status = :status, reason = :reason, updated_at = :now,"
    f" lease_owner = NULL, lease_expires_at = NULL WHERE id = :id RETURNING {COLUMNS}"
)


def _nudge(earlier: str, one_pull: bool) -> str:
    return (
        "UPDATE merge_queue SET nudged_at = :now,"
        " nudged = CASE WHEN status = 'pending' THEN true ELSE nudged END,"
        " next_attempt_at = CASE WHEN status = 'pending'"
        f" THEN {earlier}(next_attempt_at, :now) ELSE next_attempt_at END"
        f" WHERE repository = :repository AND {ACTIVE}"
        + (" AND pull_number = :pull_number" if one_pull else "")
    )


NUDGE_QUEUE: Final = Sql(_nudge("MIN", False), postgres=_nudge("LEAST", False))
NUDGE_PULL: Final = Sql(_nudge("MIN", True), postgres=_nudge("LEAST", True))
NEXT_DUE: Final = Sql(
    "SELECT MIN(CASE WHEN status = 'pending' THEN next_attempt_at"
    f" ELSE lease_expires_at END) FROM merge_queue q WHERE {ACTIVE} AND {IS_HEAD}"
)
RECORD_EVENT: Final = Sql(
    "INSERT INTO merge_events (entry_id, repository, pull_number, judged_sha, from_status,"
    " to_status, actor, reason, at) VALUES (:entry_id, :repository, :pull_number,"
    " :judged_sha, :from_status, :to_status, :actor, :reason, :at)"
)
_EVENTS: Final = f"SELECT {_EVENT_COLUMNS} FROM merge_events WHERE repository = :repository"
EVENTS: Final = Sql(_EVENTS + " ORDER BY seq")
PULL_EVENTS: Final = Sql(_EVENTS + " AND pull_number = :pull_number ORDER BY seq")


def entry_of(db: Values, row: Row) -> MergeEntry:
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
        options=MergeOptions.from_json(db.document_of(row[9])),
        attempts=row[10],
        prechecks=row[11],
        nudged=bool(row[12]),
        updating_from=row[13],
        enqueued_at=db.time_of(row[14]),
        next_attempt_at=db.time_of(row[15]),
        lease_owner=row[16],
        lease_expires_at=db.optional_time_of(row[17]),
        updated_at=db.time_of(row[18]),
        reason=row[19],
        priority=MergePriority.of_rank(int(row[20])),
        priority_by=row[21],
        priority_at=db.optional_time_of(row[22]),
        batch=row[23],
    )


def _event_of(db: Values, row: Row) -> MergeEvent:
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
        at=db.time_of(row[9]),
    )


async def record_event(
    db: Executor,
    entry: MergeEntry,
    from_status: MergeStatus | None,
    actor: str,
    reason: str,
    at: Any,
) -> None:
    """Appends the transition that left `entry` as it is (`at` as the column holds it)."""
    await db.run(
        RECORD_EVENT,
        entry_id=entry.id,
        repository=entry.repository,
        pull_number=entry.pull_number,
        judged_sha=entry.judged_sha,
        from_status=None if from_status is None else from_status.value,
        to_status=entry.status.value,
        actor=actor,
        reason=reason,
        at=at,
    )


async def _active(
    db: Executor, statement: Sql, repository: str, pull_number: int
) -> MergeEntry | None:
    row = await db.row(statement, repository=repository, pull_number=pull_number)
    return None if row is None else entry_of(db, row)


class MergeQueue(MergeQueueBatches):
    """The `Storage` merge-queue methods on `merge_queue` and `merge_events`, but for
    claiming heads; batches (`merge_queue_batches`)."""

    async def enqueue_merge(
        self, entry: NewMergeEntry, *, actor: str, reason: str, now: datetime
    ) -> MergeEntry:
        at = self._values.time(now)
        # Two approvals of one pull request at once (PostgreSQL's replicas): the unique
        # index on active entries refuses the second insert; its retry finds the row and
        # updates it.
        for _ in range(3):
            try:
                return await self._enqueue_once(entry, actor, reason, at)
            except self._unique_violation:
                continue
        return await self._enqueue_once(entry, actor, reason, at)

    async def _enqueue_once(
        self, entry: NewMergeEntry, actor: str, reason: str, at: Any
    ) -> MergeEntry:
        async with self._transaction() as db:
            current = await _active(db, LOCK_ACTIVE, entry.repository, entry.pull_number)
            if current is None:
                row = await db.row(
                    INSERT_ENTRY,
                    repository=entry.repository,
                    base_branch=entry.base_branch,
                    pull_number=entry.pull_number,
                    installation_id=entry.installation_id,
                    judged_sha=entry.judged_sha,
                    method=entry.method,
                    options=dump_json(entry.options.as_json()),
                    now=at,
                    reason=reason,
                )
            else:
                row = await db.row(
                    REAPPROVE_ENTRY,
                    judged_sha=entry.judged_sha,
                    method=entry.method,
                    options=dump_json(entry.options.as_json()),
                    now=at,
                    reason=reason,
                    id=current.id,
                )
            assert row is not None
            stored = entry_of(db, row)
            await record_event(
                db, stored, None if current is None else current.status, actor, reason, at
            )
        return stored

    async def active_merge(self, repository: str, pull_number: int) -> MergeEntry | None:
        return await _active(self._sql, GET_ACTIVE, repository, pull_number)

    async def merge_queue(self, repository: str, base_branch: str) -> list[MergeEntry]:
        db = self._sql
        rows = await db.rows(QUEUE, repository=repository, base_branch=base_branch)
        return [entry_of(db, row) for row in rows]

    async def list_active_merges(self) -> list[MergeEntry]:
        db = self._sql
        return [entry_of(db, row) for row in await db.rows(LIST_ACTIVE)]

    async def settle_merge(
        self, entry_id: int, worker_id: str, settle: MergeSettle, now: datetime
    ) -> bool:
        values = self._values
        at = values.time(now)
        due = values.time(settle.next_attempt_at) if settle.next_attempt_at is not None else at
        async with self._transaction() as db:
            row = await db.row(
                SETTLE,
                status=settle.status.value,
                reason=settle.reason,
                now=at,
                due=due,
                attempts=settle.attempts,
                prechecks=settle.prechecks,
                updating=settle.updating_from,
                clear=db.flag(settle.clear_judgment),
                id=entry_id,
                worker=worker_id,
            )
            if row is None:
                return False
            await record_event(
                db, entry_of(db, row), MergeStatus.PROCESSING, settle.actor, settle.reason, at
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
        params = {"status": MergeStatus(status).value, "reason": reason}
        return await self._change_active(repository, pull_number, LEAVE, params, actor, reason, now)

    async def nudge_merge_queue(
        self, repository: str, now: datetime, *, pull_number: int | None = None
    ) -> int:
        at = self._values.time(now)
        if pull_number is None:
            return await self._sql.run(NUDGE_QUEUE, now=at, repository=repository)
        return await self._sql.run(
            NUDGE_PULL, now=at, repository=repository, pull_number=pull_number
        )

    async def set_merge_priority(
        self,
        repository: str,
        pull_number: int,
        priority: MergePriority,
        *,
        actor: str,
        now: datetime,
    ) -> MergeEntry | None:
        params = {"priority": priority.rank, "actor": actor}
        reason = f"priority {priority.value}, set by @{actor}"
        return await self._change_active(
            repository, pull_number, SET_PRIORITY, params, actor, reason, now
        )

    async def _change_active(
        self,
        repository: str,
        pull_number: int,
        statement: Sql,
        params: Mapping[str, Any],
        actor: str,
        reason: str,
        now: datetime,
    ) -> MergeEntry | None:
        """Runs `statement` (with `params`, the row's `id` and `now`) on the pull request's
        active entry, locked, and records the transition; None when it has no active entry."""
        at = self._values.time(now)
        async with self._transaction() as db:
            current = await _active(db, LOCK_ACTIVE, repository, pull_number)
            if current is None:
                return None
            row = await db.row(statement, id=current.id, now=at, **params)
            assert row is not None
            changed = entry_of(db, row)
            await record_event(db, changed, current.status, actor, reason, at)
        return changed

    async def next_merge_due(self) -> datetime | None:
        db = self._sql
        row = await db.row(NEXT_DUE)
        return None if row is None else db.optional_time_of(row[0])

    async def list_merge_events(
        self, repository: str, pull_number: int | None = None
    ) -> list[MergeEvent]:
        db = self._sql
        if pull_number is None:
            rows = await db.rows(EVENTS, repository=repository)
        else:
            rows = await db.rows(PULL_EVENTS, repository=repository, pull_number=pull_number)
        return [_event_of(db, row) for row in rows]

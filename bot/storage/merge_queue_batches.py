"""The App's queue's batches on both backends (`merge_batches`, and `merge_queue.batch`).

Only the worker holding the lease on a queue's head acts for that queue, so every write
here is conditional on that lease, in the statement that writes: a worker whose lease ran
out (or was reclaimed by another replica) changes nothing, and learns so from the answer.
Members and file lists are JSON text (the same on both backends); their order matters
(the members are merged in that order).
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Final

from bot.storage.base import (
    BatchFailure,
    BatchState,
    BatchUpdate,
    CheckResult,
    MergeBatch,
    NewMergeBatch,
    QueueLease,
)
from bot.storage.sql import Row, Sql, SqlStore, Values

BATCH_COLUMNS: Final = (
    "id, repository, base_branch, members, built_on, tip, review_files, split_from, state,"
    " ci, review, failure_check, failure_detail, failure_files, reason, created_at, updated_at"
)
IN_FLIGHT: Final = "state IN ('building', 'testing')"
FINAL: Final = frozenset({BatchState.LANDED, BatchState.FAILED, BatchState.DISCARDED})
# The lease on the queue's head, still this worker's and not run out.
_HELD: Final = (
    "EXISTS (SELECT 1 FROM merge_queue h WHERE h.id = :head AND h.status = 'processing'"
    " AND h.lease_owner = :worker AND h.lease_expires_at > :now)"
)
OPEN: Final = Sql(
    "INSERT INTO merge_batches (repository, base_branch, members, built_on, tip,"
    " review_files, split_from, state, ci, review, failure_files, reason, created_at,"
    " updated_at) SELECT :repository, :base_branch, :members, :built_on, '', :review_files,"
    " :split_from, 'building', 'pending', :review, '[]', '', :now, :now"
    f" WHERE {_HELD} RETURNING {BATCH_COLUMNS}"
)
MARK_MEMBERS: Final = Sql(
    "UPDATE merge_queue SET batch = :batch WHERE repository = :repository"
    " AND base_branch = :base_branch AND status IN ('pending', 'processing')"
    " AND pull_number = :pull_number"
)
UPDATE: Final = Sql(
    "UPDATE merge_batches SET state = COALESCE(:state, state), tip = COALESCE(:tip, tip),"
    " ci = COALESCE(:ci, ci), review = COALESCE(:review, review),"
    " failure_check = COALESCE(:failure_check, failure_check),"
    " failure_detail = COALESCE(:failure_detail, failure_detail),"
    " failure_files = COALESCE(:failure_files, failure_files),"
    " reason = COALESCE(:reason, reason), updated_at = :now"
    f" WHERE id = :id AND {IN_FLIGHT} AND {_HELD} RETURNING id"
)
UNMARK_MEMBERS: Final = Sql("UPDATE merge_queue SET batch = NULL WHERE batch = :batch")
IN_FLIGHT_BATCHES: Final = Sql(
    f"SELECT {BATCH_COLUMNS} FROM merge_batches WHERE repository = :repository"
    f" AND base_branch = :base_branch AND {IN_FLIGHT} ORDER BY id"
)


def _texts(value: Any) -> tuple[str, ...]:
    return tuple(str(item) for item in json.loads(value or "[]"))


def batch_of(db: Values, row: Row) -> MergeBatch:
    check = row[11]
    failure = None if check is None else BatchFailure(check, row[12] or "", _texts(row[13]))
    return MergeBatch(
        id=row[0],
        repository=row[1],
        base_branch=row[2],
        members=tuple((int(number), str(sha)) for number, sha in json.loads(row[3])),
        built_on=row[4],
        tip=row[5],
        review_files=_texts(row[6]),
        split_from=row[7],
        state=BatchState(row[8]),
        ci=CheckResult(row[9]),
        review=CheckResult(row[10]),
        failure=failure,
        reason=row[14],
        created_at=db.time_of(row[15]),
        updated_at=db.time_of(row[16]),
    )


class MergeQueueBatches(SqlStore):
    """`Storage.open_merge_batch`, `update_merge_batch`, `merge_batches`."""

    async def open_merge_batch(
        self, batch: NewMergeBatch, lease: QueueLease, now: datetime
    ) -> MergeBatch | None:
        at = self._values.time(now)
        # Nothing to re-read: the judges' part is done before the batch is built.
        review = CheckResult.PENDING if batch.review_files else CheckResult.PASSED
        async with self._transaction() as db:
            row = await db.row(
                OPEN,
                repository=batch.repository,
                base_branch=batch.base_branch,
                members=json.dumps([list(member) for member in batch.members]),
                built_on=batch.built_on,
                review_files=json.dumps(sorted(batch.review_files)),
                split_from=batch.split_from,
                review=review.value,
                now=at,
                head=lease.head_id,
                worker=lease.worker_id,
            )
            if row is None:
                return None
            opened = batch_of(db, row)
            await db.many(
                MARK_MEMBERS,
                [
                    {
                        "batch": opened.id,
                        "repository": batch.repository,
                        "base_branch": batch.base_branch,
                        "pull_number": number,
                    }
                    for number, _ in batch.members
                ],
            )
        return opened

    async def update_merge_batch(
        self, batch_id: int, update: BatchUpdate, lease: QueueLease, now: datetime
    ) -> bool:
        failure = update.failure
        async with self._transaction() as db:
            row = await db.row(
                UPDATE,
                state=None if update.state is None else update.state.value,
                tip=update.tip,
                ci=None if update.ci is None else update.ci.value,
                review=None if update.review is None else update.review.value,
                failure_check=None if failure is None else failure.check,
                failure_detail=None if failure is None else failure.detail,
                failure_files=None if failure is None else json.dumps(list(failure.files)),
                reason=update.reason,
                now=self._values.time(now),
                id=batch_id,
                head=lease.head_id,
                worker=lease.worker_id,
            )
            if row is None:
                return False
            if update.state in FINAL:
                await db.run(UNMARK_MEMBERS, batch=batch_id)
        return True

    async def merge_batches(self, repository: str, base_branch: str) -> list[MergeBatch]:
        db = self._sql
        rows = await db.rows(IN_FLIGHT_BATCHES, repository=repository, base_branch=base_branch)
        return [batch_of(db, row) for row in rows]

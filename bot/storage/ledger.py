"""Tables that are only ever appended to, on both backends: verdict records (with their
facts, `facts`) and usage amounts.

Rows are never updated; reads select by filter or time window (the verdict audit
log oldest first, usage as a sum over a window for throttles and budgets). The reads
each backend does its own way (the facts of a window, the repositories, records by
sequence number) are in `sqlite_ledger` and `postgres_ledger`.
"""

from __future__ import annotations

from datetime import datetime
from functools import cache
from typing import Any, Final

from bot.storage import facts
from bot.storage._codec import dump_json, load_json
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.sql import Row, Sql, SqlStore, Values

VERDICT_COLUMNS: Final = "seq, task_id, repository, head_sha, verdict, created_at, record"
APPEND_VERDICT: Final = Sql(
    "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at, record)"
    " VALUES (:task_id, :repository, :head_sha, :verdict, :created_at, :record) RETURNING seq"
)
RECORD_USAGE: Final = Sql("INSERT INTO usage (scope, at, amount) VALUES (:scope, :at, :amount)")
USAGE_SINCE: Final = Sql(
    "SELECT COALESCE(SUM(amount), 0) FROM usage WHERE scope = :scope AND at >= :since"
)
# The filters of `list_verdicts`, in the order they are tested.
_FILTERS: Final = (
    ("task_id", "task_id = :task_id"),
    ("repository", "repository = :repository"),
    ("head_sha", "head_sha = :head_sha"),
    ("since", "created_at >= :since"),
)


@cache
def _list_verdicts(given: frozenset[str]) -> Sql:
    """The statement for the filters `given` (and "limit"), made once per combination."""
    clauses = [clause for name, clause in _FILTERS if name in given]
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    tail = " LIMIT :limit" if "limit" in given else ""
    return Sql(f"SELECT {VERDICT_COLUMNS} FROM verdicts{where} ORDER BY seq{tail}")


def stored_verdict(db: Values, row: Row) -> StoredVerdict:
    return StoredVerdict(
        seq=row[0],
        task_id=row[1],
        repository=row[2],
        head_sha=row[3],
        verdict=row[4],
        created_at=db.time_of(row[5]),
        record=db.document_of(row[6]),
    )


class Ledger(SqlStore):
    """The `Storage` verdict and usage methods both backends share."""

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
        at = self._values.time(created_at)
        text = dump_json(record)
        # The facts are read from the record as stored (dump_json may have replaced
        # characters), so they equal what a later backfill would read.
        stored = load_json(text)
        async with self._transaction() as db:
            row = await db.row(
                APPEND_VERDICT,
                task_id=task_id,
                repository=repository,
                head_sha=head_sha,
                verdict=verdict,
                created_at=at,
                record=text,
            )
            if row is None:
                raise RuntimeError("the store did not report the appended verdict's seq")
            seq = int(row[0])
            await db.run(
                facts.INSERT,
                **facts.facts_params(seq, task_id, repository, head_sha, at, stored, db.flag),
            )
        return seq

    async def list_verdicts(
        self,
        *,
        task_id: str | None = None,
        repository: str | None = None,
        head_sha: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredVerdict]:
        given = {
            "task_id": task_id,
            "repository": repository,
            "head_sha": head_sha,
            "since": None if since is None else self._values.time(since),
            "limit": limit,
        }
        params = {name: value for name, value in given.items() if value is not None}
        db = self._sql
        rows = await db.rows(_list_verdicts(frozenset(params)), **params)
        return [stored_verdict(db, row) for row in rows]

    async def last_verdict_seq(self) -> int:
        row = await self._sql.row(facts.LAST_SEQ)
        assert row is not None, "an aggregate returns one row"
        return int(row[0])

    async def list_verdict_facts_after(self, seq: int, *, limit: int) -> list[VerdictFacts]:
        db = self._sql
        rows = await db.rows(facts.AFTER, after=seq, limit=limit)
        return facts.verdict_facts_of(rows, db.time_of)

    # -- usage counters ------------------------------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None:
        await self._sql.run(RECORD_USAGE, scope=scope, at=self._values.time(at), amount=amount)

    async def usage_since(self, scope: str, since: datetime) -> int:
        row = await self._sql.row(USAGE_SINCE, scope=scope, since=self._values.time(since))
        assert row is not None, "an aggregate returns one row"
        return int(row[0])

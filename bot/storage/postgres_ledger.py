"""PostgreSQL tables that are only ever appended to: verdict records (with their facts,
`postgres_facts`) and usage amounts.

Rows are never updated; reads select by filter or time window (the verdict audit
log oldest first, usage as a sum over a window for throttles and budgets).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import asyncpg

from bot.storage._codec import dump_json, load_json, require_utc
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.postgres_connection import PostgresConnectionBase
from bot.storage.postgres_facts import (
    INSERT,
    facts_of_rows,
    facts_row,
    fill_missing_facts,
    select_sql,
)

_VERDICT_COLUMNS: Final = "seq, task_id, repository, head_sha, verdict, created_at, record"


def _stored(row: asyncpg.Record) -> StoredVerdict:
    return StoredVerdict(
        seq=row["seq"],
        task_id=row["task_id"],
        repository=row["repository"],
        head_sha=row["head_sha"],
        verdict=row["verdict"],
        created_at=row["created_at"],
        record=row["record"],
    )


class PostgresLedger(PostgresConnectionBase):
    """The `Storage` verdict and usage methods."""

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
        at = require_utc(created_at)
        text = dump_json(record)
        # The facts are read from the record as stored (dump_json may have replaced
        # characters), so they equal what a later backfill would read.
        stored = load_json(text)
        async with self._db.acquire() as conn, conn.transaction():
            seq = await conn.fetchval(
                "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at, record)"
                " VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
                task_id,
                repository,
                head_sha,
                verdict,
                at,
                text,
            )
            await conn.execute(INSERT, *facts_row(seq, task_id, repository, head_sha, at, stored))
        return int(seq)

    async def list_verdicts(
        self,
        *,
        task_id: str | None = None,
        repository: str | None = None,
        head_sha: str | None = None,
        since: datetime | None = None,
        limit: int | None = None,
    ) -> list[StoredVerdict]:
        clauses: list[str] = []
        params: list[Any] = []
        for column, value in (
            ("task_id", task_id),
            ("repository", repository),
            ("head_sha", head_sha),
        ):
            if value is not None:
                params.append(value)
                clauses.append(f"{column} = ${len(params)}")
        if since is not None:
            params.append(require_utc(since))
            clauses.append(f"created_at >= ${len(params)}")
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = ""
        if limit is not None:
            params.append(limit)
            tail = f" LIMIT ${len(params)}"
        rows = await self._db.fetch(
            f"SELECT {_VERDICT_COLUMNS} FROM verdicts{where} ORDER BY seq{tail}", *params
        )
        return [_stored(row) for row in rows]

    async def list_verdict_facts(
        self, *, since: datetime | None = None, repository: str | None = None
    ) -> list[VerdictFacts]:
        start = None if since is None else require_utc(since)
        # A replica of an older version may still be appending records without facts
        # (a rolling upgrade): they are written now, from the records.
        await fill_missing_facts(self._db, start)
        sql, params = select_sql(start, None if repository is None else repository.lower())
        return facts_of_rows(await self._db.fetch(sql, *params))

    async def list_verdict_repositories(self, *, since: datetime | None = None) -> list[str]:
        rows = await self._db.fetch(
            "SELECT DISTINCT ON (repo_key) repository FROM verdict_facts"
            " WHERE repo_key <> '' AND ($1::timestamptz IS NULL OR created_at >= $1)"
            " ORDER BY repo_key, seq",
            None if since is None else require_utc(since),
        )
        return [row["repository"] for row in rows]

    async def get_verdicts(self, seqs: Sequence[int]) -> list[StoredVerdict]:
        rows = await self._db.fetch(
            f"SELECT {_VERDICT_COLUMNS} FROM verdicts WHERE seq = ANY($1::bigint[]) ORDER BY seq",
            sorted(set(seqs)),
        )
        return [_stored(row) for row in rows]

    # -- usage counters ------------------------------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None:
        await self._db.execute(
            "INSERT INTO usage (scope, at, amount) VALUES ($1, $2, $3)",
            scope,
            require_utc(at),
            amount,
        )

    async def usage_since(self, scope: str, since: datetime) -> int:
        total = await self._db.fetchval(
            "SELECT COALESCE(SUM(amount), 0) FROM usage WHERE scope = $1 AND at >= $2",
            scope,
            require_utc(since),
        )
        return int(total)

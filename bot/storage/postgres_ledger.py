"""PostgreSQL tables that are only ever appended to: verdict records and usage amounts.

Rows are never updated; reads select by filter or time window (the verdict audit
log oldest first, usage as a sum over a window for throttles and budgets).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.storage._codec import dump_json, require_utc
from bot.storage.base import StoredVerdict
from bot.storage.postgres_connection import PostgresConnectionBase


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
        seq = await self._db.fetchval(
            "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at, record)"
            " VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
            task_id,
            repository,
            head_sha,
            verdict,
            require_utc(created_at),
            dump_json(record),
        )
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
            "SELECT seq, task_id, repository, head_sha, verdict, created_at, record"
            f" FROM verdicts{where} ORDER BY seq{tail}",
            *params,
        )
        return [
            StoredVerdict(
                seq=row["seq"],
                task_id=row["task_id"],
                repository=row["repository"],
                head_sha=row["head_sha"],
                verdict=row["verdict"],
                created_at=row["created_at"],
                record=row["record"],
            )
            for row in rows
        ]

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

"""SQLite tables that are only ever appended to: verdict records and usage amounts.

Rows are never updated; reads select by filter or time window (the verdict audit
log oldest first, usage as a sum over a window for throttles and budgets).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from bot.storage._codec import dump_json, from_micros, load_json, to_micros
from bot.storage.base import StoredVerdict
from bot.storage.sqlite_connection import SqliteConnectionBase


class SqliteLedger(SqliteConnectionBase):
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
        async with self._lock:
            seq = await self._db.execute_insert(
                "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at,"
                " record) VALUES (?, ?, ?, ?, ?, ?)",
                (task_id, repository, head_sha, verdict, to_micros(created_at), dump_json(record)),
            )
        if seq is None:
            raise RuntimeError("SQLite did not report the appended verdict's rowid")
        return int(seq[0])

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
                clauses.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            clauses.append("created_at >= ?")
            params.append(to_micros(since))
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        tail = ""
        if limit is not None:
            tail = " LIMIT ?"
            params.append(limit)
        rows = await self._fetchall(
            "SELECT seq, task_id, repository, head_sha, verdict, created_at, record"
            f" FROM verdicts{where} ORDER BY seq{tail}",
            params,
        )
        return [
            StoredVerdict(
                seq=row[0],
                task_id=row[1],
                repository=row[2],
                head_sha=row[3],
                verdict=row[4],
                created_at=from_micros(row[5]),
                record=load_json(row[6]),
            )
            for row in rows
        ]

    # -- usage counters ------------------------------------------------------
    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None:
        await self._execute(
            "INSERT INTO usage (scope, at, amount) VALUES (?, ?, ?)",
            (scope, to_micros(at), amount),
        )

    async def usage_since(self, scope: str, since: datetime) -> int:
        rows = await self._fetchall(
            "SELECT COALESCE(SUM(amount), 0) FROM usage WHERE scope = ? AND at >= ?",
            (scope, to_micros(since)),
        )
        return int(rows[0][0])

"""SQLite tables that are only ever appended to: verdict records (with their facts,
`sqlite_facts`) and usage amounts.

Rows are never updated; reads select by filter or time window (the verdict audit
log oldest first, usage as a sum over a window for throttles and budgets).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

from bot.storage._codec import dump_json, from_micros, load_json, to_micros
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.sqlite_connection import SqliteConnectionBase
from bot.storage.sqlite_facts import facts_row, insert_facts, read_facts_apart, select_sql

_VERDICT_COLUMNS: Final = "seq, task_id, repository, head_sha, verdict, created_at, record"
# Well under SQLite's limit on bound parameters.
_SEQS_PER_QUERY: Final = 500


def _stored(row: Sequence[Any]) -> StoredVerdict:
    return StoredVerdict(
        seq=row[0],
        task_id=row[1],
        repository=row[2],
        head_sha=row[3],
        verdict=row[4],
        created_at=from_micros(row[5]),
        record=load_json(row[6]),
    )


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
        at = to_micros(created_at)
        text = dump_json(record)
        # The facts are read from the record as stored (dump_json may have replaced
        # characters), so they equal what a later backfill would read.
        stored = load_json(text)
        async with self._write_transaction() as db:
            seq = await db.execute_insert(
                "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at,"
                " record) VALUES (?, ?, ?, ?, ?, ?)",
                (task_id, repository, head_sha, verdict, at, text),
            )
            if seq is None:
                raise RuntimeError("SQLite did not report the appended verdict's rowid")
            await insert_facts(db, facts_row(seq[0], task_id, repository, head_sha, at, stored))
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
            f"SELECT {_VERDICT_COLUMNS} FROM verdicts{where} ORDER BY seq{tail}", params
        )
        return [_stored(row) for row in rows]

    async def list_verdict_facts(
        self, *, since: datetime | None = None, repository: str | None = None
    ) -> list[VerdictFacts]:
        sql, params = select_sql(
            None if since is None else to_micros(since),
            None if repository is None else repository.lower(),
        )
        _ = self._db  # a closed store refuses, as on every other read
        # The store is always a file in WAL mode (it refuses anything else on open).
        return await asyncio.to_thread(read_facts_apart, self._path, sql, params)

    async def list_verdict_repositories(self, *, since: datetime | None = None) -> list[str]:
        # MIN(seq) per name from the (repo_key, created_at) index alone: no row is read
        # but the few named.
        rows = await self._fetchall(
            "SELECT repository FROM verdict_facts WHERE seq IN (SELECT MIN(seq)"
            " FROM verdict_facts WHERE repo_key != '' AND created_at >= ? GROUP BY repo_key)",
            (0 if since is None else to_micros(since),),
        )
        return [row[0] for row in rows]

    async def get_verdicts(self, seqs: Sequence[int]) -> list[StoredVerdict]:
        wanted = sorted(set(seqs))
        found: list[StoredVerdict] = []
        for start in range(0, len(wanted), _SEQS_PER_QUERY):
            chunk = wanted[start : start + _SEQS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT {_VERDICT_COLUMNS} FROM verdicts WHERE seq IN ({marks}) ORDER BY seq",
                chunk,
            )
            found.extend(_stored(row) for row in rows)
        return found

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

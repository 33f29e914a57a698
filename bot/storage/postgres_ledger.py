"""The PostgreSQL store's own reads of the ledger (the rest is `ledger`, written once).

The facts of a window are first completed from the records (a replica of an older
version may still append records without facts during a rolling upgrade); records by
sequence number are one array parameter.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.storage import facts
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.ledger import VERDICT_COLUMNS, stored_verdict
from bot.storage.postgres_connection import PostgresConnectionBase
from bot.storage.postgres_facts import fill_missing_facts


class PostgresLedger(PostgresConnectionBase):
    """The `Storage` verdict reads PostgreSQL does its own way."""

    async def list_verdict_facts(
        self, *, since: datetime | None = None, repository: str | None = None
    ) -> list[VerdictFacts]:
        start = None if since is None else self._values.time(since)
        # A replica of an older version may still be appending records without facts
        # (a rolling upgrade): they are written now, from the records.
        await fill_missing_facts(self._db, start)
        statement, args = facts.select_args(
            None if repository is None else repository.lower(), start
        )
        rows = await self._db.fetch(statement.postgres, *args)
        return facts.verdict_facts_of(rows, self._values.time_of)

    async def list_verdict_repositories(self, *, since: datetime | None = None) -> list[str]:
        rows = await self._db.fetch(
            "SELECT DISTINCT ON (repo_key) repository FROM verdict_facts"
            " WHERE repo_key <> '' AND ($1::timestamptz IS NULL OR created_at >= $1)"
            " ORDER BY repo_key, seq",
            None if since is None else self._values.time(since),
        )
        return [row["repository"] for row in rows]

    async def get_verdicts(self, seqs: Sequence[int]) -> list[StoredVerdict]:
        rows = await self._db.fetch(
            f"SELECT {VERDICT_COLUMNS} FROM verdicts WHERE seq = ANY($1::bigint[]) ORDER BY seq",
            sorted(set(seqs)),
        )
        return [stored_verdict(self._values, row) for row in rows]

"""The SQLite store's own reads of the ledger (the rest is `ledger`, written once).

The facts of a window are read through a connection of their own on a worker thread
(`sqlite_facts.read_facts_apart`); records by sequence number in chunks of IN lists,
SQLite having no arrays.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import datetime
from typing import Final

from bot.storage import facts
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.ledger import VERDICT_COLUMNS, stored_verdict
from bot.storage.sqlite_connection import SqliteConnectionBase
from bot.storage.sqlite_facts import read_facts_apart

# Well under SQLite's limit on bound parameters.
_SEQS_PER_QUERY: Final = 500


class SqliteLedger(SqliteConnectionBase):
    """The `Storage` verdict reads SQLite does its own way."""

    async def list_verdict_facts(
        self, *, since: datetime | None = None, repository: str | None = None
    ) -> list[VerdictFacts]:
        statement, args = facts.select_args(
            None if repository is None else repository.lower(),
            None if since is None else self._values.time(since),
        )
        _ = self._db  # a closed store refuses, as on every other read
        # The store is always a file in WAL mode (it refuses anything else on open).
        return await asyncio.to_thread(read_facts_apart, self._path, statement.sqlite, args)

    async def list_verdict_repositories(self, *, since: datetime | None = None) -> list[str]:
        # MIN(seq) per name from the (repo_key, created_at) index alone: no row is read
        # but the few named.
        rows = await self._fetchall(
            "SELECT repository FROM verdict_facts WHERE seq IN (SELECT MIN(seq)"
            " FROM verdict_facts WHERE repo_key != '' AND created_at >= ? GROUP BY repo_key)",
            (0 if since is None else self._values.time(since),),
        )
        return [row[0] for row in rows]

    async def get_verdicts(self, seqs: Sequence[int]) -> list[StoredVerdict]:
        wanted = sorted(set(seqs))
        found: list[StoredVerdict] = []
        for start in range(0, len(wanted), _SEQS_PER_QUERY):
            chunk = wanted[start : start + _SEQS_PER_QUERY]
            marks = ", ".join("?" * len(chunk))
            rows = await self._fetchall(
                f"SELECT {VERDICT_COLUMNS} FROM verdicts WHERE seq IN ({marks}) ORDER BY seq",
                chunk,
            )
            found.extend(stored_verdict(self._values, row) for row in rows)
        return found

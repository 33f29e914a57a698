"""SQLite `verdict_facts`: one row per verdict record, what the reports count
(`bot.storage.verdict_facts`), keyed by the record's sequence number. The statements
both backends share are in `facts`.

Rows are written with their record, in one transaction. Records without one (appended
before migration 4, or by an older version of judge-bot run against this file since)
get theirs when the store opens, from the stored record, so the facts are the same
whenever they were written.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any, Final

from bot.storage._codec import from_micros, load_json
from bot.storage._inline_sqlite import InlineConnection
from bot.storage.base import VerdictFacts
from bot.storage.facts import INSERT, facts_params, verdict_facts_of

CREATE: Final[tuple[str, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS verdict_facts (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL,
        repository TEXT,
        repo_key TEXT NOT NULL,
        head_sha TEXT,
        created_at INTEGER NOT NULL,
        decision TEXT,
        label TEXT,
        mode TEXT,
        decided_by TEXT,
        overridden INTEGER NOT NULL,
        rounds TEXT NOT NULL,
        calls TEXT NOT NULL,
        tags TEXT,
        readable INTEGER NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS verdict_facts_created ON verdict_facts (created_at)",
    "CREATE INDEX IF NOT EXISTS verdict_facts_repository ON verdict_facts (repo_key, created_at)",
)
_MISSING: Final = (
    "SELECT v.seq, v.task_id, v.repository, v.head_sha, v.created_at, v.record"
    " FROM verdicts v WHERE v.seq > ?"
    " AND NOT EXISTS (SELECT 1 FROM verdict_facts f WHERE f.seq = v.seq)"
    " ORDER BY v.seq LIMIT ?"
)
FILL_BATCH: Final = 1000


async def fill_missing_facts(db: InlineConnection) -> int:
    """Write the facts of every record that has none; returns how many. Two counts
    answer the usual case (nothing missing) without reading a record."""
    counts = await db.execute_fetchall(
        "SELECT (SELECT COUNT(*) FROM verdicts), (SELECT COUNT(*) FROM verdict_facts)"
    )
    if counts[0][0] == counts[0][1]:
        return 0
    filled, after = 0, 0
    while True:
        rows = await db.execute_fetchall(_MISSING, (after, FILL_BATCH))
        if not rows:
            return filled
        await db.executemany(
            INSERT.sqlite,
            [
                INSERT.args(facts_params(r[0], r[1], r[2], r[3], r[4], load_json(r[5]), int))
                for r in rows
            ],
        )
        filled += len(rows)
        after = rows[-1][0]


def read_facts_apart(path: str, sql: str, params: Sequence[Any]) -> list[VerdictFacts]:
    """The rows through a connection of their own, for a worker thread: reading a large
    window takes a while, and the store's own connection runs on the event loop. WAL
    lets this reader see every committed row without stopping the writer."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(sql, params).fetchall()
    finally:
        connection.close()
    return verdict_facts_of(rows, from_micros)

"""PostgreSQL `verdict_facts`: one row per verdict record, what the reports count
(`bot.storage.verdict_facts`), keyed by the record's sequence number. The statements
both backends share are in `facts`.

Rows are written with their record, in one transaction. Records without one (appended
before migration 4, or by a replica of an older version during a rolling upgrade) get
theirs when a store opens and, for the window read, when the facts are read: from the
stored record, so the facts are the same whenever they were written.
"""

from __future__ import annotations

from datetime import datetime
from typing import Final

import asyncpg

from bot.storage.facts import INSERT, facts_params

CREATE: Final[tuple[str, ...]] = (
    """
    CREATE TABLE IF NOT EXISTS verdict_facts (
        seq bigint PRIMARY KEY,
        task_id text NOT NULL,
        repository text,
        repo_key text NOT NULL,
        head_sha text,
        created_at timestamptz NOT NULL,
        decision text,
        label text,
        mode text,
        decided_by text,
        overridden boolean NOT NULL,
        rounds text NOT NULL,
        calls text NOT NULL,
        tags text,
        readable boolean NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS verdict_facts_created ON verdict_facts (created_at)",
    "CREATE INDEX IF NOT EXISTS verdict_facts_repository ON verdict_facts (repo_key, created_at)",
)
# $1: the last sequence number seen, $2: the batch, $3: the window's start or NULL.
_MISSING: Final = (
    "SELECT v.seq, v.task_id, v.repository, v.head_sha, v.created_at, v.record"
    " FROM verdicts v WHERE v.seq > $1 AND ($3::timestamptz IS NULL OR v.created_at >= $3)"
    " AND NOT EXISTS (SELECT 1 FROM verdict_facts f WHERE f.seq = v.seq)"
    " ORDER BY v.seq LIMIT $2"
)
_COUNTS: Final = (
    "SELECT (SELECT COUNT(*) FROM verdicts{where}) AS verdicts,"
    " (SELECT COUNT(*) FROM verdict_facts{where}) AS facts"
)
FILL_BATCH: Final = 1000


async def fill_missing_facts(
    db: asyncpg.Connection | asyncpg.Pool, since: datetime | None = None
) -> int:
    """Write the facts of every record (at or after `since`) that has none; returns how
    many. Two counts (from the created_at indexes) answer the usual case, nothing missing,
    without reading a record."""
    if since is None:
        counts = await db.fetchrow(_COUNTS.format(where=""))
    else:
        counts = await db.fetchrow(_COUNTS.format(where=" WHERE created_at >= $1"), since)
    if counts is not None and counts["verdicts"] == counts["facts"]:
        return 0
    filled, after = 0, 0
    while True:
        rows = await db.fetch(_MISSING, after, FILL_BATCH, since)
        if not rows:
            return filled
        await db.executemany(
            INSERT.postgres,
            [INSERT.args(facts_params(r[0], r[1], r[2], r[3], r[4], r[5], bool)) for r in rows],
        )
        filled += len(rows)
        after = rows[-1]["seq"]

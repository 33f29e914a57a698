"""PostgreSQL `verdict_facts`: one row per verdict record, what the reports count
(`bot.storage.verdict_facts`), keyed by the record's sequence number.

Rows are written with their record, in one transaction. Records without one (appended
before migration 4, or by a replica of an older version during a rolling upgrade) get
theirs when a store opens and, for the window read, when the facts are read: from the
stored record, so the facts are the same whenever they were written.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final

import asyncpg

from bot.storage.base import VerdictFacts
from bot.storage.verdict_facts import decode_tags, fact_columns

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
INSERT: Final = (
    "INSERT INTO verdict_facts (seq, task_id, repository, repo_key, head_sha, created_at,"
    " decision, label, mode, decided_by, overridden, rounds, calls, tags, readable)"
    " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)"
    " ON CONFLICT (seq) DO NOTHING"
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
_COLUMNS: Final = (
    "seq, task_id, repository, head_sha, created_at, decision, label, mode, decided_by,"
    " overridden, rounds, calls, tags, readable"
)
FILL_BATCH: Final = 1000


def facts_row(
    seq: int,
    task_id: str,
    repository: str | None,
    head_sha: str | None,
    created_at: datetime,
    record: dict[str, Any],
) -> tuple[Any, ...]:
    """The INSERT parameters of one record's facts."""
    c = fact_columns(record)
    return (
        seq, task_id, repository, (repository or "").lower(), head_sha, created_at,
        c.decision, c.label, c.mode, c.decided_by, c.overridden, c.rounds, c.calls, c.tags,
        c.readable,
    )  # fmt: skip


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
        await db.executemany(INSERT, [facts_row(*row) for row in rows])
        filled += len(rows)
        after = rows[-1]["seq"]


def select_sql(since: datetime | None, repo_key: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if repo_key is not None:
        params.append(repo_key)
        clauses.append(f"repo_key = ${len(params)}")
    if since is not None:
        params.append(since)
        clauses.append(f"created_at >= ${len(params)}")
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"SELECT {_COLUMNS} FROM verdict_facts{where} ORDER BY seq", params


def facts_of_rows(rows: Sequence[asyncpg.Record]) -> list[VerdictFacts]:
    return [
        VerdictFacts(
            r[0],
            r[1],
            r[2],
            r[3],
            r[4],
            r[5],
            r[6],
            r[7],
            r[8],
            r[9],
            r[10],
            r[11],
            decode_tags(r[12]),
            r[13],
        )
        for r in rows
    ]

"""SQLite `verdict_facts`: one row per verdict record, what the reports count
(`bot.storage.verdict_facts`), keyed by the record's sequence number.

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
from bot.storage.verdict_facts import decode_tags, fact_columns

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
_INSERT: Final = (
    "INSERT INTO verdict_facts (seq, task_id, repository, repo_key, head_sha, created_at,"
    " decision, label, mode, decided_by, overridden, rounds, calls, tags, readable)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (seq) DO NOTHING"
)
_MISSING: Final = (
    "SELECT v.seq, v.task_id, v.repository, v.head_sha, v.created_at, v.record"
    " FROM verdicts v WHERE v.seq > ?"
    " AND NOT EXISTS (SELECT 1 FROM verdict_facts f WHERE f.seq = v.seq)"
    " ORDER BY v.seq LIMIT ?"
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
    created_at: int,
    record: dict[str, Any],
) -> tuple[Any, ...]:
    """The INSERT parameters of one record's facts (`created_at` in microseconds)."""
    c = fact_columns(record)
    return (
        seq, task_id, repository, (repository or "").lower(), head_sha, created_at,
        c.decision, c.label, c.mode, c.decided_by, int(c.overridden), c.rounds, c.calls,
        c.tags, int(c.readable),
    )  # fmt: skip


async def insert_facts(db: InlineConnection, row: tuple[Any, ...]) -> None:
    await (await db.execute(_INSERT, row)).close()


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
            _INSERT, [facts_row(r[0], r[1], r[2], r[3], r[4], load_json(r[5])) for r in rows]
        )
        filled += len(rows)
        after = rows[-1][0]


def select_sql(since: int | None, repo_key: str | None) -> tuple[str, list[Any]]:
    clauses: list[str] = []
    params: list[Any] = []
    if repo_key is not None:
        clauses.append("repo_key = ?")
        params.append(repo_key)
    if since is not None:
        clauses.append("created_at >= ?")
        params.append(since)
    where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
    return f"SELECT {_COLUMNS} FROM verdict_facts{where} ORDER BY seq", params


def _facts_of_rows(rows: Sequence[Sequence[Any]]) -> list[VerdictFacts]:
    return [
        VerdictFacts(
            r[0],
            r[1],
            r[2],
            r[3],
            from_micros(r[4]),
            r[5],
            r[6],
            r[7],
            r[8],
            bool(r[9]),
            r[10],
            r[11],
            decode_tags(r[12]),
            bool(r[13]),
        )
        for r in rows
    ]


def read_facts_apart(path: str, sql: str, params: Sequence[Any]) -> list[VerdictFacts]:
    """The rows through a connection of their own, for a worker thread: reading a large
    window takes a while, and the store's own connection runs on the event loop. WAL
    lets this reader see every committed row without stopping the writer."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(sql, params).fetchall()
    finally:
        connection.close()
    return _facts_of_rows(rows)

"""A synchronous sqlite3 connection behind the small async surface the SQLite store uses.

Why not a thread (aiosqlite): every statement then costs two thread hand-offs, which on
the webhook ack path measured about ten times the statement itself (a WAL insert commits
in tens of microseconds). Running the statement inline blocks the event loop only that
long. The price is that a writer from another process holding the lock blocks the loop
for up to busy_timeout: one process per SQLite file is the supported deployment
(several replicas use PostgreSQL).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias

# Positional (?) or named (:name) parameters, as sqlite3 takes them.
Parameters: TypeAlias = Sequence[Any] | Mapping[str, Any]


class InlineCursor:
    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    @property
    def rowcount(self) -> int:
        return self._cursor.rowcount

    @property
    def lastrowid(self) -> int | None:
        return self._cursor.lastrowid

    async def close(self) -> None:
        self._cursor.close()


class InlineConnection:
    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    async def execute(self, sql: str, parameters: Parameters = ()) -> InlineCursor:
        return InlineCursor(self._connection.execute(sql, parameters))

    async def execute_fetchall(self, sql: str, parameters: Parameters = ()) -> list[Any]:
        cursor = self._connection.execute(sql, parameters)
        try:
            return cursor.fetchall()
        finally:
            cursor.close()

    async def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._connection.executemany(sql, rows).close()

    async def commit(self) -> None:
        self._connection.commit()

    async def rollback(self) -> None:
        self._connection.rollback()

    async def close(self) -> None:
        self._connection.close()


async def connect(path: str) -> InlineConnection:
    # Autocommit: explicit BEGIN IMMEDIATE transactions are the store's own.
    return InlineConnection(sqlite3.connect(path, isolation_level=None, check_same_thread=False))

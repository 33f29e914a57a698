"""SQLite backend: the embedded default for a single replica.

`SqliteStorage` is the methods written once for both backends (`tables.SharedTables`,
see `sql`) on this backend's connection, with what SQLite does its own way; each module
has its PostgreSQL counterpart (`postgres_*`) so the same thing sits in the same place:

    sqlite_connection   the connection, its settings, the lock, transactions, executors
    sqlite_schema       MIGRATIONS and the migration run on open
    sqlite_deliveries   recording deliveries (group commit, bodies in lz4) and claiming them
    sqlite_merge_queue  claiming merge-queue heads (BEGIN IMMEDIATE)
    sqlite_ledger       the facts of a window (read on a thread), repositories, records by seq
    sqlite_facts        the verdict_facts table (migration 4) and its backfill on open

Datetimes are stored as integer microseconds since the epoch (exact, and they
compare as numbers); JSON documents as text.
"""

from __future__ import annotations

from bot.storage.sqlite_connection import BUSY_TIMEOUT_MS, CHECKPOINT_SECONDS
from bot.storage.sqlite_deliveries import SqliteDeliveryQueue
from bot.storage.sqlite_ledger import SqliteLedger
from bot.storage.sqlite_merge_queue import SqliteMergeQueue
from bot.storage.sqlite_schema import MIGRATIONS
from bot.storage.tables import SharedTables

__all__ = ["BUSY_TIMEOUT_MS", "CHECKPOINT_SECONDS", "MIGRATIONS", "SqliteStorage"]


class SqliteStorage(SqliteDeliveryQueue, SqliteLedger, SqliteMergeQueue, SharedTables):
    """`Storage` on one SQLite file (WAL mode)."""

"""SQLite backend: the embedded default for a single replica.

`SqliteStorage` is assembled from one module per concern, mirrored by the
PostgreSQL backend (`postgres_*`) so the same thing sits in the same place:

    sqlite_connection   the connection, its settings, the lock and transactions
    sqlite_schema       MIGRATIONS and the migration run on open
    sqlite_deliveries   the webhook delivery queue (group-committed inserts, leases)
    sqlite_keyed        rows replaced by key: installations and kv
    sqlite_merge_queue  the merge queues (head claims, leases, recorded transitions)
    sqlite_ledger       append-only rows: verdict records and usage amounts
    sqlite_facts        each verdict record's facts (verdict_facts), the reports' lean read

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

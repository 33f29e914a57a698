"""PostgreSQL backend: shared by several replicas behind a load balancer.

`PostgresStorage` is the methods written once for both backends (`tables.SharedTables`,
see `sql`) on this backend's pool, with what PostgreSQL does its own way; each module
has its SQLite counterpart (`sqlite_*`) so the same thing sits in the same place:

    postgres_connection   the asyncpg pool, its settings, executors, quote_ident
    postgres_schema       MIGRATIONS and the migration run on open
    postgres_deliveries   recording deliveries (group commit) and claiming them (SKIP LOCKED)
    postgres_merge_queue  claiming merge-queue heads (one statement that records them too)
    postgres_ledger       the facts of a window (backfilled first), repositories, records by seq
    postgres_facts        the verdict_facts table (migration 4) and its backfill

JSON documents are jsonb, bodies bytea, datetimes timestamptz (asyncpg returns
them as aware UTC).
"""

from __future__ import annotations

from bot.storage.postgres_connection import PING_TIMEOUT_SECONDS, quote_ident
from bot.storage.postgres_deliveries import PostgresDeliveryQueue
from bot.storage.postgres_ledger import PostgresLedger
from bot.storage.postgres_merge_queue import PostgresMergeQueue
from bot.storage.postgres_schema import MIGRATIONS
from bot.storage.tables import SharedTables

__all__ = ["MIGRATIONS", "PING_TIMEOUT_SECONDS", "PostgresStorage", "quote_ident"]


class PostgresStorage(PostgresDeliveryQueue, PostgresLedger, PostgresMergeQueue, SharedTables):
    """`Storage` on PostgreSQL through an asyncpg pool."""

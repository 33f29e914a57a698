"""PostgreSQL backend: shared by several replicas behind a load balancer.

`PostgresStorage` is assembled from one module per concern, mirrored by the
SQLite backend (`sqlite_*`) so the same thing sits in the same place:

    postgres_connection   the asyncpg pool, its settings, quote_ident
    postgres_schema       MIGRATIONS and the migration run on open
    postgres_deliveries   the webhook delivery queue (SKIP LOCKED claims, leases)
    postgres_keyed        rows replaced by key: installations and kv
    postgres_merge_queue  the merge queues (head claims, leases, recorded transitions)
    postgres_ledger       append-only rows: verdict records and usage amounts
    postgres_facts        each verdict record's facts (verdict_facts), the reports' lean read

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

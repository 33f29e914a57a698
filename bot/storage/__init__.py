"""Storage: one interface (`Storage`), two backends, chosen by URL.

    sqlite:///relative/path.db     file relative to the working directory
    sqlite:////absolute/path.db    absolute file path
    postgresql://user@host/db      (or postgres://) an asyncpg DSN

The backend modules are imported lazily so a deployment on one backend never
loads the other's driver. Storage knows no feature: rows in, plain models out.

    base           the `Storage` interface and its plain models
    sql            named statements written once (`:name`), turned into each driver's
                   placeholders at import, and the `Executor` each backend supplies
    _codec         UTC datetimes and JSON documents, converted alike for both backends

  The `Storage` methods both backends share, one module per kind of table:

    deliveries           the webhook delivery queue: a lease's end, renewal, re-queueing,
                         reads and pruning
    keyed                rows replaced in place by key: installations and kv
    ledger               append-only rows: verdict records (with their facts) and usage
    facts                the `verdict_facts` statements: written with each record, read
                         by the reports
    merge_queue          the merge queues, leased at the head; every move recorded in
                         `merge_events`
    merge_queue_batches  the App's queue's batches, written only under the head's lease
    tables               the shared methods assembled into one class

  What both backends use besides:

    group_commit   callers arriving together share one transaction
    body_codec     delivery bodies lz4-compressed on SQLite (migration 7)
    verdict_facts  the reports' lean read of a verdict record (pure)
    sqlite_import  rows taken as data from a SQLite file nobody vouches for (the Action's
                   restored verdict cache): one kv namespace and the usage counts

  Each backend: its store class, and what it does its own way (the same thing in the same
  place on both):

    sqlite, postgres        the store class (`SqliteStorage`, `PostgresStorage`)
    sqlite_connection, postgres_connection
                            the connection (the pool), its settings, transactions, executors
    _inline_sqlite          a synchronous sqlite3 connection behind a small async surface:
                            statements run on the event loop, not a thread
    sqlite_schema, postgres_schema
                            the migrations (append-only) and their run on open
    sqlite_deliveries, postgres_deliveries
                            recording deliveries (group commit) and claiming them
    sqlite_merge_queue, postgres_merge_queue
                            claiming merge-queue heads
    sqlite_ledger, postgres_ledger
                            the facts of a window, the repositories, records by number
    sqlite_facts, postgres_facts
                            the `verdict_facts` table (migration 4) and its backfill
"""

from __future__ import annotations

from bot.storage.base import (
    Delivery,
    DeliveryStatus,
    Installation,
    NewDelivery,
    Storage,
    StoredVerdict,
)

__all__ = [
    "Delivery",
    "DeliveryStatus",
    "Installation",
    "NewDelivery",
    "Storage",
    "StoredVerdict",
    "storage_from_url",
]

_SQLITE_PREFIX = "sqlite:///"


def storage_from_url(url: str) -> Storage:
    """An unopened store for `url`; raises ValueError for anything else."""
    scheme, sep, _ = url.partition("://")
    if not sep:
        raise ValueError("storage URL has no scheme; expected sqlite:/// or postgresql://")
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not url[: len(_SQLITE_PREFIX)].lower() == _SQLITE_PREFIX:
            raise ValueError(
                "sqlite URL must be sqlite:///relative/path or sqlite:////absolute/path"
            )
        path = url[len(_SQLITE_PREFIX) :]
        if not path or path.endswith("/"):
            raise ValueError("sqlite URL names no database file")
        from bot.storage.sqlite import SqliteStorage

        return SqliteStorage(path)
    if scheme in ("postgresql", "postgres"):
        from bot.storage.postgres import PostgresStorage

        return PostgresStorage(url)
    raise ValueError(
        f"unsupported storage URL scheme {scheme!r}; expected sqlite or postgresql/postgres"
    )

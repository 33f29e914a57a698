"""Storage: one interface (`Storage`), two backends, chosen by URL.

    sqlite:///relative/path.db     file relative to the working directory
    sqlite:////absolute/path.db    absolute file path
    postgresql://user@host/db      (or postgres://) an asyncpg DSN

The backend modules are imported lazily so a deployment on one backend never
loads the other's driver. Storage knows no feature: rows in, plain models out.

    base           the `Storage` interface and its plain models
    sql            named statements written once (`:name`), turned into each driver's
                   placeholders at import, and the `Executor` each backend supplies
    deliveries, keyed, ledger, merge_queue, facts
                   the `Storage` methods both backends share (tables assembles them)
    group_commit   callers arriving together share one transaction
    body_codec     delivery bodies lz4-compressed on SQLite
    verdict_facts  the reports' lean read of the verdict log
    sqlite*, postgres*
                   each backend: connection, migrations, and what it does its own way
                   (recording and claiming deliveries, claiming merge heads, reading facts)
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

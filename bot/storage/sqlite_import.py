"""Rows taken, as data, from a SQLite file nobody vouches for (the GitHub Action's restored
verdict cache, bot/action/cache.py).

The file is attached read-only (`immutable`) to the caller's fresh store with
`trusted_schema` off, so no function its schema names can run; it is refused whole unless
every schema entry is one the store's own schema has (a trigger, a view or an extra table
is foreign). Then only two kinds of rows are copied, each checked for type on the way in:
one kv namespace's entries (the caller names it; none when it names none) and the usage
counts, which can only hold spending back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Tables SQLite itself keeps (planner statistics, AUTOINCREMENT counters): data, no code.
SQLITE_OWN_TABLES = ("sqlite_stat1", "sqlite_stat4", "sqlite_sequence")

SchemaEntry = tuple[str, str, str, str]


@dataclass(frozen=True)
class Restored:
    """What a store took in: how many kv entries came from the untrusted file, or why
    the file was refused (empty when it was not)."""

    verdicts: int = 0
    refused: str = ""


def foreign_objects(restored: Iterable[SchemaEntry], own: Iterable[SchemaEntry]) -> list[str]:
    """The restored file's schema entries (type, name, table, sql) the App's own schema
    does not have, named for a person to read. Pure."""
    mine = set(own)
    return sorted(
        f"{kind} {name!r}"
        for kind, name, table, sql in restored
        if (kind, name, table, sql) not in mine
        and not (kind == "table" and name in SQLITE_OWN_TABLES)
    )


def take_rows(fresh: Path, restored: Path, *, namespace: str | None) -> Restored:
    """Copy the restored file's usage counts, and its kv entries of `namespace` if one is
    named, into `fresh` (a store already made); refuse the file whole if it is not the
    App's schema or not a readable SQLite file. The restored file is removed either way."""
    try:
        return _copy(fresh, restored, namespace)
    except sqlite3.DatabaseError as exc:
        return Restored(refused=f"it is not a readable SQLite file ({exc})")
    finally:
        restored.unlink(missing_ok=True)


def _copy(fresh: Path, restored: Path, namespace: str | None) -> Restored:
    conn = sqlite3.connect(fresh.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        # No function of the restored schema may run, whatever it names.
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute(
            "ATTACH DATABASE ? AS restored", (restored.resolve().as_uri() + "?immutable=1",)
        )
        listing = "SELECT type, name, tbl_name, coalesce(sql, '') FROM {}.sqlite_master"
        restored_schema = conn.execute(listing.format("restored")).fetchall()
        foreign = foreign_objects(restored_schema, conn.execute(listing.format("main")).fetchall())
        if foreign:
            return Restored(refused="it holds " + ", ".join(foreign[:5]) + ", not the App's")
        tables = {name for kind, name, _, _ in restored_schema if kind == "table"}
        copied = _copy_rows(conn, tables, namespace)
    finally:
        conn.close()
    return Restored(verdicts=copied)


def _copy_rows(conn: sqlite3.Connection, tables: set[str], namespace: str | None) -> int:
    copied = 0
    conn.execute("BEGIN IMMEDIATE")
    if namespace is not None and "kv" in tables:
        copied = conn.execute(
            "INSERT OR IGNORE INTO main.kv (namespace, key, value) "
            "SELECT namespace, key, value FROM restored.kv "
            "WHERE namespace = ? AND typeof(key) = 'text' AND json_valid(value)",
            (namespace,),
        ).rowcount
    if "usage" in tables:
        conn.execute(
            "INSERT INTO main.usage (scope, at, amount) SELECT scope, at, amount "
            "FROM restored.usage WHERE typeof(scope) = 'text' AND typeof(at) = 'integer' "
            "AND typeof(amount) = 'integer'"
        )
    conn.execute("COMMIT")
    conn.execute("DETACH DATABASE restored")
    return copied

"""The verdict cache a run restores from the Actions cache: plain data nobody vouches for.

Any workflow that runs for a pull request can save an Actions cache entry in that pull
request's scope, one its author added in an earlier commit and removed later included, and
the restore step takes the newest entry it finds. So the restored file is never opened as
the run's storage, and nothing in it can make a `judge` check pass:

    restored file ── foreign_objects: anything the App's own schema does not have (a
                     trigger, a view, a table) ──> refused whole, one warning,
                     the run goes on with an empty cache
                  └─ take_in: only the verdict cache's entries and the usage counts are
                     copied, as data, into the run's fresh storage (its run state,
                     overrides, repository config and audit log are left behind: the run
                     reads those from GitHub); the verdicts only where the runner
                     trusts them: advisory mode with merge on accept off, where a verdict
                     can neither pass a gate nor start a merge (elsewhere every verdict is
                     this run's own)

The usage counts are copied whatever the mode: they can only hold spending back.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bot.judge.engine import CACHE_NAMESPACE

RESTORED_SUFFIX = ".restored"
# Tables SQLite itself keeps (planner statistics, AUTOINCREMENT counters): data, no code.
SQLITE_OWN_TABLES = ("sqlite_stat1", "sqlite_stat4", "sqlite_sequence")

SchemaEntry = tuple[str, str, str, str]


@dataclass(frozen=True)
class Restored:
    """What a run took in: how many verdict-cache entries came from the restored file,
    or why the file was refused (empty when it was not)."""

    verdicts: int = 0
    refused: str = ""


def set_aside(cache: Path) -> Path | None:
    """Move the restored file out of the way, so the run's storage starts empty."""
    if not cache.is_file():
        return None
    aside = cache.with_name(cache.name + RESTORED_SUFFIX)
    cache.replace(aside)
    return aside


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


def take_in(fresh: Path, restored: Path, *, verdicts: bool) -> Restored:
    """Copy the restored file's usage counts, and its verdict-cache entries if `verdicts`,
    into `fresh` (the run's storage, already made); refuse the file whole if it is not the
    App's schema or not a readable SQLite file. The restored file is removed either way."""
    try:
        return _copy(fresh, restored, verdicts)
    except sqlite3.DatabaseError as exc:
        return Restored(refused=f"it is not a readable SQLite file ({exc})")
    finally:
        restored.unlink(missing_ok=True)


def _copy(fresh: Path, restored: Path, verdicts: bool) -> Restored:
    conn = sqlite3.connect(fresh.resolve().as_uri(), uri=True, isolation_level=None)
    try:
        # No function of the restored schema may run, whatever it names.
        conn.execute("PRAGMA trusted_schema = OFF")
        conn.execute(
            "ATTACH DATABASE ? AS restored", (restored.resolve().as_uri() + "?immutable=1",)
        )
        listing = "SELECT type, name, tbl_name, coalesce(sql, '') FROM {}.sqlite_master"
        foreign = foreign_objects(
            conn.execute(listing.format("restored")).fetchall(),
            conn.execute(listing.format("main")).fetchall(),
        )
        if foreign:
            return Restored(refused="it holds " + ", ".join(foreign[:5]) + ", not the App's")
        tables = {
            row[0]
            for row in conn.execute("SELECT name FROM restored.sqlite_master WHERE type = 'table'")
        }
        copied = _copy_rows(conn, tables, verdicts)
    finally:
        conn.close()
    return Restored(verdicts=copied)


def _copy_rows(conn: sqlite3.Connection, tables: set[str], verdicts: bool) -> int:
    copied = 0
    conn.execute("BEGIN IMMEDIATE")
    if verdicts and "kv" in tables:
        copied = conn.execute(
            "INSERT OR IGNORE INTO main.kv (namespace, key, value) "
            "SELECT namespace, key, value FROM restored.kv "
            "WHERE namespace = ? AND typeof(key) = 'text' AND json_valid(value)",
            (CACHE_NAMESPACE,),
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


def refused_line(refused: str) -> str:
    return f"the restored verdict cache was refused: {refused}; judging with an empty cache"

"""SQLite schema: the migrations and the routine that applies them on open.

Datetimes are integer microseconds since the epoch (exact, and they compare as
numbers); JSON documents are text. The PostgreSQL schema in `postgres_schema`
has the same tables, columns and indexes in that server's native types, but for
delivery bodies, which SQLite keeps in a table of their own (migration 6): SQLite
rewrites a row whole at every update, PostgreSQL keeps a large value out of line
(TOAST) and an update that leaves it alone does not copy it. Both compress bodies with
lz4: PostgreSQL in the server (its migration 6), SQLite in judge-bot (migration 7,
`body_codec`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from bot.storage._inline_sqlite import InlineConnection
from bot.storage.sqlite_facts import CREATE as CREATE_VERDICT_FACTS
from bot.storage.sqlite_facts import fill_missing_facts


@dataclass(frozen=True, slots=True)
class AddColumn:
    """`ALTER TABLE ... ADD COLUMN`, skipped when the column is there: SQLite has no `IF NOT
    EXISTS` for it, and a migration may run again over its own work (a version row lost)."""

    table: str
    column: str
    declaration: str


@dataclass(frozen=True, slots=True)
class WhileColumn:
    """A statement run only while the column is there: one that reads or drops a column a
    migration moves elsewhere, which a second run over its own work must skip."""

    table: str
    column: str
    statement: str


Statement = str | AddColumn | WhileColumn

# Append only: a released version never changes, later features add new entries.
MIGRATIONS: Final[tuple[tuple[int, tuple[Statement, ...]], ...]] = (
    (
        1,
        (
            """
            CREATE TABLE deliveries (
                seq INTEGER PRIMARY KEY,
                delivery_id TEXT NOT NULL UNIQUE,
                event TEXT NOT NULL,
                action TEXT,
                installation_id INTEGER,
                repository TEXT,
                body BLOB NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                received_at INTEGER NOT NULL,
                next_attempt_at INTEGER NOT NULL,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                last_error TEXT,
                finished_at INTEGER
            )
            """,
            "CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)",
            "CREATE INDEX deliveries_lease ON deliveries (status, lease_expires_at)",
            "CREATE INDEX deliveries_received ON deliveries (received_at, seq)",
            """
            CREATE TABLE installations (
                installation_id INTEGER PRIMARY KEY,
                account TEXT NOT NULL,
                account_type TEXT NOT NULL,
                repository_selection TEXT NOT NULL,
                suspended INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )
            """,
            """
            CREATE TABLE installation_repositories (
                installation_id INTEGER NOT NULL,
                full_name TEXT NOT NULL,
                PRIMARY KEY (installation_id, full_name)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE verdicts (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                task_id TEXT NOT NULL,
                repository TEXT,
                head_sha TEXT,
                verdict TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                record TEXT NOT NULL
            )
            """,
            "CREATE INDEX verdicts_task ON verdicts (task_id, seq)",
            "CREATE INDEX verdicts_repository ON verdicts (repository, seq)",
            "CREATE INDEX verdicts_head_sha ON verdicts (head_sha, seq)",
            "CREATE INDEX verdicts_created ON verdicts (created_at)",
            """
            CREATE TABLE kv (
                namespace TEXT NOT NULL,
                key TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (namespace, key)
            ) WITHOUT ROWID
            """,
            """
            CREATE TABLE usage (
                scope TEXT NOT NULL,
                at INTEGER NOT NULL,
                amount INTEGER NOT NULL
            )
            """,
            "CREATE INDEX usage_scope_at ON usage (scope, at)",
        ),
    ),
    (
        2,
        (
            # Claims walk one status in claim order and read the due and lease times from
            # the index alone. The indexes it replaces made each claim read every due row
            # from the table, and a row's received_at sits after its body, behind the
            # body's overflow pages: a backlog cost each claim time in proportion to its
            # size in bytes.
            "CREATE INDEX deliveries_claim ON deliveries"
            " (status, received_at, seq, next_attempt_at, lease_expires_at)",
            "DROP INDEX deliveries_due",
            "DROP INDEX deliveries_lease",
        ),
    ),
    (
        3,
        (
            # One row per stay in a queue: a pull request that leaves and comes back gets a
            # new row at the back, and the old one stays as history.
            """
            CREATE TABLE IF NOT EXISTS merge_queue (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                repository TEXT NOT NULL,
                base_branch TEXT NOT NULL,
                pull_number INTEGER NOT NULL,
                installation_id INTEGER NOT NULL,
                judged_sha TEXT,
                judgment_version INTEGER NOT NULL,
                status TEXT NOT NULL,
                method TEXT NOT NULL,
                options TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                prechecks INTEGER NOT NULL DEFAULT 0,
                nudged INTEGER NOT NULL DEFAULT 0,
                updating_from TEXT,
                enqueued_at INTEGER NOT NULL,
                next_attempt_at INTEGER NOT NULL,
                lease_owner TEXT,
                lease_expires_at INTEGER,
                updated_at INTEGER NOT NULL,
                reason TEXT NOT NULL
            )
            """,
            # At most one active stay per pull request, whatever races.
            "CREATE UNIQUE INDEX IF NOT EXISTS merge_queue_active"
            " ON merge_queue (repository, pull_number)"
            " WHERE status IN ('pending', 'processing')",
            "CREATE INDEX IF NOT EXISTS merge_queue_heads"
            " ON merge_queue (repository, base_branch, status, id)",
            """
            CREATE TABLE IF NOT EXISTS merge_events (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                entry_id INTEGER NOT NULL,
                repository TEXT NOT NULL,
                pull_number INTEGER NOT NULL,
                judged_sha TEXT,
                from_status TEXT,
                to_status TEXT NOT NULL,
                actor TEXT NOT NULL,
                reason TEXT NOT NULL,
                at INTEGER NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS merge_events_pull"
            " ON merge_events (repository, pull_number, seq)",
        ),
    ),
    # What the reports count, one row per verdict record (sqlite_facts); the rows of
    # records already stored are written by `migrate` below, in the same transaction.
    (4, CREATE_VERDICT_FACTS),
    (
        5,
        (
            # When GitHub last said something changed since the entry was last claimed
            # (NULL: nothing since). A nudge that lands while the head is being stepped
            # is kept here, so the step's settle makes the entry due at once.
            AddColumn("merge_queue", "nudged_at", "INTEGER"),
        ),
    ),
    (
        6,
        (
            # A delivery's body in a table of its own. Every status change (claim, lease
            # renewal, completion, release) rewrites the delivery's row, and SQLite rewrites
            # a row whole, overflow pages and all: a 29 KB body was written to the WAL again
            # at each change, about 150 KB per delivery processed. The body is written once.
            """
            CREATE TABLE IF NOT EXISTS delivery_bodies (
                seq INTEGER PRIMARY KEY,
                body BLOB NOT NULL
            )
            """,
            WhileColumn(
                "deliveries",
                "body",
                "INSERT INTO delivery_bodies (seq, body) SELECT seq, body FROM deliveries",
            ),
            WhileColumn("deliveries", "body", "ALTER TABLE deliveries DROP COLUMN body"),
            # Deleting a delivery deletes its body, whoever deletes it (pruning, an operator):
            # a trigger rather than a foreign key, which SQLite enforces only on connections
            # that ask for it.
            """
            CREATE TRIGGER IF NOT EXISTS delivery_bodies_follow AFTER DELETE ON deliveries
            BEGIN
                DELETE FROM delivery_bodies WHERE seq = old.seq;
            END
            """,
        ),
    ),
    (
        7,
        (
            # How each body is stored (`body_codec`): NULL as received, 'lz4' in lz4's block
            # format. New bodies are compressed: a 29 KB pull request body takes about 4.5 KB,
            # and the WAL commit and the checkpoint's second copy of the raw bodies were a
            # large share of intake's CPU. Rows written before keep NULL and read unchanged.
            AddColumn("delivery_bodies", "compression", "TEXT"),
        ),
    ),
    (
        8,
        (
            # `/judge merge --priority` (MergePriority.rank: 0 normal, 1 high, 2 urgent),
            # who set it and when. Typed columns: the queue's order is read from them.
            AddColumn("merge_queue", "priority", "INTEGER NOT NULL DEFAULT 0"),
            AddColumn("merge_queue", "priority_by", "TEXT"),
            AddColumn("merge_queue", "priority_at", "INTEGER"),
        ),
    ),
    (
        9,
        (
            # The App's queue's batches (`merge_queue_batches`): one row per batch built,
            # kept as history once it ended; an entry names the batch it is tested in.
            """
            CREATE TABLE IF NOT EXISTS merge_batches (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                repository TEXT NOT NULL,
                base_branch TEXT NOT NULL,
                members TEXT NOT NULL,
                built_on TEXT NOT NULL,
                tip TEXT NOT NULL,
                review_files TEXT NOT NULL,
                split_from INTEGER,
                state TEXT NOT NULL,
                ci TEXT NOT NULL,
                review TEXT NOT NULL,
                failure_check TEXT,
                failure_detail TEXT,
                failure_files TEXT NOT NULL,
                reason TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS merge_batches_queue"
            " ON merge_batches (repository, base_branch, state, id)",
            AddColumn("merge_queue", "batch", "INTEGER"),
        ),
    ),
)


async def migrate(conn: InlineConnection) -> None:
    """Apply every migration without a version row, in order, all in one transaction,
    then write the verdict facts any record lacks (sqlite_facts: after migration 4, and
    after an older judge-bot appended records to this file).

    The write lock is taken before the versions are read, so two processes opening
    the same file at once apply each migration exactly once.
    """
    await conn.execute("BEGIN IMMEDIATE")
    try:
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version INTEGER PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        rows = await conn.execute_fetchall("SELECT version FROM schema_version")
        applied = {row[0] for row in rows}
        for version, statements in MIGRATIONS:
            if version in applied:
                continue
            for statement in statements:
                await _apply(conn, statement)
            await conn.execute(
                "INSERT INTO schema_version (version, applied_at)"
                " VALUES (?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))",
                (version,),
            )
        await fill_missing_facts(conn)
    except BaseException:
        await conn.rollback()
        raise
    await conn.commit()


async def _apply(conn: InlineConnection, statement: Statement) -> None:
    if isinstance(statement, str):
        await conn.execute(statement)
        return
    columns = await conn.execute_fetchall(f"PRAGMA table_info({statement.table})")
    present = any(row[1] == statement.column for row in columns)
    if isinstance(statement, WhileColumn):
        if present:
            await conn.execute(statement.statement)
        return
    if present:
        return
    await conn.execute(
        f"ALTER TABLE {statement.table} ADD COLUMN {statement.column} {statement.declaration}"
    )

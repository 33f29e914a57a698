"""PostgreSQL schema: the migrations and the routine that applies them on open.

JSON documents are jsonb, bodies bytea, datetimes timestamptz. The SQLite schema
in `sqlite_schema` has the same tables, columns and indexes.
"""

from __future__ import annotations

from typing import Final

import asyncpg

from bot.storage.postgres_facts import CREATE as CREATE_VERDICT_FACTS
from bot.storage.postgres_facts import fill_missing_facts

# First key of the two-key advisory lock; the second is a hash of the schema name.
_MIGRATION_LOCK_CLASS: Final = 0x6A62  # "jb"

# Append only: a released version never changes, later features add new entries.
# Bodies compressed with lz4 rather than pglz, where the server has it (PostgreSQL 14+,
# built with lz4): it costs the server a third of the CPU per 29 KB body (0.09 against
# 0.27-0.30 ms) and stores a quarter less (4.7 against 6.2 KB). Rows stored before keep
# pglz, which stays readable. EXECUTE defers the parse, so an older server's syntax error
# is caught here too.
BODIES_IN_LZ4: Final = (
    "DO $$ BEGIN"
    " EXECUTE 'ALTER TABLE deliveries ALTER COLUMN body SET COMPRESSION lz4';"
    " EXCEPTION WHEN feature_not_supported OR syntax_error THEN NULL;"
    " END $$"
)

MIGRATIONS: Final[tuple[tuple[int, tuple[str, ...]], ...]] = (
    (
        1,
        (
            """
            CREATE TABLE deliveries (
                seq bigint GENERATED ALWAYS AS IDENTITY,
                delivery_id text PRIMARY KEY,
                event text NOT NULL,
                action text,
                installation_id bigint,
                repository text,
                body bytea NOT NULL,
                status text NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                received_at timestamptz NOT NULL,
                next_attempt_at timestamptz NOT NULL,
                lease_owner text,
                lease_expires_at timestamptz,
                last_error text,
                finished_at timestamptz
            )
            """,
            "CREATE INDEX deliveries_due ON deliveries (status, next_attempt_at)",
            "CREATE INDEX deliveries_lease ON deliveries (status, lease_expires_at)",
            "CREATE INDEX deliveries_received ON deliveries (received_at, seq)",
            """
            CREATE TABLE installations (
                installation_id bigint PRIMARY KEY,
                account text NOT NULL,
                account_type text NOT NULL,
                repository_selection text NOT NULL,
                suspended boolean NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """,
            """
            CREATE TABLE installation_repositories (
                installation_id bigint NOT NULL,
                full_name text NOT NULL,
                PRIMARY KEY (installation_id, full_name)
            )
            """,
            """
            CREATE TABLE verdicts (
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                task_id text NOT NULL,
                repository text,
                head_sha text,
                verdict text NOT NULL,
                created_at timestamptz NOT NULL,
                record jsonb NOT NULL
            )
            """,
            "CREATE INDEX verdicts_task ON verdicts (task_id, seq)",
            "CREATE INDEX verdicts_repository ON verdicts (repository, seq)",
            "CREATE INDEX verdicts_head_sha ON verdicts (head_sha, seq)",
            "CREATE INDEX verdicts_created ON verdicts (created_at)",
            """
            CREATE TABLE kv (
                namespace text NOT NULL,
                key text NOT NULL,
                value jsonb NOT NULL,
                PRIMARY KEY (namespace, key)
            )
            """,
            """
            CREATE TABLE usage (
                scope text NOT NULL,
                at timestamptz NOT NULL,
                amount bigint NOT NULL
            )
            """,
            "CREATE INDEX usage_scope_at ON usage (scope, at)",
        ),
    ),
    (
        2,
        (
            # Claims walk one status in claim order (see postgres_deliveries). With the two
            # indexes it replaces, the planner walked received_at past every finished
            # delivery, so a claim cost time in proportion to the retained history.
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
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                repository text NOT NULL,
                base_branch text NOT NULL,
                pull_number bigint NOT NULL,
                installation_id bigint NOT NULL,
                judged_sha text,
                judgment_version integer NOT NULL,
                status text NOT NULL,
                method text NOT NULL,
                options jsonb NOT NULL,
                attempts integer NOT NULL DEFAULT 0,
                prechecks integer NOT NULL DEFAULT 0,
                nudged boolean NOT NULL DEFAULT false,
                updating_from text,
                enqueued_at timestamptz NOT NULL,
                next_attempt_at timestamptz NOT NULL,
                lease_owner text,
                lease_expires_at timestamptz,
                updated_at timestamptz NOT NULL,
                reason text NOT NULL
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
                seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                entry_id bigint NOT NULL,
                repository text NOT NULL,
                pull_number bigint NOT NULL,
                judged_sha text,
                from_status text,
                to_status text NOT NULL,
                actor text NOT NULL,
                reason text NOT NULL,
                at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS merge_events_pull"
            " ON merge_events (repository, pull_number, seq)",
        ),
    ),
    # What the reports count, one row per verdict record (postgres_facts); the rows of
    # records already stored are written by `migrate` below, in the same transaction.
    (4, CREATE_VERDICT_FACTS),
    (
        5,
        (
            # When GitHub last said something changed since the entry was last claimed
            # (NULL: nothing since). A nudge that lands while the head is being stepped
            # is kept here, so the step's settle makes the entry due at once.
            "ALTER TABLE merge_queue ADD COLUMN IF NOT EXISTS nudged_at timestamptz",
        ),
    ),
    (6, (BODIES_IN_LZ4,)),
    (
        7,
        (
            # `/judge merge --priority` (MergePriority.rank: 0 normal, 1 high, 2 urgent),
            # who set it and when. Typed columns: the queue's order is read from them.
            "ALTER TABLE merge_queue ADD COLUMN IF NOT EXISTS priority integer NOT NULL DEFAULT 0",
            "ALTER TABLE merge_queue ADD COLUMN IF NOT EXISTS priority_by text",
            "ALTER TABLE merge_queue ADD COLUMN IF NOT EXISTS priority_at timestamptz",
        ),
    ),
    (
        8,
        (
            # The App's queue's batches (`merge_queue_batches`): one row per batch built,
            # kept as history once it ended; an entry names the batch it is tested in.
            """
            CREATE TABLE IF NOT EXISTS merge_batches (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                repository text NOT NULL,
                base_branch text NOT NULL,
                members text NOT NULL,
                built_on text NOT NULL,
                tip text NOT NULL,
                review_files text NOT NULL,
                split_from bigint,
                state text NOT NULL,
                ci text NOT NULL,
                review text NOT NULL,
                failure_check text,
                failure_detail text,
                failure_files text NOT NULL,
                reason text NOT NULL,
                created_at timestamptz NOT NULL,
                updated_at timestamptz NOT NULL
            )
            """,
            "CREATE INDEX IF NOT EXISTS merge_batches_queue"
            " ON merge_batches (repository, base_branch, state, id)",
            "ALTER TABLE merge_queue ADD COLUMN IF NOT EXISTS batch bigint",
        ),
    ),
)


async def migrate(pool: asyncpg.Pool) -> None:
    """Apply every migration without a version row, in order, all in one transaction,
    then write the verdict facts any record lacks (postgres_facts).

    A transaction-scoped advisory lock (per schema) is taken before the versions are
    read, so replicas starting together apply each migration exactly once.
    """
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))",
            _MIGRATION_LOCK_CLASS,
        )
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_version ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        rows = await conn.fetch("SELECT version FROM schema_version")
        applied = {row["version"] for row in rows}
        for version, statements in MIGRATIONS:
            if version in applied:
                continue
            for statement in statements:
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_version (version) VALUES ($1)", version)
        await fill_missing_facts(conn)

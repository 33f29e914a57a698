"""The SQLite store's connection: opening it, its settings, and access to it.

One sqlite3 connection per store, driven inline on the event loop (see
`_inline_sqlite` for why not a thread). An explicit transaction spans several
awaits, so an asyncio lock keeps other tasks' statements from landing inside
someone else's transaction. Writes that read first (claims, migrations) use
BEGIN IMMEDIATE: in WAL mode a deferred transaction that upgrades to a writer
can fail with SQLITE_BUSY_SNAPSHOT when another connection (another process on
the same file) wrote meanwhile, and busy_timeout does not retry that case.

The table mixins (`sqlite_deliveries`, and those written once for both backends, see
`sql`) build on `SqliteConnectionBase` and reach the database only through its helpers
and executors, so they all share that lock.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import sqlite3
import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Final

from bot.storage._codec import from_micros, load_json, optional_from_micros, to_micros
from bot.storage._inline_sqlite import InlineConnection, Parameters
from bot.storage._inline_sqlite import connect as connect_inline
from bot.storage.sql import Executor, Row, Sql, SqlStore, Transaction
from bot.storage.sqlite_schema import migrate

# Named after the public backend module, where these messages came from before the
# split, so log filters and dashboards keyed on it keep matching.
log = logging.getLogger("bot.storage.sqlite")

BUSY_TIMEOUT_MS: Final = 5000
CHECKPOINT_SECONDS: Final = 0.5
# The WAL file's size once it has started over (see `open`).
JOURNAL_SIZE_LIMIT_BYTES: Final = 64 * 2**20
# Past this, the checkpoints work to let the WAL start over during a sustained write load,
# early enough that it mostly does so before it outgrows the limit.
CATCH_UP_PAST_BYTES: Final = JOURNAL_SIZE_LIMIT_BYTES // 2
# A pass that found at most this many frames added since the one before was short, and so is
# the quiet pass after it, during which this store's statements wait.
QUIET_PASS_AFTER_FRAMES: Final = 1024
CATCH_UP_PASSES: Final = 16


class AfterPassive(enum.Enum):
    DONE = "done"  # nothing more until the next tick
    AGAIN = "again"  # another pass at once
    QUIET = "quiet"  # one more pass, while this store's statements wait


def after_passive(frames: int, previous_frames: int | None, catch_up_frames: int) -> AfterPassive:
    """What follows a PASSIVE checkpoint that found `frames` in the WAL (`previous_frames`:
    what the pass before it in the same tick found, None if it was the first).

    A WAL starts over only when a write begins while every frame in it has been copied. A
    pass copies the frames there when it began, so under a sustained write load it never
    catches up, and the WAL grew for as long as the load lasted (830 MB for a burst of 5,000
    29 KB deliveries). Past `catch_up_frames`, passes follow each other; once one found few
    frames added during the one before, it was short, and a quiet pass copies the few added
    meanwhile with nothing written during it, so that the next write starts the WAL over.
    No frame added at all: nothing is writing, and the next write starts the WAL over anyway.
    """
    if frames <= catch_up_frames or frames == previous_frames:
        return AfterPassive.DONE
    if previous_frames is not None and frames - previous_frames <= QUIET_PASS_AFTER_FRAMES:
        return AfterPassive.QUIET
    return AfterPassive.AGAIN


def _passive(connection: sqlite3.Connection) -> int:
    """Returns how many frames the WAL held when the pass began."""
    # PASSIVE never waits for writers or readers: it copies what it can and returns.
    [(_, frames, _)] = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    return int(frames)


def _checkpoint(connection: sqlite3.Connection) -> bool:
    """One tick's passes; True when a quiet pass should follow (see `after_passive`)."""
    [(page_size,)] = connection.execute("PRAGMA page_size").fetchall()
    previous_frames: int | None = None
    for _ in range(CATCH_UP_PASSES):
        frames = _passive(connection)
        step = after_passive(frames, previous_frames, CATCH_UP_PAST_BYTES // page_size)
        if step is not AfterPassive.AGAIN:
            return step is AfterPassive.QUIET
        previous_frames = frames
    return False


class _Checkpointer:
    """The checkpoints' own connection, used only on the one thread of `executor`.

    Cancelling an await of `run_in_executor` does not stop the thread; a close sent to a
    second thread would then free the connection while a checkpoint still runs on it
    (sqlite3 does not guard that: the process crashed). With one thread, a close queues
    behind the checkpoint in progress."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._connection: sqlite3.Connection | None = None
        self.executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite-checkpoint")

    def checkpoint(self) -> bool:
        return _checkpoint(self._connected())

    def quiet_pass(self) -> None:
        _passive(self._connected())

    def _connected(self) -> sqlite3.Connection:
        if self._connection is None:
            self._connection = sqlite3.connect(
                self._path, check_same_thread=False, isolation_level=None
            )
        return self._connection

    def close(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


class SqliteValues:
    """Values as the SQLite schema keeps them: datetimes in integer microseconds since the
    epoch, flags 0 or 1, JSON documents as text."""

    @staticmethod
    def time(value: datetime) -> int:
        return to_micros(value)

    @staticmethod
    def time_of(value: Any) -> datetime:
        return from_micros(value)

    @staticmethod
    def optional_time_of(value: Any) -> datetime | None:
        return optional_from_micros(value)

    @staticmethod
    def flag(value: bool) -> int:
        return int(value)

    @staticmethod
    def document_of(value: Any) -> dict[str, Any]:
        return load_json(value)


class SqliteTransaction(SqliteValues):
    """`Executor` inside a write transaction, whose holder has the lock."""

    def __init__(self, db: InlineConnection) -> None:
        self._db = db

    async def run(self, statement: Sql, /, **params: Any) -> int:
        cursor = await self._db.execute(statement.sqlite, statement.args(params))
        try:
            return int(cursor.rowcount)
        finally:
            await cursor.close()

    async def rows(self, statement: Sql, /, **params: Any) -> list[Row]:
        return list(await self._db.execute_fetchall(statement.sqlite, statement.args(params)))

    async def row(self, statement: Sql, /, **params: Any) -> Row | None:
        rows = await self.rows(statement, **params)
        return rows[0] if rows else None

    async def many(self, statement: Sql, params: Iterable[Mapping[str, Any]], /) -> None:
        await self._db.executemany(statement.sqlite, [statement.args(p) for p in params])


class SqliteAutocommit(SqliteValues):
    """`Executor` for one statement at a time, each taking the lock (`_fetchall`)."""

    def __init__(self, store: SqliteConnectionBase) -> None:
        self._store = store

    async def run(self, statement: Sql, /, **params: Any) -> int:
        return await self._store._execute(statement.sqlite, statement.args(params))

    async def rows(self, statement: Sql, /, **params: Any) -> list[Row]:
        return await self._store._fetchall(statement.sqlite, statement.args(params))

    async def row(self, statement: Sql, /, **params: Any) -> Row | None:
        rows = await self.rows(statement, **params)
        return rows[0] if rows else None


class SqliteConnectionBase(SqlStore):
    """Owns the connection and the lock; the table mixins add the `Storage` methods."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: InlineConnection | None = None
        self._lock = asyncio.Lock()
        self._checkpointer: asyncio.Task[None] | None = None
        self._autocommit = SqliteAutocommit(self)

    _values = SqliteValues()

    # -- lifecycle ---------------------------------------------------------
    async def open(self) -> None:
        if self._conn is not None:
            return
        # Autocommit mode: the module's implicit transactions would wrap single
        # statements needlessly and fight our explicit BEGIN IMMEDIATE.
        conn = await connect_inline(self._path)
        try:
            await conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            await _enable_wal(conn)
            await conn.execute("PRAGMA synchronous = NORMAL")
            # Checkpoints copy the WAL into the database and sync it: tens of milliseconds
            # that would stall the event loop inside some unlucky commit. So the store's own
            # connection never checkpoints; a thread with its own connection does.
            await conn.execute("PRAGMA wal_autocheckpoint = 0")
            # A WAL file keeps the largest size it ever reached, whatever it holds now: a
            # burst left hundreds of megabytes on disk for as long as the store ran. With a
            # limit, the first commit after the WAL starts over truncates the file to it.
            await conn.execute(f"PRAGMA journal_size_limit = {JOURNAL_SIZE_LIMIT_BYTES}")
            await migrate(conn)
        except BaseException:
            await conn.close()
            raise
        self._conn = conn
        self._checkpointer = asyncio.create_task(self._checkpoint_forever())

    async def close(self) -> None:
        checkpointer, self._checkpointer = self._checkpointer, None
        if checkpointer is not None:
            checkpointer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await checkpointer
        conn, self._conn = self._conn, None
        if conn is not None:
            async with self._lock:
                await conn.close()

    async def _checkpoint_forever(self) -> None:
        loop = asyncio.get_running_loop()
        checkpointer = _Checkpointer(self._path)
        try:
            while True:
                await asyncio.sleep(CHECKPOINT_SECONDS)
                try:
                    if await loop.run_in_executor(checkpointer.executor, checkpointer.checkpoint):
                        # This store's statements wait for it, the event loop does not. With
                        # nothing written meanwhile, it copies the whole WAL, and the next
                        # write starts the WAL over.
                        async with self._lock:
                            await loop.run_in_executor(
                                checkpointer.executor, checkpointer.quiet_pass
                            )
                except sqlite3.Error:
                    log.warning("WAL checkpoint failed; will try again", exc_info=True)
        finally:
            # Runs after any checkpoint still in progress on that thread, never beside it.
            closed = loop.run_in_executor(checkpointer.executor, checkpointer.close)
            checkpointer.executor.shutdown(wait=False)
            # Shielded: cancelled again, this task still leaves the close queued, not undone.
            await asyncio.shield(closed)

    async def ping(self) -> bool:
        if self._conn is None:
            return False
        try:
            async with self._lock:
                rows = await self._conn.execute_fetchall("SELECT 1")
        except (sqlite3.Error, ValueError):
            # sqlite3 raises ProgrammingError (an Error) once the connection is closed.
            return False
        return list(rows) == [(1,)]

    # -- access for the table mixins -----------------------------------------
    @property
    def _db(self) -> InlineConnection:
        if self._conn is None:
            raise RuntimeError("SqliteStorage is not open; call open() first")
        return self._conn

    @asynccontextmanager
    async def _write_transaction(self) -> AsyncIterator[InlineConnection]:
        """BEGIN IMMEDIATE ... COMMIT, rolled back on any error, under the lock."""
        async with self._lock:
            db = self._db
            await db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                await db.rollback()
                raise
            await db.commit()

    @property
    def _sql(self) -> Executor:
        return self._autocommit

    @asynccontextmanager
    async def _transaction(self) -> AsyncIterator[Transaction]:
        async with self._write_transaction() as db:
            yield SqliteTransaction(db)

    async def _fetchall(self, sql: str, params: Parameters = ()) -> list[Any]:
        async with self._lock:
            return list(await self._db.execute_fetchall(sql, params))

    async def _execute(self, sql: str, params: Sequence[Any] = ()) -> int:
        """Run one statement in autocommit mode; returns the changed row count."""
        async with self._lock:
            cursor = await self._db.execute(sql, params)
            try:
                return int(cursor.rowcount)
            finally:
                await cursor.close()


async def _enable_wal(conn: InlineConnection) -> None:
    """Switch the file to WAL, retrying while another connection holds it.

    Changing the journal mode needs an exclusive lock, and SQLite reports
    "database is locked" without consulting busy_timeout when replicas open a
    fresh file together, so the wait is done here.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            rows = list(await conn.execute_fetchall("PRAGMA journal_mode = WAL"))
        except sqlite3.OperationalError:
            if time.monotonic() >= deadline:
                raise
            await asyncio.sleep(0.01)
            continue
        mode = str(rows[0][0]).lower() if rows else ""
        if mode != "wal":
            raise RuntimeError(f"SQLite refused WAL mode (journal_mode is {mode!r})")
        return

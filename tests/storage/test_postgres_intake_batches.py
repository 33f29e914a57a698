"""PostgreSQL records deliveries by group commit: deliveries arriving together share one
transaction, a redelivery gets False whether it shares the batch or not, a row PostgreSQL
refuses fails only its own caller, a cancelled caller leaves the others' answers alone, and
two replicas recording the same ids at once store each exactly once.

Which transaction inserted a row is read from its xmin: rows committed together share it.
Every test runs on a fresh schema of JUDGE_TEST_POSTGRES_URL and is skipped without it.
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest
from asyncpg import Connection

from bot.storage.base import DeliveryStatus, NewDelivery
from bot.storage.postgres import PostgresStorage, quote_ident
from tests.support.storage_fixtures import POSTGRES_URL_ENV, StorageBackend

T0 = datetime(2026, 5, 1, 8, 0, tzinfo=UTC)
# Blocked inserts are waited for by polling the server; this only bounds a hang.
WAIT_GUARD_SECONDS = 30


# Another replica's insert, made by hand so that its transaction can be held open.
INSERT_BY_HAND = (
    "INSERT INTO deliveries (delivery_id, event, body, status, received_at, next_attempt_at)"
    " VALUES ($1, 'push', $2, 'pending', now(), now())"
)


def delivery(n: int, **overrides: Any) -> NewDelivery:
    fields: dict[str, Any] = {
        "delivery_id": f"g-{n:05d}",
        "event": "pull_request",
        "action": "opened",
        "installation_id": 7,
        "repository": "octo/batches",
        "body": b'{"n":' + str(n).encode() + b"}",
        "received_at": T0 + timedelta(seconds=n),
    }
    fields.update(overrides)
    return NewDelivery(**fields)


@pytest.fixture
async def store(postgres_backend: StorageBackend) -> PostgresStorage:
    opened = await postgres_backend.opened()
    assert isinstance(opened, PostgresStorage)
    return opened


@pytest.fixture
async def connect(
    postgres_backend: StorageBackend,
) -> AsyncIterator[Callable[[], Awaitable[Connection]]]:
    """Opens connections of their own on the test's schema, as another replica has."""
    url = os.environ[POSTGRES_URL_ENV]
    opened: list[Connection] = []

    async def open_one() -> Connection:
        conn = await asyncpg.connect(
            url, server_settings={"search_path": quote_ident(postgres_backend.schema)}
        )
        opened.append(conn)
        return conn

    try:
        yield open_one
    finally:
        for conn in opened:
            await conn.close()


@pytest.fixture
async def side_connection(connect: Callable[[], Awaitable[Connection]]) -> Connection:
    return await connect()


async def transactions_by_id(conn: Connection) -> dict[str, str]:
    """Each stored delivery id with the id of the transaction that inserted it."""
    rows = await conn.fetch("SELECT delivery_id, xmin::text AS xact FROM deliveries")
    return {row["delivery_id"]: row["xact"] for row in rows}


async def bodies_by_id(conn: Connection) -> dict[str, bytes]:
    rows = await conn.fetch("SELECT delivery_id, body FROM deliveries")
    return {row["delivery_id"]: bytes(row["body"]) for row in rows}


async def blocked_by(conn: Connection, blocker: Connection) -> None:
    """Until some session waits on a lock `blocker` holds."""
    pid = blocker.get_server_pid()
    async with asyncio.timeout(WAIT_GUARD_SECONDS):
        while not await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)))",
            pid,
        ):
            await asyncio.sleep(0.01)


async def test_deliveries_arriving_together_share_one_transaction(
    store: PostgresStorage, side_connection: Connection
) -> None:
    """Twenty deliveries in one loop turn: twenty rows, one inserting transaction (a commit
    per delivery gave twenty)."""
    results = await asyncio.gather(*(store.record_delivery(delivery(n)) for n in range(20)))
    assert results == [True] * 20
    xacts = await transactions_by_id(side_connection)
    assert sorted(xacts) == [delivery(n).delivery_id for n in range(20)]
    assert len(set(xacts.values())) == 1


async def test_every_field_is_stored_from_a_shared_batch(store: PostgresStorage) -> None:
    """Pending and done deliveries, NULL columns and every byte of each body, side by side
    in one statement: each row is its own delivery's."""
    incoming = [
        delivery(1, body=bytes(range(256)) * 3),
        delivery(2, done=True, action=None, installation_id=None, repository=None),
        delivery(3, body=b"", installation_id=2**63 - 1),
    ]
    assert await asyncio.gather(*(store.record_delivery(d) for d in incoming)) == [True] * 3
    for sent in incoming:
        stored = await store.get_delivery(sent.delivery_id)
        assert stored is not None
        assert (stored.event, stored.action, stored.installation_id, stored.repository) == (
            sent.event,
            sent.action,
            sent.installation_id,
            sent.repository,
        )
        assert (stored.body, stored.received_at, stored.next_attempt_at, stored.attempts) == (
            sent.body,
            sent.received_at,
            sent.received_at,
            0,
        )
        if sent.done:
            assert (stored.status, stored.finished_at) == (DeliveryStatus.DONE, sent.received_at)
        else:
            assert (stored.status, stored.finished_at) == (DeliveryStatus.PENDING, None)


async def test_a_redelivery_in_the_same_batch_gets_false_and_stores_nothing(
    store: PostgresStorage, side_connection: Connection
) -> None:
    """As with a commit per delivery, the first arrival of an id is stored and answered True;
    a second arrival in the same batch is answered False, its body dropped."""
    together = await asyncio.gather(
        store.record_delivery(delivery(2, body=b"one")),
        store.record_delivery(delivery(3, body=b"three")),
        store.record_delivery(delivery(2, body=b"two")),
        store.record_delivery(delivery(2, body=b"again")),
    )
    assert list(together) == [True, True, False, False]
    assert await bodies_by_id(side_connection) == {"g-00002": b"one", "g-00003": b"three"}


async def test_a_redelivery_in_a_later_batch_gets_false_and_changes_nothing(
    store: PostgresStorage, side_connection: Connection
) -> None:
    assert await store.record_delivery(delivery(1, body=b"first"))
    later = await asyncio.gather(
        store.record_delivery(delivery(1, body=b"later", event="push")),
        store.record_delivery(delivery(4, body=b"four")),
    )
    assert list(later) == [False, True]
    assert await bodies_by_id(side_connection) == {"g-00001": b"first", "g-00004": b"four"}
    first = await store.get_delivery("g-00001")
    assert first is not None and first.event == "pull_request"


@pytest.mark.parametrize(
    "refused",
    [
        pytest.param({"event": "pull\x00request"}, id="nul-refused-by-the-server"),
        pytest.param({"repository": "octo/\ud800"}, id="surrogate-refused-by-the-driver"),
    ],
)
async def test_a_row_postgres_refuses_fails_only_its_own_caller(
    store: PostgresStorage, side_connection: Connection, refused: dict[str, str]
) -> None:
    """Values that pass the checks made before joining a batch, but that PostgreSQL or
    asyncpg refuses, fail the shared statement; each row is then committed alone, so the
    bad row's caller alone gets the error, and its neighbours (a redelivery among them)
    get the answers separate commits would have given."""
    results = await asyncio.gather(
        store.record_delivery(delivery(1)),
        store.record_delivery(delivery(2, **refused)),
        store.record_delivery(delivery(3)),
        store.record_delivery(delivery(1, body=b"dup")),
        return_exceptions=True,
    )
    assert results[0] is True and results[2] is True and results[3] is False
    assert isinstance(results[1], asyncpg.DataError)
    assert sorted(await transactions_by_id(side_connection)) == ["g-00001", "g-00003"]
    # A refused id is not remembered: once fixed, it is stored.
    assert await store.record_delivery(delivery(2))


async def test_a_refused_duplicate_leaves_the_id_to_its_good_copy(
    store: PostgresStorage, side_connection: Connection
) -> None:
    """The first copy of an id is unstorable, the second is fine: as with separate commits,
    the first fails and the second is stored."""
    results = await asyncio.gather(
        store.record_delivery(delivery(5, event="bad\x00")),
        store.record_delivery(delivery(5, body=b"good")),
        return_exceptions=True,
    )
    assert isinstance(results[0], asyncpg.DataError) and results[1] is True
    assert await bodies_by_id(side_connection) == {"g-00005": b"good"}


async def test_a_cancelled_caller_leaves_the_others_answers_alone(
    store: PostgresStorage,
    side_connection: Connection,
    connect: Callable[[], Awaitable[Connection]],
) -> None:
    """One caller gives up before its batch commits, another while the commit waits on a
    lock: the rest are answered and stored, and the cancelled deliveries are stored too (a
    redelivery will be answered 200)."""
    # Another replica's uncommitted insert of g-00003 holds up the batch that has it.
    other = await connect()
    blocking = other.transaction()
    await blocking.start()
    await other.execute(INSERT_BY_HAND, "g-00003", b"theirs")
    callers = [asyncio.create_task(store.record_delivery(delivery(n))) for n in range(6)]
    await asyncio.sleep(0)  # every caller has joined; the batch is not taken yet
    callers[1].cancel()
    await blocked_by(side_connection, other)
    callers[4].cancel()
    await blocking.rollback()
    results = await asyncio.gather(*callers, return_exceptions=True)
    assert [r for n, r in enumerate(results) if n not in (1, 4)] == [True] * 4
    assert isinstance(results[1], asyncio.CancelledError)
    assert isinstance(results[4], asyncio.CancelledError)
    xacts = await transactions_by_id(side_connection)
    assert sorted(xacts) == [delivery(n).delivery_id for n in range(6)]
    assert len(set(xacts.values())) == 1
    assert await store.record_delivery(delivery(1)) is False


async def test_an_id_another_replica_is_inserting_waits_for_its_commit(
    store: PostgresStorage,
    side_connection: Connection,
    connect: Callable[[], Awaitable[Connection]],
) -> None:
    """The batch waits on the other replica's uncommitted row, then answers False for it and
    True for the rest: the id is stored once, by the other replica."""
    other = await connect()
    async with other.transaction():
        await other.execute(INSERT_BY_HAND, "g-00002", b"theirs")
        batch = asyncio.gather(*(store.record_delivery(delivery(n)) for n in range(4)))
        await blocked_by(side_connection, other)
    assert await batch == [True, True, False, True]
    assert (await bodies_by_id(side_connection))["g-00002"] == b"theirs"


async def test_two_replicas_recording_the_same_ids_store_each_once(
    postgres_backend: StorageBackend, side_connection: Connection
) -> None:
    """Two stores on one schema (two replicas) record overlapping bursts, in opposite
    orders: every id is acknowledged as new exactly once and stored exactly once, and no
    batch deadlocked against the other. A deadlock's victim would have fallen back to a
    transaction per row, and its replica's own ids would show as many transactions: here
    each burst's rows come from at most one transaction per replica."""
    replicas = [await postgres_backend.opened(), await postgres_backend.opened()]
    bursts, span = 6, 90
    answers: Counter[str] = Counter()
    for burst in range(bursts):
        ids = range(burst * span, (burst + 1) * span)
        # Every third id is both replicas'; the rest are one replica's own, spread between.
        orders = [
            [n for n in ids if n % 3 != 2],
            [n for n in reversed(ids) if n % 3 != 1],
        ]
        calls = [
            (n, replica.record_delivery(delivery(n, body=bytes(2000))))
            for replica, order in zip(replicas, orders, strict=True)
            for n in order
        ]
        results = await asyncio.gather(*(call for _, call in calls))
        for (n, _), new in zip(calls, results, strict=True):
            answers[delivery(n).delivery_id] += new
    expected = {delivery(n).delivery_id for n in range(bursts * span)}
    assert answers == Counter(dict.fromkeys(expected, 1))
    xacts = await transactions_by_id(side_connection)
    assert set(xacts) == expected
    assert await side_connection.fetchval("SELECT count(*) FROM deliveries") == len(expected)
    assert len(set(xacts.values())) <= 2 * bursts


async def test_bodies_are_stored_with_lz4_where_the_server_has_it(
    store: PostgresStorage, connect: Callable[[], Awaitable[Connection]]
) -> None:
    """pglz cost the server three times the CPU per body (see postgres_schema)."""
    conn = await connect()
    if await conn.fetchval("SELECT current_setting('server_version_num')::int") < 140000:
        pytest.skip("PostgreSQL before 14 compresses with pglz only")
    # Large enough to be compressed (past the 2 KB TOAST threshold), and compressible.
    body = b'{"text": "' + b"the same words again " * 2000 + b'"}'
    assert await store.record_delivery(delivery(1, body=body))
    method = await conn.fetchval("SELECT pg_column_compression(body) FROM deliveries")
    assert method == "lz4"
    [stored] = await store.claim_deliveries("w", 1, 60, T0 + timedelta(hours=1))
    assert stored.body == body

"""Storage failing under the webhook intake: a deliberate 503 with Retry-After and one log
line (not aiohttp's 500 and a traceback), `/healthz` saying writes fail while `SELECT 1`
still answers, and nothing acknowledged lost.

Real failures: SQLite locked by another process (a writer holding the file), and PostgreSQL
going away mid-burst (its connections cut and refused by a loopback relay, as in a restart)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import sys
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.app import STORAGE_RETRY_AFTER_SECONDS, storage_failure
from bot.storage import sqlite_connection, storage_from_url
from bot.storage.base import StorageUnavailable
from bot.storage.postgres import PostgresStorage
from tests.intake.github_switch import GitHubSwitch
from tests.support.app_helpers import make_settings, running_app
from tests.support.storage_fixtures import StorageBackend
from tests.support.webhook_helpers import example, webhook_headers

HOLD_THE_LOCK = (
    "import sqlite3, sys\n"
    "conn = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "conn.execute('BEGIN EXCLUSIVE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
)


async def post(
    client: TestClient[web.Request, web.Application], path: str, delivery_id: str
) -> tuple[int, Any, dict[str, str]]:
    body = example("push", "payload")
    response = await client.post(
        path, data=body, headers=webhook_headers("push", body, delivery_id=delivery_id)
    )
    return response.status, await response.json(), dict(response.headers)


@pytest.fixture
def short_busy_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    """A locked SQLite file is waited for 5 s by each statement; 50 ms is enough to fail."""
    monkeypatch.setattr(sqlite_connection, "BUSY_TIMEOUT_MS", 50)


async def test_a_sqlite_file_locked_by_another_process_answers_503_and_loses_nothing(
    tmp_path: Path,
    github_keypair: Any,
    short_busy_wait: None,
    caplog: pytest.LogCaptureFixture,
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    path = settings.database_url.removeprefix("sqlite:///")
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        locker = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            HOLD_THE_LOCK,
            path,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        assert locker.stdout is not None and locker.stdin is not None
        assert await locker.stdout.readline() == b"locked\n"
        caplog.clear()
        caplog.set_level(logging.INFO)
        delivery_id = str(uuid.uuid4())

        status, body, headers = await post(client, settings.webhook_path, delivery_id)
        assert status == 503
        assert headers["Retry-After"] == str(STORAGE_RETRY_AFTER_SECONDS)
        assert body == {"ok": False, "error": "storage unavailable; try again later"}
        loud = [r for r in caplog.records if r.levelno >= logging.WARNING]
        assert len(loud) == 1 and loud[0].exc_info is None
        assert "database is locked" in loud[0].getMessage()
        assert f"POST {settings.webhook_path}" in loud[0].getMessage()

        health = await client.get("/healthz")
        during = await health.json()
        assert health.status == 503, "SELECT 1 answers, but every write fails"
        assert during["storage"] is False
        assert during["storage_writes"]["failing"] is True
        assert "database is locked" in during["storage_writes"]["last_error"]

        locker.stdin.close()
        await locker.wait()
        health = await client.get("/healthz")
        assert health.status == 200 and "storage_writes" not in await health.json()
        # GitHub's (or a person's) redelivery of the refused delivery is stored.
        status, _, _ = await post(client, settings.webhook_path, delivery_id)
        assert status == 202
        assert await store.get_delivery(delivery_id) is not None


@pytest.fixture
async def relayed_postgres() -> AsyncIterator[tuple[GitHubSwitch, StorageBackend]]:
    """PostgreSQL behind a loopback relay that can be cut, with a schema of its own."""
    url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
    if not url:
        pytest.skip("JUDGE_TEST_POSTGRES_URL is not set: PostgreSQL backend not tested")
    prefix, _, rest = url.partition("@")
    hostport, _, database = rest.partition("/")
    port = int(hostport.rpartition(":")[2] or 5432)
    relay = GitHubSwitch(port)
    await relay.up()
    backend = StorageBackend("postgres", pg=f"{prefix}@127.0.0.1:{relay.port}/{database}")
    try:
        yield relay, backend
    finally:
        await relay.up()
        await backend.teardown()
        await relay.down()


async def test_postgresql_going_away_mid_burst_answers_503_never_500(
    tmp_path: Path, github_keypair: Any, relayed_postgres: tuple[GitHubSwitch, StorageBackend]
) -> None:
    """Every request is answered 202 (and stored) or 503 (and not acknowledged): nothing
    acknowledged is lost, and nothing is a 500."""
    relay, backend = relayed_postgres
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = backend.new()
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        ids = [str(uuid.uuid4()) for _ in range(40)]

        async def burst(part: list[str]) -> list[tuple[str, int, dict[str, str]]]:
            answers = await asyncio.gather(*(post(client, settings.webhook_path, i) for i in part))
            return [(i, s, h) for i, (s, _, h) in zip(part, answers, strict=True)]

        answered = await burst(ids[:10])
        await relay.down()  # the database restarts: connections cut, new ones refused
        answered += await burst(ids[10:30])
        health = await client.get("/healthz")
        assert health.status == 503
        await relay.up()
        answered += await burst(ids[30:])
        statuses = {status for _, status, _ in answered}
        assert statuses <= {202, 503} and 503 in statuses, statuses
        for delivery_id, status, headers in answered:
            if status == 202:
                assert await store.get_delivery(delivery_id) is not None, "acknowledged: kept"
            else:
                assert headers["Retry-After"] == str(STORAGE_RETRY_AFTER_SECONDS)
        assert all(status == 202 for _, status, _ in answered[30:]), "back once it is back"
    assert isinstance(store, PostgresStorage)


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (sqlite3.OperationalError("database or disk is full"), True),
        (ConnectionRefusedError(111, "refused"), True),
        (TimeoutError(), True),
        (StorageUnavailable("gone"), True),
        (RuntimeError("a bug"), False),
        (ValueError("bad input"), False),
        (aiohttp.ClientConnectionError("another service"), False),
        (json.JSONDecodeError("x", "", 0), False),
    ],
)
def test_what_counts_as_storage_failing(exc: BaseException, expected: bool) -> None:
    assert storage_failure(exc) is expected


def test_asyncpg_errors_count() -> None:
    assert storage_failure(asyncpg.exceptions.ConnectionDoesNotExistError("closed"))
    assert storage_failure(asyncpg.exceptions.DiskFullError("full"))

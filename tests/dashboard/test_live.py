"""The dashboard shows what just happened: judgments written through the webhook endpoint,
or through the engine's own append (`append_record`), are counted on the next page load,
on SQLite and PostgreSQL, including a record another transaction commits after a newer
one; and the page says how current it is."""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.dashboard import live
from bot.dashboard.freshness import Freshness
from bot.dashboard.routes import add_dashboard
from bot.github.client import GitHubApp
from bot.judge.engine import append_record
from bot.judge.records import VerdictRecord
from bot.reports.thresholds import CalibrationThresholds
from bot.storage import facts
from bot.storage.base import Storage
from tests.dashboard.live_support import MAINTAINER, judging_app, three_judgments_and_an_override
from tests.dashboard.support import Client, bearer, dashboard_settings, seed, serving
from tests.dashboard.test_handlers import rejected, text_of
from tests.reports.seeded import NOW
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.storage_fixtures import POSTGRES_URL_ENV, StorageBackend

FRESHNESS = re.compile(
    r"Up to date with the verdict log at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC: every judgment "
    r"and override recorded by then is counted\. The whole window was last read .+ and is "
    r"read again every 30 seconds"
)


async def page(client: Client, query: str = "") -> str:
    response = await client.get(f"/dashboard{query}", headers=bearer())
    assert response.status == 200, await response.text()
    return await response.text()


def judgments(html: str) -> int:
    return int(text_of(html, "judgments"))


async def test_judgments_and_an_override_by_webhook_show_on_the_next_load(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    """The issue's steps: the page, three judgments and an override, the page again at
    once (the view computed at start was still well within its 30 seconds)."""
    async with judging_app(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm
    ) as bot:
        before = await page(bot.client)
        assert judgments(before) == 0
        await three_judgments_and_an_override(bot)
        after = await page(bot.client)
    assert judgments(after) == 3
    assert (text_of(after, "count-accept"), text_of(after, "count-reject")) == ("1", "2")
    assert text_of(after, "flagged-count") == "2"
    assert f"accept by @{MAINTAINER}" in after
    assert FRESHNESS.search(text_of(after, "freshness"))


async def test_an_appended_record_shows_at_once_in_every_view(
    tmp_path: Path, github_keypair: Any, storage: Storage
) -> None:
    """Through the engine's append path: the default view, the repository's view and the
    repository choices gain the record; another repository's view does not."""
    await seed(storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, storage) as client:
        first, docs = await page(client), await page(client, "?repo=octo/docs")
        api = await page(client, "?repo=octo/api")
        await append_record(storage, rejected(7, NOW - timedelta(minutes=1)))
        moved = rejected(8, NOW - timedelta(minutes=1)).model_copy(
            update={"repository": "octo/new"}
        )
        await append_record(storage, moved)
        assert judgments(await page(client)) == judgments(first) + 2
        assert judgments(await page(client, "?repo=octo/api")) == judgments(api) + 1
        assert judgments(await page(client, "?repo=octo/docs")) == judgments(docs)
        assert '<option value="octo/new">' in await page(client, "?repo=octo/api")


async def _held_append(conn: asyncpg.Connection, record: VerdictRecord) -> int:
    """The ledger's own two inserts (`bot.storage.ledger.append_verdict`), in a
    transaction the caller commits later."""
    data = record.model_dump(mode="json")
    seq: int = await conn.fetchval(
        "INSERT INTO verdicts (task_id, repository, head_sha, verdict, created_at, record)"
        " VALUES ($1, $2, $3, $4, $5, $6) RETURNING seq",
        record.task_id, record.repository, record.head_sha, record.final_decision.value,
        record.timestamp, json.dumps(data),
    )  # fmt: skip
    params = facts.facts_params(
        seq, record.task_id, record.repository, record.head_sha, record.timestamp, data, bool
    )
    await conn.execute(facts.INSERT.postgres, *facts.INSERT.args(params))
    return seq


@asynccontextmanager
async def replica_connection(backend: StorageBackend) -> AsyncIterator[asyncpg.Connection]:
    """A connection of its own to the test's schema, as another replica has."""
    conn = await asyncpg.connect(
        os.environ[POSTGRES_URL_ENV], server_settings={"search_path": backend.schema}
    )
    try:
        yield conn
    finally:
        await conn.close()


async def test_a_record_committed_after_a_newer_one_still_shows(
    tmp_path: Path, github_keypair: Any, postgres_backend: StorageBackend
) -> None:
    """PostgreSQL numbers a record before its transaction commits: one committed after a
    newer record was already counted shows on the load after its commit."""
    storage = await postgres_backend.opened()
    await seed(storage)
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    async with serving(settings, storage) as client:
        shown = judgments(await page(client))
        async with replica_connection(postgres_backend) as conn:
            writing = conn.transaction()
            await writing.start()
            late = await _held_append(conn, rejected(7, NOW - timedelta(minutes=2)))
            await append_record(storage, rejected(8, NOW - timedelta(minutes=1)))
            [newer] = await storage.list_verdicts(task_id=rejected(8, NOW).task_id)
            assert newer.seq > late
            assert judgments(await page(client)) == shown + 1
            await writing.commit()
        assert judgments(await page(client)) == shown + 2
        assert judgments(await page(client)) == shown + 2  # counted once


async def bare_dashboard(
    storage: Storage, tmp_path: Path, github_keypair: Any, freshness: Freshness
) -> web.Application:
    app = web.Application()
    settings = dashboard_settings(github_keypair.private_pem, tmp_path)
    limits = CalibrationThresholds(_env_file=None)
    add_dashboard(app, settings, storage, thresholds=limits, clock=lambda: NOW,
                  freshness=freshness)  # fmt: skip
    return app


async def test_a_view_whose_facts_are_not_kept_is_read_again(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage
) -> None:
    """Over the memory budget a view keeps no facts to fold into: a new record of it has
    the window read again while the person waits, one of another repository does not."""
    await seed(sqlite_storage)
    app = await bare_dashboard(sqlite_storage, tmp_path, github_keypair, Freshness(kept_facts=3))
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        shown = judgments(await page(client))
        api = judgments(await page(client, "?repo=octo/api"))
        await append_record(sqlite_storage, rejected(7, NOW - timedelta(minutes=1)))
        assert judgments(await page(client)) == shown + 1
        assert judgments(await page(client, "?repo=octo/api")) == api + 1


async def test_a_burst_beyond_the_fold_limit_is_read_in_full(
    tmp_path: Path, github_keypair: Any, sqlite_storage: Storage, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "FOLD_LIMIT", 2)
    await seed(sqlite_storage)
    app = await bare_dashboard(sqlite_storage, tmp_path, github_keypair, Freshness())
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        shown = judgments(await page(client))
        for number in (7, 8, 9):
            await append_record(sqlite_storage, rejected(number, NOW - timedelta(minutes=1)))
        assert judgments(await page(client)) == shown + 3
        assert judgments(await page(client)) == shown + 3

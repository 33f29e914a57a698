"""Running the real app on loopback for tests, with builders that have valid defaults."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.app import create_app
from bot.settings import Settings
from bot.storage import storage_from_url
from bot.storage.base import Storage
from tests.support.webhook_helpers import SECRET


def make_settings(private_key: str, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "APP_ID": "12345",
        "PRIVATE_KEY": private_key,
        "WEBHOOK_SECRET": SECRET,
        "DATABASE_URL": f"sqlite:///{tmp_path / 'judge.sqlite3'}",
        "JUDGE_WORKERS": 2,
        "JUDGE_POLL_INTERVAL": 0.05,
        "JUDGE_RETRY_BASE_SECONDS": 0,
        "JUDGE_GITHUB_WRITE_INTERVAL": 0,
        "LOG_FORMAT": "pretty",
        # Tests that want recovery passes turn it on; others must not list deliveries.
        "JUDGE_REDELIVER_MISSED": False,
        "JUDGE_SELF_CHECK_INTERVAL_SECONDS": 0,
        "JUDGE_PROBE_INTERVAL_SECONDS": 0,
        "JUDGE_KPI_REFRESH_SECONDS": 0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@asynccontextmanager
async def running_app(
    settings: Settings, *, storage: Storage | None = None, **kwargs: Any
) -> AsyncIterator[tuple[TestClient[web.Request, web.Application], web.Application]]:
    store = storage if storage is not None else storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, **kwargs)
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        yield client, app
    finally:
        await client.close()

"""The dashboard's test app and its seeded log: the reports' known log (tests/reports/seeded.py)
plus the judging state that links two flagged commits and one open disagreement issue."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.app import TIER_BOARD, create_app
from bot.dashboard.routes import PAGE, add_dashboard
from bot.disagreement.sync import BY_TASK
from bot.judging.state import ShaState, save_state, state_key
from bot.settings import Settings
from bot.storage.base import Storage
from tests.reports.seeded import NOW, SEEDED, sha, store_all
from tests.support.app_helpers import make_settings

TOKEN = "dashboard-token-0123456789abcdef"
DOCS_PAGE = "https://github.com/octo/docs"
Client = TestClient[web.Request, web.Application]


def dashboard_settings(private_key: str, tmp_path: Path, **overrides: Any) -> Settings:
    return make_settings(private_key, tmp_path, DASHBOARD_TOKEN=TOKEN, **overrides)


def bearer(token: str = TOKEN) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def seed(storage: Storage) -> None:
    """SEEDED, a pull request and check run for a3 (rejected), a commit page for a6
    (undetermined), and issue #12 open about a3."""
    await store_all(storage, SEEDED)
    pull = {"html_url": DOCS_PAGE, "pull_number": 7, "repository": "octo/docs"}
    await save_state(storage, state_key("octo/docs", sha(3)), ShaState(target=pull))
    await save_state(
        storage,
        state_key("octo/docs", sha(6)),
        ShaState(target={"html_url": DOCS_PAGE, "pull_number": None}),
    )
    await storage.kv_put(
        BY_TASK, "octo/docs|octo/docs#3", {"number": 12, "state": "open", "last_sha": sha(3)}
    )
    await storage.kv_put(BY_TASK, "octo/api|octo/api#2", {"number": 3, "state": "closed"})


def with_dashboard(app: web.Application, settings: Settings, storage: Storage) -> None:
    """The dashboard's routes as `create_app` wires them, unless it wired them already."""
    if not any(getattr(r, "canonical", None) == PAGE for r in app.router.resources()):
        add_dashboard(app, settings, storage, tiers=app[TIER_BOARD].current, clock=lambda: NOW)


@asynccontextmanager
async def serving(settings: Settings, storage: Storage) -> AsyncIterator[Client]:
    """The whole app on loopback, its clock at the seeded log's NOW."""
    app = create_app(settings, storage=storage, start_workers=False, clock=lambda: NOW)
    with_dashboard(app, settings, storage)
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        yield client
    finally:
        await client.close()

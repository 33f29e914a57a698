"""Operations endpoints, setup mode and installation records, end to end through the app.

Log hygiene is tested in test_logs.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from bot.app import TIER_BOARD, metrics_allowed
from bot.judge.settings import JudgeSettings
from bot.settings import Settings
from bot.storage import storage_from_url
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import until_status
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.webhook_helpers import example, webhook_headers


async def test_healthz_reports_storage(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        response = await client.get("/healthz")
        assert response.status == 200
        assert (await response.json())["storage"] is True
        await store.close()
        broken = await client.get("/healthz")
        assert broken.status == 503


async def test_healthz_detail_shows_the_self_checked_tiers_without_changing_health(
    tmp_path: Path, github_keypair: Any, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.models = ["gpt-5-nano"]
    settings = make_settings(
        github_keypair.private_pem, tmp_path, JUDGE_SELF_CHECK_INTERVAL_SECONDS=3600
    )
    judge_settings = JudgeSettings(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        quick_model="gpt-5-nano",
        deep_model="kimi-k2.5",
    )
    async with running_app(settings, start_workers=False, judge_settings=judge_settings) as (
        client,
        app,
    ):
        while app[TIER_BOARD].current()[0].available is None:
            await asyncio.sleep(0.01)
        plain = await client.get("/healthz")
        assert "judge" not in await plain.json()
        detailed = await client.get("/healthz?detail=1")
        body = await detailed.json()
        assert detailed.status == 200 and body["status"] == "ok"
        assert "test-key" not in json.dumps(body)
        assert "kimi-k2.5" in json.dumps(body["judge"])
        page = await client.get("/")
        assert "gpt-5-nano" in await page.text()


async def test_metrics_expose_intake_and_queue(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store) as (client, _):
        body = example("installation", "created")
        headers = webhook_headers("installation", body, delivery_id="i-1")
        assert (await client.post(settings.webhook_path, data=body, headers=headers)).status == 202
        await until_status(store, "i-1")
        bad = await client.post(
            settings.webhook_path, data=body, headers={"X-Hub-Signature-256": "sha256=0"}
        )
        assert bad.status == 401
        text = await (await client.get("/metrics")).text()
    assert 'judge_deliveries_received_total{event="installation"} 1.0' in text
    assert 'judge_deliveries_processed_total{event="installation"} 1.0' in text
    assert 'judge_deliveries_rejected_total{reason="bad-signature"} 1.0' in text
    assert 'judge_delivery_queue_depth{status="done"} 1.0' in text
    assert "judge_delivery_processing_seconds_bucket" in text
    assert "# HELP judge_github_api_calls_total" in text
    assert "# HELP judge_github_rate_limit_remaining" in text


async def test_installation_events_are_recorded(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store) as (client, _):
        # Repositories added to an installation this store never saw record the installation.
        added = example("installation_repositories", "added")
        added_id = json.loads(added)["installation"]["id"]
        await client.post(
            settings.webhook_path,
            data=added,
            headers=webhook_headers("installation_repositories", added, delivery_id="a"),
        )
        await until_status(store, "a")
        assert await store.get_installation(added_id) is not None

        created = example("installation", "created")
        created_data = json.loads(created)
        installation_id = created_data["installation"]["id"]
        await client.post(
            settings.webhook_path,
            data=created,
            headers=webhook_headers("installation", created, delivery_id="c"),
        )
        await until_status(store, "c")
        stored = await store.get_installation(installation_id)
        assert stored is not None
        assert stored.account == created_data["installation"]["account"]["login"]

        deleted = example("installation", "deleted")
        deleted_id = json.loads(deleted)["installation"]["id"]
        await client.post(
            settings.webhook_path,
            data=deleted,
            headers=webhook_headers("installation", deleted, delivery_id="d"),
        )
        await until_status(store, "d")
        assert await store.get_installation(deleted_id) is None


async def test_setup_mode_serves_registration_guide(tmp_path: Path) -> None:
    """Without APP_ID the server runs, explains how to register, and accepts no webhooks."""
    settings = Settings(_env_file=None, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")
    assert not settings.configured
    async with running_app(settings) as (client, _):
        page = await client.get("/")
        assert page.status == 200
        html = await page.text()
        assert "app.yml" in html and "APP_ID" in html
        assert (await client.get("/healthz")).status == 200
        body = example("push", "payload")
        response = await client.post(
            settings.webhook_path, data=body, headers=webhook_headers("push", body)
        )
        assert response.status == 503


async def test_status_page_when_configured(tmp_path: Path, github_keypair: Any) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with running_app(settings, start_workers=False) as (client, _):
        html = await (await client.get("/")).text()
    assert "12345" in html and "pending" in html
    assert "set <code>DASHBOARD_TOKEN</code>" in html
    assert 'href="https://github.com/settings/apps"' in html


@pytest.mark.parametrize(
    ("api", "web"),
    [
        ("https://api.github.com", "https://github.com"),
        ("https://ghes.example.com/api/v3", "https://ghes.example.com"),
    ],
)
async def test_status_page_links_the_dashboard_and_the_install_page(
    tmp_path: Path, github_keypair: Any, api: str, web: str
) -> None:
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        DASHBOARD_TOKEN="a-dashboard-token-for-tests",
        GITHUB_API_URL=api,
    )
    async with running_app(settings, start_workers=False) as (client, _):
        html = await (await client.get("/")).text()
    assert '<a href="/dashboard">' in html
    assert f'href="{web}/settings/apps"' in html


async def test_metrics_token_guards_metrics(tmp_path: Path, github_keypair: Any) -> None:
    token = "metrics-token-for-tests"
    settings = make_settings(github_keypair.private_pem, tmp_path, METRICS_TOKEN=token)
    async with running_app(settings, start_workers=False) as (client, _):
        anonymous = await client.get("/metrics")
        assert anonymous.status == 401
        assert anonymous.headers["WWW-Authenticate"].startswith("Bearer")
        wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
        assert wrong.status == 401
        allowed = await client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
        assert allowed.status == 200
        assert "judge_delivery_queue_depth" in await allowed.text()
        assert (await client.get("/healthz")).status == 200, "health stays open for probes"
    assert token in settings.secret_values()


def test_metrics_allowed() -> None:
    assert metrics_allowed(None, None)
    assert metrics_allowed("t0k3n", "Bearer t0k3n")
    assert metrics_allowed("t0k3n", "bearer t0k3n")
    assert not metrics_allowed("t0k3n", None)
    assert not metrics_allowed("t0k3n", "Basic t0k3n")
    assert not metrics_allowed("t0k3n", "Bearer t0k3")

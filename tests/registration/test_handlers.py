"""Registration end to end: the page's form, GitHub's redirect back with a code, the
conversion on the fake GitHub, and the .env the restarted server starts from."""

from __future__ import annotations

import json
import logging
import os
import stat
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.app import TIER_BOARD
from bot.judge.settings import JudgeSettings
from bot.registration.routes import REGISTRATION
from bot.settings import Settings
from tests.registration.page_reader import Page, read_page
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub

Client = TestClient[web.Request, web.Application]
BASE = "https://judge.example.com"
CREDENTIALS = (
    "APP_ID",
    "PRIVATE_KEY",
    "WEBHOOK_SECRET",
    "GITHUB_CLIENT_ID",
    "GITHUB_CLIENT_SECRET",
)


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def workdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A working directory without .env, and an environment without App settings."""
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "GH_", "GHE_", "GITHUB_")) or name in (
            *CREDENTIALS,
            "PRIVATE_KEY_PATH",
            "BASE_URL",
            "WEBHOOK_PROXY_URL",
        ):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


def setup_settings(fake: FakeGitHub, tmp_path: Path, **overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "DATABASE_URL": f"sqlite:///{tmp_path / 'judge.sqlite3'}",
        "GITHUB_API_URL": fake.base_url,
        "BASE_URL": BASE,
        # The tiers here point at hosts that do not exist: never look them up.
        "JUDGE_SELF_CHECK_INTERVAL_SECONDS": 0,
        "JUDGE_PROBE_INTERVAL_SECONDS": 0,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@asynccontextmanager
async def setup_mode(
    settings: Settings, clock: Callable[[], datetime] | None = None, **kwargs: Any
) -> AsyncIterator[tuple[Client, web.Application]]:
    extra: dict[str, Any] = {"judge_settings": JudgeSettings(), **kwargs}
    if clock is not None:
        extra["clock"] = clock
    async with running_app(settings, **extra) as running:
        yield running


async def page_of(client: Client, path: str, status: int = 200) -> Page:
    response = await client.get(path)
    assert response.status == status, await response.text()
    return read_page(await response.text())


def the_form(page: Page) -> tuple[str, dict[str, Any], str]:
    """The form's target (without the query), the manifest it posts, its state."""
    (form,) = page.forms
    assert form.method == "post"
    target = urlsplit(form.action)
    (state,) = parse_qs(target.query)["state"]
    return (
        f"{target.scheme}://{target.netloc}{target.path}",
        json.loads(form.fields["manifest"]),
        state,
    )


async def registered_through_github(
    client: Client, fake: FakeGitHub, pem: str, **register: Any
) -> tuple[Page, str]:
    """The person's round trip: open /, post the form to GitHub, come back with a code."""
    _, manifest, state = the_form(await page_of(client, "/"))
    code = fake.manifests.register(manifest, pem=pem, **register)
    return await page_of(client, f"/setup/callback?code={code}&state={state}"), code


async def test_the_page_posts_the_manifest_with_this_servers_addresses(
    fake_github: FakeGitHub, workdir: Path
) -> None:
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page = await page_of(client, "/")
    assert page.headings[0] == "Register the GitHub App"
    assert page.forms[0].button == "Register the GitHub App"
    target, manifest, state = the_form(page)
    assert target == f"{fake_github.origin}/settings/apps/new"
    assert state
    assert manifest["hook_attributes"] == {"url": f"{BASE}/api/github/webhooks", "active": True}
    assert manifest["redirect_url"] == f"{BASE}/setup/callback"
    assert manifest["setup_url"] == f"{BASE}/"
    assert manifest["default_permissions"]["checks"] == "write"
    assert "pull_request" in manifest["default_events"]
    assert page.tables["addresses"][0][1:] == [f"{BASE}/api/github/webhooks", "from BASE_URL"]
    assert "GH_ORG" in page.text


async def test_for_an_organisation_on_github_enterprise_server(
    github_keypair: KeyPair, workdir: Path
) -> None:
    """GH_ORG registers under the organisation; on GHES the form goes to the server's host."""
    fake = FakeGitHub(app_id=1, public_key=github_keypair.public_key, ghes=True)
    await fake.start()
    try:
        settings = setup_settings(fake, workdir, GH_ORG="acme", BASE_URL=None)
        async with setup_mode(settings) as (client, _):
            page = await page_of(client, "/")
            origin = str(client.make_url("")).rstrip("/")
            target, manifest, state = the_form(page)
            code = fake.manifests.register(manifest, pem=github_keypair.private_pem)
            done = await page_of(client, f"/setup/callback?code={code}&state={state}")
    finally:
        await fake.close()
    assert fake.errors == []
    assert page.headings[0] == "Register the GitHub App for the organisation acme"
    assert target == f"{fake.origin}/organizations/acme/settings/apps/new"
    assert manifest["redirect_url"] == f"{origin}/setup/callback"
    assert "BASE_URL is not set" in page.text
    assert "GitHub cannot deliver webhooks to 127.0.0.1" in page.text
    assert done.by_id["install"] == "Install the App on your repositories"


async def test_registration_writes_env_0600_and_the_restarted_server_is_configured(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    workdir: Path,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page, code = await registered_through_github(
            client, fake_github, github_keypair.private_pem
        )
        again = await page_of(client, "/")
        (converted,) = fake_github.manifests.converted
        reloaded = await page_of(client, f"/setup/callback?code={code}&state={the_form(again)[2]}")
    assert fake_github.count("apps/create-from-manifest") == 1, "a reload converts nothing"
    html_url = f"{fake_github.origin}/apps/judge-bot"
    assert page.headings[0] == "The GitHub App judge-bot is registered"
    assert page.links["Install the App on your repositories"] == f"{html_url}/installations/new"
    assert "Restart judge-bot" in page.by_id["next"]
    assert reloaded.links["Install the App on your repositories"] == f"{html_url}/installations/new"
    assert "judge-bot" in again.by_id["registered"]

    env = workdir / ".env"
    assert stat.S_IMODE(env.stat().st_mode) == 0o600
    for name in CREDENTIALS:
        assert name in page.by_id["saved"]
    restarted = Settings(_env_file=env)
    assert restarted.app_id == str(converted.id)
    assert restarted.private_key_pem() == github_keypair.private_pem
    assert restarted.webhook_secret is not None
    assert restarted.webhook_secret.get_secret_value() == converted.webhook_secret
    assert restarted.github_client_id == f"Iv1.{converted.id}"
    logged = caplog.text
    assert f"registered the GitHub App judge-bot (id {converted.id})" in logged
    for secret in restarted.secret_values():
        assert secret not in logged
        assert secret not in json.dumps(page.__dict__, default=str)


@pytest.mark.parametrize(
    ("query", "status", "said"),
    [
        ("code=abc", 403, "carried no state"),
        ("code=abc&state=1.2.3", 403, "not issued by this judge-bot process"),
        ("code=abc&state=garbage", 403, "not one judge-bot issues"),
        ("state=VALID", 400, "no usable code"),
        ("code=../../user&state=VALID", 400, "no usable code"),
        ("code=unknown&state=VALID", 400, "a code works once and for an hour"),
    ],
)
async def test_a_callback_that_does_not_answer_our_form_is_refused(
    fake_github: FakeGitHub, workdir: Path, query: str, status: int, said: str
) -> None:
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        _, _, state = the_form(await page_of(client, "/"))
        page = await page_of(client, "/setup/callback?" + query.replace("VALID", state), status)
    assert said in page.by_id["problem"]
    assert not (workdir / ".env").exists()
    expected_calls = 1 if "unknown" in query else 0
    assert fake_github.count("apps/create-from-manifest") == expected_calls


async def test_a_form_older_than_an_hour_is_refused(
    fake_github: FakeGitHub, github_keypair: KeyPair, workdir: Path
) -> None:
    clock = Clock()
    async with setup_mode(setup_settings(fake_github, workdir), clock) as (client, _):
        _, manifest, state = the_form(await page_of(client, "/"))
        code = fake_github.manifests.register(manifest, pem=github_keypair.private_pem)
        clock.now += timedelta(hours=1)
        page = await page_of(client, f"/setup/callback?code={code}&state={state}", 403)
    assert "more than an hour old" in page.by_id["problem"]
    assert fake_github.count("apps/create-from-manifest") == 0


async def test_github_failing_is_explained(fake_github: FakeGitHub, workdir: Path) -> None:
    fake_github.inject(
        "apps/create-from-manifest",
        status=422,
        body={"message": "Validation Failed", "documentation_url": "https://docs.github.com"},
    )
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        _, _, state = the_form(await page_of(client, "/"))
        page = await page_of(client, f"/setup/callback?code=c0de&state={state}", 502)
    assert "GitHub answered 422: Validation Failed" in page.by_id["problem"]


async def test_an_existing_app_in_env_is_never_replaced(
    fake_github: FakeGitHub, github_keypair: KeyPair, workdir: Path
) -> None:
    (workdir / ".env").write_text("APP_ID=999\nPORT=3000\n", encoding="utf-8")
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page, _ = await registered_through_github(client, fake_github, github_keypair.private_pem)
        again = await page_of(client, "/")
    (converted,) = fake_github.manifests.converted
    assert (workdir / ".env").read_text(encoding="utf-8") == "APP_ID=999\nPORT=3000\n"
    separate = workdir / f".env.judge-bot-{converted.id}"
    assert stat.S_IMODE(separate.stat().st_mode) == 0o600
    assert "already sets APP_ID to another value" in page.by_id["saved"]
    assert str(separate) in page.by_id["saved"]
    assert Settings(_env_file=separate).app_id == str(converted.id)
    assert "Move them into your settings" in again.by_id["registered"]


async def test_what_the_environment_overrides_and_a_missing_secret_are_pointed_out(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GITHUB_CLIENT_ID", "old-client")
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page, _ = await registered_through_github(
            client, fake_github, github_keypair.private_pem, webhook_secret=None
        )
    assert "GITHUB_CLIENT_ID" in page.by_id["overridden"]
    assert "WEBHOOK_SECRET" in page.by_id["no-secret"]


async def test_credentials_that_cannot_be_saved_are_explained(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    (workdir / f".env.judge-bot-{fake_github._next_id + 1}").write_text("taken", encoding="utf-8")
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        _, manifest, state = the_form(await page_of(client, "/"))
        code = fake_github.manifests.register(manifest, pem=github_keypair.private_pem)
        page = await page_of(client, f"/setup/callback?code={code}&state={state}", 503)
    assert "could not be saved" in page.headings[0]
    assert "already exists" in page.by_id["problem"]
    assert "generate a private key" in page.by_id["problem"]


async def test_a_callback_while_stopping_asks_to_try_again(
    fake_github: FakeGitHub, workdir: Path
) -> None:
    """The GitHub client lives as long as the app; a late callback is told to try again."""
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, app):
        _, _, state = the_form(await page_of(client, "/"))
        registration = app[REGISTRATION]
        session, registration.session = registration.session, None
        page = await page_of(client, f"/setup/callback?code=c0de&state={state}", 503)
        registration.session = session
    assert "stopping" in page.by_id["problem"]
    assert fake_github.count("apps/create-from-manifest") == 0


async def test_a_broken_manifest_is_shown_with_the_manual_steps(
    fake_github: FakeGitHub, workdir: Path
) -> None:
    (workdir / "app.yml").write_text("name: x\nurl: https://x.example\nwho: me\n", encoding="utf-8")
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page = await page_of(client, "/")
    assert page.forms == []
    assert "who: not a manifest key" in page.by_id["manifest-problem"]
    assert "Settings → Developer settings → GitHub Apps" in page.text


async def test_the_judges_state_is_on_both_pages(
    fake_github: FakeGitHub, github_keypair: KeyPair, workdir: Path
) -> None:
    """Setup and status pages show each tier, its availability once checked, and what to set."""
    judge_settings = JudgeSettings(
        llm_base_url="https://llm.example/v1", llm_api_key="sk-secret", quick_model="gpt-5-nano"
    )
    async with setup_mode(setup_settings(fake_github, workdir), judge_settings=judge_settings) as (
        client,
        app,
    ):
        before = await page_of(client, "/")
        board = app[TIER_BOARD]
        quick, *rest = board.current()
        board.replace_all([quick.checked(available=False, problem="model not listed"), *rest])
        after = await page_of(client, "/")
    rows = before.tables["tiers"]
    assert rows[0] == [
        "tier",
        "model",
        "provider",
        "host",
        "answers",
        "problem",
        "settings to set",
    ]
    assert rows[1] == ["quick", "gpt-5-nano", "openai", "llm.example", "not checked yet", "", ""]
    assert rows[2][0] == "deep" and rows[2][4] == "not configured"
    assert rows[2][6] == "JUDGE_DEEP_MODEL"
    assert after.tables["tiers"][1][4:6] == ["no", "model not listed"]
    assert "sk-secret" not in before.text

    configured = make_settings(github_keypair.private_pem, workdir)
    async with running_app(configured, judge_settings=judge_settings, start_workers=False) as (
        client,
        app,
    ):
        status = await page_of(client, "/")
        assert (await client.get("/setup/callback?code=a&state=b")).status == 404
        app[TIER_BOARD].replace_all([quick.checked(available=True), *rest])
        checked = await page_of(client, "/")
    assert status.tables["tiers"][1][4] == "not checked yet"
    assert checked.tables["tiers"][1][4] == "yes"
    assert status.tables["deliveries"][0] == ["deliveries", "count"]

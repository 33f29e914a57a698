"""`judge-bot replay` against a real app on loopback, through `bot.cli.main`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot import cli
from bot.app import create_app
from bot.storage import storage_from_url
from bot.storage.base import Storage
from tests.support.app_helpers import make_settings, running_app
from tests.support.server_process import free_port
from tests.support.webhook_helpers import SECRET, example

App = tuple[TestClient[web.Request, web.Application], Storage]


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Settings from this environment only: no .env, none of the caller's variables."""
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "APP_", "GHE_", "WEBHOOK_")) or name in (
            "PRIVATE_KEY",
            "DATABASE_URL",
            "PORT",
            "HOST",
        ):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    monkeypatch.setenv("WEBHOOK_SECRET", SECRET)
    return monkeypatch


@pytest.fixture
async def app(tmp_path: Path, github_keypair: Any) -> AsyncIterator[App]:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        yield client, store


def payload_file(tmp_path: Path, event: str = "pull_request", name: str = "opened") -> str:
    path = tmp_path / f"{event}.json"
    path.write_bytes(example(event, name))
    return str(path)


async def replay(*argv: str) -> int:
    # The command runs its own event loop, so it runs beside the app's, in a thread.
    return await asyncio.to_thread(cli.main, ["replay", *argv])


async def test_a_replayed_payload_is_verified_and_stored(
    app: App, environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, store = app
    url = str(client.make_url("/api/github/webhooks"))
    path = payload_file(tmp_path)

    status = await replay(path, "--event", "pull_request", "--url", url, "--delivery-id", "r-1")

    assert status == 0
    printed = capsys.readouterr().out
    assert printed.startswith("pull_request delivery r-1: HTTP 202\n")
    assert '"delivery": "r-1"' in printed
    stored = await store.get_delivery("r-1")
    assert stored is not None and stored.body == example("pull_request", "opened")

    # The same id again is a redelivery: accepted as a duplicate.
    again = await replay(path, "--event", "pull_request", "--url", url, "--delivery-id", "r-1")
    assert again == 0
    assert "HTTP 200" in capsys.readouterr().out


async def test_each_replay_gets_a_new_delivery_id(
    app: App, environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, store = app
    url = str(client.make_url("/api/github/webhooks"))
    path = payload_file(tmp_path, "push", "payload")
    assert await replay(path, "--event", "push", "--url", url) == 0
    assert await replay(path, "--event", "push", "--url", url) == 0
    ids = [line.split()[2].rstrip(":") for line in capsys.readouterr().out.splitlines()[::2]]
    assert len(set(ids)) == 2
    for delivery_id in ids:
        assert await store.get_delivery(delivery_id) is not None


async def test_the_default_url_comes_from_the_settings(
    tmp_path: Path, github_keypair: Any, environment: pytest.MonkeyPatch
) -> None:
    """HOST 0.0.0.0 (the default) is reached on 127.0.0.1, at PORT and WEBHOOK_PATH."""
    port = free_port()
    settings = make_settings(github_keypair.private_pem, tmp_path, WEBHOOK_PATH="/hooks/gh")
    environment.setenv("PORT", str(port))
    environment.setenv("WEBHOOK_PATH", "/hooks/gh")
    store = storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, start_workers=False)
    server = TestClient(TestServer(app, host="127.0.0.1", port=port))
    await server.start_server()
    try:
        assert await replay(payload_file(tmp_path), "--event", "pull_request") == 0
        assert sum((await store.count_deliveries()).values()) == 1
    finally:
        await server.close()


async def test_a_wrong_secret_is_refused_with_exit_1(
    app: App, environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    client, store = app
    environment.setenv("WEBHOOK_SECRET", "not-the-servers")
    url = str(client.make_url("/api/github/webhooks"))

    status = await replay(payload_file(tmp_path), "--event", "pull_request", "--url", url)

    assert status == 1
    out = capsys.readouterr().out
    assert "HTTP 401" in out and "signature does not match" in out
    assert "not-the-servers" not in out
    assert sum((await store.count_deliveries()).values()) == 0


async def test_no_server_is_exit_3_with_a_hint(
    environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/api/github/webhooks"
    assert await replay(payload_file(tmp_path), "--event", "push", "--url", url) == 3
    assert "is `judge-bot serve` running?" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["missing.json", "--event", "push"], {}, "cannot read missing.json"),
        (["{file}", "--event", "push"], {"WEBHOOK_SECRET": ""}, "WEBHOOK_SECRET is not set"),
        (["{file}", "--event", "push"], {"PORT": "http"}, "configuration error: PORT"),
        (["{file}", "--event", "push", "--url", "ftp://x/y"], {}, "must be an http(s) URL"),
        (["{file}", "--event", "push", "--url", "http://"], {}, "not a usable URL"),
    ],
)
def test_usage_and_settings_problems_are_exit_2(
    environment: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    env: dict[str, str],
    message: str,
) -> None:
    for name, value in env.items():
        environment.setenv(name, value)
    argv = [payload_file(tmp_path) if a == "{file}" else a for a in argv]
    assert cli.main(["replay", *argv]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    assert captured.out == ""


def test_an_oversized_payload_is_not_sent(
    environment: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "big.json"
    with path.open("wb") as handle:
        handle.truncate(25 * 1024 * 1024 + 1)
    assert cli.main(["replay", str(path), "--event", "push"]) == 2
    assert "over GitHub's 25 MB payload limit" in capsys.readouterr().err


def test_the_event_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["replay", "payload.json"])
    assert exited.value.code == 2
    assert "--event" in capsys.readouterr().err

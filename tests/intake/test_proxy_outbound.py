"""The outbound proxy the standard variables name (`HTTPS_PROXY`, `NO_PROXY`, ...): chosen as
curl chooses it, and used by the webhook relay and `judge-bot replay` through a real proxy
on loopback. Hosts are `.test` names that resolve nowhere: only the proxy reaches them."""

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
from bot.intake.proxy import (
    ProxySettingError,
    outbound_proxy,
    proxy_address,
    webhook_proxy_ctx,
)
from bot.storage import storage_from_url
from bot.storage.base import Storage
from tests.intake.test_proxy import FAST, FakeSmee, github_bytes, smee_data
from tests.registration.forward_proxy import ForwardProxy
from tests.support.app_helpers import make_settings, running_app
from tests.support.server_process import free_port
from tests.support.webhook_helpers import SECRET, example, webhook_headers

PROXY = "http://proxy.corp:3128"
GITHUB = "https://api.github.com/app-manifests/c/conversions"

# -- choosing the proxy (pure) ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "environ", "expected"),
    [
        (GITHUB, {}, None),
        (GITHUB, {"HTTPS_PROXY": PROXY}, PROXY),
        (GITHUB, {"https_proxy": PROXY, "HTTPS_PROXY": "http://other:1"}, PROXY),
        (GITHUB, {"HTTPS_PROXY": "  "}, None),
        (GITHUB, {"HTTP_PROXY": PROXY}, None),
        ("http://smee.test/c", {"HTTP_PROXY": PROXY, "HTTPS_PROXY": "http://other:1"}, PROXY),
        (GITHUB, {"ALL_PROXY": PROXY}, PROXY),
        (GITHUB, {"all_proxy": "http://other:1", "HTTPS_PROXY": PROXY}, PROXY),
        (GITHUB, {"HTTPS_PROXY": "proxy.corp:3128"}, "http://proxy.corp:3128"),
        (GITHUB, {"HTTPS_PROXY": "https://proxy.corp"}, "https://proxy.corp"),
        ("http://127.0.0.1:3000/api/github/webhooks", {"HTTP_PROXY": PROXY}, None),
        ("http://localhost:3000/", {"HTTP_PROXY": PROXY}, None),
        ("http://judge.localhost/", {"HTTP_PROXY": PROXY}, None),
        ("http://[::1]:3000/", {"HTTP_PROXY": PROXY}, None),
        ("ftp://files.test/x", {"ALL_PROXY": PROXY}, None),
    ],
)
def test_the_proxy_for_a_url(url: str, environ: dict[str, str], expected: str | None) -> None:
    assert outbound_proxy(url, environ) == expected


@pytest.mark.parametrize(
    ("url", "no_proxy", "bypassed"),
    [
        (GITHUB, "*", True),
        (GITHUB, "api.github.com", True),
        (GITHUB, "github.com", True),
        (GITHUB, ".github.com", True),
        (GITHUB, "*.github.com", True),
        (GITHUB, "example.org, github.com", True),
        (GITHUB, "example.org github.com", True),
        (GITHUB, "hub.com", False),
        (GITHUB, "API.GITHUB.COM", True),
        (GITHUB, "api.github.com:443", True),
        (GITHUB, "api.github.com:8443", False),
        ("https://ghes.corp:8443/api/v3", "ghes.corp:8443", True),
        ("http://10.1.2.3:3000/x", "10.0.0.0/8", True),
        ("http://10.1.2.3:3000/x", "10.1.2.3", True),
        ("http://11.1.2.3:3000/x", "10.0.0.0/8", False),
        ("http://[2001:db8::1]:80/x", "[2001:db8::1]", True),
        ("http://[2001:db8::1]:80/x", "2001:db8::/32", True),
        ("http://[2001:db8::1]:80/x", "[2001:db8::1]:81", False),
        (GITHUB, "", False),
        (GITHUB, ",,", False),
    ],
)
def test_no_proxy(url: str, no_proxy: str, bypassed: bool) -> None:
    scheme = url.split(":")[0].upper()
    environ = {f"{scheme}_PROXY": PROXY, "NO_PROXY": no_proxy}
    assert (outbound_proxy(url, environ) is None) is bypassed
    assert (outbound_proxy(url, {f"{scheme}_PROXY": PROXY, "no_proxy": no_proxy}) is None) is (
        bypassed
    )


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("socks5://user:hunter2@proxy.corp:1080", "HTTPS_PROXY names a socks5:// proxy"),
        ("http://user:hunter2@proxy.corp:port", "HTTPS_PROXY has a port that is not a number"),
        ("http://user:hunter2@:3128", "HTTPS_PROXY is not a proxy address"),
    ],
)
def test_a_proxy_that_cannot_be_used_is_named_never_shown(value: str, said: str) -> None:
    with pytest.raises(ProxySettingError) as caught:
        outbound_proxy(GITHUB, {"HTTPS_PROXY": value})
    assert said in str(caught.value)
    assert "hunter2" not in str(caught.value)


@pytest.mark.parametrize(
    ("proxy", "shown"),
    [
        ("http://user:hunter2@proxy.corp:3128", "proxy.corp:3128"),
        ("http://proxy.corp", "proxy.corp"),
        ("http://[2001:db8::1]:3128", "[2001:db8::1]:3128"),
    ],
)
def test_a_proxy_is_shown_without_its_credentials(proxy: str, shown: str) -> None:
    assert proxy_address(proxy) == shown


# -- the webhook relay through a real proxy ----------------------------------------------------


@pytest.fixture
async def smee() -> AsyncIterator[FakeSmee]:
    server = FakeSmee()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def relayed_app(
    smee: FakeSmee, tmp_path: Path, private_pem: str, environ: dict[str, str]
) -> tuple[TestClient[web.Request, web.Application], Storage]:
    """A real app whose relay reads the channel at `smee.test` (reachable through a proxy
    only); the relay posts to the app's own intake, on loopback."""
    port = free_port()
    channel = smee.url.replace("127.0.0.1", "smee.test")
    settings = make_settings(private_pem, tmp_path, PORT=port, HOST="127.0.0.1")
    proxied = make_settings(
        private_pem, tmp_path, PORT=port, HOST="127.0.0.1", WEBHOOK_PROXY_URL=channel
    )
    store = storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, start_workers=False)
    app.cleanup_ctx.append(webhook_proxy_ctx(proxied, policy=FAST, environ=environ))
    client = TestClient(TestServer(app, host="127.0.0.1", port=port))
    await client.start_server()
    return client, store


async def test_the_relay_reads_its_channel_through_the_proxy(
    smee: FakeSmee, tmp_path: Path, github_keypair: Any
) -> None:
    proxy = ForwardProxy(int(smee.url.split(":")[2].split("/")[0]), credentials="relay:pw")
    await proxy.start()
    environ = {"HTTP_PROXY": proxy.url_with("relay:pw"), "NO_PROXY": "example.org"}
    client, store = await relayed_app(smee, tmp_path, github_keypair.private_pem, environ)
    try:
        async with asyncio.timeout(10):
            await smee.connected.wait()
        body = github_bytes(example("pull_request", "opened"))
        smee.send(smee_data(webhook_headers("pull_request", body, delivery_id="via-1"), body))
        async with asyncio.timeout(10):
            while (stored := await store.get_delivery("via-1")) is None:
                await asyncio.sleep(0.02)
    finally:
        await client.close()
        await proxy.close()
    assert stored.body == body
    # The channel through the proxy, with its credentials; intake (this process) directly.
    assert {(seen.method, seen.target) for seen in proxy.seen} == {
        ("GET", smee.url.replace("127.0.0.1", "smee.test"))
    }
    assert all(seen.authorization == "Basic cmVsYXk6cHc=" for seen in proxy.seen)


async def test_a_proxy_the_relay_cannot_use_is_logged_once_and_nothing_starts(
    tmp_path: Path, github_keypair: Any, caplog: pytest.LogCaptureFixture
) -> None:
    settings = make_settings(
        github_keypair.private_pem, tmp_path, WEBHOOK_PROXY_URL="https://smee.io/secret-channel"
    )
    environ = {"HTTPS_PROXY": "socks5://u:hunter2@proxy.corp:1080"}
    steps = webhook_proxy_ctx(settings, environ=environ)(web.Application())
    await anext(steps)
    assert len(asyncio.all_tasks()) == 1  # only this test's own: no relay
    with pytest.raises(StopAsyncIteration):
        await anext(steps)
    assert "webhook proxy: not started: HTTPS_PROXY names a socks5:// proxy" in caplog.text
    assert "hunter2" not in caplog.text and "secret-channel" not in caplog.text


# -- judge-bot replay through a real proxy ----------------------------------------------------


@pytest.fixture
def environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Settings and proxies from this environment only."""
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "APP_", "GHE_", "WEBHOOK_")) or name.lower() in (
            "private_key",
            "database_url",
            "port",
            "host",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "no_proxy",
        ):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    monkeypatch.setenv("WEBHOOK_SECRET", SECRET)
    return monkeypatch


async def replay(*argv: str) -> int:
    # The command runs its own event loop, so it runs beside the app's, in a thread.
    return await asyncio.to_thread(cli.main, ["replay", *argv])


async def test_replay_reaches_a_remote_server_through_the_proxy_unless_no_proxy_says_not(
    tmp_path: Path,
    github_keypair: Any,
    environment: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    payload = tmp_path / "push.json"
    payload.write_bytes(example("push", "payload"))
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_from_url(settings.database_url)
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        proxy = ForwardProxy(int(client.make_url("").port or 0))
        await proxy.start()
        try:
            url = f"http://judge.test:{client.make_url('').port}/api/github/webhooks"
            environment.setenv("HTTP_PROXY", proxy.url)
            through = await replay(str(payload), "--event", "push", "--url", url)
            environment.setenv("NO_PROXY", ".test")
            direct = await replay(str(payload), "--event", "push", "--url", url)
        finally:
            await proxy.close()
        stored = sum((await store.count_deliveries()).values())
    assert through == 0
    assert [(seen.method, seen.target) for seen in proxy.seen] == [("POST", url)]
    assert direct == 3, "NO_PROXY: judge.test is looked up directly, and resolves nowhere"
    assert stored == 1
    assert "judge.test" in capsys.readouterr().err


def test_replay_refuses_a_proxy_it_cannot_use(
    tmp_path: Path, environment: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    payload = tmp_path / "push.json"
    payload.write_bytes(example("push", "payload"))
    environment.setenv("https_proxy", "socks5://u:hunter2@proxy.corp:1080")
    url = "https://judge.example.org/api/github/webhooks"
    assert cli.main(["replay", str(payload), "--event", "push", "--url", url]) == 2
    err = capsys.readouterr().err
    assert "https_proxy names a socks5:// proxy" in err
    assert "hunter2" not in err

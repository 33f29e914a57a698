"""Registration's one call to GitHub: through the proxy `HTTPS_PROXY` / `HTTP_PROXY` name,
and, when GitHub cannot be reached, advice to retry the same code (GitHub created the App
already: starting again would register a second one), naming the host tried.

GitHub's API is given as `github.test` (a name that resolves nowhere), which the loopback
proxy maps to the fake GitHub: a conversion that succeeds went through the proxy."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.registration.conversion import ConversionError
from bot.registration.routes import REGISTRATION, conversion_problem
from tests.registration.forward_proxy import ForwardProxy
from tests.registration.test_handlers import page_of, setup_mode, setup_settings, the_form
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.server_process import free_port

APPS = "https://github.com/settings/apps"


@pytest.fixture
def workdir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No .env, no App settings and no proxy variables but the test's own."""
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "GH_", "GHE_", "GITHUB_")) or name.lower() in (
            "app_id",
            "private_key",
            "private_key_path",
            "webhook_secret",
            "base_url",
            "webhook_proxy_url",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "no_proxy",
        ):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    return tmp_path.resolve()


@pytest.fixture
async def proxy(fake_github: FakeGitHub) -> AsyncIterator[ForwardProxy]:
    server = ForwardProxy(int(fake_github.origin.rsplit(":", 1)[1]))
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def behind_proxy(fake_github: FakeGitHub) -> str:
    return fake_github.base_url.replace("127.0.0.1", "github.test")


async def test_the_code_is_converted_through_the_proxy(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    proxy: ForwardProxy,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", "example.org")
    api = behind_proxy(fake_github)
    async with setup_mode(setup_settings(fake_github, workdir, GITHUB_API_URL=api)) as (client, _):
        _, manifest, state = the_form(await page_of(client, "/"))
        code = fake_github.manifests.register(manifest, pem=github_keypair.private_pem)
        page = await page_of(client, f"/setup/callback?code={code}&state={state}")
    assert page.headings[0] == "The GitHub App judge-bot is registered"
    assert [(seen.method, seen.target) for seen in proxy.seen] == [
        ("POST", f"{api}/app-manifests/{code}/conversions")
    ]


async def test_an_unreachable_github_is_retried_with_the_same_code(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    proxy: ForwardProxy,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The proxy is down at the last step: the page says to retry, not to start again, and
    names the host and the proxy; once the proxy is back the same link finishes the job."""
    monkeypatch.setenv("HTTP_PROXY", f"http://user:hunter2@127.0.0.1:{free_port()}")
    api = behind_proxy(fake_github)
    host = api.split("/")[2]
    async with setup_mode(setup_settings(fake_github, workdir, GITHUB_API_URL=api)) as (client, _):
        _, manifest, state = the_form(await page_of(client, "/"))
        code = fake_github.manifests.register(manifest, pem=github_keypair.private_pem)
        callback = f"/setup/callback?code={code}&state={state}"
        failed = await page_of(client, callback, 502)
        monkeypatch.setenv("HTTP_PROXY", proxy.url)
        done = await page_of(client, callback)
    problem = failed.by_id["problem"]
    assert f"GitHub could not be reached at {host} through the proxy 127.0.0.1:" in problem
    assert "the proxy could not be connected to" in problem
    assert "retry by reloading this page" in problem
    assert "Starting again would register a second App" in problem
    assert "Start again" not in problem and "hunter2" not in failed.text
    assert failed.headings[0] == "GitHub did not hand over the App yet"
    assert done.headings[0] == "The GitHub App judge-bot is registered"
    assert fake_github.count("apps/create-from-manifest") == 1
    assert len(fake_github.manifests.converted) == 1


async def test_github_failing_with_5xx_is_retryable_too(
    fake_github: FakeGitHub, github_keypair: KeyPair, workdir: Path
) -> None:
    fake_github.inject("apps/create-from-manifest", status=503, body={"message": "Unavailable"})
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        _, manifest, state = the_form(await page_of(client, "/"))
        code = fake_github.manifests.register(manifest, pem=github_keypair.private_pem)
        callback = f"/setup/callback?code={code}&state={state}"
        failed = await page_of(client, callback, 502)
        done = await page_of(client, callback)
    assert "GitHub answered 503: Unavailable (at 127.0.0.1:" in failed.by_id["problem"]
    assert "retry by reloading this page" in failed.by_id["problem"]
    assert done.headings[0] == "The GitHub App judge-bot is registered"


async def test_a_proxy_registration_cannot_use_is_said_before_registering(
    fake_github: FakeGitHub, workdir: Path
) -> None:
    settings = setup_settings(fake_github, workdir, GITHUB_API_URL=behind_proxy(fake_github))
    async with setup_mode(settings) as (client, app):
        # Registration's own view of the environment: the LLM client, built at start-up,
        # would refuse a socks proxy in the process's before registration is reached.
        app[REGISTRATION].environ = {"HTTP_PROXY": "socks5://user:hunter2@proxy.corp:1080"}
        page = await page_of(client, "/")
        _, _, state = the_form(page)
        refused = await page_of(client, f"/setup/callback?code=c0de&state={state}", 500)
    assert "HTTP_PROXY names a socks5:// proxy" in page.text
    assert "restart judge-bot before registering" in page.text
    assert "HTTP_PROXY names a socks5:// proxy" in refused.by_id["problem"]
    assert "hunter2" not in page.text + refused.text
    assert fake_github.count("apps/create-from-manifest") == 0


async def test_a_refused_state_with_a_code_points_at_the_app_github_created(
    fake_github: FakeGitHub, workdir: Path
) -> None:
    """A restart between the form and the callback voids its state; the App exists anyway."""
    async with setup_mode(setup_settings(fake_github, workdir)) as (client, _):
        page = await page_of(client, "/setup/callback?code=c0de&state=1.2.3", 403)
    problem = page.by_id["problem"]
    assert "not issued by this judge-bot process" in problem
    assert f"it is listed on {fake_github.origin}/settings/apps" in problem


@pytest.mark.parametrize(
    ("error", "status", "retry"),
    [
        (
            ConversionError("GitHub could not be reached at api.github.com.", retryable=True),
            502,
            True,
        ),
        (ConversionError("GitHub answered 502: x (at api.github.com).", retryable=True), 502, True),
        (ConversionError("GitHub does not know this code.", unknown_code=True), 400, False),
        (
            ConversionError("GitHub answered 422: Validation Failed (at api.github.com)."),
            502,
            False,
        ),
    ],
)
def test_conversion_problem(error: ConversionError, status: int, retry: bool) -> None:
    problem = conversion_problem(error, APPS)
    assert problem.status == status
    assert problem.message.startswith(str(error))
    assert ("retry by reloading this page" in problem.message) is retry
    assert APPS in problem.message, "where the App GitHub created is, either way"
    assert "Start again" not in problem.message

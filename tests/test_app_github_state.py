"""`/` and `/healthz?detail=1` show GitHub's state as the App last saw it (last success,
failing since, last error naming host, request and cause), as they show each judge's; a
GitHub outage is not this server's and leaves `/healthz` itself healthy."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.github.client import GitHubApp, GitHubUnavailable, RetryPolicy
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.github_fixtures import APP_ID
from tests.support.fakes.github_server import FakeGitHub


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_a_failing_github_shows_where_and_why(
    tmp_path: Path, github_keypair: Any, github_session: aiohttp.ClientSession
) -> None:
    port = free_port()
    github = GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=f"http://127.0.0.1:{port}",
        policy=RetryPolicy(max_attempts=1),  # one refused connection is enough
    )
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with running_app(settings, github=github, start_workers=False) as (client, _):
        before = await (await client.get("/healthz?detail=1")).json()
        assert before["github"]["state"] == "not contacted yet"
        with pytest.raises(GitHubUnavailable):
            await github.app_client().getitem("/app")

        response = await client.get("/healthz?detail=1")
        body = await response.json()
        assert response.status == 200 and body["status"] == "ok"
        state = body["github"]
        assert state["state"] == "failing" and state["host"] == f"127.0.0.1:{port}"
        assert state["failing_since"] is not None and state["last_success"] is None
        assert f"GitHub at 127.0.0.1:{port} unavailable: GET /app" in state["last_error"]
        assert "github" not in await (await client.get("/healthz")).json()

        page = await (await client.get("/")).text()
        assert f"GitHub (127.0.0.1:{port})" in page
        assert "failing" in page and "GET /app" in page


async def test_a_github_that_answers_shows_its_last_success(
    tmp_path: Path, github_keypair: Any, github_app: GitHubApp, fake_github: FakeGitHub
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with running_app(settings, github=github_app, start_workers=False) as (client, _):
        await github_app.app_client().getitem("/app")
        state = (await (await client.get("/healthz?detail=1")).json())["github"]
        assert state["state"] == "ok" and state["last_success"] is not None
        assert state["failing_since"] is None
        page = await (await client.get("/")).text()
        assert "storage writes" in page

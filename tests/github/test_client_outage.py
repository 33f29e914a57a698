"""GitHub unavailable, against a real loopback port and the fake GitHub: the error names the
host, the request and the cause; `GitHubHealth` tracks since when GitHub fails; a GitHub
known to be failing gets one try per request; a refused request says where it came from.

Time is virtual: the client's sleep advances a clock, so no test waits on wall time."""

from __future__ import annotations

import asyncio
import logging
import socket
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import aiohttp
import gidgethub
import pytest

from bot.github.client import (
    GitHubApp,
    GitHubServerError,
    GitHubUnavailable,
    RetryPolicy,
    Timing,
    describe_failure,
    host_of,
    where_of,
)
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
REPO = "/repos/octo/hello"


@dataclass
class Clock:
    elapsed: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> datetime:
        return T0 + timedelta(seconds=self.elapsed)

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds
        await asyncio.sleep(0)

    def timing(self) -> Timing:
        return Timing(sleep=self.sleep, monotonic=lambda: self.elapsed, now=self.now)


@pytest.fixture
def dead_port() -> Iterator[int]:
    """A loopback port nothing listens on: every connection is refused."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    yield port


def app_on(
    url: str, keypair: KeyPair, session: aiohttp.ClientSession, clock: Clock, attempts: int = 3
) -> GitHubApp:
    return GitHubApp(
        app_id=str(APP_ID),
        private_key=keypair.private_pem,
        session=session,
        api_url=url,
        policy=RetryPolicy(max_attempts=attempts, write_interval=0),
        timing=clock.timing(),
    )


def test_host_of_names_host_and_port_never_credentials() -> None:
    assert host_of("https://api.github.com/repos/o/r?q=secret") == "api.github.com"
    assert host_of("http://user:pw@127.0.0.1:8080/api/v3") == "127.0.0.1:8080"


async def test_an_unreachable_github_names_host_request_and_cause(
    github_keypair: KeyPair, github_session: aiohttp.ClientSession, dead_port: int
) -> None:
    clock = Clock()
    app = app_on(f"http://127.0.0.1:{dead_port}", github_keypair, github_session, clock)
    with pytest.raises(GitHubUnavailable) as info:
        await app.app_client().getitem("/app/installations?per_page=5")
    text = str(info.value)
    assert f"127.0.0.1:{dead_port}" in text
    assert "GET /app/installations" in text and "per_page" not in text
    assert "ClientConnectorError" in text and "3 attempts" in text
    assert info.value.host == f"127.0.0.1:{dead_port}"
    assert info.value.failing_since == T0 + timedelta(seconds=1.5)  # after 0.5 s and 1 s
    assert app.health.failing and app.health.last_error == text
    assert app.health.detail()["state"] == "failing"


async def test_a_github_known_to_be_failing_gets_one_try_per_request(
    github_keypair: KeyPair, github_session: aiohttp.ClientSession, dead_port: int
) -> None:
    """The first request spends its retries; the next ones, while nothing answered since,
    are one try each: an outage does not cost every delivery the whole backoff."""
    clock = Clock()
    app = app_on(f"http://127.0.0.1:{dead_port}", github_keypair, github_session, clock)
    with pytest.raises(GitHubUnavailable):
        await app.app_client().getitem("/app")
    assert clock.sleeps == [0.5, 1.0]
    started = app.health.failing_since
    clock.elapsed += 60
    with pytest.raises(GitHubUnavailable, match=r"\(1 attempt\)"):
        await app.app_client().getitem("/app")
    assert clock.sleeps == [0.5, 1.0], "no retry while GitHub is known to be down"
    assert app.health.failing_since == started, "the outage's start is kept"
    assert app.health.last_failure == T0 + timedelta(seconds=61.5)


async def test_server_errors_are_unavailable_and_still_gidgethubs_broken(
    fake_github: FakeGitHub, github_keypair: KeyPair, github_session: aiohttp.ClientSession
) -> None:
    clock = Clock()
    fake_github.clock = clock.now
    app = app_on(fake_github.base_url, github_keypair, github_session, clock)
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=502, body={"message": "Server Error"}, times=3)
    with pytest.raises(GitHubServerError) as info:
        await gh.getitem(REPO)
    assert isinstance(info.value, gidgethub.GitHubBroken)
    assert isinstance(info.value, GitHubUnavailable)
    assert info.value.status_code == 502
    assert "answered 502 Bad Gateway: Server Error" in str(info.value)
    assert f"GET {REPO}" in str(info.value) and host_of(fake_github.base_url) in str(info.value)
    # GitHub answers again: the health says so, and the next request gets every retry.
    assert (await gh.getitem(REPO))["name"] == "hello"
    assert not app.health.failing and app.health.last_success == clock.now()
    assert app.health.detail()["last_error"] == str(info.value), "the last error is kept"


async def test_a_refused_request_says_where_it_came_from(
    fake_github: FakeGitHub, github_keypair: KeyPair, github_session: aiohttp.ClientSession
) -> None:
    """gidgethub's 4xx says only GitHub's message; the client adds host and request."""
    clock = Clock()
    fake_github.clock = clock.now
    app = app_on(fake_github.base_url, github_keypair, github_session, clock)
    gh = await app.installation_client(1)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem("/repos/octo/nothing-here")
    where = where_of(info.value)
    assert where == f"{host_of(fake_github.base_url)} GET /repos/octo/nothing-here"
    assert describe_failure(info.value).endswith(f"({where})")
    assert not app.health.failing, "a 404 is GitHub answering"


async def test_retries_of_one_request_are_not_logged_above_debug(
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    dead_port: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="bot.github.client")
    app = app_on(f"http://127.0.0.1:{dead_port}", github_keypair, github_session, Clock(), 5)
    with pytest.raises(GitHubUnavailable):
        await app.app_client().getitem("/app")
    records = [r for r in caplog.records if r.name == "bot.github.client"]
    assert len(records) == 4 and {r.levelno for r in records} == {logging.DEBUG}
    assert all(r.exc_info is None for r in records)

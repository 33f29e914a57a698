"""The rate-limit-aware client and GitHubApp, against the fake GitHub over real HTTP.

Time is virtual: the client's sleep advances a fake clock, so waits are asserted exactly and the
tests never wait on wall time.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import socket
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import aiohttp
import gidgethub
import pytest

from bot.github.client import (
    GitHubApp,
    GitHubUnavailable,
    RateLimited,
    RateLimitExceeded,
    RetryPolicy,
    Timing,
    backoff_delay,
    graphql_url_for,
    rate_limit_until,
    wait_before_sending,
)
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.github_server import FakeGitHub

REPO = "/repos/octo/hello"


@dataclass
class VirtualTime:
    """Monotonic seconds that only move when the code under test sleeps."""

    start: datetime = field(default_factory=lambda: datetime.now(UTC))
    elapsed: float = 0.0
    sleeps: list[float] = field(default_factory=list)

    def now(self) -> datetime:
        return self.start + timedelta(seconds=self.elapsed)

    def monotonic(self) -> float:
        return self.elapsed

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.elapsed += seconds
        await asyncio.sleep(0)

    def timing(self) -> Timing:
        return Timing(sleep=self.sleep, monotonic=self.monotonic, now=self.now)


@dataclass
class Responses:
    seen: list[tuple[str, str, int, float]] = field(default_factory=list)
    clock: VirtualTime | None = None

    def __call__(self, method: str, url: str, status: int, headers: Mapping[str, str]) -> None:
        assert "x-ratelimit-limit" in headers
        at = self.clock.monotonic() if self.clock is not None else 0.0
        self.seen.append((method, url, status, at))


@pytest.fixture
def vtime() -> VirtualTime:
    return VirtualTime()


@pytest.fixture
def responses(vtime: VirtualTime) -> Responses:
    return Responses(clock=vtime)


HOOKS = ("on_response", "on_pause")


def make_app(
    fake: FakeGitHub,
    keypair: KeyPair,
    session: aiohttp.ClientSession,
    vtime: VirtualTime,
    **overrides: object,
) -> GitHubApp:
    policy_fields = {k: v for k, v in overrides.items() if k not in HOOKS}
    return GitHubApp(
        app_id=str(APP_ID),
        private_key=keypair.private_pem,
        session=session,
        api_url=fake.base_url,
        graphql_url=fake.graphql_url,
        policy=RetryPolicy(**policy_fields),  # type: ignore[arg-type]
        timing=vtime.timing(),
        on_response=overrides.get("on_response"),  # type: ignore[arg-type]
        on_pause=overrides.get("on_pause"),  # type: ignore[arg-type]
    )


@pytest.fixture
def app(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
    responses: Responses,
) -> GitHubApp:
    fake_github.clock = vtime.now  # the fake judges JWTs and token expiry on the same clock
    return make_app(fake_github, github_keypair, github_session, vtime, on_response=responses)


# -- pure decisions ----------------------------------------------------------------------------


def test_backoff_doubles_and_is_capped() -> None:
    """0.5, 1, 2, 4, 8, then stays at the cap."""
    policy = RetryPolicy(backoff_base=0.5, backoff_cap=8.0)
    assert [backoff_delay(n, policy) for n in range(1, 8)] == [0.5, 1, 2, 4, 8, 8, 8]


@pytest.mark.parametrize(
    ("status", "headers", "body", "expected"),
    [
        (200, {"retry-after": "5"}, b"", None),
        (429, {"retry-after": "5"}, b"", 5.0),
        (403, {"retry-after": "12"}, b"", 12.0),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000030"}, b"", 30.0),
        (429, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "999990"}, b"", 0.0),
        (403, {"x-ratelimit-remaining": "17"}, b"", None),
        (403, {}, b'{"message": "Resource not accessible by integration"}', None),
        (403, {}, b'{"message": "You have exceeded a secondary rate limit"}', 60.0),
        (429, {}, b"", 60.0),
        (500, {"retry-after": "5"}, b"", None),
        # Unreadable headers: wait the secondary-limit minute rather than guess.
        (429, {"retry-after": "soon"}, b"", 60.0),
        (429, {"retry-after": "inf"}, b"", 60.0),
        (403, {"x-ratelimit-remaining": "0"}, b"", 60.0),
        (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1e30"}, b"", 60.0),
    ],
)
def test_rate_limit_delay(
    status: int, headers: dict[str, str], body: bytes, expected: float | None
) -> None:
    """Which answers are rate limits, and how long GitHub asks us to wait."""
    now = datetime.fromtimestamp(1_000_000, UTC)
    assert rate_limit_until(status, headers, body, now, RetryPolicy()) == (
        None if expected is None else now + timedelta(seconds=expected)
    )


@pytest.mark.parametrize(
    ("paused_for", "expected"),
    [
        (None, 0.0),  # never paused
        (-5.0, 0.0),  # the pause is over
        (0.0, 0.0),
        (7.0, 7.0),  # short: wait it out here
        (30.0, 30.0),
        (30.5, None),  # longer than we may wait: refuse, the caller defers its work
        (3554.0, None),
    ],
)
def test_wait_before_sending(paused_for: float | None, expected: float | None) -> None:
    """A paused installation (or App) is waited out when the pause is short, else refused."""
    now = datetime.fromtimestamp(1_000_000, UTC)
    until = None if paused_for is None else now + timedelta(seconds=paused_for)
    assert wait_before_sending(until, now, RetryPolicy(max_rate_limit_wait=30.0)) == expected


def test_graphql_url_for_github_and_ghes() -> None:
    """github.com's GraphQL lives at /graphql; GHES's at /api/graphql beside /api/v3."""
    assert graphql_url_for("https://api.github.com") == "https://api.github.com/graphql"
    assert graphql_url_for("https://ghe.example/api/v3/") == "https://ghe.example/api/graphql"


# -- against the fake ------------------------------------------------------------------------


async def test_retry_after_is_honoured(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime, responses: Responses
) -> None:
    """A 429 with Retry-After: 7 makes the client sleep exactly 7 s, then succeed."""
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=429, headers={"Retry-After": "7"})
    repo = await gh.getitem(REPO)
    assert repo["full_name"] == "octo/hello"
    assert vtime.sleeps == [7.0]
    assert fake_github.count("repos/get") == 2
    assert [s for m, u, s, _ in responses.seen if u.endswith(REPO)] == [429, 200]


async def test_primary_rate_limit_waits_until_a_near_reset(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """403 with x-ratelimit-remaining 0 and a reset within max_rate_limit_wait waits for it."""
    gh = await app.installation_client(1)
    reset = int(vtime.now().timestamp()) + 22
    fake_github.inject(
        "pulls/get",
        status=403,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
    )
    fake_github.add_pull("octo/hello", 1, head_sha=fake_github.repo("octo/hello").branches["main"])
    pull = await gh.getitem(REPO + "/pulls/1")
    assert pull["number"] == 1
    assert len(vtime.sleeps) == 1
    assert vtime.sleeps[0] == pytest.approx(reset - vtime.start.timestamp())


async def test_reset_beyond_the_cap_raises_without_waiting(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A reset an hour away exceeds max_rate_limit_wait: a clear error, no sleep, no secrets."""
    app = make_app(fake_github, github_keypair, github_session, vtime, max_rate_limit_wait=60.0)
    gh = await app.installation_client(1)
    reset = int(vtime.now().timestamp()) + 3600
    fake_github.inject(
        "repos/get",
        status=429,
        headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset)},
    )
    caplog.set_level(logging.DEBUG)
    with pytest.raises(RateLimitExceeded, match="GET /repos/octo/hello") as info:
        await gh.getitem(REPO)
    assert vtime.sleeps == []
    token = next(iter(fake_github.tokens))
    assert token not in str(info.value)
    assert token not in caplog.text
    assert github_keypair.private_pem not in caplog.text


def pauses_seen() -> tuple[
    list[tuple[int | None, datetime]], Callable[[int | None, datetime], None]
]:
    seen: list[tuple[int | None, datetime]] = []

    def on_pause(installation_id: int | None, until: datetime) -> None:
        seen.append((installation_id, until))

    return seen, on_pause


async def test_exhausted_installation_is_paused_until_the_reset(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
) -> None:
    """Installation 1's hourly limit is used up: one request finds out, then no request at
    all reaches GitHub for it until the reset; RateLimited says who and until when.
    Installation 2 is not affected. After the reset, calls go through again."""
    fake_github.clock = vtime.now
    fake_github.add_repo("other/repo", installation_id=2)
    seen, on_pause = pauses_seen()
    app = make_app(fake_github, github_keypair, github_session, vtime, on_pause=on_pause)
    one = await app.installation_client(1)
    two = await app.installation_client(2)
    reset = datetime.fromtimestamp(int(vtime.now().timestamp()) + 3554, UTC)
    fake_github.exhaust_rate_limit(1, reset)

    with pytest.raises(RateLimited, match="GET /repos/octo/hello") as first:
        await one.getitem(REPO)
    assert (first.value.installation_id, first.value.reset_at) == (1, reset)
    assert isinstance(first.value, RateLimitExceeded)
    sent = len(fake_github.calls)
    for _ in range(50):
        with pytest.raises(RateLimited) as again:
            await one.getitem(REPO)
        assert again.value.reset_at == reset
    with pytest.raises(RateLimited):
        await app.installation_client(1)
    with pytest.raises(RateLimited):
        await app.graphql(1, 'query { repository(owner: "octo", name: "hello") { name } }')
    assert len(fake_github.calls) == sent, "no request while paused"
    assert (await two.getitem("/repos/other/repo"))["name"] == "repo"
    assert vtime.sleeps == []
    assert seen == [(1, reset)]

    vtime.elapsed += 3554
    assert (await one.getitem(REPO))["name"] == "hello"
    assert (await app.installation_client(1)) is not None


async def test_app_limit_pauses_jwt_calls_and_new_tokens_only(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
) -> None:
    """The App's own (JWT) limit used up: App calls and token creation stop until the reset;
    an installation with a valid token keeps working, it has a limit of its own."""
    fake_github.clock = vtime.now
    fake_github.add_repo("other/repo", installation_id=2)
    seen, on_pause = pauses_seen()
    app = make_app(fake_github, github_keypair, github_session, vtime, on_pause=on_pause)
    one = await app.installation_client(1)
    reset = datetime.fromtimestamp(int(vtime.now().timestamp()) + 1800, UTC)
    fake_github.exhaust_rate_limit(None, reset)
    with pytest.raises(RateLimited) as refused:
        await app.app_client().getitem("/app")
    assert (refused.value.installation_id, refused.value.reset_at) == (None, reset)
    tokens = fake_github.count("apps/create-installation-access-token")
    with pytest.raises(RateLimited) as no_token:
        await app.installation_client(2)
    assert no_token.value.installation_id is None
    assert fake_github.count("apps/create-installation-access-token") == tokens
    assert (await one.getitem(REPO))["name"] == "hello"
    assert seen == [(None, reset)]


async def test_a_long_secondary_limit_pauses_like_an_exhausted_one(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """Retry-After beyond what we may wait: paused for that long, nothing sent meanwhile."""
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=403, headers={"Retry-After": "600"})
    with pytest.raises(RateLimited) as info:
        await gh.getitem(REPO)
    assert info.value.reset_at == vtime.now() + timedelta(seconds=600)
    with pytest.raises(RateLimited):
        await gh.getitem(REPO)
    assert fake_github.count("repos/get") == 1
    assert vtime.sleeps == []


async def test_endless_refusals_pause_instead_of_hammering(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """GitHub refusing again after every wait: after max_rate_limit_retries the installation
    is paused for the secondary-limit wait, not retried in a loop."""
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=429, headers={"Retry-After": "1"}, times=10)
    with pytest.raises(RateLimited, match="still rate limited") as info:
        await gh.getitem(REPO)
    assert vtime.sleeps == [1.0, 1.0, 1.0]
    assert info.value.reset_at == vtime.now() + timedelta(seconds=60)
    with pytest.raises(RateLimited):
        await gh.getitem(REPO)
    assert fake_github.count("repos/get") == 4


async def test_a_short_pause_holds_back_the_installations_other_requests(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """While one request waits out a 7 s Retry-After, another request of the installation
    waits for the same moment instead of sending (and earning a refusal of its own)."""
    gate = asyncio.Event()

    async def gated_sleep(seconds: float) -> None:
        vtime.sleeps.append(seconds)
        await gate.wait()
        vtime.elapsed = max(vtime.elapsed, seconds)

    gh = await app.installation_client(1)
    gh._timing = Timing(sleep=gated_sleep, monotonic=vtime.monotonic, now=vtime.now)
    fake_github.inject("repos/get", status=429, headers={"Retry-After": "7"})
    first = asyncio.create_task(gh.getitem(REPO))
    async with asyncio.timeout(5):
        while not vtime.sleeps:
            await asyncio.sleep(0.01)
    second = asyncio.create_task(gh.getitem(REPO))
    async with asyncio.timeout(5):
        while len(vtime.sleeps) < 2:
            await asyncio.sleep(0.01)
    assert fake_github.count("repos/get") == 1
    assert vtime.sleeps == [7.0, 7.0]
    gate.set()
    assert [r["name"] for r in await asyncio.gather(first, second)] == ["hello", "hello"]
    assert fake_github.count("repos/get") == 3


async def test_server_errors_are_retried_with_backoff(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """Two 502s, then success; the waits follow the backoff policy."""
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=502, times=2)
    assert (await gh.getitem(REPO))["name"] == "hello"
    assert vtime.sleeps == [0.5, 1.0]
    assert fake_github.count("repos/get") == 3


async def test_server_errors_exhaust_attempts(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
) -> None:
    """After max_attempts 503s the error surfaces as gidgethub's GitHubBroken."""
    app = make_app(fake_github, github_keypair, github_session, vtime, max_attempts=3)
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=503, times=10)
    with pytest.raises(gidgethub.GitHubBroken) as info:
        await gh.getitem(REPO)
    assert info.value.status_code == 503
    assert fake_github.count("repos/get") == 3
    assert vtime.sleeps == [0.5, 1.0]


@pytest.fixture
async def dead_port() -> AsyncIterator[int]:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield port


async def test_connection_errors_are_retried_then_raised(
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
    dead_port: int,
) -> None:
    """Refused connections are retried with backoff, then GitHubUnavailable."""
    app = GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=f"http://127.0.0.1:{dead_port}",
        policy=RetryPolicy(max_attempts=4),
        timing=vtime.timing(),
    )
    with pytest.raises(GitHubUnavailable, match="4 attempts"):
        await app.app_client().getitem("/app")
    assert vtime.sleeps == [0.5, 1.0, 2.0]


async def test_writes_are_paced_per_installation(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime, responses: Responses
) -> None:
    """Concurrent POSTs of one installation go one at a time, at least 1 s apart (virtual)."""
    number = fake_github.add_issue("octo/hello")
    gh = await app.installation_client(1)
    url = f"{REPO}/issues/{number}/comments"
    await asyncio.gather(*(gh.post(url, data={"body": f"c{i}"}) for i in range(4)))
    posts = [at for method, _, status, at in responses.seen if method == "POST" and status == 201]
    token_posts = [u for m, u, _, _ in responses.seen if m == "POST" and "access_tokens" in u]
    assert len(token_posts) == 1
    write_times = posts[len(token_posts) :]
    assert len(write_times) == 4
    gaps = [b - a for a, b in itertools.pairwise(write_times)]
    assert gaps == [pytest.approx(1.0)] * 3
    assert len(vtime.sleeps) == 3


async def test_reads_and_other_installations_are_not_paced(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """GETs never wait, and installation 2's write does not queue behind installation 1's."""
    fake_github.add_repo("other/repo", installation_id=2)
    one = await app.installation_client(1)
    two = await app.installation_client(2)
    first = fake_github.add_issue("octo/hello")
    second = fake_github.add_issue("other/repo")
    await one.post(f"{REPO}/issues/{first}/comments", data={"body": "a"})
    await two.post(f"/repos/other/repo/issues/{second}/comments", data={"body": "b"})
    for _ in range(3):
        await one.getitem(REPO)
    assert vtime.sleeps == []


async def test_write_interval_is_configurable(
    fake_github: FakeGitHub,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    vtime: VirtualTime,
) -> None:
    """The minimum gap between writes follows the policy."""
    app = make_app(fake_github, github_keypair, github_session, vtime, write_interval=0.25)
    gh = await app.installation_client(1)
    number = fake_github.add_issue("octo/hello")
    for body in ("a", "b"):
        await gh.post(f"{REPO}/issues/{number}/comments", data={"body": body})
    assert vtime.sleeps == [pytest.approx(0.25)]


async def test_token_is_cached_and_refreshed_before_expiry(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """One token serves many clients; 56 minutes later (inside the margin) a new one is made."""
    first = await app.installation_client(1)
    second = await app.installation_client(1)
    await first.getitem(REPO)
    await second.getitem(REPO)
    assert fake_github.count("apps/create-installation-access-token") == 1
    vtime.elapsed += 56 * 60
    await first.getitem(REPO)
    assert fake_github.count("apps/create-installation-access-token") == 2


async def test_revoked_token_is_replaced_once(
    app: GitHubApp, fake_github: FakeGitHub, responses: Responses
) -> None:
    """A 401 on a cached token drops it and retries once with a fresh token."""
    gh = await app.installation_client(1)
    await gh.getitem(REPO)
    fake_github.revoke_tokens(1)
    assert (await gh.getitem(REPO))["name"] == "hello"
    assert fake_github.count("apps/create-installation-access-token") == 2
    assert [s for _, u, s, _ in responses.seen if u.endswith(REPO)] == [200, 401, 200]


async def test_persistent_401_is_not_retried_forever(
    app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """If the fresh token is refused too, the 401 surfaces after one retry."""
    gh = await app.installation_client(1)
    fake_github.inject("repos/get", status=401, times=5)
    with pytest.raises(gidgethub.BadRequest) as info:
        await gh.getitem(REPO)
    assert info.value.status_code == 401
    assert fake_github.count("repos/get") == 2


async def test_new_branch_forks_from_default_branch(fake_github: FakeGitHub) -> None:
    """A commit on a new branch builds on the default branch, so a PR diff is only its change."""
    repo = fake_github.repo("octo/hello")
    main = repo.branches["main"]
    head = fake_github.add_commit(repo, {"new.md": "x"}, branch="topic")
    assert repo.commits[head].parents == (main,)
    assert set(repo.files_at(head)) == {"README.md", "new.md"}
    assert repo.branches["main"] == main


async def test_app_client_uses_the_jwt(app: GitHubApp, fake_github: FakeGitHub) -> None:
    """The App client reaches /app endpoints, which refuse installation tokens."""
    gh = app.app_client()
    assert (await gh.getitem("/app"))["id"] == APP_ID
    installations = [i async for i in gh.getiter("/app/installations")]
    assert [i["id"] for i in installations] == [1]


async def test_ghes_base_url_keeps_its_path(
    github_keypair: KeyPair, github_session: aiohttp.ClientSession, vtime: VirtualTime
) -> None:
    """With `https://HOST/api/v3` every REST call stays under /api/v3 and GraphQL goes to
    /api/graphql, derived from the REST base."""
    fake = FakeGitHub(app_id=APP_ID, public_key=github_keypair.public_key, ghes=True)
    fake.add_repo("octo/hello")
    await fake.start()
    try:
        app = GitHubApp(
            app_id=str(APP_ID),
            private_key=github_keypair.private_pem,
            session=github_session,
            api_url=fake.base_url + "/",
            timing=vtime.timing(),
        )
        assert fake.base_url.endswith("/api/v3")
        assert app.graphql_url == fake.graphql_url
        gh = await app.installation_client(1)
        assert (await gh.getitem("/repos/{owner}/{repo}", {"owner": "octo", "repo": "hello"}))[
            "name"
        ] == "hello"
        data = await app.graphql(
            1, 'query { repository(owner: "octo", name: "hello") { nameWithOwner } }'
        )
        assert data == {"repository": {"nameWithOwner": "octo/hello"}}
        rest_paths = [c.path for c in fake.calls if c.operation_id != "graphql"]
        assert rest_paths and all(p.startswith("/api/v3/") for p in rest_paths)
    finally:
        await fake.close()
    assert fake.errors == []


BLOBS_QUERY = """
query($owner: String!, $name: String!) {
  readme: repository(owner: $owner, name: $name) {
    a: object(expression: "%(sha)s:docs/guide.md") { ... on Blob { text byteSize isBinary oid } }
    b: object(expression: "%(sha)s:logo.bin") { ... on Blob { text byteSize isBinary oid } }
    c: object(expression: "%(sha)s:missing.txt") { ... on Blob { text } }
  }
}
"""


async def test_graphql_fetches_many_blobs_in_one_call(
    app: GitHubApp, fake_github: FakeGitHub
) -> None:
    """Aliased `object(expression:)` lookups return text, size, binary flag and the git oid."""
    sha = fake_github.add_commit(
        "octo/hello", {"docs/guide.md": "héllo\n", "logo.bin": b"\x89PNG\0\0"}
    )
    data = await app.graphql(1, BLOBS_QUERY % {"sha": sha}, owner="octo", name="hello")
    blobs = data["readme"]
    assert blobs["a"]["text"] == "héllo\n"
    assert blobs["a"]["byteSize"] == len("héllo\n".encode())
    assert blobs["a"]["isBinary"] is False
    repo = fake_github.repo("octo/hello")
    assert repo.blobs[blobs["a"]["oid"]] == "héllo\n".encode()
    assert blobs["b"] == {
        "text": None,
        "byteSize": 6,
        "isBinary": True,
        "oid": blobs["b"]["oid"],
    }
    assert blobs["c"] is None
    assert fake_github.count("graphql") == 1


async def test_graphql_query_errors_surface(app: GitHubApp, fake_github: FakeGitHub) -> None:
    """A repository the installation cannot see is a GraphQL error, raised as QueryError."""
    with pytest.raises(gidgethub.QueryError, match="Could not resolve"):
        await app.graphql(1, 'query { repository(owner: "nobody", name: "x") { name } }')


async def test_graphql_posts_are_not_paced(
    app: GitHubApp, fake_github: FakeGitHub, vtime: VirtualTime
) -> None:
    """GraphQL reads use POST but are not content-creating, so they never wait."""
    for _ in range(3):
        await app.graphql(1, 'query { repository(owner: "octo", name: "hello") { name } }')
    assert vtime.sleeps == []


def test_app_repr_hides_the_key(github_keypair: KeyPair) -> None:
    """Printing the App (e.g. in a traceback) never shows the private key."""

    async def build() -> str:
        async with aiohttp.ClientSession() as session:
            app = GitHubApp(app_id="1", private_key=github_keypair.private_pem, session=session)
            return repr(app)

    text = asyncio.run(build())
    assert "PRIVATE KEY" not in text
    assert github_keypair.private_pem[40:80] not in text

"""A gidgethub client that respects GitHub's rate limits, and the App that hands clients out.

Exceptions::

    GitHubClientError
     ├── RateLimitExceeded     GitHub asked us to wait longer than we may, or kept refusing
     │    └── RateLimited      ...so this installation (or the App) is paused until reset_at
     ├── GitHubUnavailable     no connection, or no answer in time, after every retry
     │    └── GitHubServerError  ...or a 500/502/503/504 every time (also a gidgethub GitHubBroken)
     └── MissingFromGitHub     a GraphQL answer left out something the judges need

Rate limits are remembered per installation, and for the App's own JWT calls, in the
`GitHubApp` every client shares (`RateLimitPauses`). A refusal (403/429 with Retry-After, a used-up
x-ratelimit-remaining, or a secondary limit) pauses that installation until GitHub's reset. While
it is paused no request for it is sent: a short pause is waited out, a longer one raises
`RateLimited` at once, so the caller (the delivery worker) can put its work off until the reset
instead of failing it. Other installations are not affected. Pauses are per installation, not per
rate-limit resource (core, search, graphql): a used-up resource pauses all of the installation's
calls, which costs little and keeps this simple.

Outages. A connection that fails or times out, or a 500/502/503/504, is retried with backoff;
once every retry failed, `GitHubUnavailable` (`GitHubServerError` for the 5xx) names the host,
the request and the cause, and carries since when GitHub has been failing (`GitHubHealth`, one per
`GitHubApp`). The delivery worker puts such work off like a rate limit (bot/intake/worker.py).
While GitHub is known to be failing, a request is sent once, without retries: every delivery
is still a probe, but an outage does not cost each of them the whole backoff. Other 5xx answers
surface as gidgethub's `GitHubBroken`, other 4xx answers as its usual `HTTPException`s, which
`where_of` tells the host and request of (`describe_failure` writes both).

GraphQL answers with `errors` beside `data` are read as GitHub means them: partial data
(`graphql_answer`), the fields it could not resolve listed; `graphql` keeps gidgethub's strict
reading (any error raises `QueryError`).

Authorization is added in `_request`, per attempt, from a callback: an installation client asks
the token cache every time, so a long-lived client never sends an expired token. Headers are never
logged and never put into exception messages.
"""

from __future__ import annotations

import asyncio
import http
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, cast
from urllib.parse import urlsplit

import aiohttp
import gidgethub.aiohttp
from cachetools import LRUCache
from gidgethub import (
    BadGraphQLRequest,
    GitHubBroken,
    GitHubException,
    GraphQLAuthorizationFailure,
    GraphQLException,
    HTTPException,
    QueryError,
    sansio,
)

from bot.github.auth import AppAuthError, InstallationTokenCache, make_app_jwt
from bot.link_health import LinkHealth

log = logging.getLogger(__name__)

GITHUB_API_URL = "https://api.github.com"
WRITE_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
RATE_LIMIT_STATUSES = frozenset({403, 429})
RETRYABLE_SERVER_STATUSES = frozenset({500, 502, 503, 504})

ResponseHook = Callable[[str, str, int, Mapping[str, str]], None]
AuthorizationSource = Callable[[], Awaitable[str]]
# Called with the installation id (None: the App) and the end of each new or longer pause.
PauseHook = Callable[[int | None, datetime], None]


class GitHubClientError(Exception):
    """Base of the errors this client raises itself."""


class RateLimitExceeded(GitHubClientError):
    """GitHub's rate limit would need a longer wait than allowed, or retries ran out."""


class RateLimited(RateLimitExceeded):
    """GitHub asks an installation (None: the App itself) to make no call before `reset_at`.

    Raised by the request that was refused and then, without any request, by every call for
    that installation until the reset. Work that needs GitHub waits for `reset_at`: the
    condition is GitHub's and passes by itself, so it is no failure of the work."""

    def __init__(self, installation_id: int | None, reset_at: datetime, request: str = "") -> None:
        who = "the App" if installation_id is None else f"installation {installation_id}"
        text = f"GitHub's rate limit pauses {who} until {reset_at.isoformat()}"
        super().__init__(f"{request}: {text}" if request else text)
        self.installation_id = installation_id
        self.reset_at = reset_at


class GitHubUnavailable(GitHubClientError):
    """GitHub could not be reached, or gave no answer in time, after every retry.

    GitHub's condition, not the work's: the worker puts the delivery off until GitHub answers
    again. `host` is the address tried; `failing_since` when this App last found GitHub
    answering no more (None: not known)."""

    def __init__(
        self, message: str, *, host: str = "", failing_since: datetime | None = None
    ) -> None:
        # Exception's own: a subclass is also an HTTPException, whose __init__ reads a status.
        Exception.__init__(self, message)
        self.host = host
        self.failing_since = failing_since


class GitHubServerError(GitHubUnavailable, GitHubBroken):
    """GitHub answered 500, 502, 503 or 504 every time: unavailable, and still the
    `GitHubBroken` (with `status_code`) that gidgethub raises for a 5xx."""

    def __init__(
        self,
        status: http.HTTPStatus,
        message: str,
        *,
        host: str = "",
        failing_since: datetime | None = None,
    ) -> None:
        super().__init__(message, host=host, failing_since=failing_since)
        self.status_code = status
        self.headers: Mapping[str, str] = {}


class MissingFromGitHub(GitHubClientError):
    """A GraphQL answer left out, with an error, something the judges cannot do without (a
    file at the head, a pull request's commits). The message says what and GitHub's why."""


def _wall_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class Timing:
    """Clocks and sleep, injectable so tests never wait on wall time."""

    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    monotonic: Callable[[], float] = time.monotonic
    now: Callable[[], datetime] = _wall_now


@dataclass(frozen=True)
class RetryPolicy:
    """How hard to try. Defaults follow GitHub's published guidance for integrators."""

    max_attempts: int = 5  # per request, for 5xx answers and connection failures
    backoff_base: float = 0.5
    backoff_cap: float = 8.0
    # Longer pauses are not slept through in a request: the caller is told (RateLimited) and
    # puts its work off, which frees the delivery worker for other installations' work.
    max_rate_limit_wait: float = 30.0
    max_rate_limit_retries: int = 3
    # GitHub: "if you hit a secondary rate limit without retry-after, wait at least a minute".
    secondary_limit_wait: float = 60.0
    write_interval: float = 1.0


def backoff_delay(failures: int, policy: RetryPolicy) -> float:
    """Capped exponential delay after the given number of consecutive failures (1-based)."""
    return float(min(policy.backoff_cap, policy.backoff_base * 2 ** (failures - 1)))


def rate_limit_until(
    status: int,
    headers: Mapping[str, str],
    body: bytes,
    now: datetime,
    policy: RetryPolicy,
) -> datetime | None:
    """When GitHub lets us call again after this answer, or None if it is no rate-limit answer.
    Never before `now`."""
    if status not in RATE_LIMIT_STATUSES:
        return None
    secondary = now + timedelta(seconds=policy.secondary_limit_wait)
    retry_after = headers.get("retry-after")
    if retry_after is not None:
        try:
            return now + timedelta(seconds=max(0.0, float(retry_after)))
        except (ValueError, OverflowError):
            return secondary
    if headers.get("x-ratelimit-remaining") == "0":
        try:
            reset = datetime.fromtimestamp(float(headers["x-ratelimit-reset"]), UTC)
        except (KeyError, ValueError, OverflowError, OSError):
            return secondary
        return max(now, reset)
    if status == 429 or b"secondary rate limit" in body.lower():
        return secondary
    # A plain 403 is a permission answer; retrying would not change it.
    return None


def wait_before_sending(until: datetime | None, now: datetime, policy: RetryPolicy) -> float | None:
    """Seconds to wait before sending while paused until `until` (0: send now), or None:
    refuse, the pause is longer than `max_rate_limit_wait`."""
    if until is None:
        return 0.0
    remaining = (until - now).total_seconds()
    if remaining <= 0:
        return 0.0
    if remaining > policy.max_rate_limit_wait:
        return None
    return remaining


class RateLimitPauses:
    """Until when each installation (None: the App's own JWT calls) must not call GitHub.

    One per `GitHubApp`, shared by all its clients. Bounded like the token cache: a pause that
    falls out early costs one refused request, which puts it back.
    """

    def __init__(self, maxsize: int = 1024, on_pause: PauseHook | None = None) -> None:
        self._until: LRUCache[int | None, datetime] = LRUCache(maxsize=maxsize)
        self._on_pause = on_pause

    def until(self, installation_id: int | None, now: datetime) -> datetime | None:
        """The end of the installation's pause, or None if it may call GitHub now."""
        until = self._until.get(installation_id)
        if until is not None and until <= now:
            del self._until[installation_id]
            return None
        return until

    def pause(self, installation_id: int | None, until: datetime) -> datetime:
        """Pause until `until`, unless a longer pause is already in place; returns its end."""
        current = self._until.get(installation_id)
        if current is not None and current >= until:
            return current
        self._until[installation_id] = until
        if self._on_pause is not None:
            self._on_pause(installation_id, until)
        return until


class WritePacer:
    """Serialises content-creating requests and keeps them a minimum interval apart.

    GitHub's secondary rate limits punish bursts of writes; one pacer is shared by every client of
    an installation.
    """

    def __init__(self, interval: float, timing: Timing) -> None:
        self._interval = interval
        self._timing = timing
        self._lock = asyncio.Lock()
        self._last_done: float | None = None

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._lock:
            if self._last_done is not None:
                wait = self._last_done + self._interval - self._timing.monotonic()
                if wait > 0:
                    await self._timing.sleep(wait)
            try:
                yield
            finally:
                self._last_done = self._timing.monotonic()


def _describe(method: str, url: str) -> str:
    # Only method and path: query strings can hold search text that does not belong in errors.
    return f"{method} {urlsplit(url).path}"


def host_of(url: str) -> str:
    """The host (and port) a URL names, for a log line: never its credentials or query."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return f"{host}:{parts.port}" if parts.port else host


class GitHubHealth(LinkHealth):
    """What this process last saw of GitHub. Every answer (a 4xx too: GitHub answered) is
    a success; a request that failed after every retry (`GitHubUnavailable`) a failure."""


# Set by `GitHubClient` on the gidgethub exceptions it sees raised: their own message is
# GitHub's ("Not Found"), which says neither where nor which request.
_WHERE = "_judge_bot_github_request"


def where_of(exc: BaseException) -> str | None:
    """`HOST METHOD /path` of the request a GitHub exception came from, when known."""
    where = getattr(exc, _WHERE, None)
    return where if isinstance(where, str) else None


def describe_failure(exc: BaseException) -> str:
    """One line: the exception's type and message, and the host and request it came from
    when the message does not say so already."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    where = where_of(exc)
    if where is not None and where not in text:
        text += f" ({where})"
    return text


def _transport_cause(exc: BaseException) -> str:
    """Why a request got no answer, in a few words: aiohttp's messages name the address and
    the system's reason; a timeout's message is empty."""
    text = " ".join(str(exc).split())
    if isinstance(exc, TimeoutError) and not text:
        text = "no answer in time"
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _server_cause(status: int, body: bytes) -> str:
    """A 5xx in words: its status and, from a JSON body, GitHub's message (an HTML error page
    says nothing worth a log line)."""
    cause = f"answered {status} {http.HTTPStatus(status).phrase}"
    try:
        message = json.loads(body).get("message")
    except (ValueError, AttributeError, UnicodeDecodeError):
        return cause
    if isinstance(message, str) and message.strip():
        cause += ": " + " ".join(message.split())[:200]
    return cause


@dataclass(frozen=True)
class GraphQLFieldError:
    """One entry of a GraphQL answer's `errors`: where (the field's path from the root, empty
    when GitHub gave none) and GitHub's message and type."""

    path: tuple[str | int, ...]
    message: str
    type: str | None = None

    def covers(self, path: Sequence[str | int]) -> bool:
        """Whether the field at `path` is null because of this error: the error is on that
        field, on a field around it, or (no path) on the whole answer."""
        return tuple(path[: len(self.path)]) == self.path


@dataclass(frozen=True)
class GraphQLAnswer:
    """A GraphQL answer: the data that came back and the errors beside it (partial data)."""

    data: dict[str, Any]
    errors: tuple[GraphQLFieldError, ...] = ()
    raw_errors: tuple[Any, ...] = ()

    def missing(self, path: Sequence[str | int]) -> GraphQLFieldError | None:
        """The error that left the field at `path` out, if any."""
        return next((error for error in self.errors if error.covers(path)), None)


def _field_error(raw: Any) -> GraphQLFieldError:
    if not isinstance(raw, Mapping):
        return GraphQLFieldError((), " ".join(str(raw).split())[:300])
    path = raw.get("path")
    steps = tuple(s for s in path if isinstance(s, str | int)) if isinstance(path, list) else ()
    kind = raw.get("type")
    return GraphQLFieldError(
        steps,
        " ".join(str(raw.get("message") or "no message").split())[:300],
        kind if isinstance(kind, str) else None,
    )


def read_graphql_answer(status: int, headers: Mapping[str, str], body: bytes) -> GraphQLAnswer:
    """A GraphQL response as gidgethub reads it, except that `errors` beside `data` are
    partial data, not a failure. Raises gidgethub's exceptions for what is no answer: a
    5xx (`GitHubBroken`), a 401 or other 4xx, a body that is not JSON, no `data` at all
    (`QueryError` when there are errors, else `GraphQLException`)."""
    if status >= 500:
        raise GitHubBroken(http.HTTPStatus(status))
    try:
        response = json.loads(body) if body else None
    except (ValueError, UnicodeDecodeError):
        response = None
    if not isinstance(response, dict):
        raise GraphQLException(f"GraphQL answer {status} is not a JSON object", body[:200])
    if status == 401:
        raise GraphQLAuthorizationFailure({"message": "Bad credentials", **response})
    if status >= 400:
        raise BadGraphQLRequest(http.HTTPStatus(status), {"message": str(status), **response})
    raw_errors = response.get("errors")
    raw = tuple(raw_errors) if isinstance(raw_errors, list) else ()
    data = response.get("data")
    if not isinstance(data, dict):
        if raw:
            raise QueryError({**response, "errors": list(raw)})
        raise GraphQLException("GraphQL answer has no data", response)
    return GraphQLAnswer(data, tuple(_field_error(error) for error in raw), raw)


class GitHubClient(gidgethub.aiohttp.GitHubAPI):
    """gidgethub over a shared aiohttp session, with rate-limit waits, retries and write pacing."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        requester: str,
        *,
        base_url: str = GITHUB_API_URL,
        graphql_url: str | None = None,
        authorization: AuthorizationSource | None = None,
        policy: RetryPolicy | None = None,
        timing: Timing | None = None,
        pacer: WritePacer | None = None,
        on_response: ResponseHook | None = None,
        on_unauthorized: Callable[[], None] | None = None,
        installation_id: int | None = None,
        pauses: RateLimitPauses | None = None,
        health: GitHubHealth | None = None,
    ) -> None:
        super().__init__(session, requester, base_url=base_url)
        self.graphql_url = graphql_url or graphql_url_for(base_url)
        self._authorization = authorization
        self._on_unauthorized = on_unauthorized
        self._policy = policy or RetryPolicy()
        self._timing = timing or Timing()
        self._pacer = pacer
        self._on_response = on_response
        # Whose rate limit this client spends: an installation's, or (None) the App's.
        self.installation_id = installation_id
        self._pauses = pauses if pauses is not None else RateLimitPauses()
        self.health = health if health is not None else GitHubHealth(host_of(base_url))

    async def sleep(self, seconds: float) -> None:
        await self._timing.sleep(seconds)

    async def graphql(self, query: str, *, endpoint: str | None = None, **variables: Any) -> Any:
        """GraphQL against this client's endpoint (gidgethub's default would be github.com).
        Strict, as gidgethub's: an answer with any error raises `QueryError`."""
        if endpoint is not None and endpoint != self.graphql_url:
            return await super().graphql(query, endpoint=endpoint, **variables)
        answer = await self.graphql_answer(query, **variables)
        if answer.errors:
            raise QueryError({"data": answer.data, "errors": list(answer.raw_errors)})
        return answer.data

    async def graphql_answer(self, query: str, **variables: Any) -> GraphQLAnswer:
        """GraphQL against this client's endpoint, read as GitHub means it: the data that came
        back and the fields it could not resolve (`GraphQLAnswer`). Raises only when no data
        came back at all (`QueryError`), or for a refused or broken request."""
        payload: dict[str, Any] = {"query": query}
        if variables:
            payload["variables"] = variables
        body = json.dumps(payload).encode()
        headers = sansio.create_headers(
            self.requester, accept="application/json; charset=utf-8", oauth_token=self.oauth_token
        )
        headers.update({"content-type": "application/json; charset=utf-8"})
        headers["content-length"] = str(len(body))
        status, answer_headers, data = await self._request("POST", self.graphql_url, headers, body)
        try:
            return read_graphql_answer(status, answer_headers, data)
        except GitHubException as exc:
            self._mark(exc, "POST", self.graphql_url)
            raise

    async def handle_rate_limit_error(
        self, *, method: str, url: str, exception: HTTPException, attempt: int
    ) -> bool:
        """gidgethub's hook for a refused request: never retried here (`_request` did all the
        retrying), but the exception learns where it came from (`where_of`)."""
        self._mark(exception, method, url)
        return False

    def _mark(self, exc: BaseException, method: str, url: str) -> None:
        setattr(exc, _WHERE, f"{host_of(url)} {_describe(method, url)}")

    async def _request(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes = b""
    ) -> tuple[int, Mapping[str, str], bytes]:
        if self._pacer is not None and method in WRITE_METHODS and url != self.graphql_url:
            async with self._pacer.slot():
                return await self._request_with_retries(method, url, headers, body)
        return await self._request_with_retries(method, url, headers, body)

    async def _request_with_retries(
        self, method: str, url: str, headers: Mapping[str, str], body: bytes
    ) -> tuple[int, Mapping[str, str], bytes]:
        policy = self._policy
        failures = 0
        rate_limited = 0
        reauthorised = False
        while True:
            await self._respect_pause(method, url)
            send_headers = dict(headers)
            if self._authorization is not None and "authorization" not in send_headers:
                send_headers["authorization"] = await self._authorization()
            try:
                status, resp_headers, data = await super()._request(method, url, send_headers, body)
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError, TimeoutError) as exc:
                failures += 1
                await self._failed(method, url, failures, _transport_cause(exc), exc)
                continue
            if self._on_response is not None:
                self._on_response(method, url, status, resp_headers)
            if status in RETRYABLE_SERVER_STATUSES:
                failures += 1
                await self._failed(method, url, failures, _server_cause(status, data), status)
                continue
            self.health.succeeded(self._timing.now())
            if status == 401 and self._on_unauthorized is not None and not reauthorised:
                # A cached token can be revoked early (app reinstalled, permissions changed):
                # drop it and try once more with a fresh one.
                reauthorised = True
                self._on_unauthorized()
                continue
            until = rate_limit_until(status, resp_headers, data, self._timing.now(), policy)
            if until is not None:
                rate_limited += 1
                self._pause(method, url, status, until, rate_limited)
                continue  # the pause is waited out, or refused, before the next send
            return status, resp_headers, data

    async def _failed(
        self, method: str, url: str, failures: int, cause: str, error: BaseException | int
    ) -> None:
        """After the `failures`-th failed try of a request: wait before the next, or raise
        `GitHubUnavailable` (`GitHubServerError` for a 5xx `error`) naming host, request and
        cause once the tries are spent. A GitHub already known to be failing gets one try."""
        limit = 1 if self.health.failing else self._policy.max_attempts
        where = f"{_describe(method, url)}: {cause}"
        if failures < limit:
            delay = backoff_delay(failures, self._policy)
            # Each try of one request is not worth a line: the caller reports the outcome.
            log.debug(
                "github request failed (%s), retrying in %.1f s",
                where,
                delay,
                extra={"host": host_of(url)},
            )
            await self._timing.sleep(delay)
            return
        host = host_of(url)
        tries = "1 attempt" if failures == 1 else f"{failures} attempts"
        message = f"GitHub at {host} unavailable: {where} ({tries})"
        since = self.health.failed(self._timing.now(), message)
        if isinstance(error, int):
            status = http.HTTPStatus(error)
            raise GitHubServerError(status, message, host=host, failing_since=since)
        raise GitHubUnavailable(message, host=host, failing_since=since) from error

    async def _respect_pause(self, method: str, url: str) -> None:
        """Send nothing while this client's installation is paused: wait a short pause out,
        refuse a long one with RateLimited."""
        while True:
            now = self._timing.now()
            until = self._pauses.until(self.installation_id, now)
            if until is None:
                return
            wait = wait_before_sending(until, now, self._policy)
            if wait is None:
                raise RateLimited(self.installation_id, until, _describe(method, url))
            if wait <= 0:
                return
            # Looping, not returning: another request may have lengthened the pause meanwhile.
            await self._timing.sleep(wait)

    def _pause(
        self, method: str, url: str, status: int, until: datetime, rate_limited: int
    ) -> None:
        policy = self._policy
        if rate_limited > policy.max_rate_limit_retries:
            # GitHub refuses again after every wait: stop for a while rather than loop.
            floor = self._timing.now() + timedelta(seconds=policy.secondary_limit_wait)
            end = self._pauses.pause(self.installation_id, max(until, floor))
            raise RateLimited(
                self.installation_id,
                end,
                f"{_describe(method, url)}: still rate limited after "
                f"{policy.max_rate_limit_retries} waits",
            )
        end = self._pauses.pause(self.installation_id, until)
        log.warning(
            "github rate limit: pausing until %s",
            end.isoformat(),
            extra={
                "request": _describe(method, url),
                "status": status,
                "installation": self.installation_id,
            },
        )


def graphql_url_for(api_url: str) -> str:
    """GraphQL endpoint for a REST base; GHES `https://HOST/api/v3` maps to `/api/graphql`."""
    base = api_url.rstrip("/")
    if base.endswith("/api/v3"):
        return base.removesuffix("/v3") + "/graphql"
    return base + "/graphql"


def _parse_expiry(value: object) -> datetime:
    if not isinstance(value, str):
        raise AppAuthError("installation token response has no expires_at")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise AppAuthError("installation token response has an unreadable expires_at") from None
    if parsed.tzinfo is None:
        raise AppAuthError("installation token expires_at has no timezone")
    return parsed


@dataclass
class GitHubApp:
    """The App's identity plus everything clients share: session, token cache, write pacers."""

    app_id: str
    private_key: str = field(repr=False)
    session: aiohttp.ClientSession = field(repr=False)
    api_url: str = GITHUB_API_URL
    graphql_url: str = ""
    requester: str = "judge-bot"
    policy: RetryPolicy = field(default_factory=RetryPolicy)
    timing: Timing = field(default_factory=Timing)
    on_response: ResponseHook | None = None
    on_pause: PauseHook | None = None
    cache_size: int = 1024
    # Shared by every client: the status page and /healthz read it.
    health: GitHubHealth = field(default_factory=GitHubHealth)
    tokens: InstallationTokenCache = field(init=False, repr=False)
    pauses: RateLimitPauses = field(init=False, repr=False)
    _pacers: LRUCache[int, WritePacer] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.api_url = self.api_url.rstrip("/")
        if not self.health.host:
            self.health.host = host_of(self.api_url)
        if not self.graphql_url:
            self.graphql_url = graphql_url_for(self.api_url)
        self.tokens = InstallationTokenCache(
            self._fetch_token, clock=self.timing.now, maxsize=self.cache_size
        )
        self._pacers = LRUCache(maxsize=self.cache_size)
        self.pauses = RateLimitPauses(self.cache_size, self.on_pause)

    def _client(
        self,
        authorization: AuthorizationSource,
        pacer: WritePacer | None,
        on_unauthorized: Callable[[], None] | None = None,
        installation_id: int | None = None,
    ) -> GitHubClient:
        return GitHubClient(
            self.session,
            self.requester,
            base_url=self.api_url,
            graphql_url=self.graphql_url,
            authorization=authorization,
            policy=self.policy,
            timing=self.timing,
            pacer=pacer,
            on_response=self.on_response,
            on_unauthorized=on_unauthorized,
            installation_id=installation_id,
            pauses=self.pauses,
            health=self.health,
        )

    async def _app_authorization(self) -> str:
        return "Bearer " + make_app_jwt(self.app_id, self.private_key, self.timing.now())

    def app_client(self) -> GitHubClient:
        """A client authenticated as the App (JWT); for `/app/...` endpoints only."""
        # Unpaced: the token-creation POST must never queue behind an installation's writes.
        return self._client(self._app_authorization, pacer=None)

    def _pacer(self, installation_id: int) -> WritePacer:
        pacer = self._pacers.get(installation_id)
        if pacer is None:
            pacer = WritePacer(self.policy.write_interval, self.timing)
            self._pacers[installation_id] = pacer
        return pacer

    async def installation_client(self, installation_id: int) -> GitHubClient:
        """A client acting as one installation; its token is refreshed as needed.

        Raises RateLimited while the installation is paused for longer than a request may
        wait, so a paused installation costs not even a token request."""
        now = self.timing.now()
        until = self.pauses.until(installation_id, now)
        if until is not None and wait_before_sending(until, now, self.policy) is None:
            raise RateLimited(installation_id, until)
        await self.tokens.get(installation_id)  # fail here, not on the first call, if we cannot

        async def authorization() -> str:
            return "token " + await self.tokens.get(installation_id)

        def unauthorized() -> None:
            self.tokens.invalidate(installation_id)

        return self._client(
            authorization, self._pacer(installation_id), unauthorized, installation_id
        )

    async def graphql(self, installation_id: int, query: str, **variables: Any) -> dict[str, Any]:
        """Run a GraphQL query as the installation and return its `data`."""
        client = await self.installation_client(installation_id)
        data = await client.graphql(query, **variables)
        if not isinstance(data, dict):
            raise GitHubClientError("GraphQL answer has no data object")
        return cast(dict[str, Any], data)

    async def _fetch_token(self, installation_id: int) -> tuple[str, datetime]:
        answer = await self.app_client().post(
            "/app/installations/{installation_id}/access_tokens",
            {"installation_id": installation_id},
            data=b"",
        )
        if not isinstance(answer, dict) or not isinstance(answer.get("token"), str):
            raise AppAuthError("installation token response has no token")
        return answer["token"], _parse_expiry(answer.get("expires_at"))

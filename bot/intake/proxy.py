"""WEBHOOK_PROXY_URL: deliveries forwarded by a smee.io channel, for local development.

    GitHub --POST--> smee.io channel --server-sent events--> WebhookRelay --POST--> WEBHOOK_PATH

GitHub posts to the channel; smee.io sends each delivery down an event stream as one JSON
object, the request's headers (lower-cased) with `body` (the parsed payload), `query` and
`timestamp` beside them. The relay reads that stream and posts every delivery to this
server's own webhook path, so it meets the signature check, the limits and the storage of a
direct delivery: nothing it forwards bypasses intake, and a delivery whose signature does not
match is refused there like any other.

The signature covers GitHub's bytes, and smee.io forwards a parsed payload: the body the relay
sends is the exact text of `body` in the event, which is what smee.io's own client sends
(`JSON.stringify` of the parsed payload). GitHub writes payloads compactly, so for them that
text is GitHub's bytes and the signature holds.

The stream is read as the SSE standard says (`SseParser`, pure): events end at a blank line,
`data:` lines join, `retry:` sets the reconnection delay, `id:` is sent back as
`Last-Event-ID` when reconnecting. A dropped or refused stream is retried with capped
exponential backoff (`reconnect_delay`). An event that cannot be read is logged and skipped;
one larger than a delivery could be is dropped unread. The channel URL is a credential
(whoever has it reads the deliveries), so logs name its host only, and headers and bodies
are never logged.

The channel is reached through the outbound proxy the standard variables name
(`outbound_proxy`, pure: `HTTPS_PROXY`, `NO_PROXY`, ... as curl reads them), which the
registration and `judge-bot replay` use too; the post to intake never is, since it goes
to this very process.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import aiohttp
from aiohttp import web

from bot.lifetime import CleanupContext
from bot.settings import Settings
from bot.storage.base import MAX_BODY_BYTES

log = logging.getLogger(__name__)

# A delivery's headers and its 25 MB body, with room for smee.io's escaping of the body.
MAX_EVENT_BYTES = 2 * MAX_BODY_BYTES
# smee.io pings every 30 s: a stream silent for longer is dead.
READ_TIMEOUT_SECONDS = 90.0
# Forwarded as sent: what intake reads, and the rest of GitHub's own delivery headers.
FORWARDED_HEADERS = frozenset({"user-agent", "x-hub-signature-256"})
FORWARDED_PREFIX = "x-github-"

Sleep = Callable[[float], Awaitable[None]]


# -- the event stream (pure) ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SseEvent:
    data: str
    event: str = "message"
    id: str | None = None


_LINE_END = re.compile(rb"\r\n|\r|\n")


class SseParser:
    """Server-sent events from a byte stream fed in chunks of any size (the WHATWG rules).

    `last_event_id` and `retry_ms` outlive a connection: give them to the next parser. An
    event with a line over `max_line_bytes` is dropped whole and counted in `dropped`."""

    def __init__(
        self,
        *,
        max_line_bytes: int = MAX_EVENT_BYTES,
        last_event_id: str | None = None,
        retry_ms: int | None = None,
    ) -> None:
        self.max_line_bytes = max_line_bytes
        self.last_event_id = last_event_id
        self.retry_ms = retry_ms
        self.dropped = 0
        self._line = bytearray()
        self._skipping_line = False
        self._after_cr = False
        self._first_line = True
        self._data: list[str] = []
        self._event = ""
        self._broken = False

    def feed(self, chunk: bytes) -> list[SseEvent]:
        events: list[SseEvent] = []
        start = 0
        if self._after_cr and chunk.startswith(b"\n"):
            start = 1  # the LF of a CRLF split between two chunks
        self._after_cr = False
        while True:
            end = _LINE_END.search(chunk, start)
            if end is None:
                self._extend(chunk[start:])
                return events
            self._extend(chunk[start : end.start()])
            self._after_cr = end.group() == b"\r" and end.end() == len(chunk)
            event = self._end_line()
            if event is not None:
                events.append(event)
            start = end.end()

    def _extend(self, part: bytes) -> None:
        if self._skipping_line:
            return
        self._line += part
        if len(self._line) > self.max_line_bytes:
            self._line.clear()
            self._skipping_line = True

    def _end_line(self) -> SseEvent | None:
        if self._skipping_line:
            self._skipping_line = False
            self._broken = True
            return None
        raw = bytes(self._line)
        self._line.clear()
        if self._first_line:
            self._first_line = False
            raw = raw.removeprefix(b"\xef\xbb\xbf")
        line = raw.decode("utf-8", errors="replace")
        if not line:
            return self._dispatch()
        if not line.startswith(":"):  # a comment otherwise
            name, _, value = line.partition(":")
            self._field(name, value.removeprefix(" "))
        return None

    def _field(self, name: str, value: str) -> None:
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self.last_event_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)

    def _dispatch(self) -> SseEvent | None:
        data, event, broken = self._data, self._event, self._broken
        self._data, self._event, self._broken = [], "", False
        if broken:
            self.dropped += 1
            return None
        if not data:
            return None
        return SseEvent("\n".join(data), event or "message", self.last_event_id)


@dataclass(frozen=True)
class ReconnectPolicy:
    first_delay: float = 1.0
    max_delay: float = 60.0


def reconnect_delay(failures: int, retry_ms: int | None, policy: ReconnectPolicy) -> float:
    """Seconds before the next connection after `failures` (1-based) failed ones in a row:
    the server's `retry:` or our first delay, doubled per failure, capped."""
    first = policy.first_delay if retry_ms is None else retry_ms / 1000
    return float(min(policy.max_delay, first * 2 ** min(failures - 1, 30)))


# -- one forwarded delivery (pure) ------------------------------------------------------


class UnreadableEvent(ValueError):
    """A proxy event that is no forwarded delivery; the message says why, without content."""


@dataclass(frozen=True, slots=True)
class Forward:
    headers: dict[str, str]
    body: bytes

    @property
    def delivery_id(self) -> str | None:
        return self.headers.get("x-github-delivery")

    @property
    def event(self) -> str | None:
        return self.headers.get("x-github-event")


_SPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip_space(text: str, at: int) -> int:
    match = _SPACE.match(text, at)
    return at if match is None else match.end()


def _members(text: str) -> Iterator[tuple[str, Any, str]]:
    """A JSON object's members as (key, value, the value's exact text), in order."""
    at = _skip_space(text, 0)
    if text[at : at + 1] != "{":
        raise UnreadableEvent("data is not a JSON object")
    at = _skip_space(text, at + 1)
    if text[at : at + 1] == "}":
        at += 1
    else:
        while True:
            if text[at : at + 1] != '"':
                raise UnreadableEvent("data is not valid JSON")
            key, at = _DECODER.raw_decode(text, at)
            at = _skip_space(text, at)
            if text[at : at + 1] != ":":
                raise UnreadableEvent("data is not valid JSON")
            start = _skip_space(text, at + 1)
            value, at = _DECODER.raw_decode(text, start)
            yield key, value, text[start:at]
            at = _skip_space(text, at)
            separator = text[at : at + 1]
            at = _skip_space(text, at + 1)
            if separator == "}":
                break
            if separator != ",":
                raise UnreadableEvent("data is not valid JSON")
    if text[at:].strip(" \t\n\r"):
        raise UnreadableEvent("data is not valid JSON")


def forward_from(data: str) -> Forward:
    """The request to send for one proxy message: GitHub's headers and the exact text of the
    payload (module docstring). Raises UnreadableEvent when it is no delivery."""
    headers: dict[str, str] = {}
    body: str | None = None
    try:
        for key, value, text in _members(data):
            if key == "body":
                # The last one, as JSON.parse (and so smee.io's client) keeps the last.
                body = text if isinstance(value, dict) else None
            elif isinstance(value, str) and _forwarded(key.lower()):
                headers[key.lower()] = value
    except (json.JSONDecodeError, RecursionError):
        raise UnreadableEvent("data is not valid JSON") from None
    if body is None:
        raise UnreadableEvent("no JSON object in body")
    if "x-github-event" not in headers or "x-github-delivery" not in headers:
        raise UnreadableEvent("no x-github-event or x-github-delivery header")
    headers["content-type"] = "application/json"
    return Forward(headers, body.encode("utf-8"))


def _forwarded(name: str) -> bool:
    return name in FORWARDED_HEADERS or name.startswith(FORWARDED_PREFIX)


def local_webhook_url(host: str, port: int, path: str) -> str:
    """Where this server's own intake listens, as seen from inside the process."""
    if host in ("", "0.0.0.0", "::"):
        host = "127.0.0.1"
    elif ":" in host:
        host = f"[{host}]"
    return f"http://{host}:{port}{path}"


# -- outbound proxies (pure) -------------------------------------------------------------


class ProxySettingError(ValueError):
    """A proxy variable judge-bot cannot use. The message names the variable, never its
    value: a proxy URL may hold a password."""


_DEFAULT_PORTS = {"http": 80, "https": 443}
_NO_PROXY_SEPARATORS = re.compile(r"[\s,]+")


def outbound_proxy(url: str, environ: Mapping[str, str]) -> str | None:
    """The proxy a request to `url` goes through, as curl reads the standard variables:
    `https_proxy` for https URLs, `http_proxy` for http ones, `all_proxy` for either (each
    also in upper case; lower case wins, as in curl and urllib), and none for a host that
    `no_proxy` names or for this machine (loopback never leaves it, so local servers stay
    reachable whatever the variables say). Raises ProxySettingError for a proxy aiohttp
    cannot speak to (socks5://, a value that is no URL)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme, 0)
    except ValueError:
        return None  # not a usable URL: the request itself says so
    if scheme not in _DEFAULT_PORTS or not host or _loopback(host):
        return None
    if _bypassed(host, port, _variable(environ, "no_proxy")[1]):
        return None
    name, value = _variable(environ, f"{scheme}_proxy", "all_proxy")
    return _proxy_url(name, value) if value else None


def proxy_address(proxy: str) -> str:
    """A proxy URL as logs and pages may show it: host and port, never its credentials."""
    parts = urlsplit(proxy)
    try:
        port = parts.port
    except ValueError:
        port = None
    host = parts.hostname or "?"
    host = f"[{host}]" if ":" in host else host
    return f"{host}:{port}" if port else host


def _variable(environ: Mapping[str, str], *names: str) -> tuple[str, str]:
    """The first of `names` set to something, lower case before upper case."""
    for name in names:
        for spelling in (name, name.upper()):
            value = environ.get(spelling, "").strip()
            if value:
                return spelling, value
    return "", ""


def _proxy_url(name: str, value: str) -> str:
    url = value if "://" in value else f"http://{value}"  # curl's default scheme
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ProxySettingError(
            f"{name} names a {scheme}:// proxy; judge-bot reaches the internet through "
            "http:// or https:// proxies only"
        )
    try:
        _ = parts.port  # parsing it is the check
    except ValueError:
        raise ProxySettingError(f"{name} has a port that is not a number") from None
    if not parts.hostname:
        raise ProxySettingError(f"{name} is not a proxy address (http://HOST:PORT)")
    return url


def _loopback(host: str) -> bool:
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bypassed(host: str, port: int, no_proxy: str) -> bool:
    """Whether `no_proxy` names the host: `*`, a name and its subdomains (a leading `.` or
    `*.` changes nothing), an address, a CIDR block, each optionally with `:port`."""
    for entry in _NO_PROXY_SEPARATORS.split(no_proxy.lower()):
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        if name and entry_port in (None, port) and _host_matches(host, name):
            return True
    return False


def _split_port(entry: str) -> tuple[str, int | None]:
    if entry.startswith("["):  # [v6 address] or [v6 address]:port
        address, _, rest = entry[1:].partition("]")
        port = rest.removeprefix(":")
        return address, int(port) if port.isdigit() else None
    name, colon, port = entry.rpartition(":")
    if colon and ":" not in name and port.isdigit():
        return name, int(port)
    return entry, None  # no port, or a bare IPv6 address


def _host_matches(host: str, entry: str) -> bool:
    if "/" in entry:
        try:
            return ipaddress.ip_address(host) in ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return False
    name = entry.removeprefix("*").removeprefix(".")
    return bool(name) and (host == name or host.endswith("." + name))


# -- the relay --------------------------------------------------------------------------


class WebhookRelay:
    """Reads a smee.io channel and posts each delivery to `target` (module docstring)."""

    def __init__(
        self,
        session: aiohttp.ClientSession,
        source: str,
        target: str,
        *,
        policy: ReconnectPolicy | None = None,
        sleep: Sleep = asyncio.sleep,
        max_event_bytes: int = MAX_EVENT_BYTES,
        proxy: str | None = None,
    ) -> None:
        self._session = session
        self._source = source
        self._target = target
        # The channel only: the target is this process, which no proxy stands before.
        self._proxy = proxy
        self._policy = policy or ReconnectPolicy()
        self._sleep = sleep
        self._max_event_bytes = max_event_bytes
        where = urlsplit(source).hostname or "the proxy"
        self._where = f"{where} (through {proxy_address(proxy)})" if proxy else where
        self.last_event_id: str | None = None
        self.retry_ms: int | None = None
        self.connected = asyncio.Event()
        self.forwarded: list[tuple[str | None, int]] = []

    async def run(self) -> None:
        """Until cancelled: connect, forward, reconnect after a pause when the stream ends."""
        failures = 0
        while True:
            try:
                received = await self._stream()
            except (aiohttp.ClientError, TimeoutError) as exc:
                log.warning(
                    "webhook proxy at %s: connection failed (%s)", self._where, type(exc).__name__
                )
                received = False
            failures = 1 if received else failures + 1
            delay = reconnect_delay(failures, self.retry_ms, self._policy)
            log.info("webhook proxy at %s: reconnecting in %.1f s", self._where, delay)
            await self._sleep(delay)

    async def _stream(self) -> bool:
        """One connection; True if it carried any event (the next failure counts from 1)."""
        headers = {"Accept": "text/event-stream", "Cache-Control": "no-cache"}
        if self.last_event_id:
            headers["Last-Event-ID"] = self.last_event_id
        timeout = aiohttp.ClientTimeout(total=None, connect=30, sock_read=READ_TIMEOUT_SECONDS)
        async with self._session.get(
            self._source, headers=headers, timeout=timeout, proxy=self._proxy
        ) as response:
            if response.status != 200 or response.content_type != "text/event-stream":
                log.warning(
                    "webhook proxy at %s answered %d (%s), not an event stream",
                    self._where,
                    response.status,
                    response.content_type,
                )
                return False
            log.info("webhook proxy at %s: connected, forwarding to %s", self._where, self._target)
            parser = SseParser(
                max_line_bytes=self._max_event_bytes,
                last_event_id=self.last_event_id,
                retry_ms=self.retry_ms,
            )
            received = False
            async for chunk in response.content.iter_any():
                events = parser.feed(chunk)
                self.last_event_id, self.retry_ms = parser.last_event_id, parser.retry_ms
                if parser.dropped:
                    log.warning(
                        "webhook proxy: an event over %d bytes was skipped", self._max_event_bytes
                    )
                    parser.dropped = 0
                for event in events:
                    received = True
                    await self._handle(event)
            log.info("webhook proxy at %s: the stream ended", self._where)
            return received

    async def _handle(self, event: SseEvent) -> None:
        if event.event == "ready":
            self.connected.set()
        elif event.event == "message":
            await self._forward(event.data)
        # `ping` and anything else: keep-alives and news that concern no delivery.

    async def _forward(self, data: str) -> None:
        try:
            forward = forward_from(data)
        except UnreadableEvent as exc:
            log.warning("webhook proxy: event skipped: %s", exc)
            return
        context = {"delivery_id": forward.delivery_id, "event": forward.event}
        try:
            async with self._session.post(
                self._target, data=forward.body, headers=forward.headers
            ) as response:
                await response.read()
                status = response.status
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # ValueError: a header value aiohttp refuses to send (a line break in it).
            log.warning(
                "webhook proxy: could not hand a delivery to intake (%s)",
                type(exc).__name__,
                extra=context,
            )
            return
        self.forwarded.append((forward.delivery_id, status))
        if status == 401:
            log.warning(
                "webhook proxy: intake refused the signature: WEBHOOK_SECRET differs from the "
                "App's, or the proxy changed the payload",
                extra=context,
            )
        elif status >= 300:
            log.warning("webhook proxy: intake answered %d", status, extra=context)
        else:
            log.info("webhook proxy: delivery forwarded, intake answered %d", status, extra=context)


def webhook_proxy_ctx(
    settings: Settings,
    *,
    policy: ReconnectPolicy | None = None,
    environ: Mapping[str, str] | None = None,
) -> CleanupContext:
    """The relay for the app's lifetime, when WEBHOOK_PROXY_URL is set and the App is
    registered (before that, intake refuses every delivery anyway). The channel is reached
    through the outbound proxy `environ` (the process's environment) names."""

    async def proxy_ctx(app: web.Application) -> AsyncIterator[None]:
        source = settings.webhook_proxy_url
        if source is None or not settings.configured:
            yield
            return
        try:
            proxy = outbound_proxy(source, os.environ if environ is None else environ)
        except ProxySettingError as exc:
            log.error("webhook proxy: not started: %s", exc)
            yield
            return
        target = local_webhook_url(settings.host, settings.port, settings.webhook_path)
        async with aiohttp.ClientSession() as session:
            relay = WebhookRelay(session, source, target, policy=policy, proxy=proxy)
            task = asyncio.create_task(relay.run())
            yield
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    return proxy_ctx

"""WEBHOOK_PROXY_URL: the event stream, the forwarded request, and deliveries relayed from a
local server that behaves like smee.io into a real app's intake."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.app import METRICS, create_app
from bot.intake.proxy import (
    Forward,
    ReconnectPolicy,
    SseEvent,
    SseParser,
    UnreadableEvent,
    WebhookRelay,
    forward_from,
    local_webhook_url,
    reconnect_delay,
    webhook_proxy_ctx,
)
from bot.storage import storage_from_url
from bot.storage.base import Storage
from tests.support.app_helpers import make_settings
from tests.support.server_process import free_port
from tests.support.webhook_helpers import all_examples, example, webhook_headers

FAST = ReconnectPolicy(first_delay=0.01, max_delay=0.05)


def github_bytes(fixture: bytes) -> bytes:
    """A payload as GitHub sends it: compact JSON, UTF-8, nothing escaped that need not be."""
    return json.dumps(json.loads(fixture), separators=(",", ":"), ensure_ascii=False).encode()


def smee_data(headers: dict[str, str], body: bytes) -> str:
    """What smee.io puts in `data:`: the request's headers (lower-cased) with the parsed body,
    as JSON.stringify writes it."""
    message: dict[str, Any] = {k.lower(): v for k, v in headers.items()}
    message.update(
        {
            "host": "smee.io",
            "content-length": str(len(body)),
            "accept-encoding": "gzip",
            "body": json.loads(body),
            "query": {},
            "timestamp": 1_700_000_000_000,
        }
    )
    return json.dumps(message, separators=(",", ":"), ensure_ascii=False)


# -- the event stream ---------------------------------------------------------------------


def parse(*chunks: bytes, **options: Any) -> list[SseEvent]:
    parser = SseParser(**options)
    return [event for chunk in chunks for event in parser.feed(chunk)]


PARSE_CASES: list[tuple[str, list[bytes], list[SseEvent]]] = [
    ("one message", [b"data: x\n\n"], [SseEvent("x")]),
    (
        "smee's ready event",
        [b"id: 0\nevent: ready\ndata: {}\n\n"],
        [SseEvent("{}", "ready", "0")],
    ),
    ("CRLF", [b"data: a\r\n\r\n"], [SseEvent("a")]),
    ("CR", [b"data: a\r\rdata: b\r\r"], [SseEvent("a"), SseEvent("b")]),
    ("CRLF split between chunks", [b"data: a\r", b"\n\r", b"\n"], [SseEvent("a")]),
    ("a line in pieces", [b"da", b"ta: he", b"llo\n", b"\n"], [SseEvent("hello")]),
    ("data lines join", [b"data: a\ndata:b\ndata\n\n"], [SseEvent("a\nb\n")]),
    ("one space only is dropped", [b"data:  a\n\n"], [SseEvent(" a")]),
    ("comments", [b": keep-alive\ndata: a\n\n"], [SseEvent("a")]),
    ("no data, no event", [b"event: ping\n\ndata: a\n\n"], [SseEvent("a")]),
    ("unknown fields", [b"colour: red\ndata: a\n\n"], [SseEvent("a")]),
    ("not finished", [b"data: a\n"], []),
    ("byte order mark", [b"\xef\xbb\xbfdata: a\n\n"], [SseEvent("a")]),
    (
        "id persists",
        [b"id: 7\ndata: a\n\ndata: b\n\n"],
        [SseEvent("a", id="7"), SseEvent("b", id="7")],
    ),
    ("id with NUL ignored", [b"id: 1\nid: x\x00\ndata: a\n\n"], [SseEvent("a", id="1")]),
    ("not UTF-8", [b"data: \xff\n\n"], [SseEvent("\ufffd")]),
    ("UTF-8 split", [b"data: \xc3", b"\xa9\n\n"], [SseEvent("é")]),
]


@pytest.mark.parametrize(
    ("chunks", "expected"), [c[1:] for c in PARSE_CASES], ids=[c[0] for c in PARSE_CASES]
)
def test_sse_parser(chunks: list[bytes], expected: list[SseEvent]) -> None:
    assert parse(*chunks) == expected
    # Any split of the stream gives the same events.
    whole = b"".join(chunks)
    assert parse(*(whole[i : i + 1] for i in range(len(whole)))) == expected


def test_sse_retry_and_the_id_outlive_an_event() -> None:
    parser = SseParser(last_event_id="3", retry_ms=500)
    assert parser.feed(b"retry: soon\ndata: a\n\n") == [SseEvent("a", id="3")]
    assert parser.retry_ms == 500
    parser.feed(b"retry: 2500\n\n")
    assert parser.retry_ms == 2500


def test_sse_an_event_with_an_overlong_line_is_dropped_whole() -> None:
    parser = SseParser(max_line_bytes=12)
    events = parser.feed(b"event: big\ndata: 0123456789abc")
    events += parser.feed(b"def\ndata: more\n\ndata: small\n\n")
    assert events == [SseEvent("small")]
    assert parser.dropped == 1


@pytest.mark.parametrize(
    ("failures", "retry_ms", "expected"),
    [
        (1, None, 1.0),
        (2, None, 2.0),
        (3, None, 4.0),
        (9, None, 60.0),
        (1, 250, 0.25),
        (500, 1, 60.0),
    ],
)
def test_reconnect_delay(failures: int, retry_ms: int | None, expected: float) -> None:
    assert reconnect_delay(failures, retry_ms, ReconnectPolicy()) == expected


# -- the forwarded request ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("event", "name", "fixture"),
    all_examples(),
    ids=[f"{event}/{name}" for event, name, _ in all_examples()],
)
def test_every_example_payload_is_forwarded_as_github_sent_it(
    event: str, name: str, fixture: bytes
) -> None:
    """The forwarded body is GitHub's bytes, so GitHub's signature over them holds."""
    del name
    body = github_bytes(fixture)
    headers = webhook_headers(event, body, delivery_id="d-1")
    forward = forward_from(smee_data(headers, body))
    assert forward.body == body
    assert forward.headers["x-hub-signature-256"] == headers["X-Hub-Signature-256"]


def test_only_githubs_headers_are_forwarded() -> None:
    body = b'{"zen":"Keep it logically awesome."}'
    data = smee_data(
        {
            "X-GitHub-Event": "ping",
            "X-GitHub-Delivery": "d-1",
            "X-GitHub-Hook-ID": "9",
            "X-Hub-Signature-256": "sha256=00",
            "User-Agent": "GitHub-Hookshot/1",
            "Content-Type": "application/x-www-form-urlencoded",
            "Connection": "close",
        },
        body,
    )
    assert forward_from(data) == Forward(
        {
            "x-github-event": "ping",
            "x-github-delivery": "d-1",
            "x-github-hook-id": "9",
            "x-hub-signature-256": "sha256=00",
            "user-agent": "GitHub-Hookshot/1",
            "content-type": "application/json",
        },
        body,
    )


def test_the_body_is_its_exact_text() -> None:
    """Numbers and escapes stay as smee.io wrote them: re-encoding would change them."""
    body = '{"n":1e-7,"big":12345678901234567890,"s":"\\u00e9\\ud83d\\ude00 é","o":{}}'
    data = f' {{ "x-github-event" : "push" , "x-github-delivery":"d", "body" : {body} }} '
    forward = forward_from(data)
    assert forward.body == body.encode()
    assert (forward.event, forward.delivery_id) == ("push", "d")


def test_the_last_body_counts_as_in_javascript() -> None:
    data = '{"x-github-event":"push","x-github-delivery":"d","body":{"a":1},"body":{"b":2}}'
    assert forward_from(data).body == b'{"b":2}'


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        ("", "not a JSON object"),
        ("[]", "not a JSON object"),
        ("{}", "no JSON object in body"),
        ('{"x-github-event":"push","x-github-delivery":"d"}', "no JSON object in body"),
        ('{"x-github-event":"push","x-github-delivery":"d","body":"{}"}', "no JSON object"),
        ('{"x-github-delivery":"d","body":{}}', "no x-github-event"),
        ('{"x-github-event":"push","body":{}}', "no x-github-event or x-github-delivery"),
        ('{"x-github-event":"push","x-github-delivery":3,"body":{}}', "x-github-delivery"),
        ('{"body":{}} trailing', "not valid JSON"),
        ('{"body" {}}', "not valid JSON"),
        ('{"body":{} "x":1}', "not valid JSON"),
        ("{body:{}}", "not valid JSON"),
        ('{"body":{"a":tru}}', "not valid JSON"),
        ('{"body":' + "[" * 100_000 + "]" * 100_000 + "}", "not valid JSON"),
    ],
)
def test_events_that_are_no_delivery(data: str, reason: str) -> None:
    with pytest.raises(UnreadableEvent, match=reason):
        forward_from(data)


@pytest.mark.parametrize(
    ("host", "expected"),
    [
        ("0.0.0.0", "http://127.0.0.1:3000/hook"),
        ("::", "http://127.0.0.1:3000/hook"),
        ("", "http://127.0.0.1:3000/hook"),
        ("localhost", "http://localhost:3000/hook"),
        ("::1", "http://[::1]:3000/hook"),
    ],
)
def test_local_webhook_url(host: str, expected: str) -> None:
    assert local_webhook_url(host, 3000, "/hook") == expected


# -- relaying into the app -----------------------------------------------------------------


class FakeSmee:
    """A channel as smee.io serves it: `ready` on connect, then whatever the test sends."""

    def __init__(self) -> None:
        self.streams: list[asyncio.Queue[bytes | None]] = []
        self.last_event_ids: list[str | None] = []
        self.refuse = 0
        self.connected = asyncio.Event()
        self._ids = 0
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/channel", self._stream)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/channel"

    async def close(self) -> None:
        for stream in self.streams:
            stream.put_nowait(None)
        if self._runner is not None:
            await self._runner.cleanup()

    async def _stream(self, request: web.Request) -> web.StreamResponse:
        self.last_event_ids.append(request.headers.get("Last-Event-ID"))
        if self.refuse:
            self.refuse -= 1
            return web.Response(status=503, text="busy")
        if request.headers.get("Accept") != "text/event-stream":
            return web.Response(text="<html>a channel page</html>", content_type="text/html")
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.streams.append(queue)
        await response.write(self._frame("{}", "ready"))
        self.connected.set()
        while (chunk := await queue.get()) is not None:
            await response.write(chunk)
        return response

    def _frame(self, data: str, event: str | None = None) -> bytes:
        self._ids += 1
        kind = f"event: {event}\n" if event else ""
        return f"id: {self._ids}\n{kind}data: {data}\n\n".encode()

    def send(self, data: str, event: str | None = None) -> None:
        self.streams[-1].put_nowait(self._frame(data, event))

    def send_raw(self, chunk: bytes) -> None:
        self.streams[-1].put_nowait(chunk)

    def drop(self) -> None:
        self.connected.clear()
        self.streams[-1].put_nowait(None)


@pytest.fixture
async def smee() -> AsyncIterator[FakeSmee]:
    server = FakeSmee()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


class Relayed:
    def __init__(self, client: TestClient[web.Request, web.Application], store: Storage) -> None:
        self.client = client
        self.store = store

    async def stored(self, delivery_id: str) -> bytes:
        async with asyncio.timeout(10):
            while (delivery := await self.store.get_delivery(delivery_id)) is None:
                await asyncio.sleep(0.02)
        return delivery.body


@pytest.fixture
async def relayed(smee: FakeSmee, tmp_path: Path, github_keypair: Any) -> AsyncIterator[Relayed]:
    """A real app with the relay reading `smee`: the app's settings have no proxy URL (so
    create_app adds none), the relay's have the same server plus the channel."""
    port = free_port()
    settings = make_settings(github_keypair.private_pem, tmp_path, PORT=port, HOST="127.0.0.1")
    proxied = make_settings(
        github_keypair.private_pem,
        tmp_path,
        PORT=port,
        HOST="127.0.0.1",
        WEBHOOK_PROXY_URL=smee.url,
    )
    store = storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, start_workers=False)
    app.cleanup_ctx.append(webhook_proxy_ctx(proxied, policy=FAST))
    client = TestClient(TestServer(app, host="127.0.0.1", port=port))
    await client.start_server()
    try:
        async with asyncio.timeout(10):
            await smee.connected.wait()
        yield Relayed(client, store)
    finally:
        await client.close()


async def test_a_forwarded_delivery_is_stored_and_a_forged_one_refused(
    smee: FakeSmee, relayed: Relayed
) -> None:
    body = github_bytes(example("pull_request", "opened"))
    smee.send("{}", "ping")
    smee.send(smee_data(webhook_headers("pull_request", body, delivery_id="good-1"), body))
    assert await relayed.stored("good-1") == body

    forged = webhook_headers("pull_request", body, delivery_id="forged-1", secret="not-it")
    smee.send(smee_data(forged, body))
    smee.send("not json")
    last = webhook_headers("pull_request", body, delivery_id="good-2")
    smee.send(smee_data(last, body))
    await relayed.stored("good-2")

    assert await relayed.store.get_delivery("forged-1") is None
    registry = relayed.client.app[METRICS].registry
    assert (
        registry.get_sample_value("judge_deliveries_rejected_total", {"reason": "bad-signature"})
        == 1
    )


async def test_the_relay_reconnects_and_sends_the_last_event_id(
    smee: FakeSmee, relayed: Relayed
) -> None:
    body = github_bytes(example("push", "payload"))
    smee.send(smee_data(webhook_headers("push", body, delivery_id="before"), body))
    await relayed.stored("before")
    smee.send_raw(b"retry: 10\n\n")
    smee.refuse = 1  # the next connection is refused once: the relay tries again
    smee.drop()
    async with asyncio.timeout(10):
        await smee.connected.wait()
    smee.send(smee_data(webhook_headers("push", body, delivery_id="after"), body))
    assert await relayed.stored("after") == body
    assert smee.last_event_ids[0] is None
    assert smee.last_event_ids[1:] == ["2", "2"]


async def test_the_relay_retries_when_nothing_listens(caplog: pytest.LogCaptureFixture) -> None:
    """Backoff doubles per failed connection, and the channel URL is never logged."""
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        if len(delays) == 3:
            raise asyncio.CancelledError

    source = f"http://127.0.0.1:{free_port()}/secret-channel"
    async with aiohttp.ClientSession() as session:
        relay = WebhookRelay(session, source, "http://127.0.0.1:1/hook", policy=FAST, sleep=sleep)
        with pytest.raises(asyncio.CancelledError):
            await relay.run()
    assert delays == [0.01, 0.02, 0.04]
    assert "connection failed" in caplog.text
    assert "secret-channel" not in caplog.text


async def test_an_event_page_instead_of_a_stream_is_retried(
    smee: FakeSmee, caplog: pytest.LogCaptureFixture
) -> None:
    delays: list[float] = []

    async def sleep(seconds: float) -> None:
        delays.append(seconds)
        raise asyncio.CancelledError

    async with aiohttp.ClientSession() as session:
        relay = WebhookRelay(session, smee.url, "http://127.0.0.1:1/hook", policy=FAST, sleep=sleep)
        smee.refuse = 1
        with pytest.raises(asyncio.CancelledError):
            await relay.run()
    assert delays == [0.01]
    assert "answered 503" in caplog.text


async def test_unreachable_intake_and_oversized_events_are_logged_and_skipped(
    smee: FakeSmee, caplog: pytest.LogCaptureFixture
) -> None:
    small, large = b'{"zen":"x"}', b'{"zen":"' + b"x" * 2000 + b'"}'
    target = f"http://127.0.0.1:{free_port()}/hook"
    async with aiohttp.ClientSession() as session:
        relay = WebhookRelay(session, smee.url, target, policy=FAST, max_event_bytes=1000)
        task = asyncio.create_task(relay.run())
        try:
            async with asyncio.timeout(10):
                await smee.connected.wait()
                smee.send(smee_data(webhook_headers("ping", large, delivery_id="d-1"), large))
                smee.send(smee_data(webhook_headers("ping", small, delivery_id="d-2"), small))
                while "could not hand a delivery" not in caplog.text:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert "an event over 1000 bytes was skipped" in caplog.text
    assert relay.forwarded == []


@pytest.mark.parametrize(
    ("status", "log_text"), [(401, "refused the signature"), (503, "intake answered 503")]
)
async def test_intake_refusals_are_logged(
    smee: FakeSmee, caplog: pytest.LogCaptureFixture, status: int, log_text: str
) -> None:
    async def intake(request: web.Request) -> web.Response:
        return web.Response(status=status)

    app = web.Application()
    app.router.add_post("/hook", intake)
    async with TestServer(app, host="127.0.0.1") as server, aiohttp.ClientSession() as session:
        relay = WebhookRelay(session, smee.url, str(server.make_url("/hook")), policy=FAST)
        task = asyncio.create_task(relay.run())
        try:
            async with asyncio.timeout(10):
                await smee.connected.wait()
                body = b"{}"
                smee.send(smee_data(webhook_headers("ping", body, delivery_id="d-1"), body))
                while not relay.forwarded:
                    await asyncio.sleep(0.01)
        finally:
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
    assert relay.forwarded == [("d-1", status)]
    assert log_text in caplog.text


@pytest.mark.parametrize("overrides", [{}, {"APP_ID": None, "WEBHOOK_PROXY_URL": "http://x"}])
async def test_no_relay_without_a_proxy_url_or_a_registered_app(
    tmp_path: Path, github_keypair: Any, overrides: dict[str, Any]
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path, **overrides)
    steps = webhook_proxy_ctx(settings)(web.Application())
    await anext(steps)
    assert len(asyncio.all_tasks()) == 1  # only this test's own
    with pytest.raises(StopAsyncIteration):
        await anext(steps)

"""Slow clients against a running `python -m bot serve` (issue 24, item 6): a connection
that trickles its headers, trickles its body or sits idle is closed once its timeout
(`bot.settings.server`) has passed, and a gzip bomb is refused unread (item 5).

The timeouts are set to half a second so the test is quick; each wait for the server to act
is capped far above that, and nothing here measures how long anything took."""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.cli import body_deadline
from tests.support.fakes.github_fixtures import KeyPair
from tests.support.fakes.github_server import FakeGitHub
from tests.support.server_process import ServerProcess, server_env
from tests.support.webhook_helpers import example, webhook_headers

TIMEOUT = "0.5"
# Far above the timeouts: a server that never acts fails here rather than hangs.
CAP_SECONDS = 20.0
PATH = "/api/github/webhooks"


@pytest.fixture
async def server(
    fake_github: FakeGitHub, github_keypair: KeyPair, tmp_path: Path
) -> AsyncIterator[ServerProcess]:
    env = server_env(
        fake_github,
        github_keypair.private_pem,
        tmp_path / "judge.sqlite3",
        JUDGE_KEEPALIVE_TIMEOUT_SECONDS=TIMEOUT,
        JUDGE_BODY_TIMEOUT_SECONDS=TIMEOUT,
    )
    process = ServerProcess(env, tmp_path, "serve")
    await process.start()
    try:
        yield process
    finally:
        await process.stop()


async def _trickle(
    writer: asyncio.StreamWriter, pieces: list[bytes], interval: float = 0.1
) -> None:
    with contextlib.suppress(ConnectionError):
        for piece in pieces:
            writer.write(piece)
            await writer.drain()
            await asyncio.sleep(interval)


async def _until_closed(reader: asyncio.StreamReader) -> bytes:
    """Everything the server sends until it closes the connection. A server closing on bytes
    it has not read resets the connection, and what it sent before may be lost then."""
    async with asyncio.timeout(CAP_SECONDS):
        try:
            return await reader.read()
        except ConnectionResetError:
            return b"(reset)"


async def test_a_client_trickling_its_headers_is_cut_off(server: ServerProcess) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    # One header's value a byte at a time: under aiohttp's limits on a header's length and
    # on their number, which would otherwise end the request (with a 400) before any timeout.
    head = [b"POST /api/github/webhooks HTTP/1.1\r\nHost: x\r\nX-Slow: "]
    sending = asyncio.create_task(_trickle(writer, head + [b"a"] * int(CAP_SECONDS * 20)))
    try:
        assert await _until_closed(reader) in (b"", b"(reset)")
    finally:
        sending.cancel()
        writer.close()


async def test_a_client_trickling_its_body_is_answered_408_and_cut_off(
    server: ServerProcess,
) -> None:
    body = example("push", "payload")
    headers = webhook_headers("push", body) | {"Content-Length": str(len(body)), "Host": "x"}
    head = f"POST {PATH} HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in headers.items())
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    pieces = [head.encode() + b"\r\n"] + [body[n : n + 1] for n in range(len(body))]
    # A byte every two seconds: none is waiting unread when the server answers and closes,
    # so the connection ends cleanly and the answer arrives.
    sending = asyncio.create_task(_trickle(writer, pieces, interval=2.0))
    try:
        answer = await _until_closed(reader)
    finally:
        sending.cancel()
        writer.close()
    assert answer.startswith(b"HTTP/1.1 408 ")
    assert b"request body not received within 0.5 s" in answer
    assert "answered 408" in server.log_path.read_text()


async def test_an_idle_connection_is_closed_after_its_request(server: ServerProcess) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    try:
        answer = await _until_closed(reader)
    finally:
        writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert b"Connection: close" not in answer, "kept alive, then closed for idling"


async def test_deliveries_still_arrive_and_a_gzip_bomb_is_refused(server: ServerProcess) -> None:
    body = example("push", "payload")
    bomb = gzip.compress(b'{"pad": "' + b" " * (24 * 1024 * 1024) + b'"}', compresslevel=9)
    async with aiohttp.ClientSession() as session:
        url = server.base_url + PATH
        async with session.post(url, data=body, headers=webhook_headers("push", body)) as ok:
            assert ok.status == 202
        headers = webhook_headers("push", b"") | {"Content-Encoding": "gzip"}
        del headers["X-Hub-Signature-256"]
        async with session.post(url, data=bomb, headers=headers) as refused:
            assert refused.status == 415


async def test_a_handler_that_never_reads_its_slow_body_ends_quietly(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The deadline fails only reads of the body: a handler that answers without reading
    is left alone, and aiohttp, discarding the rest afterwards, meets the timeout quietly."""

    async def unread(request: web.Request) -> web.Response:
        await asyncio.sleep(0.5)
        return web.Response(text="answered")

    app = web.Application(middlewares=[body_deadline(0.1)])
    app.router.add_post("/", unread)
    caplog.set_level(logging.DEBUG, logger="aiohttp")
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        port = client.port
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"
        sending = asyncio.create_task(_trickle(writer, [head] + [b"x"] * 20, interval=2.0))
        try:
            answer = await _until_closed(reader)
        finally:
            sending.cancel()
            writer.close()
    assert answer.startswith(b"HTTP/1.1 200 ") and answer.endswith(b"answered")
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR] == []

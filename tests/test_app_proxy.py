"""The GitHub client's session honours HTTPS_PROXY, HTTP_PROXY and NO_PROXY, as the LLM
client does: a real forward proxy on loopback sees the App's GitHub requests, unless
NO_PROXY names GitHub's host."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.app import SERVICES
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.github_server import FakeGitHub

PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY")


class LoopbackProxy:
    """An HTTP forward proxy for plain-HTTP targets: reads a request in absolute form
    (`GET http://host:port/path HTTP/1.1`), records its line, sends it on in origin form
    with `Connection: close`, and relays the answer."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line, _, rest = head.decode("latin-1").partition("\r\n")
            method, target, version = line.split(" ")
            self.requests.append(f"{method} {target}")
            _, _, tail = target.partition("://")
            hostport, _, path = tail.partition("/")
            host, _, port = hostport.partition(":")
            headers = [
                h
                for h in rest.split("\r\n")
                if h
                and not h.lower().startswith(("connection:", "proxy-connection:", "keep-alive:"))
            ]
            up_reader, up_writer = await asyncio.open_connection(host, int(port or 80))
            forwarded = "\r\n".join([f"{method} /{path} {version}", *headers, "Connection: close"])
            up_writer.write(forwarded.encode("latin-1") + b"\r\n\r\n")
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
            up_writer.close()
        finally:
            writer.close()


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    with contextlib.suppress(ConnectionError, OSError):
        while data := await source.read(65536):
            sink.write(data)
            await sink.drain()
    with contextlib.suppress(ConnectionError, OSError, RuntimeError):
        sink.write_eof()


@pytest.fixture
async def proxy(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LoopbackProxy]:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    server = LoopbackProxy()
    await server.start()
    monkeypatch.setenv("HTTP_PROXY", server.url)
    monkeypatch.setenv("HTTPS_PROXY", server.url)
    try:
        yield server
    finally:
        await server.close()


async def test_the_github_client_goes_through_the_proxy(
    tmp_path: Path, github_keypair: Any, fake_github: FakeGitHub, proxy: LoopbackProxy
) -> None:
    settings = make_settings(
        github_keypair.private_pem, tmp_path, GITHUB_API_URL=fake_github.base_url
    )
    async with running_app(settings, start_workers=False) as (_, app):
        github = app[SERVICES].services.github
        assert (await github.app_client().getitem("/app"))["slug"] == "judge-bot"
    assert proxy.requests == [f"GET {fake_github.base_url}/app"]


async def test_no_proxy_names_a_host_reached_directly(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    proxy: LoopbackProxy,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    settings = make_settings(
        github_keypair.private_pem, tmp_path, GITHUB_API_URL=fake_github.base_url
    )
    async with running_app(settings, start_workers=False) as (_, app):
        github = app[SERVICES].services.github
        assert (await github.app_client().getitem("/app"))["slug"] == "judge-bot"
    assert proxy.requests == []

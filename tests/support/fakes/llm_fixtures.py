"""Pytest fixtures for the fake LLM servers (see tests/support/fakes/llm_server.py), the
httpx client a provider under test shares, and raw loopback servers for odd answers."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from tests.support.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer
from tests.support.provider_helpers import Handler


@pytest.fixture
async def fake_llm() -> AsyncIterator[FakeOpenAIServer]:
    """A running OpenAI-compatible chat-completions server on loopback (key `test-key`)."""
    server = FakeOpenAIServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def fake_anthropic() -> AsyncIterator[FakeAnthropicServer]:
    """A running Anthropic Messages server on loopback (key `test-key`)."""
    server = FakeAnthropicServer()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """The one httpx client a provider under test is given, closed after the test."""
    async with httpx.AsyncClient() as client:
        yield client


# ---- odd servers: a raw aiohttp app on loopback answering whatever a test needs ----------


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Start an app whose every request goes to `handler`; returns its base URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", handler)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        port = runner.addresses[0][1]
        return f"http://127.0.0.1:{port}"

    yield start
    for runner in runners:
        await runner.cleanup()

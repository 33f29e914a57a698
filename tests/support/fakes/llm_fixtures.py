"""Pytest fixtures for the fake LLM servers (see tests/fakes/llm_server.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer


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

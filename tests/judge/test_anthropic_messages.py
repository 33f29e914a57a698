"""The Anthropic Messages provider (`bot/judge/providers/anthropic_messages.py`) against servers on
loopback: where the key, version and system prompt go, its errors, and odd content blocks."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from bot.judge.providers.anthropic_messages import AnthropicMessagesProvider
from bot.judge.providers.http import (
    EmptyAnswer,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
)
from tests.support.fakes.llm_server import FakeAnthropicServer, Reply
from tests.support.provider_helpers import MESSAGES, SCHEMA, Handler


async def test_anthropic_protocol(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    """System prompt goes in `system`, key in x-api-key, version header present."""
    fake_anthropic.script("claude-x", Reply.json({"semantic": 5}))
    provider = AnthropicMessagesProvider(http, fake_anthropic.base_url, "test-key")
    result = await provider.complete(
        model="claude-x", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert json.loads(result.text) == {"semantic": 5}
    assert result.provider == "anthropic"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    (request,) = fake_anthropic.requests
    assert request.headers["x-api-key"] == "test-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in request.headers
    assert request.system.startswith("You are a judge.")
    assert "JSON Schema" in request.system
    assert request.messages == [{"role": "user", "content": "Judge this: hello"}]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.empty(), EmptyAnswer),
        (Reply.rate_limited(), ProviderRateLimited),
        (Reply.http(529, "Overloaded"), ProviderHTTPError),
    ],
)
async def test_anthropic_errors(
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    reply: Reply,
    error: type[Exception],
) -> None:
    fake_anthropic.script("claude-x", reply)
    provider = AnthropicMessagesProvider(http, fake_anthropic.base_url, "test-key")
    with pytest.raises(error):
        await provider.complete(model="claude-x", messages=MESSAGES, time_limit=5)


async def test_anthropic_timeout(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    fake_anthropic.script("claude-x", Reply.slow(5.0))
    provider = AnthropicMessagesProvider(http, fake_anthropic.base_url, "test-key")
    with pytest.raises(ProviderTimeout):
        await provider.complete(model="claude-x", messages=MESSAGES, time_limit=0.2)


async def test_anthropic_null_text_block_is_skipped(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    """A text block whose text is null (or not a string) counts as no text, not a crash."""

    async def handler(request: web.Request) -> web.Response:
        blocks = [
            {"type": "text", "text": None},
            {"type": "text", "text": 5},
            {"type": "text", "text": '{"semantic": 4}'},
        ]
        return web.json_response({"content": blocks})

    provider = AnthropicMessagesProvider(http, await raw_server(handler), "k")
    result = await provider.complete(model="claude-x", messages=MESSAGES, time_limit=5)
    assert result.text == '{"semantic": 4}'

    async def only_null(request: web.Request) -> web.Response:
        return web.json_response({"content": [{"type": "text", "text": None}]})

    provider = AnthropicMessagesProvider(http, await raw_server(only_null), "k")
    with pytest.raises(EmptyAnswer):
        await provider.complete(model="claude-x", messages=MESSAGES, time_limit=5)

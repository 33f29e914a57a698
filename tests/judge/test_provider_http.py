"""What both wire protocols share (`bot/judge/providers/http.py`): every way a call goes wrong
becomes one `ProviderError` subclass, and the API key never reaches a message, a chained
exception or a repr."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from bot.judge.providers import make_provider
from bot.judge.providers.http import (
    EmptyAnswer,
    MalformedResponse,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.providers.openai_chat import OpenAIChatProvider
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.provider_helpers import MESSAGES, Handler


@pytest.mark.parametrize(
    ("reply", "error", "status"),
    [
        (Reply.rate_limited(), ProviderRateLimited, 429),
        (Reply.server_error(), ProviderHTTPError, 500),
        (Reply.http(503, "overloaded"), ProviderHTTPError, 503),
    ],
)
async def test_openai_http_errors(
    fake_llm: FakeOpenAIServer,
    http: httpx.AsyncClient,
    reply: Reply,
    error: type[ProviderHTTPError],
    status: int,
) -> None:
    fake_llm.script("m1", reply)
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(error) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert info.value.status == status
    assert info.value.model == "m1"
    if status == 429:
        assert isinstance(info.value, ProviderRateLimited)
        assert info.value.retry_after == 20.0


async def test_wrong_key_is_401_and_key_never_in_message(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    provider = OpenAIChatProvider(http, fake_llm.base_url, "sk-secret-wrong-key-123")
    with pytest.raises(ProviderHTTPError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert info.value.status == 401
    assert "sk-secret-wrong-key-123" not in str(info.value)
    assert "sk-secret-wrong-key-123" not in info.value.detail
    assert "sk-secret-wrong-key-123" not in repr(provider)


async def test_openai_empty_answer(fake_llm: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_llm.script("m1", Reply.empty())
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(EmptyAnswer):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)


async def test_openai_timeout(fake_llm: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_llm.script("m1", Reply.slow(5.0))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(ProviderTimeout) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=0.2)
    assert "timed out" in str(info.value)


async def test_transport_error_when_nothing_listens(http: httpx.AsyncClient) -> None:
    server = FakeOpenAIServer()
    await server.start()
    base = server.base_url
    await server.close()
    provider = OpenAIChatProvider(http, base, "test-key")
    with pytest.raises(ProviderTransportError):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=2)


async def test_malformed_envelope(http: httpx.AsyncClient) -> None:
    """A 200 that is not the protocol's JSON envelope is a MalformedResponse."""

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, text="<html>proxy login</html>")

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        provider = OpenAIChatProvider(client, "http://proxy.invalid/v1", "k")
        with pytest.raises(MalformedResponse):
            await provider.complete(model="m1", messages=MESSAGES, time_limit=2)


async def test_undecodable_body_is_a_transport_error(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    """A body that claims gzip and is not: httpx.DecodingError, mapped."""

    async def handler(request: web.Request) -> web.Response:
        return web.Response(
            body=b"this is not gzip",
            headers={"Content-Encoding": "gzip", "Content-Type": "application/json"},
        )

    provider = OpenAIChatProvider(http, await raw_server(handler), "k")
    with pytest.raises(ProviderTransportError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert info.value.cause == "DecodingError"


async def test_deeply_nested_envelope_is_malformed(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(text="[" * 100_000, content_type="application/json")

    provider = OpenAIChatProvider(http, await raw_server(handler), "k")
    with pytest.raises(MalformedResponse):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)


async def test_invalid_base_url_is_a_transport_error(http: httpx.AsyncClient) -> None:
    provider = OpenAIChatProvider(http, "http://[::1", "k")
    with pytest.raises(ProviderTransportError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert info.value.cause == "InvalidURL"


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_non_ascii_key_is_a_transport_error_that_hides_the_key(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, kind: str
) -> None:
    """The header cannot be encoded; neither the message nor any chained exception may
    carry the key (UnicodeEncodeError quotes the whole header value)."""
    key = "sk-clé-secrète-0123456789"
    provider = make_provider(kind, http, fake_llm.base_url, key)
    with pytest.raises(ProviderTransportError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    exc = info.value
    assert exc.cause == "UnicodeEncodeError"
    assert exc.__cause__ is None and exc.__suppress_context__
    assert "clé" not in str(exc) and "secr" not in str(exc)
    assert fake_llm.requests == []

"""Providers against real fake servers on loopback (OpenAI and Anthropic protocols)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.judge.providers import (
    AnthropicMessagesProvider,
    EmptyAnswer,
    MalformedResponse,
    OpenAIChatProvider,
    OutputMode,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
    StructuredOutputMemory,
    error_info,
    make_provider,
)
from tests.support.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer, Reply

SCHEMA = {
    "type": "object",
    "properties": {"semantic": {"type": "integer"}},
    "required": ["semantic"],
}
MESSAGES = [
    {"role": "system", "content": "You are a judge. Answer in JSON."},
    {"role": "user", "content": "Judge this: hello"},
]


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_openai_returns_text_tokens_and_latency(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A plain answer comes back with the usage the server reported."""
    fake_llm.script("m1", Reply.json({"semantic": 4}))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    result = await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert json.loads(result.text) == {"semantic": 4}
    assert result.model == "m1" and result.provider == "openai"
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.latency_ms >= 0
    (request,) = fake_llm.requests
    assert request.headers["authorization"] == "Bearer test-key"
    assert request.messages == MESSAGES
    assert request.response_format is None


async def test_openai_requests_json_schema_output(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("m1", Reply.json({"semantic": 4}))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    await provider.complete(
        model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA, schema_name="content"
    )
    fmt = fake_llm.requests[0].response_format
    assert fmt == {
        "type": "json_schema",
        "json_schema": {"name": "content", "schema": SCHEMA, "strict": False},
    }


async def test_openai_falls_back_to_json_object_and_remembers(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A server without json_schema support gets json_object, from then on at once."""
    fake_llm.accepted_formats = {"json_object"}
    fake_llm.script("m1", Reply.json({"semantic": 4}), Reply.json({"semantic": 3}))
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key", memory=memory)
    first = await provider.complete(
        model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert json.loads(first.text) == {"semantic": 4}
    formats = [r.response_format for r in fake_llm.requests]
    assert [f["type"] if f else None for f in formats] == ["json_schema", "json_object"]
    # json_object mode carries the schema in the system prompt instead.
    assert '"semantic"' in fake_llm.requests[1].system
    assert memory.get(fake_llm.base_url) is OutputMode.JSON_OBJECT
    # A second provider sharing the memory skips the failed attempt.
    other = OpenAIChatProvider(http, fake_llm.base_url, "test-key", memory=memory)
    await other.complete(model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    assert fake_llm.requests[2].response_format == {"type": "json_object"}
    assert len(fake_llm.requests) == 3


async def test_openai_falls_back_to_plain_instructions(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.accepted_formats = set()
    fake_llm.script("m1", Reply.json({"semantic": 2}))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    result = await provider.complete(
        model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert json.loads(result.text) == {"semantic": 2}
    assert [r.response_format for r in fake_llm.requests][-1] is None
    assert len(fake_llm.requests) == 3
    assert "JSON Schema" in fake_llm.requests[-1].system
    assert provider.memory.get(fake_llm.base_url) is OutputMode.INSTRUCTIONS


async def test_scripted_unsupported_400_also_triggers_fallback(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("m1", Reply.structured_output_unsupported(), Reply.json({"semantic": 5}))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    result = await provider.complete(
        model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert json.loads(result.text) == {"semantic": 5}
    assert fake_llm.requests[1].response_format == {"type": "json_object"}


async def test_unrelated_400_is_not_a_fallback(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("m1", Reply.http(400, "max_tokens is too large"))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(ProviderHTTPError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    assert info.value.status == 400
    assert len(fake_llm.requests) == 1


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


async def test_make_provider(http: httpx.AsyncClient) -> None:
    assert isinstance(make_provider("openai", http, "http://x/v1", "k"), OpenAIChatProvider)
    assert isinstance(make_provider("anthropic", http, "http://x", "k"), AnthropicMessagesProvider)
    with pytest.raises(ValueError, match="unknown LLM provider"):
        make_provider("cohere", http, "http://x", "k")


async def test_reasoning_model_parameters_are_negotiated(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A model that refuses temperature and max_tokens gets neither, and the provider
    remembers that for the model on this endpoint."""
    fake_llm.refused_params = {"temperature", "max_tokens"}
    fake_llm.script("o-model", Reply.json({"semantic": 4}), Reply.json({"semantic": 5}))
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key", memory=memory)
    result = await provider.complete(
        model="o-model", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert json.loads(result.text) == {"semantic": 4}
    last = fake_llm.requests[-1].body
    assert "temperature" not in last and "max_tokens" not in last
    assert last["max_completion_tokens"] == 1024
    assert last["response_format"]["type"] == "json_schema"
    sent = len(fake_llm.requests)
    await provider.complete(model="o-model", messages=MESSAGES, time_limit=5)
    assert len(fake_llm.requests) == sent + 1
    # Other models on the same endpoint keep their parameters.
    fake_llm.refused_params = set()
    fake_llm.script("plain", Reply.json({"semantic": 3}))
    await provider.complete(model="plain", messages=MESSAGES, time_limit=5)
    assert fake_llm.requests[-1].body["temperature"] == 0


async def test_refused_parameter_is_dropped_only_once(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A server that keeps refusing ends in an HTTP error, not a loop."""
    fake_llm.script(
        "m1",
        Reply.http(400, "Unsupported value: 'temperature' does not support 0"),
        Reply.http(400, "Unsupported value: 'temperature' does not support 0"),
    )
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(ProviderHTTPError):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert len(fake_llm.requests) == 2
    assert "temperature" not in fake_llm.requests[1].body


# ---- odd servers: a raw aiohttp app on loopback answering whatever a test needs ----------

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@pytest.fixture
async def raw_server() -> AsyncIterator[Callable[[Handler], Awaitable[str]]]:
    """Start an app whose every POST goes to `handler`; returns its base URL."""
    runners: list[web.AppRunner] = []

    async def start(handler: Handler) -> str:
        app = web.Application()
        app.router.add_post("/{tail:.*}", handler)
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


async def test_openai_content_as_a_list_of_parts(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    async def handler(request: web.Request) -> web.Response:
        parts: list[dict[str, str | None]] = [
            {"type": "text", "text": '{"semantic": '},
            {"type": "text", "text": "4}"},
        ]
        parts.append({"type": "text", "text": None})
        return web.json_response({"choices": [{"message": {"content": parts}}]})

    provider = OpenAIChatProvider(http, await raw_server(handler), "k")
    result = await provider.complete(model="m1", messages=MESSAGES, time_limit=5)
    assert result.text == '{"semantic": 4}'


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


def _echoing_400(error: dict[str, Any]) -> Handler:
    """A proxy that answers 400 with the error AND an echo of the whole request, where
    `response_format`, `temperature` and `max_tokens` always appear."""

    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        return web.json_response({"error": error, "request": body}, status=400)

    return handler


async def test_an_echoed_request_does_not_trigger_fallbacks(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    error = {"message": "This model's maximum context length is exceeded", "param": "messages"}
    base = await raw_server(_echoing_400(error))
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, base, "k", memory=memory)
    with pytest.raises(ProviderHTTPError) as info:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    assert info.value.status == 400
    assert memory.modes == {} and memory.refused.get((base, "m1"), set()) == set()


@pytest.mark.parametrize(
    ("error", "falls_back"),
    [
        ({"message": "not supported", "param": "response_format"}, True),
        ({"message": "bad value", "param": "response_format.json_schema"}, True),
        ({"message": "response_format is weird", "param": "messages"}, False),
        ({"message": "Invalid parameter: 'response_format' is not supported"}, True),
        ({"message": "context length exceeded"}, False),
    ],
)
async def test_fallback_follows_the_named_parameter(
    raw_server: Callable[[Handler], Awaitable[str]],
    http: httpx.AsyncClient,
    error: dict[str, Any],
    falls_back: bool,
) -> None:
    """`param` decides when the server sets it; else the error message does."""
    base = await raw_server(_echoing_400(error))
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, base, "k", memory=memory)
    with pytest.raises(ProviderHTTPError):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    expected = OutputMode.INSTRUCTIONS if falls_back else OutputMode.JSON_SCHEMA
    assert memory.get(base) is expected


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        ('{"error": {"message": "m", "param": "temperature"}}', "temperature", "m"),
        ('{"error": "plain words"}', None, "plain words"),
        ('{"object": "error", "message": "vllm says", "param": null}', None, "vllm says"),
        (
            '{"detail": [{"loc": ["body", "response_format"], "msg": "extra"}]}',
            None,
            "body.response_format: extra",
        ),
        ('{"detail": "fastapi says"}', None, "fastapi says"),
        ("not json at all", None, "not json at all"),
        ("[1, 2]", None, ""),
        ('{"error": 7}', None, ""),
    ],
)
def test_error_info_shapes(body: str, param: str | None, message: str) -> None:
    info = error_info(httpx.Response(400, text=body))
    assert (info.param, info.message) == (param, message)

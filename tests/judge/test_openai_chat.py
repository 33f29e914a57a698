"""The OpenAI chat-completions provider (`bot/judge/providers/openai_chat.py`) against servers on
loopback: the request it sends, the structured-output fallback and what it remembers,
negotiated sampling parameters, and how it reads a server's error."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.judge.providers.http import ContextOverflow, ProviderHTTPError
from bot.judge.providers.openai_chat import (
    OpenAIChatProvider,
    OutputMode,
    StructuredOutputMemory,
    error_info,
)
from bot.judge.providers.overflow import Overflow
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.provider_helpers import MESSAGES, SCHEMA, Handler


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


async def test_vllm_newer_overflow_is_no_refused_max_tokens(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    """Newer vLLM's overflow names 'max_tokens'; it is the prompt that is refused: it
    raises as an overflow, and max_tokens is not dropped for the process' life."""
    said = (
        "'max_tokens' or 'max_completion_tokens' is too large: 1024. This model's maximum "
        "context length is 2048 tokens and your request has 1500 input tokens "
        "(1024 > 2048 - 1500)."
    )
    bodies: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        bodies.append(await request.json())
        error = {"object": "error", "message": said, "type": "BadRequestError", "code": 400}
        return web.json_response(error, status=400)

    memory = StructuredOutputMemory()
    base = await raw_server(handler)
    provider = OpenAIChatProvider(http, base, "", memory=memory)
    with pytest.raises(ContextOverflow) as info:
        await provider.complete(model="m", messages=MESSAGES, time_limit=5, max_tokens=1024)
    assert info.value.overflow == Overflow(1500, 2048)
    assert len(bodies) == 1 and bodies[0]["max_tokens"] == 1024
    assert memory.refused.get((base, "m"), set()) == set()


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

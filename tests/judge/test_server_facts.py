"""bot/judge/providers/server_facts.py: a model's context as llama.cpp, vLLM and Ollama say
it, against small aiohttp servers on loopback that answer in their shapes."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web
from pydantic import SecretStr

from bot.judge.providers.server_facts import (
    LEAST_CONTEXT,
    LLAMA_MODELS,
    LLAMA_PROPS,
    OLLAMA_DEFAULT_CONTEXT,
    OLLAMA_SHOW,
    REFUSAL,
    SETTING,
    UNKNOWN,
    VLLM_MODELS,
    ContextFacts,
    ContextMemory,
    discover_context_tokens,
    private_host,
)
from bot.judge.records import Tier
from bot.judge.settings import MIN_CONTEXT_TOKENS, Endpoint, JudgeSettings

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Server:
    """A loopback server answering only the routes a test gives it (404 elsewhere)."""

    routes: dict[tuple[str, str], Handler]
    seen: list[tuple[str, str, str | None]] = field(default_factory=list)
    runner: web.AppRunner | None = None
    port: int = 0

    async def start(self) -> None:
        app = web.Application()
        for (method, path), handler in self.routes.items():
            app.router.add_route(method, path, self._recording(handler))
        app.router.add_route("*", "/{tail:.*}", self._recording(self._missing))
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    def _recording(self, handler: Handler) -> Handler:
        async def record(request: web.Request) -> web.StreamResponse:
            self.seen.append((request.method, request.path, request.headers.get("Authorization")))
            return await handler(request)

        return record

    @staticmethod
    async def _missing(request: web.Request) -> web.StreamResponse:
        return web.json_response({"error": "Not Found"}, status=404)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
async def serve() -> AsyncIterator[Callable[..., Awaitable[Server]]]:
    started: list[Server] = []

    async def start(routes: dict[tuple[str, str], Handler]) -> Server:
        server = Server(routes)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        assert server.runner is not None
        await server.runner.cleanup()


def answer(payload: Any, status: int = 200) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.json_response(payload, status=status)

    return handler


def endpoint(base_url: str, **fields: Any) -> Endpoint:
    values: dict[str, Any] = {
        "model": "qwen2.5:0.5b",
        "family": "alibaba",
        "provider": "openai",
        "base_url": base_url,
        "api_key": None,
        "timeout": 10.0,
        "max_chars": 4000,
    }
    return Endpoint(**{**values, **fields})


# What llama-server answers at GET /props (tools/server/server.cpp `handle_props`), cut to
# the fields read, and what older builds put at the top level.
LLAMA_PROPS_BODY = {
    "default_generation_settings": {"id": 0, "n_ctx": 4096, "params": {"n_predict": -1}},
    "total_slots": 1,
    "model_path": "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    "chat_template": "{{ bos_token }}",
}
# llama-server's GET /v1/models: one model, whatever it was asked for, with its metadata.
LLAMA_MODELS_BODY = {
    "object": "list",
    "data": [
        {
            "id": "qwen2.5-0.5b-instruct-q4_k_m.gguf",
            "object": "model",
            "created": 1700000000,
            "owned_by": "llamacpp",
            "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768, "n_params": 1},
        }
    ],
}
# vLLM's GET /v1/models (vllm/entrypoints/openai/protocol.py `ModelCard`).
VLLM_MODEL: dict[str, Any] = {
    "id": "qwen2.5:0.5b",
    "object": "model",
    "created": 1700000000,
    "owned_by": "vllm",
    "root": "Qwen/Qwen2.5-0.5B-Instruct",
    "parent": None,
    "max_model_len": 8192,
    "permission": [],
}
VLLM_MODELS_BODY = {"object": "list", "data": [VLLM_MODEL]}
# Ollama's GET /v1/models lists names only; POST /api/show has the model's details.
OLLAMA_MODELS_BODY = {
    "object": "list",
    "data": [{"id": "qwen2.5:0.5b", "object": "model", "created": 1, "owned_by": "library"}],
}


def ollama_show(parameters: str | None, context_length: int | None = 32768) -> dict[str, Any]:
    info: dict[str, Any] = {"general.architecture": "qwen2", "general.parameter_count": 494}
    if context_length is not None:
        info["qwen2.context_length"] = context_length
    body: dict[str, Any] = {
        "license": "Apache License 2.0 ...",
        "modelfile": "FROM qwen2.5:0.5b",
        "template": "{{ .System }}",
        "details": {"family": "qwen2", "parameter_size": "494.03M"},
        "model_info": info,
    }
    if parameters is not None:
        body["parameters"] = parameters
    return body


async def test_llama_server_props_give_the_context_it_runs(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve(
        {("GET", "/props"): answer(LLAMA_PROPS_BODY), ("GET", "/v1/models"): answer({})}
    )
    facts = await discover_context_tokens(http, endpoint(server.base_url))
    assert facts == ContextFacts(4096, LLAMA_PROPS)
    assert [path for _, path, _ in server.seen] == ["/props"]


async def test_an_older_llama_server_puts_n_ctx_at_the_top(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({("GET", "/props"): answer({"n_ctx": 2048, "total_slots": 1})})
    assert await discover_context_tokens(http, endpoint(server.base_url)) == ContextFacts(
        2048, LLAMA_PROPS
    )


async def test_llama_models_metadata_when_props_are_not_served(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    """Behind a proxy that forwards /v1 only: the trained context, said to be one."""
    server = await serve({("GET", "/v1/models"): answer(LLAMA_MODELS_BODY)})
    facts = await discover_context_tokens(http, endpoint(server.base_url))
    assert (facts.tokens, facts.source) == (32768, LLAMA_MODELS)
    assert "trained" in facts.detail


async def test_vllm_max_model_len(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({("GET", "/v1/models"): answer(VLLM_MODELS_BODY)})
    facts = await discover_context_tokens(http, endpoint(server.base_url, api_key=SecretStr("k")))
    assert facts == ContextFacts(8192, VLLM_MODELS)
    # The key goes to its own host's paths only, as configured.
    assert ("GET", "/v1/models", "Bearer k") in server.seen
    assert ("GET", "/props", "Bearer k") in server.seen


async def test_a_model_list_without_this_model_says_so(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    two = {"data": [{**VLLM_MODEL, "id": name} for name in ("a", "b")]}
    server = await serve({("GET", "/v1/models"): answer(two)})
    facts = await discover_context_tokens(http, endpoint(server.base_url))
    assert facts.tokens is None and facts.source == UNKNOWN
    assert "/models: qwen2.5:0.5b not listed" in facts.detail


@pytest.mark.parametrize(
    ("show", "expected"),
    [
        # The Modelfile's num_ctx is what the server runs the model with.
        (ollama_show("stop <|im_end|>\nnum_ctx                        8192"), 8192),
        # Without one: the server's default, never more than the model takes.
        (ollama_show("stop <|im_end|>"), OLLAMA_DEFAULT_CONTEXT),
        (ollama_show(None, context_length=2048), 2048),
    ],
    ids=["num_ctx", "server-default", "model-smaller-than-default"],
)
async def test_ollama_show(
    serve: Callable[..., Awaitable[Server]],
    http: httpx.AsyncClient,
    show: dict[str, Any],
    expected: int,
) -> None:
    asked: list[Any] = []

    async def api_show(request: web.Request) -> web.StreamResponse:
        asked.append(await request.json())
        return web.json_response(show)

    server = await serve(
        {("GET", "/v1/models"): answer(OLLAMA_MODELS_BODY), ("POST", "/api/show"): api_show}
    )
    facts = await discover_context_tokens(http, endpoint(server.base_url))
    assert (facts.tokens, facts.source) == (expected, OLLAMA_SHOW)
    assert asked == [{"model": "qwen2.5:0.5b"}]


@pytest.mark.parametrize(
    ("routes", "detail"),
    [
        ({}, "/props: HTTP 404; /models: HTTP 404; /api/show: HTTP 404"),
        (
            {
                ("GET", "/props"): answer({"total_slots": 1}),
                ("GET", "/v1/models"): answer({"data": [{"id": "qwen2.5:0.5b"}]}),
                ("POST", "/api/show"): answer(ollama_show(None, context_length=None)),
            },
            "/props: no n_ctx; /models: no context size; /api/show: no context_length",
        ),
        (
            {
                ("GET", "/props"): answer([1, 2]),
                ("GET", "/v1/models"): answer(["x"]),
                ("POST", "/api/show"): answer([]),
            },
            "/props: no n_ctx; /models: qwen2.5:0.5b not listed; /api/show: not an object",
        ),
        (
            {("POST", "/api/show"): answer({"details": {}, "parameters": 7})},
            "/props: HTTP 404; /models: HTTP 404; /api/show: no context_length",
        ),
    ],
    ids=["nothing-served", "nothing-said", "not-objects", "no-model-info"],
)
async def test_a_server_that_says_nothing_leaves_it_unknown_with_why(
    serve: Callable[..., Awaitable[Server]],
    http: httpx.AsyncClient,
    routes: dict[tuple[str, str], Handler],
    detail: str,
) -> None:
    server = await serve(routes)
    assert await discover_context_tokens(http, endpoint(server.base_url)) == ContextFacts(
        None, UNKNOWN, detail
    )


async def test_answers_that_are_not_json_or_too_long(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    async def text(request: web.Request) -> web.StreamResponse:
        return web.Response(text="<html>hello</html>")

    async def huge(request: web.Request) -> web.StreamResponse:
        return web.Response(body=b'{"data": "' + b"x" * (3 * 1024 * 1024) + b'"}')

    server = await serve({("GET", "/props"): text, ("GET", "/v1/models"): huge})
    facts = await discover_context_tokens(http, endpoint(server.base_url))
    assert facts.detail.startswith("/props: not JSON; /models: answer too long; ")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_server_ends_discovery_at_once(http: httpx.AsyncClient) -> None:
    facts = await discover_context_tokens(http, endpoint(f"http://127.0.0.1:{_closed_port()}/v1"))
    assert facts == ContextFacts(None, UNKNOWN, "server unreachable (ConnectError)")


async def test_a_key_that_cannot_be_a_header_is_no_crash(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({})
    facts = await discover_context_tokens(
        http, endpoint(server.base_url, api_key=SecretStr("sk-clé-secrète"))
    )
    assert facts == ContextFacts(None, UNKNOWN, "server unreachable (UnicodeEncodeError)")
    assert "clé" not in json.dumps(facts.__dict__)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"context_tokens": 8192}, ContextFacts(8192, SETTING)),
        (
            {"provider": "anthropic"},
            ContextFacts(None, UNKNOWN, "the anthropic provider reports no context"),
        ),
        (
            {"provider": "claude-cli", "base_url": "claude"},
            ContextFacts(None, UNKNOWN, "the claude-cli provider reports no context"),
        ),
        (
            {"base_url": "https://api.openai.com/v1/"},
            ContextFacts(None, UNKNOWN, "a hosted API reports no context"),
        ),
        (
            # OpenRouter, Groq, ...: never sent the key on three guesses
            {"base_url": "https://openrouter.ai/api/v1", "api_key": SecretStr("sk-or-k")},
            ContextFacts(None, UNKNOWN, "a hosted API (a key, a public host) is not asked"),
        ),
    ],
    ids=["setting", "anthropic", "cli", "hosted", "hosted-with-a-key"],
)
async def test_what_is_not_asked(
    http: httpx.AsyncClient, fields: dict[str, Any], expected: ContextFacts
) -> None:
    # A closed port: any request would end as unreachable, not as `expected`.
    base = {"base_url": f"http://127.0.0.1:{_closed_port()}/v1"}
    assert await discover_context_tokens(http, endpoint(**{**base, **fields})) == expected


def test_the_settings_give_each_tier_its_context() -> None:
    settings = JudgeSettings(
        llm_base_url="http://127.0.0.1:8080/v1",
        quick_model="qwen2.5:0.5b",
        deep_model="llama3.2:1b",
        alternate_models=["gemma3:1b"],
        context_tokens=4096,
        quick_context_tokens=2048,
    )
    tiers = settings.tiers()
    assert (tiers[Tier.QUICK].context_tokens, tiers[Tier.DEEP].context_tokens) == (2048, 4096)
    # An alternate's context is its server's: the global setting, never a seat's.
    assert settings.alternates(Tier.QUICK)[0].context_tokens == 4096
    assert (
        JudgeSettings(quick_model="m", llm_base_url="http://x/v1")
        .tiers()[Tier.QUICK]
        .context_tokens
        is None
    )


def test_a_context_too_small_to_judge_in_is_refused() -> None:
    with pytest.raises(ValueError, match="context_tokens"):
        JudgeSettings(context_tokens=100)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_memory_asks_once_then_again_after_a_while(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({("GET", "/props"): answer(LLAMA_PROPS_BODY)})
    clock = Clock()
    memory = ContextMemory(clock=clock)
    seat = endpoint(server.base_url)
    for _ in range(3):
        assert (await memory.context_of(http, seat)).tokens == 4096
    assert len(server.seen) == 1
    clock.now += memory.reprobe_after
    await memory.context_of(http, seat)
    assert len(server.seen) == 2


async def test_memory_asks_again_sooner_after_finding_nothing(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({})
    clock = Clock()
    memory = ContextMemory(clock=clock)
    seat = endpoint(server.base_url)
    assert (await memory.context_of(http, seat)).tokens is None
    asked = len(server.seen)
    clock.now += memory.retry_unknown_after - 1
    await memory.context_of(http, seat)
    assert len(server.seen) == asked
    clock.now += 1
    await memory.context_of(http, seat)
    assert len(server.seen) == 2 * asked


async def test_what_a_server_said_refusing_a_prompt_wins_over_the_setting(
    http: httpx.AsyncClient,
) -> None:
    clock = Clock()
    memory = ContextMemory(clock=clock)
    seat = endpoint(f"http://127.0.0.1:{_closed_port()}/v1/", context_tokens=8192)
    assert await memory.context_of(http, seat) == ContextFacts(8192, SETTING)
    memory.learn(seat.base_url, seat.model, 4096)
    assert await memory.context_of(http, seat) == ContextFacts(4096, REFUSAL)
    clock.now += memory.reprobe_after
    assert await memory.context_of(http, seat) == ContextFacts(8192, SETTING)


async def test_a_context_under_the_least_a_judge_runs_in_is_not_learned(
    http: httpx.AsyncClient,
) -> None:
    """Any number in a refusal could be misread as the context: one under the floor the
    settings have would shrink every prompt for an hour, so it is not believed."""
    memory = ContextMemory(clock=Clock())
    seat = endpoint(f"http://127.0.0.1:{_closed_port()}/v1/", context_tokens=8192)
    memory.learn(seat.base_url, seat.model, LEAST_CONTEXT - 1)
    assert await memory.context_of(http, seat) == ContextFacts(8192, SETTING)
    memory.learn(seat.base_url, seat.model, LEAST_CONTEXT)
    assert await memory.context_of(http, seat) == ContextFacts(LEAST_CONTEXT, REFUSAL)
    assert LEAST_CONTEXT == MIN_CONTEXT_TOKENS


@pytest.mark.parametrize(
    ("base_url", "private"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://localhost:11434/v1", True),
        ("http://10.0.0.7:8000/v1", True),
        ("http://192.168.1.20:8000/v1", True),
        ("http://169.254.1.1/v1", True),
        ("http://ollama:11434/v1", True),  # a container's name
        ("http://gpu-box.local:8000/v1", True),
        ("http://vllm.internal/v1", True),
        ("https://openrouter.ai/api/v1", False),
        ("https://api.groq.com/openai/v1", False),
        ("http://8.8.8.8/v1", False),
        ("", False),
    ],
)
def test_private_host(base_url: str, private: bool) -> None:
    assert private_host(base_url) is private


async def test_a_private_host_with_a_key_is_asked(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    server = await serve({("GET", "/props"): answer({"n_ctx": 4096})})
    seat = endpoint(server.base_url, api_key=SecretStr("k"))
    assert await discover_context_tokens(http, seat) == ContextFacts(4096, LLAMA_PROPS)


async def test_the_whole_discovery_takes_one_request_time(
    serve: Callable[..., Awaitable[Server]], http: httpx.AsyncClient
) -> None:
    """Each step answers within its time limit, all three together do not: discovery
    ends at the first limit (a judgment's wall clock starts after it)."""

    async def slow(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(0.2)
        return web.json_response({"error": "Not Found"}, status=404)

    routes = {("GET", "/props"): slow, ("GET", "/v1/models"): slow, ("POST", "/api/show"): slow}
    server = await serve(routes)
    started = time.monotonic()
    facts = await discover_context_tokens(http, endpoint(server.base_url, timeout=0.3))
    assert time.monotonic() - started < 0.5
    assert facts == ContextFacts(None, UNKNOWN, "/props: HTTP 404; no answer within 0.3s")

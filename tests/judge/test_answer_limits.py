"""What a provider may send back is bounded (`answer_limit` in bot/judge/providers/http.py).

Real loopback servers (the fake LLM servers, raw apps for odd bodies) and a stand-in CLI
send more than the limit: whole, streamed without a Content-Length, compressed, as an
error. Each is refused as a provider error, and a judgment whose judge floods fails open.
"""

from __future__ import annotations

import asyncio
import dataclasses
import gzip
import json
import sys
import tracemalloc
import zlib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.seating import build_panel
from bot.judge.providers import (
    MalformedResponse,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTransportError,
    make_provider,
)
from bot.judge.providers.http import _DeflateInflater, answer_limit
from bot.judge.records import JudgedFile, TaskSpec, Verdict
from bot.judge.settings import JudgeSettings
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer, Reply
from tests.support.provider_helpers import MESSAGES, SCHEMA, Handler

LIMIT = answer_limit(1024)
"""The limit at the default output-token limit, which every call here uses."""
FLOOD = 4 * LIMIT
ANSWER = {"semantic": 5}
ACCEPT = {
    "scores": {"semantic": 5, "pragmatic": 5, "syntactic": 5},
    "verdict": "accept",
    "reasoning": "clear and actionable",
    "improvements": [],
}


def _server(
    kind: str, fake_llm: FakeOpenAIServer, fake_anthropic: FakeAnthropicServer
) -> FakeOpenAIServer | FakeAnthropicServer:
    return fake_llm if kind == "openai" else fake_anthropic


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_an_answer_past_the_limit_is_refused(
    fake_llm: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    kind: str,
    chunked: bool,
) -> None:
    """A valid envelope whose text runs on past the limit: refused, not read."""
    server = _server(kind, fake_llm, fake_anthropic)
    server.script("m1", Reply.flood_of(FLOOD, answer=ANSWER, chunked=chunked))
    provider = make_provider(kind, http, server.base_url, "test-key")
    with pytest.raises(MalformedResponse, match=f"answered more than {LIMIT} bytes") as caught:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    assert (caught.value.provider, caught.value.model) == (kind, "m1")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_limit_follows_the_output_token_limit(
    fake_llm: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    kind: str,
) -> None:
    """An answer just inside the limit is read whole; a tier allowed more tokens may
    send that much more."""
    server = _server(kind, fake_llm, fake_anthropic)
    server.script("m1", Reply.flood_of(LIMIT, answer=ANSWER, chunked=True))
    server.script("m2", Reply.flood_of(FLOOD, answer=ANSWER))
    provider = make_provider(kind, http, server.base_url, "test-key")
    inside = await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    assert json.loads(inside.text) == ANSWER and len(inside.text) > LIMIT - 1024
    more = await provider.complete(
        model="m2", messages=MESSAGES, time_limit=10, max_tokens=FLOOD // 32
    )
    assert json.loads(more.text) == ANSWER and len(more.text) > FLOOD - 1024


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_the_limit_has_a_ceiling(
    fake_llm: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    kind: str,
) -> None:
    """However many tokens a tier allows, the answer stays small enough to decode."""
    ceiling = answer_limit(10**9)
    assert ceiling == answer_limit(10**6) < 10**6 * 32
    server = _server(kind, fake_llm, fake_anthropic)
    server.script("m1", Reply.flood_of(2 * ceiling, answer=ANSWER, chunked=True))
    provider = make_provider(kind, http, server.base_url, "test-key")
    with pytest.raises(MalformedResponse, match=f"more than {ceiling} bytes"):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=10, max_tokens=10**6)


async def test_the_client_hangs_up_on_an_endless_stream(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A stream without a Content-Length far longer than any socket buffer: the provider
    stops reading at the limit and hangs up, so the server never gets to send it all."""
    size = 64 * 1024 * 1024
    fake_llm.script("m1", Reply.flood_of(size, answer=ANSWER, chunked=True))
    provider = make_provider("openai", http, fake_llm.base_url, "test-key")
    with pytest.raises(MalformedResponse):
        await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    (request,) = fake_llm.requests
    for _ in range(200):
        if request.ended:
            break
        await asyncio.sleep(0.05)
    assert request.ended and request.sent < size // 2


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_an_error_past_the_limit_names_nothing(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, chunked: bool
) -> None:
    """A 400 about response_format that runs on past the limit is not read to its end:
    it is an HTTP error, not a reason to try another output mode."""
    unsupported = Reply(
        "status",
        status=400,
        message="response_format json_schema is not supported",
        param="response_format",
        flood=FLOOD,
        chunked=chunked,
    )
    fake_llm.script("m1", unsupported, Reply.json(ANSWER))
    provider = make_provider("openai", http, fake_llm.base_url, "test-key")
    with pytest.raises(ProviderHTTPError) as caught:
        await provider.complete(
            model="m1", messages=MESSAGES, time_limit=10, response_schema=SCHEMA
        )
    assert caught.value.status == 400
    assert caught.value.detail.startswith('{"error": {"message": "response_format')
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_rate_limit_past_the_limit_keeps_its_retry_after(
    fake_llm: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    kind: str,
) -> None:
    server = _server(kind, fake_llm, fake_anthropic)
    server.script("m1", dataclasses.replace(Reply.rate_limited(), flood=FLOOD, chunked=True))
    provider = make_provider(kind, http, server.base_url, "test-key")
    with pytest.raises(ProviderRateLimited) as caught:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    assert caught.value.retry_after == 20.0
    assert "Rate limit reached" in caught.value.detail and len(caught.value.detail) <= 300


async def test_an_error_echoing_a_long_request_is_still_read(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    """Some proxies echo the request in an error; an error may be that much longer than an
    answer, so the 400 about response_format is still understood."""
    seen: list[dict[str, Any]] = []

    async def handler(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append(body)
        if body.get("response_format", {}).get("type") == "json_schema":
            error = {"message": "not supported", "param": "response_format"}
            return web.json_response({"error": error, "echo": body}, status=400)
        message = {"role": "assistant", "content": json.dumps(ANSWER)}
        return web.json_response({"choices": [{"message": message}]})

    long_prompt = [MESSAGES[0], {"role": "user", "content": "x" * (2 * LIMIT)}]
    provider = make_provider("openai", http, await raw_server(handler), "k")
    completion = await provider.complete(
        model="m1", messages=long_prompt, time_limit=10, response_schema=SCHEMA
    )
    assert json.loads(completion.text) == ANSWER
    assert [b["response_format"]["type"] for b in seen] == ["json_schema", "json_object"]


@pytest.mark.parametrize(
    ("encoding", "pack"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data, wbits=-zlib.MAX_WBITS)),  # raw
        ("identity", bytes),
    ],
)
async def test_a_compressed_answer_is_read(
    raw_server: Callable[[Handler], Awaitable[str]],
    http: httpx.AsyncClient,
    encoding: str,
    pack: Callable[[bytes], bytes],
) -> None:
    """The encodings asked for are inflated here, in pieces that arrive split."""
    seen: list[str] = []
    text = json.dumps(ANSWER) + " " * (LIMIT // 2)
    envelope = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})

    async def handler(request: web.Request) -> web.StreamResponse:
        seen.append(request.headers["Accept-Encoding"])
        headers = {"Content-Encoding": encoding, "Content-Type": "application/json"}
        response = web.StreamResponse(headers=headers)
        await response.prepare(request)
        packed = pack(envelope.encode())
        for start in range(0, len(packed), 100):
            await response.write(packed[start : start + 100])
        await response.write_eof()
        return response

    provider = make_provider("openai", http, await raw_server(handler), "k")
    completion = await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    assert completion.text == text
    assert seen == ["gzip, deflate"]


async def test_an_encoding_not_asked_for_is_a_transport_error(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    async def handler(request: web.Request) -> web.Response:
        return web.Response(body=b"\x1b\x00", headers={"Content-Encoding": "br"})

    provider = make_provider("openai", http, await raw_server(handler), "k")
    with pytest.raises(ProviderTransportError) as caught:
        await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
    assert caught.value.cause == "DecodingError"


async def test_a_compressed_answer_is_inflated_only_to_the_limit(
    raw_server: Callable[[Handler], Awaitable[str]], http: httpx.AsyncClient
) -> None:
    """64 KiB of gzip that inflate to 64 MiB: refused at the limit, and never inflated
    much past it (inflating a whole read at once would hold all 64 MiB)."""
    text = json.dumps(ANSWER) + " " * (64 * 1024 * 1024)
    envelope = json.dumps({"choices": [{"message": {"role": "assistant", "content": text}}]})
    packed = gzip.compress(envelope.encode())
    del text, envelope
    assert len(packed) < 128 * 1024

    async def handler(request: web.Request) -> web.Response:
        headers = {"Content-Encoding": "gzip", "Content-Type": "application/json"}
        return web.Response(body=packed, headers=headers)

    provider = make_provider("openai", http, await raw_server(handler), "k")
    tracemalloc.start()
    try:
        with pytest.raises(MalformedResponse, match="more than"):
            await provider.complete(model="m1", messages=MESSAGES, time_limit=10)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024


# ---- a judgment whose judge floods fails open ------------------------------------------


def _request() -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id="issue-7", description="Write the report", acceptance="Clear"),
        files=[JudgedFile(path="docs/report.md", content="# Report\n\nAll good.\n")],
        scope="acme/widgets",
    )


async def _judge(settings: JudgeSettings, http: httpx.AsyncClient, storage: SqliteStorage) -> Any:
    return await JudgeEngine(settings, build_panel(settings, http), storage).judge(_request())


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
async def test_a_flooding_judge_leaves_the_judgment_undetermined(
    fake_llm: FakeOpenAIServer,
    fake_anthropic: FakeAnthropicServer,
    http: httpx.AsyncClient,
    sqlite_storage: SqliteStorage,
    kind: str,
) -> None:
    """Both attempts flood with an accepting answer: the round fails open, never accepts."""
    server = _server(kind, fake_llm, fake_anthropic)
    flood = Reply.flood_of(FLOOD, answer=ACCEPT, chunked=True)
    server.script("judge-model", flood, flood)
    settings = JudgeSettings(
        llm_provider=kind,
        llm_base_url=server.base_url,
        llm_api_key="test-key",
        quick_model="judge-model",
        quick_timeout=10.0,
    )
    record = await _judge(settings, http, sqlite_storage)
    assert record.final_decision is Verdict.UNDETERMINED
    (call,) = record.calls
    assert call.attempts == 2 and call.error == "malformed response envelope"


async def test_a_flooding_cli_leaves_the_judgment_undetermined(
    tmp_path: Path, http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> None:
    """A `claude` that prints an accepting envelope padded far past the limit and then
    holds its output open: killed at the limit, the round fails open."""
    envelope = json.dumps({"type": "result", "is_error": False, "result": json.dumps(ACCEPT)})
    script = tmp_path / "claude"
    script.write_text(
        f"#!{sys.executable}\n"
        "import sys, time\n"
        f"sys.stdout.write({envelope[:-1]!r})\n"
        f"sys.stdout.write(' ' * {FLOOD})\n"
        "sys.stdout.write('}')\n"
        "sys.stdout.flush()\n"
        "time.sleep(60)\n"
    )
    script.chmod(0o755)
    settings = JudgeSettings(
        llm_provider="claude-cli",
        claude_cli=str(script),
        quick_model="sonnet",
        quick_timeout=10.0,
    )
    record = await _judge(settings, http, sqlite_storage)
    assert record.final_decision is Verdict.UNDETERMINED
    (call,) = record.calls
    assert call.attempts == 2 and call.error == "malformed response envelope"


@pytest.mark.parametrize("wbits", [zlib.MAX_WBITS, -zlib.MAX_WBITS], ids=["zlib", "raw"])
@pytest.mark.parametrize("piece", [1, 2, 3, 100])
def test_deflate_is_read_with_or_without_its_header_in_any_pieces(wbits: int, piece: int) -> None:
    data = b'{"a": "' + b"x" * 5000 + b'"}'
    packed = zlib.compress(data, wbits=wbits)
    inflate = _DeflateInflater().inflate
    pieces = (packed[start : start + piece] for start in range(0, len(packed), piece))
    assert b"".join(inflate(chunk, 10**6) for chunk in pieces) == data

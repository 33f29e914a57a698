"""Local OpenAI-compatible servers with their defaults (issue 27, defects 1 and 2): the
structured-output negotiation, what is remembered and for how long, the per-tier format
setting, and the server's own words in the record, the log, the CLI's table and the
check run.

The fakes answer as the real servers do (tests/support/fakes/llm_server.py; each
factory's docstring says from what source):

* llama-cpp-python's server (`llama_cpp_python`): `json_schema` refused with HTTP 500
  `{"error": {"message": "[{'type': 'literal_error', 'loc': ('body', 'response_format',
  'type'), ...}]", "type": "internal_server_error", "param": null, "code": null}}` (its
  `RouteErrorHandler` turns FastAPI's validation error of `response_format.type:
  Literal["text", "json_object"]` into a 500); a prompt over `n_ctx` (2048) refused 400
  with OpenAI's "This model's maximum context length is ..." and `code:
  context_length_exceeded`; the answer capped at the room left in the context.
* llama.cpp's `llama-server` (`llama_server`): `json_schema` and `json_object` taken; an
  unknown type refused 400 `{"error": {"code": 400, "message": "response_format type must
  be one of \\"text\\" or \\"json_object\\", but got: ...", "type":
  "invalid_request_error"}}`; a prompt over the context refused 400 `{"error": {"code":
  400, "message": "request (N tokens) exceeds the available context size (M tokens), try
  increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx":
  M}}`.
* Ollama (`ollama`): both formats taken, unknown ones ignored; a long prompt cut
  silently; errors in OpenAI's shape.
* `finish_reason: length` when the answer stops at `max_tokens` (or the context's end),
  as all three (and OpenAI, vLLM) report it.
* FastAPI's own 422 (`{"detail": [{"loc": ["body", "response_format", ...], "msg": ...}]}`)
  for servers built on it without an error handler.

The small model behind them is tests/judge/local_servers.py's `SmallModel`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bot.judge.engine import JudgeEngine
from bot.judge.engine.rounds import GiveUp, attempt_outcome
from bot.judge.engine.seating import build_panel
from bot.judge.providers import (
    OutputMode,
    ProviderHTTPError,
    StructuredOutputMemory,
)
from bot.judge.providers.http import SERVER_MESSAGE_LIMIT, excerpt
from bot.judge.providers.openai_chat import REPROBE_SECONDS, OpenAIChatProvider
from bot.judge.record_table import render_table
from bot.judge.records import Tier, Verdict
from bot.judge.settings import JudgeSettings
from bot.judging.group_sections import group_details
from tests.judge.local_servers import (
    DOCUMENTS,
    QUICK,
    SmallModel,
    request_for,
    settings_for,
    trial,
)
from tests.support.fakes.llm_server import (
    FakeOpenAIServer,
    Reply,
    ServerBehaviour,
    llama_cpp_python,
    llama_server,
    ollama,
)
from tests.support.provider_helpers import MESSAGES, SCHEMA

ANSWER = {
    "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
    "reasoning": "Clear and complete.",
    "improvements": [],
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.fixture
async def local() -> Any:
    """Start a fake with a given server behaviour; closed after the test."""
    started: list[FakeOpenAIServer] = []

    async def start(behaviour: ServerBehaviour) -> FakeOpenAIServer:
        server = FakeOpenAIServer(behaviour=behaviour)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        await server.close()


def _types(server: FakeOpenAIServer) -> list[str | None]:
    return [(r.response_format or {}).get("type") for r in server.requests]


# ---- defect 1: negotiation ------------------------------------------------------------


async def test_llama_cpp_python_500_naming_the_format_falls_back(
    local: Any, http: httpx.AsyncClient
) -> None:
    """Its 500 names `response_format`: json_object next, and the answer comes back."""
    server = await local(llama_cpp_python())
    server.script("m", Reply.json(ANSWER))
    provider = OpenAIChatProvider(http, server.base_url, "test-key")
    result = await provider.complete(
        model="m", messages=MESSAGES, time_limit=5, response_schema=SCHEMA
    )
    assert result.text and not result.cut_off
    assert _types(server) == ["json_schema", "json_object"]
    assert provider.memory.get(server.base_url, "m") is OutputMode.JSON_OBJECT


async def test_fastapi_422_naming_the_format_falls_back(http: httpx.AsyncClient) -> None:
    server = FakeOpenAIServer()
    detail = {"detail": [{"loc": ["body", "response_format", "type"], "msg": "bad type"}]}
    server.script("m", Reply.error_body(422, detail), Reply.json(ANSWER))
    await server.start()
    try:
        provider = OpenAIChatProvider(http, server.base_url, "test-key")
        await provider.complete(model="m", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    finally:
        await server.close()
    assert _types(server) == ["json_schema", "json_object"]


async def test_a_500_that_names_nothing_is_an_error(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("m", Reply.server_error())
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key", memory=memory)
    with pytest.raises(ProviderHTTPError):
        await provider.complete(model="m", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    assert len(fake_llm.requests) == 1 and memory.modes == {}


async def test_what_worked_is_remembered_per_endpoint_and_model(
    local: Any, http: httpx.AsyncClient
) -> None:
    """One model's fallback does not step another model on the same server down."""
    server = await local(llama_server())
    server.accepted_formats = set()
    server.script("old", Reply.error_body(400, {"error": {"message": "json_schema unsupported"}}))
    server.script("old", Reply.json(ANSWER))
    server.script("new", Reply.json(ANSWER))
    memory = StructuredOutputMemory()
    provider = OpenAIChatProvider(http, server.base_url, "test-key", memory=memory)
    await provider.complete(model="old", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    await provider.complete(model="new", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    assert _types(server) == ["json_schema", "json_object", "json_schema"]
    assert memory.get(server.base_url, "old") is OutputMode.JSON_OBJECT
    assert memory.get(server.base_url, "new") is OutputMode.JSON_SCHEMA


async def test_the_stronger_format_is_tried_again_after_a_while(
    local: Any, http: httpx.AsyncClient
) -> None:
    now = [1000.0]
    memory = StructuredOutputMemory(clock=lambda: now[0])
    server = await local(llama_cpp_python())
    server.script("m", Reply.json(ANSWER), Reply.json(ANSWER), Reply.json(ANSWER))
    provider = OpenAIChatProvider(http, server.base_url, "test-key", memory=memory)
    for elapsed in (0.0, REPROBE_SECONDS - 1, REPROBE_SECONDS):
        now[0] = 1000.0 + elapsed
        await provider.complete(model="m", messages=MESSAGES, time_limit=5, response_schema=SCHEMA)
    # learnt at once, kept within the hour, probed again (and learnt again) after it
    assert _types(server) == [
        "json_schema",
        "json_object",
        "json_object",
        "json_schema",
        "json_object",
    ]


@pytest.mark.parametrize(
    ("setting", "sent"),
    [("json_object", ["json_object"]), ("prompt", [None]), ("json_schema", ["json_schema"])],
)
async def test_a_fixed_format_is_sent_as_set(
    local: Any, http: httpx.AsyncClient, setting: str, sent: list[str | None]
) -> None:
    """JUDGE_QUICK_RESPONSE_FORMAT: no probing; a refusal of the fixed format is the
    HTTP error it is (llama-cpp-python refuses json_schema), never a silent switch."""
    server = await local(llama_cpp_python())
    server.script(QUICK, Reply.json(ANSWER))
    settings = settings_for(server, quick_response_format=setting)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    record = await engine.judge(request_for("good", 800, 1))
    assert _types(server) == sent
    if setting == "json_schema":
        assert record.final_decision is Verdict.UNDETERMINED
        assert record.calls[0].error and "response_format" in record.calls[0].error
    else:
        assert record.final_decision is Verdict.ACCEPT


def test_the_format_settings_resolve_per_tier(monkeypatch: pytest.MonkeyPatch) -> None:
    assert JudgeSettings().response_format == "auto"
    monkeypatch.setenv("JUDGE_RESPONSE_FORMAT", "json_object")
    monkeypatch.setenv("JUDGE_DEEP_RESPONSE_FORMAT", "prompt")
    settings = JudgeSettings(
        llm_base_url="http://127.0.0.1:8080/v1", quick_model="a", deep_model="b"
    )
    assert settings.response_format_of(Tier.QUICK) == "json_object"
    assert settings.response_format_of(Tier.DEEP) == "prompt"
    tiers = settings.tiers()
    assert (tiers[Tier.QUICK].response_format, tiers[Tier.DEEP].response_format) == (
        "json_object",
        "prompt",
    )
    monkeypatch.setenv("JUDGE_QUICK_RESPONSE_FORMAT", "yaml")
    with pytest.raises(ValueError, match="quick_response_format"):
        JudgeSettings()


# ---- defect 2: the server's own words -------------------------------------------------


REFUSED = "messages: the conversation must end with a user message"


async def test_the_servers_message_reaches_record_log_table_and_check_run(
    local: Any, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    server = await local(llama_server(context_tokens=300))
    server.responder = SmallModel(server.behaviour)
    settings = settings_for(server)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    with caplog.at_level(logging.WARNING):
        record = await engine.judge(request_for("good", 2600, 1))
    assert record.final_decision is Verdict.UNDETERMINED
    (round_,) = record.previous_rounds
    assert round_.error is not None
    assert "HTTP 400 from openai: request (" in round_.error
    assert "exceeds the available context size (300 tokens)" in round_.error
    assert record.calls[0].error == round_.error
    assert round_.error in caplog.text
    assert round_.error in render_table(record)  # what `judge-bot judge` prints
    check_run = "\n".join(group_details(record, ""))
    assert "The call failed: " in check_run and "HTTP 400 from openai: request (" in check_run


def test_the_message_is_scrubbed_short_and_one_line() -> None:
    message = "bad key sk-test-key-123 for\n  ghp_" + "a1B2" * 9 + " in request " + "x" * 500
    said = excerpt(message, "sk-test-key-123")
    assert "sk-test-key-123" not in said and "ghp_" not in said
    assert "\n" not in said and len(said) <= SERVER_MESSAGE_LIMIT and said.endswith("…")


async def test_http_errors_keep_the_message_of_the_error_object_only(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """A proxy that echoes the request beside its error: the excerpt is the message."""
    echo = {"error": {"message": REFUSED}, "request": {"messages": MESSAGES}}
    fake_llm.script("m", Reply.error_body(400, echo))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(ProviderHTTPError) as caught:
        await provider.complete(model="m", messages=MESSAGES, time_limit=5)
    assert caught.value.server_message == REFUSED
    outcome = attempt_outcome(caught.value, timeout=5)
    # the engine may name the kind of failure before it (its own words), never the echo
    assert isinstance(outcome, GiveUp) and outcome.warn
    assert outcome.error.endswith(f"HTTP 400 from openai: {REFUSED}")
    assert all(m["content"] not in outcome.error for m in MESSAGES)


# ---- the measure: three servers with their defaults ----------------------------------


@pytest.mark.parametrize(
    ("make", "parsed"),
    [
        # The 6,000-character change does not fit llama-cpp-python's 2,048-token context
        # (issue 27, defect 3, not fitted here): its round says so in the server's words.
        (llama_cpp_python, 4),
        (llama_server, 5),
        (ollama, 5),
    ],
    ids=["llama-cpp-python", "llama-server", "ollama"],
)
async def test_judgments_end_parsed_against_local_servers(
    make: Callable[[], ServerBehaviour], parsed: int
) -> None:
    result = await trial(make())
    assert (result.parsed, result.judged) == (parsed, len(DOCUMENTS))
    assert result.cut == 0
    assert result.answers and max(result.answers) < 300
    for error in result.errors:
        assert error.startswith("HTTP 400 from openai: This model's maximum context length")

"""The doctor's probe (bot/judge/doctor/probe.py) in this process, against the fake LLM
servers, the three local servers as they answer with their defaults, a stand-in CLI and a
port nobody listens on: what each seat's one tiny judgment finds."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.judge.doctor import background
from bot.judge.doctor.background import NOT_MEASURED, ProbeBoard, probe_ctx, probe_forever
from bot.judge.doctor.probe import PROBE_FILE, probe_settings
from bot.judge.doctor.report import ALTERNATE, DoctorReport, ProbeOutcome
from bot.judge.providers import StructuredOutputMemory
from bot.judge.settings import JudgeSettings
from tests.support.fakes.llm_server import (
    FakeAnthropicServer,
    FakeOpenAIServer,
    Reply,
    llama_cpp_python,
)
from tests.support.fakes.local_servers import (
    LlamaCppPythonServer,
    LlamaServer,
    LocalServer,
    OllamaServer,
)
from tests.support.server_process import free_port

KEY = "sk-doctor-SECRET-0042"
ACCEPT = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5}, "reasoning": "clear"}
QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


def settings_for(base_url: str, **values: Any) -> JudgeSettings:
    fields: dict[str, Any] = {
        "llm_base_url": base_url,
        "llm_api_key": KEY,
        "quick_model": QUICK,
        "deep_model": DEEP,
        "quick_timeout": 5,
        "deep_timeout": 5,
    }
    fields.update(values)
    return JudgeSettings(_env_file=None, **fields)


@pytest.fixture
def llm(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_llm.api_key = KEY
    fake_llm.default = Reply.json(ACCEPT)
    return fake_llm


async def test_each_tier_is_sent_the_engines_judgment_and_reported(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    report = await probe_settings(settings_for(llm.base_url, deep_max_output_tokens=700), http)
    assert report.ok and report.exit_code == 0 and report.warnings == ()
    quick, deep = report.probes
    assert [(p.seat, p.model, p.provider, p.host) for p in report.probes] == [
        ("quick", QUICK, "openai", llm.origin.removeprefix("http://")),
        ("deep", DEEP, "openai", llm.origin.removeprefix("http://")),
    ]
    assert quick.outcome is ProbeOutcome.ANSWERED and quick.message == ""
    assert (quick.response_format, quick.format_fixed) == ("json_schema", False)
    assert quick.latency_ms > 0 and quick.prompt_tokens > 100 and quick.completion_tokens > 0
    assert (quick.max_output_tokens, deep.max_output_tokens) == (1024, 700)
    # The fake has no context endpoints: unknown, with what each step got.
    assert quick.context.tokens is None and "/props: HTTP 404" in quick.context.detail
    sent = llm.requests_for(QUICK)[0]
    assert sent.response_format is not None and sent.response_format["type"] == "json_schema"
    assert "independent judge" in sent.system and PROBE_FILE.path in sent.user_text
    assert sent.body["max_tokens"] == 1024 and llm.requests_for(DEEP)[0].body["max_tokens"] == 700
    assert KEY not in json.dumps(report.as_json()) + report.render_text()


async def test_a_server_refusing_json_schema_is_asked_again_and_what_worked_is_remembered(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    """llama-cpp-python answers 500 to json_schema; the negotiation steps down to
    json_object, and a memory kept across probes (the server's) starts there next time."""
    llm.behaviour = llama_cpp_python(context_tokens=8192)
    memory = StructuredOutputMemory()
    settings = settings_for(llm.base_url, deep_model=None)
    first = await probe_settings(settings, http, memory=memory)
    assert first.ok and first.probes[0].response_format == "json_object"
    assert [r.response_format["type"] for r in llm.requests if r.response_format] == [
        "json_schema",
        "json_object",
    ]
    again = await probe_settings(settings, http, memory=memory)
    assert again.probes[0].response_format == "json_object" and len(llm.requests) == 3


async def test_a_format_set_for_the_tier_is_used_and_marked(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(llm.base_url, quick_response_format="prompt")
    quick, deep = (await probe_settings(settings, http)).probes
    assert (quick.response_format, quick.format_fixed) == ("prompt", True)
    assert (deep.response_format, deep.format_fixed) == ("json_schema", False)
    assert llm.requests_for(QUICK)[0].response_format is None


async def test_a_refused_connection_is_unreachable_and_says_so(http: httpx.AsyncClient) -> None:
    report = await probe_settings(settings_for(f"http://127.0.0.1:{free_port()}/v1"), http)
    assert not report.ok and report.exit_code == 1
    for probe in report.probes:
        assert (probe.outcome, probe.message) == (ProbeOutcome.UNREACHABLE, "connection refused")
        assert probe.response_format is None and not probe.reachable
        assert probe.context.tokens is None and "unreachable" in probe.context.detail


async def test_a_500_keeps_the_servers_message_without_the_key(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    said = f"model crashed while loading (key {KEY} rejected)"
    llm.script(QUICK, Reply.http(500, said))
    quick, deep = (await probe_settings(settings_for(llm.base_url), http)).probes
    assert (quick.outcome, quick.status) == (ProbeOutcome.REFUSED, 500)
    assert quick.server_message == "model crashed while loading (key *** rejected)"
    assert quick.message == "HTTP 500 from openai: " + quick.server_message
    assert deep.ok


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            Reply.cut_off('{"scores": {"semantic": 4, "prag'),
            "answer cut at the output-token limit (1024 tokens): raise "
            "JUDGE_QUICK_MAX_OUTPUT_TOKENS",
        ),
        (Reply.garbage(), "unparseable answer: "),
        (Reply.empty(), f"openai model {QUICK} returned an empty answer"),
    ],
    ids=["cut off", "unparseable", "empty"],
)
async def test_an_answer_that_is_no_judgment_is_reachable_but_not_ok(
    llm: FakeOpenAIServer, http: httpx.AsyncClient, reply: Reply, message: str
) -> None:
    llm.script(QUICK, reply)
    quick = (await probe_settings(settings_for(llm.base_url), http)).probes[0]
    assert quick.outcome is ProbeOutcome.UNUSABLE and quick.reachable and not quick.ok
    assert quick.message.startswith(message)


async def test_a_model_slower_than_its_timeout_times_out(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    llm.script(QUICK, Reply.slow(3, Reply.json(ACCEPT)))
    settings = settings_for(llm.base_url, quick_timeout=0.3)
    quick = (await probe_settings(settings, http)).probes[0]
    assert quick.outcome is ProbeOutcome.TIMED_OUT
    assert quick.message == "no answer within 0.3 s (JUDGE_QUICK_TIMEOUT)"
    assert 250 < quick.latency_ms < 2500


async def test_alternates_are_probed_once_each_and_marked(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(
        llm.base_url, alternate_models=["llama-3.3-70b", QUICK, "llama-3.3-70b"]
    )
    report = await probe_settings(settings, http)
    assert [(p.seat, p.model) for p in report.probes] == [
        ("quick", QUICK),
        ("deep", DEEP),
        (ALTERNATE, "llama-3.3-70b"),
    ]
    assert report.ok and len(llm.requests) == 3


async def test_two_tiers_that_are_one_model_are_warned_about(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(llm.base_url, deep_model=QUICK, deep_family="other")
    report = await probe_settings(settings, http)
    assert report.warnings == (
        f"the quick and deep judges are one model ({QUICK} at "
        f"{llm.origin.removeprefix('http://')}, declared families openai, other): their "
        "agreement is not independent",
    )


async def test_a_context_set_for_the_tier_is_reported_as_the_setting(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(llm.base_url, quick_context_tokens=8192)
    quick, deep = (await probe_settings(settings, http)).probes
    assert quick.context.describe() == "8192 (setting)"
    assert deep.context.tokens is None


async def test_the_anthropic_protocol_takes_the_schema_in_the_prompt(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    fake_anthropic.default = Reply.json(ACCEPT)
    settings = JudgeSettings(
        _env_file=None,
        llm_provider="anthropic",
        llm_base_url=fake_anthropic.base_url,
        llm_api_key="test-key",
        quick_model="claude-haiku-4-5",
    )
    (quick,) = (await probe_settings(settings, http)).probes
    assert (quick.outcome, quick.response_format) == (ProbeOutcome.ANSWERED, "prompt")
    assert quick.context.detail == "the anthropic provider reports no context"


def standin_claude(tmp_path: Path) -> str:
    """A `claude` that answers as `claude -p --output-format json --json-schema` does."""
    envelope = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "structured_output": ACCEPT,
        "usage": {"input_tokens": 700, "output_tokens": 40},
    }
    path = tmp_path / "claude"
    path.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stdin.read()\n"
        f"print({json.dumps(json.dumps(envelope))})\n"
    )
    path.chmod(0o755)
    return str(path)


async def test_a_cli_seat_is_probed_with_the_same_tiny_call(
    tmp_path: Path, llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(
        llm.base_url,
        deep_provider="claude-cli",
        deep_model="sonnet",
        claude_cli=standin_claude(tmp_path),
    )
    quick, deep = (await probe_settings(settings, http)).probes
    assert quick.ok and deep.ok
    assert (deep.provider, deep.host, deep.response_format) == (
        "claude-cli",
        "local claude",
        "json_schema",
    )
    assert (deep.prompt_tokens, deep.completion_tokens) == (700, 40)


async def test_a_cli_that_is_not_installed_is_unreachable(
    tmp_path: Path, llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    settings = settings_for(
        llm.base_url,
        deep_provider="opencode-cli",
        deep_model="opencode/kimi-k2.5-free",
        opencode_cli=str(tmp_path / "no-such-opencode"),
    )
    deep = (await probe_settings(settings, http)).probes[1]
    assert deep.outcome is ProbeOutcome.UNREACHABLE
    assert deep.message.startswith("opencode-cli could not start 'no-such-opencode'")


async def test_no_tier_configured_is_an_empty_report_that_is_not_ok(
    http: httpx.AsyncClient,
) -> None:
    report = await probe_settings(JudgeSettings(_env_file=None), http)
    assert report.probes == () and not report.ok


@pytest.mark.parametrize(
    ("server", "model", "fmt", "context"),
    [
        (LlamaCppPythonServer, "qwen2.5-0.5b", "json_object", "unknown"),
        (LlamaServer, "qwen2.5-0.5b", "json_schema", "4096 (llama.cpp /props)"),
        (OllamaServer, "qwen2.5:0.5b", "json_schema", "4096 (Ollama /api/show)"),
    ],
    ids=["llama-cpp-python", "llama-server", "ollama"],
)
async def test_the_local_servers_with_their_defaults(
    http: httpx.AsyncClient,
    server: Callable[[], LocalServer],
    model: str,
    fmt: str,
    context: str,
) -> None:
    async with server() as local:
        settings = JudgeSettings(
            _env_file=None, llm_base_url=local.base_url, quick_model=model, quick_timeout=10
        )
        (quick,) = (await probe_settings(settings, http)).probes
    assert quick.outcome is ProbeOutcome.ANSWERED, quick.message
    assert (quick.response_format, quick.context.describe()) == (fmt, context)


# ---- the server's background probe ---------------------------------------------------------


async def test_the_background_probe_repeats_with_one_memory_until_stopped(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    llm.behaviour = llama_cpp_python(context_tokens=8192)
    board = ProbeBoard(NOT_MEASURED)
    stop = asyncio.Event()
    settings = settings_for(llm.base_url, deep_model=None)
    task = asyncio.create_task(probe_forever(board, settings, http, stop, 0.05))
    async with asyncio.timeout(10):
        while len(llm.requests) < 3:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 5)
    asked = [r.response_format["type"] for r in llm.requests if r.response_format]
    assert asked[:3] == ["json_schema", "json_object", "json_object"]
    report = board.current()
    assert report is not None and report.probes[0].response_format == "json_object"


async def test_the_cleanup_context_probes_with_the_client_it_is_given_and_leaves_it_open(
    llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    board = ProbeBoard(NOT_MEASURED)
    lifetime = probe_ctx(board, settings_for(llm.base_url), interval=3600, client=http)(
        web.Application()
    )
    await anext(lifetime)
    async with asyncio.timeout(10):
        while board.current() is None:
            await asyncio.sleep(0.01)
    with pytest.raises(StopAsyncIteration):
        await anext(lifetime)
    assert not http.is_closed and len(llm.requests) == 2


async def test_a_probe_that_crashes_is_logged_and_the_next_round_runs(
    llm: FakeOpenAIServer,
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    rounds: list[int] = []

    async def flaky(*args: Any, **kwargs: Any) -> DoctorReport:
        rounds.append(len(rounds))
        if len(rounds) == 1:
            raise RuntimeError("a bug in the probe")
        return await probe_settings(*args, **kwargs)

    monkeypatch.setattr(background, "probe_settings", flaky)
    board = ProbeBoard(NOT_MEASURED)
    stop = asyncio.Event()
    task = asyncio.create_task(probe_forever(board, settings_for(llm.base_url), http, stop, 0.01))
    async with asyncio.timeout(10):
        while board.current() is None:
            await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(task, 5)
    assert rounds[:2] == [0, 1]
    assert "judge probe failed" in caplog.text and "a bug in the probe" in caplog.text

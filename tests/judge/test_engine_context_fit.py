"""Prompts fitted to each model's context (issue 27, defect 3), end to end: the engine
against small loopback servers that count, say and refuse as llama-cpp-python's server,
llama.cpp's `llama-server` and vLLM do, and the App's requests planned in windows a
judge reads whole.

Each server counts four characters a token (a tokenizer's count of English prose) over
the messages, and refuses a prompt past its context in its own words (bodies as in
tests/judge/test_overflow.py):

    llama-cpp-python  n_ctx 2048, says nothing of it beforehand (no /props, a model list
                      without sizes); a prompt of n_ctx tokens or more: 400 "Requested
                      tokens (N) exceed context window of 2048"
    llama-server      GET /props `default_generation_settings.n_ctx`; a prompt of n_ctx
                      or more: 400 `exceed_context_size_error` with n_prompt_tokens, n_ctx
    vLLM              GET /v1/models `max_model_len`; prompt + max_tokens past it: 400
                      "This model's maximum context length is M tokens. However, you
                      requested T tokens (N in the messages, C in the completion)..."
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from aiohttp import web

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.seating import build_panel
from bot.judge.records import JudgedFile, TaskSpec, Tier, Verdict
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.judge_requests import (
    JudgeInputs,
    fitted_window_budget,
    judge_requests,
    plan_request,
    window_budget,
)
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from bot.storage.sqlite import SqliteStorage

CHARS_PER_TOKEN = 4
QUICK, DEEP = "qwen2.5:0.5b", "llama3.2:1b"
ACCEPT = {
    "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
    "verdict": "accept",
    "reasoning": "Names the cause and the action.",
    "improvements": [],
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@dataclass
class Seen:
    """One chat request as the server counted it."""

    model: str
    prompt_tokens: int
    max_tokens: int
    refused: bool
    temperature: float | None = None


@dataclass
class LocalServer:
    """A chat-completions server of one `kind` with a context of `n_ctx` tokens."""

    kind: str
    n_ctx: int
    seen: list[Seen] = field(default_factory=list)
    answer: dict[str, Any] = field(default_factory=lambda: ACCEPT)
    runner: web.AppRunner | None = None
    port: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def start(self) -> None:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)
        if self.kind == "llama-server":
            app.router.add_get("/props", self._props)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self.runner.addresses[0][1])

    async def _props(self, request: web.Request) -> web.Response:
        return web.json_response({"default_generation_settings": {"n_ctx": self.n_ctx}})

    async def _models(self, request: web.Request) -> web.Response:
        entry: dict[str, Any] = {"id": "model", "object": "model", "owned_by": self.kind}
        if self.kind == "vllm":
            entry["max_model_len"] = self.n_ctx
        return web.json_response({"object": "list", "data": [entry]})

    def _refusal(self, prompt: int, limit: int) -> dict[str, Any] | None:
        if self.kind == "llama-cpp-python" and prompt >= self.n_ctx:
            message = f"Requested tokens ({prompt}) exceed context window of {self.n_ctx}"
            return {"error": {"message": message, "type": "invalid_request_error"}}
        if self.kind == "llama-server" and prompt >= self.n_ctx:
            message = (
                f"request ({prompt} tokens) exceeds the available context size "
                f"({self.n_ctx} tokens), try increasing it"
            )
            return {
                "error": {
                    "code": 400,
                    "message": message,
                    "type": "exceed_context_size_error",
                    "n_prompt_tokens": prompt,
                    "n_ctx": self.n_ctx,
                }
            }
        if self.kind == "vllm" and prompt + limit > self.n_ctx:
            message = (
                f"This model's maximum context length is {self.n_ctx} tokens. However, you "
                f"requested {prompt + limit} tokens ({prompt} in the messages, {limit} in the "
                "completion). Please reduce the length of the messages or completion."
            )
            return {"object": "error", "message": message, "type": "BadRequestError"}
        return None

    async def _chat(self, request: web.Request) -> web.Response:
        body = await request.json()
        text = "".join(str(m.get("content", "")) for m in body["messages"])
        prompt = len(text) // CHARS_PER_TOKEN
        limit = int(body.get("max_tokens", 0))
        refusal = self._refusal(prompt, limit)
        self.seen.append(
            Seen(body["model"], prompt, limit, refusal is not None, body.get("temperature"))
        )
        if refusal is not None:
            return web.json_response(refusal, status=400)
        answer = json.dumps(self.answer)
        return web.json_response(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
                "usage": {"prompt_tokens": prompt, "completion_tokens": len(answer) // 4},
            }
        )


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


@pytest.fixture
async def serve() -> AsyncIterator[Callable[[str, int], Awaitable[LocalServer]]]:
    started: list[LocalServer] = []

    async def start(kind: str, n_ctx: int) -> LocalServer:
        server = LocalServer(kind, n_ctx)
        await server.start()
        started.append(server)
        return server

    yield start
    for server in started:
        assert server.runner is not None
        await server.runner.cleanup()


def prose(chars: int) -> str:
    line = "Queue latency rose after the cache change; the rollback fixed p95 within a day.\n"
    return (line * (chars // len(line) + 1))[:chars]


def request(chars: int, path: str = "docs/report.md") -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id="t-1", description="Weekly report", acceptance="Names a cause"),
        files=[JudgedFile(path=path, content=prose(chars))],
        scope="local",
    )


def settings_for(server: LocalServer, **fields: Any) -> JudgeSettings:
    values: dict[str, Any] = {
        "llm_base_url": server.base_url,
        "quick_model": QUICK,
        "deep_model": DEEP,
        "throttle_per_hour": 1000,
        "daily_call_budget": None,
    }
    return JudgeSettings(**{**values, **fields})


async def test_llama_cpp_python_refusal_is_fitted_and_asked_again(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    """2,048 tokens, said only in its refusal: the quick judge is asked again with what fits,
    and the next judgment fits at once. (Before: "HTTP 400", undetermined.)"""
    server = await serve("llama-cpp-python", 2048)
    settings = settings_for(server, deep_model=None, quick_max_chars=6000)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    record = await engine.judge(request(6000))
    quick = record.previous_rounds[0]
    assert quick.judge_tier is Tier.QUICK and quick.verdict is Verdict.ACCEPT, quick.error
    assert [s.refused for s in server.seen[:2]] == [True, False]
    assert all(s.prompt_tokens < 2048 for s in server.seen if not s.refused)
    # What the judge saw is on the record: part of the file, the cut named.
    (cut,) = [t for t in record.truncation if t.tier is Tier.QUICK]
    assert (cut.path, cut.original_chars) == ("docs/report.md", 6000)
    assert 0 < cut.kept_chars < 6000
    assert record.calls[0].attempts == 2
    before = len(server.seen)
    await engine.judge(request(6100))
    assert not server.seen[before].refused  # the context was learned


async def test_the_setting_fits_the_first_call(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    server = await serve("llama-cpp-python", 2048)
    settings = settings_for(server, context_tokens=2048)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    record = await engine.judge(request(3800))
    assert record.previous_rounds[0].verdict is Verdict.ACCEPT
    assert not any(s.refused for s in server.seen)
    # The answer's limit is what the context leaves after the prompt.
    for seen in server.seen:
        assert seen.prompt_tokens + seen.max_tokens <= 2048


async def test_a_context_that_cannot_hold_the_prompt_says_so(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    server = await serve("llama-server", 1024)
    settings = settings_for(server, deep_model=None)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    record = await engine.judge(request(500))
    assert record.final_decision is Verdict.UNDETERMINED
    error = record.previous_rounds[0].error or ""
    assert error.startswith("context overflow: the prompt without the change takes about ")
    assert "1024 tokens (llama.cpp /props)" in error
    assert server.seen == []  # nothing sent that could not fit


async def test_vllm_prompt_and_answer_fit_max_model_len(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    """8,192 tokens and a 29,000-character file: no request passes the context, and the
    record says what the deep judge could read (before: vLLM's 400 for the deep call)."""
    server = await serve("vllm", 8192)
    engine = JudgeEngine(settings_for(server), build_panel(settings_for(server), http), None)
    record = await engine.judge(request(29000))
    assert not any(s.refused for s in server.seen)
    assert all(s.prompt_tokens + s.max_tokens <= 8192 for s in server.seen)
    assert [r.error for r in record.previous_rounds] == [None]
    # No judge reads it whole at this context, and the record says so and how much.
    assert record.mode == "partial-view"
    reason = record.reason or ""
    budget = int(reason.split("the largest judge budget is ")[1].split(" ")[0])
    assert 15000 < budget < 29000 and "(deep," in reason
    assert "fitted to its model's context of 8192 tokens (vLLM /v1/models)" in reason


async def test_an_overflow_without_numbers_halves_what_is_sent(
    http: httpx.AsyncClient,
) -> None:
    """Ollama's words carry no numbers: the retry sends half the files' budget."""
    sizes: list[int] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path.endswith("/chat/completions"):
            body = json.loads(request.content)
            sizes.append(sum(len(m["content"]) for m in body["messages"]))
            if len(sizes) == 1:
                error = {"message": "the input length exceeds the context length"}
                return httpx.Response(400, json={"error": error})
            return httpx.Response(
                200,
                json={
                    "choices": [
                        {"message": {"content": json.dumps(ACCEPT)}, "finish_reason": "stop"}
                    ]
                },
            )
        return httpx.Response(404, json={"error": "not found"})

    async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
        settings = JudgeSettings(llm_base_url="http://ollama:11434/v1", quick_model=QUICK)
        engine = JudgeEngine(settings, build_panel(settings, client), None)
        record = await engine.judge(request(3000))
    assert record.previous_rounds[0].verdict is Verdict.ACCEPT
    # The first call sent the whole file (3,000 of the 4,000 characters quick reads), the
    # retry half the budget.
    (cut,) = record.truncation
    assert (cut.original_chars, cut.kept_chars) == (3000, settings.quick_max_chars // 2)
    assert sizes[1] < sizes[0] - 900


def target() -> Target:
    return Target(
        repository="octo/repo",
        installation_id=1,
        head_sha="1" * 40,
        default_branch="main",
        task="octo/repo#1",
        trigger="pull_request",
        title="Weekly report",
    )


@pytest.mark.parametrize(("kind", "n_ctx"), [("llama-server", 4096), ("vllm", 8192)])
async def test_a_file_too_long_for_the_context_is_judged_in_windows_read_whole(
    serve: Callable[[str, int], Awaitable[LocalServer]],
    http: httpx.AsyncClient,
    kind: str,
    n_ctx: int,
    sqlite_storage: SqliteStorage,
) -> None:
    """The App plans its requests with the deciding judge's context: every window is read
    whole by the deep judge, nothing is refused, nothing is cut."""
    server = await serve(kind, n_ctx)
    settings = settings_for(server)
    engine = JudgeEngine(settings, build_panel(settings, http), sqlite_storage)
    inputs = JudgeInputs(
        files=[JudgedFile(path="docs/report.md", content=prose(29000))],
        commits=(),
        directives=("Keep it plain.",),
        sensitive=frozenset({"docs/report.md"}),  # deep reads every part
    )
    budget = fitted_window_budget(settings, await engine.tier_contexts())
    requests = judge_requests(target(), RepoConfig(), inputs, ResearchRules(), window_chars=budget)
    # Before: the deep tier's 32,000 characters planned one request, which no judge
    # reads whole at this context.
    planned = judge_requests(
        target(), RepoConfig(), inputs, ResearchRules(), window_chars=window_budget(settings)
    )
    assert len(planned) == 1 < len(requests)
    for one in requests:
        record = await engine.judge(one)
        assert record.final_decision is Verdict.ACCEPT, record.reason
        (piece,) = [p for p in record.context if p.kind == "file"]
        assert piece.sent[Tier.DEEP] == piece.chars
    assert not any(s.refused for s in server.seen)


async def test_one_request_split_for_the_context_is_read_whole_part_by_part(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    """What `judge-bot judge` sends (one request of all its files) split the same way: a
    26,000-character report at llama-server's 4,096 tokens, every part accepted by a
    judge that read it whole."""
    server = await serve("llama-server", 4096)
    settings = settings_for(server)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    budget = fitted_window_budget(settings, await engine.tier_contexts())
    small = request(900)
    assert [planned.request for planned in plan_request(small, budget)] == [small]
    parts = [planned.request for planned in plan_request(request(26000), budget)]
    assert len(parts) > 2
    for part in parts:
        assert part.task.directives[0].startswith("This request holds lines ")
        record = await engine.judge(part)
        assert record.final_decision is Verdict.ACCEPT, record.reason
        (piece,) = [p for p in record.context if p.kind == "file"]
        assert piece.chars in piece.sent.values()
    assert not any(s.refused for s in server.seen)


async def test_failed_calls_cost_no_budget(
    serve: Callable[[str, int], Awaitable[LocalServer]],
    http: httpx.AsyncClient,
    sqlite_storage: SqliteStorage,
) -> None:
    """Only calls a provider answered count against the day's calls, tokens and the
    hour's throttle (issue 27: "failed calls should not count against a budget")."""
    server = await serve("vllm", 8192)
    refused = JudgeSettings(
        llm_base_url="http://127.0.0.1:9/v1",  # nothing listens on the discard port
        quick_model=QUICK,
        throttle_per_hour=1,
        daily_call_budget=1,
    )
    engine = JudgeEngine(refused, build_panel(refused, http), sqlite_storage)
    for _ in range(3):
        record = await engine.judge(request(500))
        assert record.final_decision is Verdict.UNDETERMINED
        assert record.mode != "throttled" and "budget" not in (record.reason or "")
    answered = JudgeSettings(
        llm_base_url=server.base_url, quick_model=QUICK, throttle_per_hour=1, daily_call_budget=1
    )
    engine = JudgeEngine(answered, build_panel(answered, http), sqlite_storage)
    record = await engine.judge(request(500))
    assert record.previous_rounds[0].verdict is Verdict.ACCEPT
    assert (await engine.judge(request(501))).mode == "throttled"


async def test_tier_contexts(
    serve: Callable[[str, int], Awaitable[LocalServer]], http: httpx.AsyncClient
) -> None:
    server = await serve("llama-server", 4096)
    settings = settings_for(server, deep_context_tokens=2048)
    engine = JudgeEngine(settings, build_panel(settings, http), None)
    assert await engine.tier_contexts() == {Tier.QUICK: 4096, Tier.DEEP: 2048}
    unconfigured = JudgeEngine(JudgeSettings(), None, None)
    assert await unconfigured.tier_contexts() == {}


@pytest.mark.parametrize("tier_setting", [False, True])
async def test_temperature_and_timeout_per_tier(
    serve: Callable[[str, int], Awaitable[LocalServer]],
    http: httpx.AsyncClient,
    tier_setting: bool,
) -> None:
    server = await serve("vllm", 8192)
    fields: dict[str, Any] = {"temperature": 0.2, "timeout": 90.0}
    if tier_setting:
        fields.update(quick_temperature=0.7, quick_timeout=120.0)
    settings = settings_for(server, **fields)
    panel = build_panel(settings, http)
    assert panel.tiers[Tier.QUICK].temperature == (0.7 if tier_setting else 0.2)
    assert panel.tiers[Tier.DEEP].temperature == 0.2
    assert panel.tiers[Tier.QUICK].timeout == (120.0 if tier_setting else 90.0)
    assert panel.tiers[Tier.DEEP].timeout == 90.0
    engine = JudgeEngine(settings, panel, None)
    record = await engine.judge(request(500, path="docs/a.md"))
    assert record.previous_rounds[0].verdict is Verdict.ACCEPT
    assert [(s.model, s.temperature) for s in server.seen] == [
        (QUICK, 0.7 if tier_setting else 0.2)
    ]

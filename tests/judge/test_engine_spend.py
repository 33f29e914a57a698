"""What a failed call costs: a hosted API bills a call that timed out, failed on its side
(5xx) or answered garbled, so those count against the day's budgets and the hour's
throttle; failures the server never processed (a refused connection, a request refused
as such, a 429) cost nothing. Real fake LLM server on loopback, real SQLite."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.rounds import AttemptError, CutOffAnswer, NoRoomForFiles, billed
from bot.judge.engine.seating import build_panel
from bot.judge.providers import (
    ContextOverflow,
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.providers.overflow import Overflow
from bot.judge.records import JudgedFile, TaskSpec, Verdict
from bot.judge.rubrics.parsing import ParseError
from bot.judge.settings import JudgeSettings
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

QUICK = "gpt-5-nano"
ACCEPT = {
    "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
    "verdict": "accept",
    "reasoning": "fine",
    "improvements": [],
}
WHO = {"provider": "openai", "model": "m"}

BILLED: list[tuple[str, AttemptError, bool]] = [
    ("own-time-limit", TimeoutError(), True),
    ("provider-timeout", ProviderTimeout("x", **WHO), True),
    ("http-500", ProviderHTTPError("x", **WHO, status=500, detail=""), True),
    ("http-503", ProviderHTTPError("x", **WHO, status=503, detail=""), True),
    ("malformed", MalformedResponse("x", **WHO), True),
    ("empty", EmptyAnswer("x", **WHO), True),
    ("read-reset", ProviderTransportError("x", **WHO, cause="ReadError"), True),
    ("refused-connection", ProviderTransportError("x", **WHO, cause="ConnectError"), False),
    ("bad-url", ProviderTransportError("x", **WHO, cause="InvalidURL"), False),
    ("key-not-ascii", ProviderTransportError("x", **WHO, cause="UnicodeEncodeError"), False),
    ("http-400", ProviderHTTPError("x", **WHO, status=400, detail=""), False),
    ("http-401", ProviderHTTPError("x", **WHO, status=401, detail=""), False),
    (
        "overflow",
        ContextOverflow("x", **WHO, status=400, detail="", overflow=Overflow(None, None)),
        False,
    ),
    ("429", ProviderRateLimited("x", **WHO, status=429, detail="", retry_after=None), False),
    ("cli-failed", ProviderCommandError("x", **WHO, exit_code=1, detail=""), False),
    # counted as answered already (the completion came back), or never a call
    ("cut-off", CutOffAnswer(10), False),
    ("unparseable", ParseError("no JSON"), False),
    ("no-room", NoRoomForFiles(100, "setting", 500), False),
]


@pytest.mark.parametrize(
    ("error", "expected"), [(e, b) for _, e, b in BILLED], ids=[i for i, _, _ in BILLED]
)
def test_which_failures_are_billed(error: AttemptError, expected: bool) -> None:
    assert billed(error) is expected


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def _engine(
    fake: FakeOpenAIServer, http: httpx.AsyncClient, storage: SqliteStorage, **limits: Any
) -> JudgeEngine:
    settings = JudgeSettings(
        llm_base_url=fake.base_url,
        llm_api_key="test-key",
        quick_model=QUICK,
        quick_timeout=0.3,
        **limits,
    )
    return JudgeEngine(settings, build_panel(settings, http), storage)


def _request(content: str) -> JudgeRequest:
    return JudgeRequest(
        task=TaskSpec(task_id="t", description="d", acceptance="a"),
        files=[JudgedFile(path="a.md", content=content)],
        scope="acme/widgets",
    )


async def test_a_timed_out_call_spends_the_budgets_and_the_throttle(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> None:
    """The provider works (and bills) past our time limit: the call counts, so the day's
    one call stops the retry and the next judgment; the throttle keeps the judgment."""
    fake_llm.default = Reply.slow(10)
    engine = _engine(fake_llm, http, sqlite_storage, daily_call_budget=1)
    first = await engine.judge(_request("hello world\n"))
    assert first.final_decision is Verdict.UNDETERMINED
    assert first.previous_rounds[-1].error == "daily model-call budget exhausted"
    assert len(fake_llm.requests) == 1
    second = await engine.judge(_request("another\n"))
    assert second.mode == "budget"
    assert len(fake_llm.requests) == 1
    throttled = _engine(fake_llm, http, sqlite_storage, throttle_per_hour=1)
    assert (await throttled.judge(_request("third\n"))).mode == "throttled"


@pytest.mark.parametrize(
    "reply", [Reply.server_error(), Reply.text("", delay=0.0)], ids=["500", "empty"]
)
async def test_a_failed_call_the_server_processed_costs_estimated_tokens(
    fake_llm: FakeOpenAIServer,
    http: httpx.AsyncClient,
    sqlite_storage: SqliteStorage,
    reply: Reply,
) -> None:
    fake_llm.script(QUICK, reply, reply)
    # no daily call budget: the tokens alone stop the day
    engine = _engine(fake_llm, http, sqlite_storage, daily_token_budget=100, daily_call_budget=None)
    first = await engine.judge(_request("hello world\n"))
    assert first.final_decision is Verdict.UNDETERMINED
    # no usage came back, yet the prompt and the answer's limit are more than 100 tokens
    refused = await engine.judge(_request("another\n"))
    assert refused.mode == "budget" and refused.reason and "tokens today" in refused.reason


@pytest.mark.parametrize(
    "reply",
    [Reply.rate_limited(), Reply.http(400, "The response was filtered")],
    ids=["429", "400"],
)
async def test_a_request_refused_as_such_costs_nothing(
    fake_llm: FakeOpenAIServer,
    http: httpx.AsyncClient,
    sqlite_storage: SqliteStorage,
    reply: Reply,
) -> None:
    fake_llm.script(QUICK, reply, Reply.json(ACCEPT))
    engine = _engine(fake_llm, http, sqlite_storage, daily_call_budget=1, throttle_per_hour=1)
    first = await engine.judge(_request("hello world\n"))
    assert first.final_decision is Verdict.UNDETERMINED
    second = await engine.judge(_request("another\n"))
    assert second.final_decision is Verdict.ACCEPT

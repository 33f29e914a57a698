"""The provider self-check (`bot/judge/engine/self_check.py`): the pure comparison as tables, the
model lists of both protocols against the fake LLM servers and odd loopback servers, and
the refresher's board, gauge and once-only logging."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import Awaitable, Callable

import httpx
import pytest
from aiohttp import web

from bot.judge.engine import self_check
from bot.judge.engine.self_check import (
    ModelListing,
    SelfCheck,
    checked_status,
    checked_statuses,
    health_detail,
    list_models,
    model_listed,
    names_by_closeness,
    self_check_ctx,
)
from bot.judge.engine.tier_status import TierBoard, TierStatus, statuses_from_settings
from bot.judge.records import Tier
from bot.judge.settings import JudgeSettings
from bot.metrics import Metrics
from tests.support.fakes.llm_server import FakeAnthropicServer, FakeOpenAIServer
from tests.support.provider_helpers import Handler


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


# -- the comparison ------------------------------------------------------------------

LISTED = ["llama-3.3-70b", "llama-4-scout", "qwen-3-32b", "claude-sonnet-4-5-20250929"]


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("llama-3.3-70b", True),
        ("LLAMA-3.3-70B", True),
        ("claude-sonnet-4-5", True),  # an alias served as a dated snapshot
        ("claude-sonnet-4-5-latest", True),
        ("claude-sonnet-4", False),  # `-5-2025...` is not a date suffix of it
        ("llama3.1-70b", False),  # the rename that motivated the check
        ("llama-3.3", False),
    ],
)
def test_model_listed(model: str, listed: bool) -> None:
    assert model_listed(model, LISTED) is listed


def test_model_listed_accepts_iso_dates() -> None:
    assert model_listed("gpt-4o", ["gpt-4o-2024-08-06"])
    assert not model_listed("gpt-4o", ["gpt-4o-mini"])


QUICK = TierStatus("quick", "llama3.1-70b", "openai", "api.cerebras.ai")


@pytest.mark.parametrize(
    ("listing", "available", "problem"),
    [
        (ModelListing(("llama3.1-70b",)), True, None),
        (
            ModelListing(tuple(LISTED)),
            False,
            "model 'llama3.1-70b' is not among the 4 models api.cerebras.ai lists; "
            "closest: llama-3.3-70b",
        ),
        (
            ModelListing(("whisper", "tts")),
            False,
            "model 'llama3.1-70b' is not among the 2 models api.cerebras.ai lists",
        ),
        (
            ModelListing(()),
            False,
            "model 'llama3.1-70b' is not served: api.cerebras.ai lists no models",
        ),
        (ModelListing(None, None, "no list"), None, "no list"),
        (ModelListing(None, False, "key refused"), False, "key refused"),
    ],
    ids=["listed", "renamed", "nothing-close", "empty-list", "unknown", "refused"],
)
def test_checked_status(listing: ModelListing, available: bool | None, problem: str | None) -> None:
    checked = checked_status(QUICK, listing)
    assert (checked.available, checked.problem) == (available, problem)
    assert (checked.tier, checked.model, checked.host) == (QUICK.tier, QUICK.model, QUICK.host)


def test_unconfigured_or_unlisted_tiers_stay_as_they_are() -> None:
    unconfigured = TierStatus("deep", None, None, None, problem="not configured")
    assert checked_status(unconfigured, ModelListing(("x",))) == unconfigured
    assert checked_status(QUICK, None) == QUICK
    assert checked_statuses([QUICK, unconfigured], {"quick": ModelListing(("llama3.1-70b",))}) == [
        QUICK.checked(available=True),
        unconfigured,
    ]


def test_names_by_closeness_of_an_empty_list_is_empty() -> None:
    assert names_by_closeness("gpt-5", []) == []


def test_names_by_closeness_puts_near_names_first() -> None:
    names = names_by_closeness("llama3.1-70b", LISTED)
    assert names[0] == "llama-3.3-70b" and sorted(names) == sorted(LISTED)


def test_health_detail_lists_every_tier_and_the_missing_models() -> None:
    missing = QUICK.checked(available=False, problem="gone")
    deep = TierStatus("deep", "m", "anthropic", "h").checked(available=True)
    unknown = TierStatus("tiebreaker", "c", "claude-cli", "local claude").checked(
        available=None, problem="no list"
    )
    detail = health_detail([missing, deep, unknown])
    assert detail["models_missing"] == [{"tier": "quick", "model": "llama3.1-70b"}]
    assert detail["tiers"][0] == {
        "tier": "quick",
        "configured": True,
        "model": "llama3.1-70b",
        "provider": "openai",
        "host": "api.cerebras.ai",
        "available": False,
        "problem": "gone",
    }
    assert [t["available"] for t in detail["tiers"]] == [False, True, None]


# -- the model lists ----------------------------------------------------------------------


def _openai(base_url: str, key: str | None = "test-key", model: str = "m") -> JudgeSettings:
    return JudgeSettings(llm_base_url=base_url, llm_api_key=key, quick_model=model)


async def test_openai_list(fake_llm: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    fake_llm.models = ["gpt-5-nano", "gpt-5"]
    seat = _openai(fake_llm.base_url).tiers()[Tier.QUICK]
    assert await list_models(http, seat) == ModelListing(("gpt-5-nano", "gpt-5"))


async def test_anthropic_list_follows_pages(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    fake_anthropic.models = [f"claude-{n}" for n in range(2500)]
    settings = JudgeSettings(
        llm_provider="anthropic",
        llm_base_url=fake_anthropic.base_url,
        llm_api_key="test-key",
        quick_model="claude-7",
    )
    listing = await list_models(http, settings.tiers()[Tier.QUICK])
    assert listing.models == tuple(fake_anthropic.models)
    assert [q.get("after_id") for q in fake_anthropic.model_list_requests] == [
        None,
        "claude-999",
        "claude-1999",
    ]


async def test_anthropic_wrong_key(
    fake_anthropic: FakeAnthropicServer, http: httpx.AsyncClient
) -> None:
    settings = JudgeSettings(
        llm_provider="anthropic",
        llm_base_url=fake_anthropic.base_url,
        llm_api_key="sk-ant-wrong-key",
        quick_model="claude-7",
    )
    listing = await list_models(http, settings.tiers()[Tier.QUICK])
    assert listing.available is False and "HTTP 401" in (listing.problem or "")
    assert "sk-ant-wrong-key" not in repr(listing)


async def test_openai_refusals(fake_llm: FakeOpenAIServer, http: httpx.AsyncClient) -> None:
    wrong_key = await list_models(http, _openai(fake_llm.base_url, "nope").tiers()[Tier.QUICK])
    assert wrong_key.available is False and "refused the API key" in (wrong_key.problem or "")
    fake_llm.models = None
    no_list = await list_models(http, _openai(fake_llm.base_url).tiers()[Tier.QUICK])
    assert no_list.available is None and "HTTP 404" in (no_list.problem or "")
    no_key = await list_models(http, _openai(fake_llm.base_url, None).tiers()[Tier.QUICK])
    assert no_key.available is False  # no Authorization header at all


def _answer(status: int, body: str) -> Handler:
    async def handler(request: web.Request) -> web.StreamResponse:
        return web.Response(status=status, text=body, content_type="application/json")

    return handler


@pytest.mark.parametrize(
    ("status", "body", "problem"),
    [
        (500, "{}", "HTTP 500"),
        (200, "not json", "unreadable model list"),
        (200, '{"data": "none"}', "unreadable model list"),
        (200, "[1]", "unreadable model list"),
    ],
)
async def test_odd_answers_leave_the_model_unchecked(
    raw_server: Callable[[Handler], Awaitable[str]],
    http: httpx.AsyncClient,
    status: int,
    body: str,
    problem: str,
) -> None:
    base = await raw_server(_answer(status, body))
    for provider in ("openai", "anthropic"):
        settings = JudgeSettings(
            llm_provider=provider, llm_base_url=base, llm_api_key="k", quick_model="m"
        )
        listing = await list_models(http, settings.tiers()[Tier.QUICK])
        assert listing.models is None and listing.available is None
        assert problem in (listing.problem or "")


async def test_a_list_past_the_limit_is_not_read(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_llm.models = [f"model-{n}" for n in range(2000)]
    monkeypatch.setattr(self_check, "MODEL_LIST_LIMIT", 16 * 1024)
    listing = await list_models(http, _openai(fake_llm.base_url).tiers()[Tier.QUICK])
    assert listing.models is None and listing.available is None
    assert "sent a model list over" in (listing.problem or "")
    fake_llm.models = ["m"]
    assert await list_models(http, _openai(fake_llm.base_url).tiers()[Tier.QUICK]) == (
        ModelListing(("m",))
    )


async def test_unreachable_and_slow_hosts_count_as_missing(
    raw_server: Callable[[Handler], Awaitable[str]],
    http: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    closed = await list_models(http, _openai("http://127.0.0.1:9/v1").tiers()[Tier.QUICK])
    assert closed.available is False and "could not be reached" in (closed.problem or "")

    async def hang(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(30)
        return web.Response()

    monkeypatch.setattr(self_check, "LIST_TIMEOUT_SECONDS", 0.2)
    slow = await list_models(http, _openai(await raw_server(hang)).tiers()[Tier.QUICK])
    assert slow.available is False and "in time" in (slow.problem or "")


async def test_cli_tiers_have_no_list(http: httpx.AsyncClient) -> None:
    found = JudgeSettings(
        quick_model="sonnet", quick_provider="claude-cli", claude_cli=sys.executable
    )
    listing = await list_models(http, found.tiers()[Tier.QUICK])
    assert listing.available is None and "no model list" in (listing.problem or "")
    missing = JudgeSettings(
        quick_model="sonnet", quick_provider="claude-cli", claude_cli="/no/claude"
    )
    listing = await list_models(http, missing.tiers()[Tier.QUICK])
    assert listing == ModelListing(None, False, "command 'claude' not found")


# -- the refresher -----------------------------------------------------------------------


def _gauge(metrics: Metrics, tier: str, model: str) -> float | None:
    value: float | None = metrics.registry.get_sample_value(
        "judge_provider_model_available", {"tier": tier, "model": model}
    )
    return value


async def test_a_missing_model_is_shown_counted_and_logged_once(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """The renamed model shows on the board and the gauge at 0; the warning (with the
    names that exist) is written once, not at every check; its return is logged once."""
    fake_llm.models = ["llama-3.3-70b", *(f"other-{n}" for n in range(30))]
    settings = JudgeSettings(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        quick_model="llama3.1-70b",
        deep_model="other-1",
        deep_family="other",
    )
    board = TierBoard(statuses_from_settings(settings))
    metrics = Metrics()
    check = SelfCheck(board, settings, http, metrics)
    with caplog.at_level(logging.INFO, logger="bot.judge.engine.self_check"):
        await check.check_once()
        await check.check_once()
    quick, deep, tiebreaker = board.current()
    assert quick.available is False and "closest: llama-3.3-70b" in (quick.problem or "")
    assert deep.available is True and tiebreaker.available is None
    assert _gauge(metrics, "quick", "llama3.1-70b") == 0.0
    assert _gauge(metrics, "deep", "other-1") == 1.0
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "llama-3.3-70b" in warnings[0].getMessage()
    assert "(and 11 more)" in warnings[0].getMessage()
    assert "test-key" not in caplog.text
    assert len(fake_llm.model_list_requests) == 2, "one list per endpoint per check"

    caplog.clear()
    fake_llm.models.append("llama3.1-70b")
    with caplog.at_level(logging.INFO, logger="bot.judge.engine.self_check"):
        await check.check_once()
    assert board.current()[0].available is True
    assert _gauge(metrics, "quick", "llama3.1-70b") == 1.0
    assert "available again" in caplog.text


async def test_an_unknown_state_removes_the_gauge_and_is_logged_once(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.models = ["m"]
    settings = _openai(fake_llm.base_url)
    metrics = Metrics()
    check = SelfCheck(TierBoard(statuses_from_settings(settings)), settings, http, metrics)
    await check.check_once()
    assert _gauge(metrics, "quick", "m") == 1.0
    fake_llm.models = None
    with caplog.at_level(logging.INFO, logger="bot.judge.engine.self_check"):
        await check.check_once()
        await check.check_once()
    assert _gauge(metrics, "quick", "m") is None
    assert caplog.text.count("has no model list") == 1


async def test_the_refresher_runs_until_stopped(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.models = ["m"]
    settings = _openai(fake_llm.base_url)
    check = SelfCheck(TierBoard(statuses_from_settings(settings)), settings, http, Metrics())
    stop = asyncio.Event()
    task = asyncio.create_task(check.run(stop, interval=0.01))
    while len(fake_llm.model_list_requests) < 3:
        await asyncio.sleep(0.01)
    stop.set()
    await task


@pytest.mark.parametrize("own_client", [True, False])
async def test_the_cleanup_context_checks_in_the_background(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, own_client: bool
) -> None:
    """Start-up does not wait for the check; the board fills in; cleanup stops it."""
    fake_llm.models = ["m"]
    settings = _openai(fake_llm.base_url)
    board = TierBoard(statuses_from_settings(settings))
    ctx = self_check_ctx(board, settings, Metrics(), None if own_client else http)
    running = ctx(web.Application())
    await running.__anext__()
    while board.current()[0].available is None:
        await asyncio.sleep(0.01)
    assert board.current()[0].available is True
    with pytest.raises(StopAsyncIteration):
        await running.__anext__()

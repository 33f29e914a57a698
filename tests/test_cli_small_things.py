"""Issue 24, point 16: small things a newcomer hit on the command line. `serve`'s provider
self-check said "set JUDGE_QUICK_MODEL" when the endpoint was merely unreachable (now it
names the host and the cause); `judge-bot verdicts export --since` refused a plain date
(now midnight UTC)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest
from aiohttp import web

from bot.cli.judge import main, parse_since
from bot.judge.engine import append_record, self_check
from bot.judge.engine.self_check import (
    ModelListing,
    SelfCheck,
    Trouble,
    advice,
    connection_cause,
    list_models,
)
from bot.judge.engine.tier_status import TierBoard, statuses_from_settings
from bot.judge.records import Tier
from bot.judge.settings import JudgeSettings
from bot.metrics import Metrics
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.provider_helpers import Handler
from tests.support.verdict_builders import make_record

SELF_CHECK_LOG = "bot.judge.engine.self_check"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


# ---- the self-check: unreachable is not "missing" ------------------------------------------


def _chained(outer: BaseException, inner: BaseException) -> BaseException:
    outer.__cause__ = inner
    return outer


@pytest.mark.parametrize(
    ("error", "cause"),
    [
        (_chained(httpx.ConnectError("All connection attempts failed"),
                  ConnectionRefusedError(111, "Connect call failed ('127.0.0.1', 9)")),
         "connection refused"),
        (_chained(httpx.ConnectError("[Errno -2] Name or service not known"),
                  socket.gaierror(-2, "Name or service not known")),
         "DNS lookup failed (Name or service not known)"),
        (_chained(httpx.ConnectError("x"), _chained(OSError("wrapped"),
                  ssl.SSLCertVerificationError(1, "certificate verify failed"))),
         "TLS certificate rejected (not trusted)"),
        (_chained(httpx.ConnectError("x"), TimeoutError()), "connection timed out"),
        (httpx.ConnectError("All connection attempts failed"), "ConnectError"),
    ],
    ids=["refused", "dns", "tls", "timeout", "no cause"],
)  # fmt: skip
def test_connection_cause(error: BaseException, cause: str) -> None:
    assert connection_cause(error) == cause


def test_a_cause_never_quotes_the_url() -> None:
    error = httpx.ConnectError("failed for http://user:sk-secret@llm.example/v1")
    assert "sk-secret" not in connection_cause(error)


@pytest.mark.parametrize(
    ("listing", "says", "never"),
    [
        (ModelListing(("other",), False), "set JUDGE_QUICK_MODEL", "BASE_URL"),
        (ModelListing(None, False, "x", Trouble.UNREACHABLE), "JUDGE_QUICK_BASE_URL", "_MODEL"),
        (ModelListing(None, False, "x", Trouble.KEY_REFUSED), "JUDGE_QUICK_API_KEY", "_MODEL"),
        (ModelListing(None, False, "command 'claude' not found"), "fails open", "_MODEL"),
    ],
)
def test_advice_fits_the_cause(listing: ModelListing, says: str, never: str) -> None:
    text = advice("quick", listing)
    assert says in text and never not in text


async def _checked_once(settings: JudgeSettings, caplog: pytest.LogCaptureFixture) -> list[str]:
    async with httpx.AsyncClient() as http:
        check = SelfCheck(TierBoard(statuses_from_settings(settings)), settings, http, Metrics())
        with caplog.at_level(logging.INFO, logger=SELF_CHECK_LOG):
            await check.check_once()
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


async def test_an_unreachable_endpoint_is_named_with_its_cause(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The defect: "...; the tier fails open until this is fixed (set JUDGE_QUICK_MODEL).
    Models it lists: none" for an endpoint nothing listens on."""
    settings = JudgeSettings(llm_base_url="http://127.0.0.1:9/v1", quick_model="gpt-5-nano")
    (warning,) = await _checked_once(settings, caplog)
    assert warning.startswith(
        "judge quick tier: 127.0.0.1:9 could not be reached: connection refused; "
    )
    assert "JUDGE_QUICK_BASE_URL" in warning
    assert "JUDGE_QUICK_MODEL" not in warning and "Models it lists" not in warning


async def test_a_refused_key_asks_for_the_key(
    fake_llm: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.models = ["gpt-5-nano"]
    settings = JudgeSettings(
        llm_base_url=fake_llm.base_url, llm_api_key="wrong-key", quick_model="gpt-5-nano"
    )
    (warning,) = await _checked_once(settings, caplog)
    assert "refused the API key" in warning and "JUDGE_QUICK_API_KEY" in warning
    assert "JUDGE_QUICK_MODEL" not in warning and "wrong-key" not in caplog.text


async def test_a_model_not_listed_still_asks_for_another_model(
    fake_llm: FakeOpenAIServer, caplog: pytest.LogCaptureFixture
) -> None:
    fake_llm.models = ["llama-3.3-70b"]
    settings = JudgeSettings(
        llm_base_url=fake_llm.base_url, llm_api_key="test-key", quick_model="llama3.1-70b"
    )
    (warning,) = await _checked_once(settings, caplog)
    assert "(set JUDGE_QUICK_MODEL). Models it lists: llama-3.3-70b" in warning


async def test_a_connect_timeout_is_unreachable() -> None:
    def connect_timeout(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectTimeout("timed out", request=request)

    settings = JudgeSettings(llm_base_url="http://127.0.0.1:9/v1", quick_model="m")
    async with httpx.AsyncClient(transport=httpx.MockTransport(connect_timeout)) as http:
        listing = await list_models(http, settings.tiers()[Tier.QUICK])
    assert listing == ModelListing(
        None, False, "127.0.0.1:9 could not be reached: connection timed out", Trouble.UNREACHABLE
    )


async def test_a_slow_list_is_unreachable_too(
    raw_server: Callable[[Handler], Awaitable[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    async def hang(request: web.Request) -> web.StreamResponse:
        await asyncio.sleep(30)
        return web.Response()

    monkeypatch.setattr(self_check, "LIST_TIMEOUT_SECONDS", 0.2)
    base = await raw_server(hang)
    async with httpx.AsyncClient() as http:
        settings = JudgeSettings(llm_base_url=base, quick_model="m")
        listing = await list_models(http, settings.tiers()[Tier.QUICK])
    assert listing.trouble is Trouble.UNREACHABLE and "in time" in (listing.problem or "")


# ---- `--since` takes a plain date ---------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "since"),
    [
        ("2026-02-15", datetime(2026, 2, 15, tzinfo=UTC)),
        (" 2026-02-15 ", datetime(2026, 2, 15, tzinfo=UTC)),
        ("2026-02-15T09:30:00+02:00", datetime(2026, 2, 15, 7, 30, tzinfo=UTC)),
        ("2026-02-15T09:30:00Z", datetime(2026, 2, 15, 9, 30, tzinfo=UTC)),
        ("", None),
        (None, None),
    ],
)
def test_parse_since(text: str | None, since: datetime | None) -> None:
    assert parse_since(text) == since


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2026-02-15T09:30", "--since needs a timezone after a time"),
        ("yesterday", "is neither a date (YYYY-MM-DD) nor an ISO 8601 time"),
        ("2026-13-01", "is not a date (YYYY-MM-DD)"),
    ],
)
def test_parse_since_refuses_with_a_reason(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_since(text)


async def test_export_since_a_plain_date(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    midnight = datetime(2026, 2, 15, tzinfo=UTC)
    database = tmp_path / "records.sqlite3"
    store = SqliteStorage(str(database))
    await store.open()
    try:
        for task, at in (("before", midnight - timedelta(seconds=1)), ("at", midnight),
                         ("after", midnight + timedelta(days=1))):  # fmt: skip
            await append_record(store, make_record(task_id=task, timestamp=at))
    finally:
        await store.close()
    url = f"sqlite:///{database}"
    argv = ["verdicts", "export", "--since", "2026-02-15", "--database-url", url]
    assert await asyncio.to_thread(main, argv) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    assert [json.loads(line)["task_id"] for line in captured.out.splitlines()] == ["at", "after"]

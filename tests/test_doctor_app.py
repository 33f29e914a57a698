"""The doctor's facts on the running app: `/healthz?detail=1` and the status page `/` show
the latest background probe and when it was measured; a health check never calls a
model; with probing off or no tier configured they say why there is nothing."""

from __future__ import annotations

import asyncio
import html
import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from aiohttp import web
from aiohttp.test_utils import TestClient

from bot.app import DOCTOR_BOARD, TIER_BOARD
from bot.judge.doctor.background import NOT_CONFIGURED, OFF
from bot.judge.settings import JudgeSettings
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

KEY = "sk-doctor-SECRET-0042"
ACCEPT = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5}, "reasoning": "clear"}
QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"


def judges(llm: FakeOpenAIServer) -> JudgeSettings:
    return JudgeSettings(
        _env_file=None,
        llm_base_url=llm.base_url,
        llm_api_key=KEY,
        quick_model=QUICK,
        deep_model=DEEP,
        quick_timeout=5,
        deep_timeout=5,
    )


async def probed(app: web.Application) -> None:
    async with asyncio.timeout(10):
        while app[DOCTOR_BOARD].current() is None:
            await asyncio.sleep(0.01)


async def detail(client: TestClient[web.Request, web.Application]) -> dict[str, Any]:
    response = await client.get("/healthz?detail=1")
    assert response.status == 200
    body: dict[str, Any] = await response.json()
    return body


async def test_health_detail_and_the_status_page_show_the_latest_probe(
    tmp_path: Path, github_keypair: Any, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.api_key = KEY
    fake_llm.script(DEEP, Reply.http(500, "model <kimi> is loading"))
    fake_llm.default = Reply.json(ACCEPT)
    settings = make_settings(
        github_keypair.private_pem, tmp_path, JUDGE_PROBE_INTERVAL_SECONDS=3600
    )
    async with running_app(settings, start_workers=False, judge_settings=judges(fake_llm)) as (
        client,
        app,
    ):
        await probed(app)
        calls = len(fake_llm.requests)
        assert calls == 2
        plain = await client.get("/healthz")
        assert "judge" not in await plain.json()
        body = await detail(client)
        probe = body["judge"]["probe"]
        assert body["status"] == "ok" and probe["note"] == "" and probe["ok"] is False
        assert datetime.fromisoformat(probe["measured_at"]).tzinfo is not None
        assert [(t["seat"], t["outcome"]) for t in probe["tiers"]] == [
            ("quick", "answered"),
            ("deep", "refused"),
        ]
        assert probe["tiers"][1]["server_message"] == "model <kimi> is loading"
        page = await (await client.get("/")).text()
        for _ in range(5):
            await detail(client)
            await client.get("/")
        assert len(fake_llm.requests) == calls  # no health check or page calls a model
    assert KEY not in json.dumps(body) + page
    rows = re.findall(r'<tr class="probe">(.*?)</tr>', page)
    cells = [[html.unescape(c) for c in re.findall(r"<td>(.*?)</td>", row)] for row in rows]
    assert [c[:6] for c in cells] == [
        ["quick", QUICK, "openai", fake_llm.origin[7:], "answered", "json_schema"],
        ["deep", DEEP, "openai", fake_llm.origin[7:], "refused", "-"],
    ]
    assert cells[1][-1] == "HTTP 500 from openai: model <kimi> is loading"
    assert "model &lt;kimi&gt; is loading" in page  # escaped, never markup
    measured = re.search(r'<p id="probe-measured">Probed ([^:]+:\d\d:\d\d UTC): (.*?)\.</p>', page)
    assert measured is not None
    assert measured[2] == f"1 of 2 judges did not answer a judgment: deep {DEEP} (refused)"


async def test_with_probing_off_nothing_calls_a_model_and_both_say_why(
    tmp_path: Path, github_keypair: Any, fake_llm: FakeOpenAIServer
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    async with running_app(settings, start_workers=False, judge_settings=judges(fake_llm)) as (
        client,
        _,
    ):
        probe = (await detail(client))["judge"]["probe"]
        page = await (await client.get("/")).text()
    assert probe == {"measured_at": None, "ok": None, "tiers": [], "warnings": [], "note": OFF}
    assert f'<p id="probe-note">{OFF}.</p>' in page
    assert fake_llm.requests == []


async def test_without_a_configured_tier_the_board_says_so(
    tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(
        github_keypair.private_pem, tmp_path, JUDGE_PROBE_INTERVAL_SECONDS=3600
    )
    async with running_app(
        settings, start_workers=False, judge_settings=JudgeSettings(_env_file=None)
    ) as (
        client,
        _,
    ):
        probe = (await detail(client))["judge"]["probe"]
        page = await (await client.get("/")).text()
    assert probe["note"] == NOT_CONFIGURED and probe["tiers"] == []
    assert f'<p id="probe-note">{NOT_CONFIGURED}.</p>' in page


async def test_the_model_list_self_check_alone_sends_no_judgment(
    tmp_path: Path, github_keypair: Any, fake_llm: FakeOpenAIServer
) -> None:
    """The self-check is a free lookup; the probe is a paid judgment per seat on every
    replica: each has its own interval, so the lookup never brings the judgments along."""
    fake_llm.api_key = KEY
    fake_llm.models = [QUICK, DEEP]
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        JUDGE_SELF_CHECK_INTERVAL_SECONDS=3600,
        JUDGE_PROBE_INTERVAL_SECONDS=0,
    )
    async with running_app(settings, start_workers=False, judge_settings=judges(fake_llm)) as (
        client,
        app,
    ):
        async with asyncio.timeout(10):
            while not fake_llm.model_list_requests:
                await asyncio.sleep(0.01)
        probe = (await detail(client))["judge"]["probe"]
        assert app[DOCTOR_BOARD].current() is None
    assert probe["note"] == OFF and "JUDGE_PROBE_INTERVAL_SECONDS" in OFF
    assert fake_llm.requests == []


async def test_the_probe_runs_with_the_model_list_self_check_off(
    tmp_path: Path, github_keypair: Any, fake_llm: FakeOpenAIServer
) -> None:
    fake_llm.api_key = KEY
    fake_llm.default = Reply.json(ACCEPT)
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        JUDGE_SELF_CHECK_INTERVAL_SECONDS=0,
        JUDGE_PROBE_INTERVAL_SECONDS=3600,
    )
    async with running_app(settings, start_workers=False, judge_settings=judges(fake_llm)) as (
        client,
        app,
    ):
        await probed(app)
        probe = (await detail(client))["judge"]["probe"]
        looked_up = [status.available for status in app[TIER_BOARD].current()]
    assert probe["ok"] is True and len(probe["tiers"]) == 2
    assert len(fake_llm.requests) == 2
    assert set(looked_up) == {None}  # the self-check's model-list lookup stayed off

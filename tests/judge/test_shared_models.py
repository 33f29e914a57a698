"""Two tiers that are one model on one endpoint are not two judges, whatever families
they declare (issue 27, defect 8): a warning at start and a note in the record.

A local server answers every model name with the model it has loaded (llama.cpp's
`llama-server` and llama-cpp-python serve one model and ignore `model`), so two tiers
may differ in name and still be one model; this covers the case the configuration can
see, the same model name at the same base URL.
"""

from __future__ import annotations

import logging
import os
from typing import Any

import httpx
import pytest

from bot.judge.engine import JudgeEngine
from bot.judge.engine.seating import (
    Seat,
    Seating,
    build_panel,
    shared_model_note,
    shared_models,
)
from bot.judge.records import Tier, Verdict
from bot.judge.settings import JudgeSettings
from tests.judge.local_servers import request_for
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

SMALL = "qwen2.5-1.5b-instruct"
REJECT = {
    "scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3},
    "reasoning": "Wrong figures.",
    "improvements": ["Fix the figures."],
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


class _Provider:
    kind = "openai"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url

    async def complete(self, **kwargs: Any) -> Any:
        raise AssertionError("never called")


def _seat(model: str, family: str, base_url: str = "http://127.0.0.1:8080/v1") -> Seat:
    return Seat(model=model, family=family, provider=_Provider(base_url), timeout=1, max_chars=99)


@pytest.mark.parametrize(
    ("deep", "shared"),
    [
        (_seat(SMALL, "beta"), True),
        (_seat(SMALL, "beta", "HTTP://127.0.0.1:8080/v1/"), True),
        (_seat(SMALL, "beta", "http://127.0.0.1:8081/v1"), False),
        (_seat("other-model", "beta"), False),
    ],
    ids=["same", "same-spelt-otherwise", "other-port", "other-model"],
)
def test_shared_models_ignore_the_declared_families(deep: Seat, shared: bool) -> None:
    found = shared_models({Tier.QUICK: _seat(SMALL, "alpha"), Tier.DEEP: deep})
    assert bool(found) is shared
    if shared:
        (group,) = found
        assert group.tiers == (Tier.QUICK, Tier.DEEP) and group.families == ("alpha", "beta")
        assert group.host == "127.0.0.1:8080"
        assert "not independent" in group.describe()


def test_the_note_names_only_tiers_that_judged() -> None:
    seating = {
        Tier.QUICK: Seating(_seat(SMALL, "alpha")),
        Tier.DEEP: Seating(_seat(SMALL, "beta")),
        Tier.TIEBREAKER: Seating(None),
    }
    assert shared_model_note(seating, [Tier.QUICK]) is None
    note = shared_model_note(seating, [Tier.QUICK, Tier.DEEP])
    assert note and "quick and deep judges are one model" in note


async def test_one_model_at_two_tiers_is_warned_at_start_and_in_the_record(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    settings = JudgeSettings(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        quick_model=SMALL,
        deep_model=SMALL,
        quick_family="alpha",
        deep_family="beta",
    )
    with caplog.at_level(logging.WARNING):
        engine = JudgeEngine(settings, build_panel(settings, http), None)
    assert f"the quick and deep judges are one model ({SMALL} at 127.0.0.1:" in caplog.text
    assert "test-key" not in caplog.text
    fake_llm.script(SMALL, Reply.json(REJECT), Reply.json(REJECT))
    record = await engine.judge(request_for("poor", 800, 1))
    assert record.final_decision is Verdict.REJECT and record.consensus == "unanimous"
    assert record.reason and "one model" in record.reason and "not independent" in record.reason


async def test_two_models_are_not_warned_about(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    settings = JudgeSettings(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        quick_model="gpt-5-nano",
        deep_model="kimi-k2.5",
    )
    with caplog.at_level(logging.WARNING):
        engine = JudgeEngine(settings, build_panel(settings, http), None)
    assert "one model" not in caplog.text
    fake_llm.script("gpt-5-nano", Reply.json(REJECT))
    fake_llm.script("kimi-k2.5", Reply.json(REJECT))
    record = await engine.judge(request_for("poor", 800, 1))
    assert record.final_decision is Verdict.REJECT and not (record.reason or "").count("one model")

"""Each tier's status from the configuration: what runs, and what to set when nothing does."""

from __future__ import annotations

from bot.judge.engine.tier_status import TierBoard, statuses_from_settings
from bot.judge.settings import JudgeSettings


def test_configured_tiers_name_model_provider_and_host_never_a_key() -> None:
    settings = JudgeSettings(
        llm_base_url="https://llm.example:8443/v1?key=sk-hidden",
        llm_api_key="sk-hidden",
        quick_model="gpt-5-nano",
        deep_model="claude-sonnet-4-5",
        deep_provider="anthropic",
        deep_base_url="https://anthropic.example",
    )
    quick, deep, tiebreaker = statuses_from_settings(settings)
    assert (quick.tier, quick.model, quick.provider, quick.host) == (
        "quick",
        "gpt-5-nano",
        "openai",
        "llm.example:8443",
    )
    assert quick.configured and quick.available is None and quick.settings == ()
    assert deep.configured and deep.provider == "anthropic"
    assert not tiebreaker.configured
    assert tiebreaker.settings == ("JUDGE_TIEBREAKER_MODEL",)
    assert "sk-hidden" not in repr((quick, deep, tiebreaker))


def test_a_model_without_an_endpoint_names_the_endpoint_settings() -> None:
    (quick, _, _) = statuses_from_settings(JudgeSettings(quick_model="gpt-5-nano"))
    assert not quick.configured
    assert quick.problem == "no endpoint for this model"
    assert "JUDGE_LLM_BASE_URL" in quick.settings and "JUDGE_QUICK_BASE_URL" in quick.settings


def test_the_board_replaces_the_whole_picture_at_once() -> None:
    statuses = statuses_from_settings(JudgeSettings())
    board = TierBoard(statuses)
    assert [s.problem for s in board.current()] == ["not configured"] * 3
    checked = [s.checked(available=False, problem="HTTP 404") for s in statuses]
    board.replace_all(checked)
    assert [s.available for s in board.current()] == [False, False, False]
    assert board.current()[0].problem == "HTTP 404"

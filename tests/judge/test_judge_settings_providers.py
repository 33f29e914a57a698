"""Configuration of the CLI providers and of per-tier output tokens."""

from __future__ import annotations

import os

import httpx
import pytest
from pydantic import ValidationError

from bot.judge.engine.seating import build_panel
from bot.judge.engine.tier_status import statuses_from_settings
from bot.judge.providers.agent_cli import CLIProvider
from bot.judge.records import Tier
from bot.judge.settings import JudgeSettings, parse_alternate

Q, D, T = Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


def test_per_tier_output_tokens_default_to_the_global(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_LLM_BASE_URL", "http://x/v1")
    monkeypatch.setenv("JUDGE_QUICK_MODEL", "gpt-5-nano")
    monkeypatch.setenv("JUDGE_DEEP_MODEL", "deepseek-reasoner")
    monkeypatch.setenv("JUDGE_ALTERNATE_MODELS", "gemini-2.5-flash")
    monkeypatch.setenv("JUDGE_MAX_OUTPUT_TOKENS", "2048")
    monkeypatch.setenv("JUDGE_DEEP_MAX_OUTPUT_TOKENS", "16000")
    settings = JudgeSettings()
    assert [settings.output_tokens(tier) for tier in (Q, D, T)] == [2048, 16000, 2048]
    tiers = settings.tiers()
    assert (tiers[Q].max_output_tokens, tiers[D].max_output_tokens) == (2048, 16000)
    assert settings.alternates(D)[0].max_output_tokens == 16000
    assert JudgeSettings(max_output_tokens=1024).output_tokens(Q) == 1024


def test_output_tokens_have_a_floor() -> None:
    with pytest.raises(ValidationError, match="quick_max_output_tokens"):
        JudgeSettings(quick_max_output_tokens=10)


async def test_seats_carry_their_tiers_output_tokens() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="gpt-5-nano",
        deep_model="qwen3-235b-thinking",
        deep_max_output_tokens=8192,
    )
    async with httpx.AsyncClient() as client:
        panel = build_panel(settings, client)
    assert panel.tiers[Q].max_output_tokens == 1024
    assert panel.tiers[D].max_output_tokens == 8192


def test_cli_tiers_need_no_endpoint_and_get_no_key() -> None:
    settings = JudgeSettings(
        llm_base_url="https://llm.example/v1",
        llm_api_key="sk-global-secret",
        quick_model="opencode/gpt-5-nano",
        quick_provider="opencode-cli",
        opencode_cli="/home/alice/bin/opencode",
        deep_model="sonnet",
        deep_provider="claude-cli",
    )
    tiers = settings.tiers()
    assert tiers[Q].base_url == "/home/alice/bin/opencode" and tiers[Q].api_key is None
    assert tiers[Q].family == "openai" and tiers[D].family == "anthropic"
    assert tiers[D].base_url == "claude" and tiers[D].local
    assert tiers[Q].host == "local opencode" and tiers[D].host == "local claude"
    assert "alice" not in settings.describe_tiers()
    quick, deep, _ = statuses_from_settings(settings)
    assert quick.configured and quick.provider == "opencode-cli" and deep.host == "local claude"


def test_cli_tier_without_any_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_QUICK_MODEL", "opus")
    monkeypatch.setenv("JUDGE_QUICK_PROVIDER", "claude-cli")
    monkeypatch.setenv("JUDGE_CLAUDE_CLI", "/opt/claude/bin/claude")
    (seat,) = JudgeSettings().tiers().values()
    assert (seat.provider, seat.base_url, seat.family) == (
        "claude-cli",
        "/opt/claude/bin/claude",
        "anthropic",
    )


def test_unknown_provider_names_are_refused() -> None:
    with pytest.raises(ValidationError, match="quick_provider"):
        JudgeSettings(quick_model="m", quick_provider="gemini-cli")
    with pytest.raises(ValidationError, match="claude_cli"):
        JudgeSettings(claude_cli="")


async def test_cli_alternates_run_the_command() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="gpt-5-nano",
        alternate_models=["claude-cli:sonnet", "opencode-cli:opencode/kimi-k2.5-free"],
    )
    assert parse_alternate("claude-cli:sonnet", "openai") == ("claude-cli", "sonnet")
    alternates = settings.alternates(Q)
    assert [(a.provider, a.base_url, a.family) for a in alternates] == [
        ("claude-cli", "claude", "anthropic"),
        ("opencode-cli", "opencode", "moonshot"),
    ]
    async with httpx.AsyncClient() as client:
        panel = build_panel(settings, client)
    providers = [seat.provider for seat in panel.alternates[Q]]
    assert all(isinstance(p, CLIProvider) for p in providers)
    assert [p.kind for p in providers] == ["claude-cli", "opencode-cli"]


def test_a_command_path_shows_only_its_name() -> None:
    settings = JudgeSettings(
        quick_model="sonnet", quick_provider="claude-cli", claude_cli="C:\\x\\"
    )
    assert settings.tiers()[Q].host == "local ?"


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", []),
        ("  ", []),
        (" claude-* , openai/* ", ["claude-*", "openai/*"]),
        (["gpt-5*"], ["gpt-5*"]),
    ],
)
def test_allowed_models_are_comma_separated_globs(value: object, expected: list[str]) -> None:
    assert JudgeSettings(allowed_models=value).allowed_models == expected


@pytest.mark.parametrize(
    ("value", "names"), [("a,,b", "entry 2 is"), ("a,", "entry 2 is"), (",", "entries 1, 2 are")]
)
def test_an_empty_allowed_model_entry_is_refused(value: str, names: str) -> None:
    with pytest.raises(ValidationError) as raised:
        JudgeSettings(allowed_models=value)
    assert names in str(raised.value)

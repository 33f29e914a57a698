"""Judge settings: env parsing, tier resolution and the family rule."""

from __future__ import annotations

import itertools

import pytest
from pydantic import ValidationError

from bot.judge.records import Tier
from bot.judge.settings import (
    DEFAULT_WATCHED_PATHS,
    JudgeSettings,
    TierSettingsError,
    parse_alternate,
    validate_tiers,
)

Q, D, T = Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


def test_defaults_without_env() -> None:
    settings = JudgeSettings()
    assert settings.tiers() == {}
    assert not settings.llm_configured
    assert (settings.quick_timeout, settings.deep_timeout, settings.tiebreaker_timeout) == (
        45,
        60,
        45,
    )
    assert settings.wall_clock_budget == 180
    assert settings.quick_max_chars == 4000
    assert settings.throttle_per_hour == 20
    assert settings.mode == "advisory"
    assert settings.paths == list(DEFAULT_WATCHED_PATHS)
    assert settings.allow_shared_family is False


def test_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_LLM_BASE_URL", "http://127.0.0.1:3456/v1/")
    monkeypatch.setenv("JUDGE_LLM_API_KEY", "sk-env-secret")
    monkeypatch.setenv("JUDGE_QUICK_MODEL", "opencode/gpt-5-nano")
    monkeypatch.setenv("JUDGE_DEEP_MODEL", "opencode/kimi-k2.5-free")
    monkeypatch.setenv("JUDGE_TIEBREAKER_MODEL", "llama-3.3-70b")
    monkeypatch.setenv("JUDGE_TIEBREAKER_PROVIDER", "anthropic")
    monkeypatch.setenv("JUDGE_TIEBREAKER_BASE_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("JUDGE_TIEBREAKER_API_KEY", "other-secret")
    monkeypatch.setenv("JUDGE_ALTERNATE_MODELS", "anthropic:claude-sonnet-4, gemini-2.5-flash")
    monkeypatch.setenv("JUDGE_PATHS", "docs/**/*.md,notes/*.txt")
    monkeypatch.setenv("JUDGE_AUTHORS", "OpenClaw Agent")
    monkeypatch.setenv("JUDGE_MODE", "blocking")
    monkeypatch.setenv("JUDGE_QUICK_TIMEOUT", "0.5")
    monkeypatch.setenv("JUDGE_DAILY_CALL_BUDGET", "none")
    monkeypatch.setenv("JUDGE_AUTHORSHIP_PATTERNS", '{"house-llm": "inhouse"}')
    settings = JudgeSettings()
    tiers = settings.tiers()
    assert list(tiers) == [Q, D, T]
    assert tiers[Q].base_url == "http://127.0.0.1:3456/v1"
    assert tiers[Q].family == "openai" and tiers[D].family == "moonshot"
    assert tiers[T].family == "meta"
    assert tiers[T].provider == "anthropic" and tiers[T].base_url == "http://127.0.0.1:9"
    key = tiers[T].api_key
    assert key is not None and key.get_secret_value() == "other-secret"
    assert tiers[Q].timeout == 0.5 and tiers[D].timeout == 60
    assert tiers[Q].max_chars == 4000
    assert settings.alternate_models == ["anthropic:claude-sonnet-4", "gemini-2.5-flash"]
    assert settings.paths == ["docs/**/*.md", "notes/*.txt"]
    assert settings.authors == ["OpenClaw Agent"]
    assert settings.mode == "blocking"
    assert settings.daily_call_budget is None
    assert settings.authorship_patterns == {"house-llm": "inhouse"}
    # Secrets stay out of reprs and descriptions.
    assert "sk-env-secret" not in repr(settings)
    assert "sk-env-secret" not in repr(settings.tiers())


def test_shared_family_is_refused_with_a_clear_error() -> None:
    with pytest.raises(ValidationError, match="share the model family 'openai'"):
        JudgeSettings(llm_base_url="http://x/v1", quick_model="gpt-5-nano", deep_model="gpt-4o")


def test_shared_family_allowed_when_asked() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="gpt-5-nano",
        deep_model="gpt-4o",
        allow_shared_family=True,
    )
    assert len(settings.tiers()) == 2


def test_family_override_resolves_a_shared_guess() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="house-model-a",
        deep_model="house-model-b",
        quick_family="inhouse-a",
        deep_family="inhouse-b",
    )
    assert {s.family for s in settings.tiers().values()} == {"inhouse-a", "inhouse-b"}


def test_tier_without_endpoint_does_not_run() -> None:
    """A model but no base URL and no key: nothing to call."""
    assert JudgeSettings(quick_model="gpt-5-nano").tiers() == {}


def test_key_without_base_url_uses_public_endpoint() -> None:
    settings = JudgeSettings(
        llm_api_key="k", llm_provider="anthropic", quick_model="claude-haiku-4"
    )
    assert settings.tiers()[Q].base_url == "https://api.anthropic.com"


def test_alternates_resolve_endpoints() -> None:
    settings = JudgeSettings(
        llm_base_url="http://proxy/v1",
        llm_api_key="k",
        quick_model="gpt-5-nano",
        deep_model="claude-sonnet-4",
        deep_provider="anthropic",
        deep_base_url="http://anthropic-proxy",
        alternate_models=["anthropic:claude-haiku-4", "gemini-2.5-flash", "llama3:70b"],
    )
    alternates = settings.alternates(Q)
    assert [(a.provider, a.model, a.family, a.base_url) for a in alternates] == [
        ("anthropic", "claude-haiku-4", "anthropic", "http://anthropic-proxy"),
        ("openai", "gemini-2.5-flash", "google", "http://proxy/v1"),
        ("openai", "llama3:70b", "meta", "http://proxy/v1"),
    ]
    assert alternates[0].timeout == settings.quick_timeout
    assert settings.alternates(D)[0].timeout == settings.deep_timeout


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("openai:gpt-4o", ("openai", "gpt-4o")),
        ("anthropic:claude-x", ("anthropic", "claude-x")),
        ("gemini-2.5", ("openai", "gemini-2.5")),
        ("llama3:70b", ("openai", "llama3:70b")),
        (" qwen:7b ", ("openai", "qwen:7b")),
        ("openai:", ("openai", "openai:")),
    ],
)
def test_parse_alternate(entry: str, expected: tuple[str, str]) -> None:
    assert parse_alternate(entry, "openai") == expected


# ---- validate_tiers, exhaustively over tier subsets and family assignments ----

SUBSETS = [frozenset(c) for n in range(4) for c in itertools.combinations((Q, D, T), n)]
ORDERED = {frozenset(), frozenset({Q}), frozenset({Q, D}), frozenset({Q, D, T})}


@pytest.mark.parametrize("subset", SUBSETS, ids=lambda s: "+".join(sorted(t.value for t in s)))
@pytest.mark.parametrize("allow_shared", [False, True])
def test_validate_tiers_exhaustive(subset: frozenset[Tier], allow_shared: bool) -> None:
    tiers = [t for t in (Q, D, T) if t in subset]
    for families in itertools.product(["f1", "f2", "f3"], repeat=len(tiers)):
        assignment = dict(zip(tiers, families, strict=True))
        shared = len(set(families)) < len(families)
        should_pass = subset in ORDERED and (allow_shared or not shared)
        if should_pass:
            validate_tiers(assignment, allow_shared_family=allow_shared)
            continue
        with pytest.raises(TierSettingsError) as info:
            validate_tiers(assignment, allow_shared_family=allow_shared)
        message = str(info.value)
        if subset not in ORDERED:
            assert "tiers run in order" in message
        if shared and not allow_shared:
            assert "share the model family" in message


def test_validate_tiers_is_case_insensitive_on_families() -> None:
    with pytest.raises(TierSettingsError, match="share"):
        validate_tiers({Q: "OpenAI", D: "openai"}, allow_shared_family=False)


def test_validate_tiers_names_every_problem() -> None:
    with pytest.raises(TierSettingsError) as info:
        validate_tiers({D: "x", T: "x"}, allow_shared_family=False)
    message = str(info.value)
    assert "deep tier is configured but quick" in message
    assert "tiebreaker tier is configured but quick" in message
    assert "share the model family 'x'" in message


def test_authorship_patterns_also_name_judge_families() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="house-llm-7b",
        deep_model="gpt-5",
        authorship_patterns={"house-llm": "inhouse"},
    )
    assert settings.tiers()[Q].family == "inhouse"


# ---- alternates never carry a key to a host it was not configured for ------------------


def test_alternate_of_an_unused_provider_is_refused() -> None:
    """An OpenAI-protocol panel with an Anthropic alternate and no Anthropic settings:
    the global (OpenAI or proxy) key must not go to api.anthropic.com."""
    with pytest.raises(ValidationError) as info:
        JudgeSettings(
            llm_api_key="sk-openai-global-key",
            quick_model="gpt-5-nano",
            alternate_models=["anthropic:claude-haiku-4"],
        )
    message = str(info.value)
    assert "alternate 'anthropic:claude-haiku-4' speaks anthropic" in message
    assert "JUDGE_ALTERNATE_ANTHROPIC_BASE_URL" in message
    assert "JUDGE_ALTERNATE_ANTHROPIC_API_KEY" in message
    assert "sk-openai-global-key" not in message


def test_alternate_routes_are_not_checked_without_tiers() -> None:
    """No model configured: nothing runs, so nothing to refuse."""
    settings = JudgeSettings(llm_api_key="k", alternate_models=["anthropic:claude-haiku-4"])
    assert settings.tiers() == {}


def test_alternate_with_its_own_provider_settings() -> None:
    settings = JudgeSettings(
        llm_base_url="http://proxy/v1",
        llm_api_key="proxy-key",
        quick_model="gpt-5-nano",
        alternate_models=["anthropic:claude-haiku-4", "gemini-2.5-flash"],
        alternate_anthropic_api_key="anthropic-key",
    )
    claude, gemini = settings.alternates(Q)
    assert (claude.provider, claude.base_url) == ("anthropic", "https://api.anthropic.com")
    assert claude.api_key is not None and claude.api_key.get_secret_value() == "anthropic-key"
    # an alternate of the global provider keeps the global endpoint and key
    assert (gemini.base_url, gemini.endpoint_key()[2]) == ("http://proxy/v1", "proxy-key")
    assert "anthropic-key" in settings.api_keys() and "proxy-key" in settings.api_keys()


def test_alternate_base_url_alone_sends_no_key() -> None:
    settings = JudgeSettings(
        llm_api_key="sk-openai-global-key",
        quick_model="gpt-5-nano",
        alternate_models=["anthropic:claude-haiku-4"],
        alternate_anthropic_base_url="http://claude-gateway.internal/",
    )
    (claude,) = settings.alternates(Q)
    assert claude.base_url == "http://claude-gateway.internal"
    assert claude.api_key is None


def test_alternate_provider_settings_beat_a_tier_of_that_provider() -> None:
    settings = JudgeSettings(
        llm_base_url="http://proxy/v1",
        llm_api_key="proxy-key",
        quick_model="gpt-5-nano",
        deep_model="claude-sonnet-4",
        deep_provider="anthropic",
        deep_base_url="http://anthropic-proxy",
        alternate_models=["anthropic:claude-haiku-4"],
        alternate_anthropic_base_url="http://other-anthropic",
        alternate_anthropic_api_key="other-key",
    )
    (claude,) = settings.alternates(Q)
    assert claude.endpoint_key() == ("anthropic", "http://other-anthropic", "other-key")


def test_alternate_provider_settings_from_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_LLM_API_KEY", "sk-openai-global-key")
    monkeypatch.setenv("JUDGE_QUICK_MODEL", "gpt-5-nano")
    monkeypatch.setenv("JUDGE_ALTERNATE_MODELS", "anthropic:claude-haiku-4")
    monkeypatch.setenv("JUDGE_ALTERNATE_ANTHROPIC_API_KEY", "anthropic-env-key")
    (claude,) = JudgeSettings().alternates(Q)
    assert claude.endpoint_key() == ("anthropic", "https://api.anthropic.com", "anthropic-env-key")
    assert "anthropic-env-key" not in repr(JudgeSettings())


def test_validation_errors_never_quote_keys() -> None:
    """A shared-family error concerns the models, but pydantic's message would show the
    whole input, keys included, without hide_input_in_errors."""
    key = "sk-proxy-" + "Zq7Wm2Xr9Lt4Pv8Nc3Bd"
    with pytest.raises(ValidationError) as info:
        JudgeSettings(
            llm_base_url="http://x/v1",
            llm_api_key=key,
            quick_api_key=key + "-quick",
            quick_model="gpt-5-nano",
            deep_model="gpt-4o",
        )
    # str/repr are what reaches a log or a terminal (errors() hands the input to code
    # that asks for it; load_judge_settings asks without)
    text = str(info.value) + repr(info.value)
    assert "share the model family" in text
    for fragment in (key, key[:12], key[-8:], "Zq7Wm2"):
        assert fragment not in text


def test_describe_tiers_names_model_family_provider_and_host_never_a_key() -> None:
    """The line `serve` logs at start: enough to see what judges, nothing to leak."""
    key = "sk-proxy-" + "Zq7Wm2Xr9Lt4Pv8Nc3Bd"
    settings = JudgeSettings(
        llm_base_url=f"https://user:{key}@llm.example.com:8443/v1?api_key={key}",
        llm_api_key=key,
        quick_model="gpt-5-nano",
        deep_model="claude-sonnet-4",
        deep_provider="anthropic",
        deep_base_url="https://api.anthropic.com",
        deep_api_key=key + "-deep",
    )
    line = settings.describe_tiers()
    assert line == (
        "quick gpt-5-nano (family openai, openai at llm.example.com:8443); "
        "deep claude-sonnet-4 (family anthropic, anthropic at api.anthropic.com)"
    )
    assert "Zq7Wm2" not in line and "user" not in line
    assert JudgeSettings().describe_tiers().startswith("none configured")

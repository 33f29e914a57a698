"""bot/judge/providers/__init__.py: a provider's facts live in its `ProviderSpec`, and the rest
of the judge asks the registry instead of comparing provider names, so a new provider is its
module, its spec and its name in `ProviderName` (plus the settings pydantic must see
declared, which these tests name when one is missing)."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any, get_args

import httpx
import pytest
from pydantic import SecretStr

from bot.judge.providers import (
    DEFAULT_BASE_URLS,
    PROVIDERS,
    CLIProvider,
    ProviderName,
    make_provider,
    provider_spec,
)
from bot.judge.settings import JudgeSettings, alternate_setting, cli_setting, is_local

JUDGE = Path(__file__).resolve().parents[2] / "bot" / "judge"
# The modules that used to compare provider names; they ask the registry now.
ASKERS = (
    *sorted((JUDGE / "engine").glob("*.py")),
    *sorted((JUDGE / "doctor").glob("*.py")),
    JUDGE / "providers" / "server_facts.py",
)


def test_the_accepted_names_are_exactly_the_registered_providers() -> None:
    assert list(get_args(ProviderName)) == list(PROVIDERS)
    assert all(spec.name == name for name, spec in PROVIDERS.items())


@pytest.mark.parametrize("name", list(PROVIDERS))
def test_each_provider_has_the_settings_it_is_read_from(name: str) -> None:
    """An HTTP provider: the endpoint a key alone means, and its own alternate endpoint's
    `JUDGE_ALTERNATE_<NAME>_*`; a CLI: `JUDGE_<NAME>`, defaulting to its spec's command."""
    spec, fields = PROVIDERS[name], JudgeSettings.model_fields
    if spec.local:
        assert spec.public_base_url is None
        assert fields[cli_setting(name)].default == spec.command
        assert is_local(name)
    else:
        assert DEFAULT_BASE_URLS[name] == spec.public_base_url
        assert alternate_setting(name, "base_url") in fields
        assert fields[alternate_setting(name, "api_key")].annotation == SecretStr | None
        assert not is_local(name)


@pytest.mark.parametrize("name", list(PROVIDERS))
async def test_make_provider_builds_each_registered_provider(name: str) -> None:
    spec = PROVIDERS[name]
    async with httpx.AsyncClient() as client:
        provider = make_provider(name, client, spec.command or "http://llm.example", "k")
    assert provider.kind == name
    assert isinstance(provider, CLIProvider) is spec.local


def test_an_unknown_provider_is_refused_naming_the_registered_ones() -> None:
    with pytest.raises(ValueError, match="unknown LLM provider 'gemini'") as refused:
        provider_spec("gemini")
    assert all(repr(name) in str(refused.value) for name in PROVIDERS)


@pytest.mark.parametrize("path", ASKERS, ids=lambda p: p.name)
def test_no_provider_name_is_compared_outside_the_registry(path: Path) -> None:
    """A provider name spelled in the engine, the doctor or `server_facts` would be a second
    place a new provider must be added; they read its `ProviderSpec` instead."""
    names = set(PROVIDERS)
    spelled = [
        f"{path.name}:{node.lineno} {node.value!r}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and node.value in names
    ]
    assert not spelled


def test_every_key_setting_is_scrubbed_from_logs() -> None:
    """`api_keys` reads every `SecretStr` setting, so a new provider's key needs no
    second edit to stay out of the logs."""
    secret = [
        name
        for name, field in JudgeSettings.model_fields.items()
        if field.annotation == SecretStr | None
    ]
    assert "alternate_anthropic_api_key" in secret and "llm_api_key" in secret
    keys: dict[str, Any] = {name: f"key-of-{name}" for name in secret}
    settings = JudgeSettings(**keys)
    assert settings.api_keys() == [f"key-of-{name}" for name in secret]

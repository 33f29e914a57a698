"""The judge's settings: typed `JUDGE_*` environment variables. In this code base
"settings" always come from the process's environment and "config" is a repository's
`.github/judge.yml` (`bot/judging/repo_config.py`).

Loaded where the process starts (`serve`, the judge commands, the pre-push hook) by
`bot.settings.load_judge_settings`, the loader the server's settings use too, so the
environment and `.env` count alike everywhere; built directly in tests with keyword
arguments. The model reads the process environment only: which `.env` counts is the
loader's decision. Nothing here reads anything at import.

Endpoints resolve per tier: `JUDGE_<TIER>_BASE_URL` / `_API_KEY` / `_PROVIDER` fall back
to `JUDGE_LLM_BASE_URL` / `JUDGE_LLM_API_KEY` / `JUDGE_LLM_PROVIDER`, and then (for the
base URL only, when a key is set) to the provider's public endpoint. A tier runs only
when it has a model and a base URL. Families default to
`authorship.family_of_model(model)`.

A tier (or an alternate, `claude-cli:sonnet`) whose provider is `claude-cli` or
`opencode-cli` runs a local command instead (`JUDGE_CLAUDE_CLI`, `JUDGE_OPENCODE_CLI`;
bot/judge/providers/agent_cli.py): it needs no base URL and is sent no key.

`JUDGE_<TIER>_MAX_OUTPUT_TOKENS` overrides `JUDGE_MAX_OUTPUT_TOKENS` for one tier (and its
alternates): a reasoning model spends output tokens on its thinking before it answers.

`JUDGE_<TIER>_RESPONSE_FORMAT` (else `JUDGE_RESPONSE_FORMAT`) fixes how a tier's model is
asked for its JSON answer on the OpenAI protocol: `json_schema`, `json_object` or `prompt`
(the schema and example in the prompt only), for a server that misreports what it
supports; `auto` (the default) negotiates (bot/judge/providers/openai_chat.py). It is the
server's property, not the seat's: an alternate keeps the global setting wherever it sits.

Alternates (`JUDGE_ALTERNATE_MODELS`, `provider:model` or `model`) resolve per provider:
`JUDGE_ALTERNATE_<PROVIDER>_BASE_URL` / `_API_KEY` when either is set (a key alone means
the provider's public endpoint; a base URL alone sends no key), else the endpoint of the
first tier speaking that provider, else the global endpoint when the provider is
`JUDGE_LLM_PROVIDER`. Anything else is refused: a key is only ever sent to the host it
was configured with, so an OpenAI or proxy key never reaches Anthropic's endpoint.

The four-eyes rule starts here: two tiers of one family would not be independent, so
such settings are refused unless `JUDGE_ALLOW_SHARED_FAMILY=true` (`validate_tiers`).

Validation errors never echo input values (`hide_input_in_errors`): they may be keys.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.judge.authorship import family_of_model
from bot.judge.providers import (
    CLI_PROVIDERS,
    DEFAULT_BASE_URLS,
    PROVIDERS,
    ProviderName,
)
from bot.judge.providers.server_facts import LEAST_CONTEXT
from bot.judge.records import Tier

ResponseFormatName = Literal["auto", "json_schema", "json_object", "prompt"]
DEFAULT_MAX_OUTPUT_TOKENS = 1024
MIN_CONTEXT_TOKENS = LEAST_CONTEXT
"""The least `JUDGE_*_CONTEXT_TOKENS` may say: the least context believed from a refusal."""
DEFAULT_TIMEOUTS: dict[Tier, float] = {Tier.QUICK: 45.0, Tier.DEEP: 60.0, Tier.TIEBREAKER: 45.0}
"""Seconds per call when neither JUDGE_<TIER>_TIMEOUT nor JUDGE_TIMEOUT is set: enough for
a hosted API; a model on a laptop CPU wants more."""


class Mode(StrEnum):
    """How a verdict binds: advisory never fails a check or a push; blocking may."""

    ADVISORY = "advisory"
    BLOCKING = "blocking"


class OnOutage(StrEnum):
    """What a provider outage concludes in blocking mode: `pass` (neutral, the seeds'
    fail-open rule) or `block` (action_required: nothing passes unjudged)."""

    PASS = "pass"
    BLOCK = "block"


TIER_ORDER: tuple[Tier, ...] = (Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER)
DEFAULT_WATCHED_PATHS = (
    "research/**/*.md",
    "knowledge/**/*.md",
    "docs/**/*.md",
    "plans/**/*.md",
)


class TierSettingsError(ValueError):
    """The tiers cannot form an independent panel."""


def validate_tiers(families: Mapping[Tier, str], *, allow_shared_family: bool) -> None:
    """Check the configured tiers (tier -> family of its model).

    Tiers must be configured in order (deep needs quick, the tiebreaker needs both),
    and unless `allow_shared_family`, no two tiers may share a family. Raises
    `TierSettingsError` naming every problem.
    """
    problems: list[str] = []
    for index, tier in enumerate(TIER_ORDER):
        if tier in families:
            missing = [t.value for t in TIER_ORDER[:index] if t not in families]
            if missing:
                problems.append(
                    f"the {tier.value} tier is configured but {', '.join(missing)} is not "
                    "(tiers run in order quick -> deep -> tiebreaker)"
                )
    if not allow_shared_family:
        by_family: dict[str, list[str]] = {}
        for tier in TIER_ORDER:
            if tier in families:
                by_family.setdefault(families[tier].lower(), []).append(tier.value)
        for family, tiers in by_family.items():
            if len(tiers) > 1:
                problems.append(
                    f"tiers {' and '.join(tiers)} share the model family {family!r}; judges of "
                    "one family are not independent (set JUDGE_<TIER>_FAMILY if the family was "
                    "guessed wrong, or JUDGE_ALLOW_SHARED_FAMILY=true to accept it)"
                )
    if problems:
        raise TierSettingsError("invalid judge tiers: " + "; ".join(problems))


@dataclass(frozen=True)
class Endpoint:
    """One judge seat: a model on an endpoint, and its budget for one call."""

    model: str
    family: str
    provider: str
    base_url: str
    api_key: SecretStr | None
    timeout: float
    max_chars: int
    max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS
    response_format: ResponseFormatName = "auto"
    context_tokens: int | None = None
    """The model's context in tokens as configured; None: ask its server
    (bot/judge/providers/server_facts.py), else read `max_chars` as configured."""
    temperature: float = 0.0

    @property
    def local(self) -> bool:
        """Whether this seat runs a local CLI (its `base_url` is then the command)."""
        return is_local(self.provider)

    def endpoint_key(self) -> tuple[str, str, str]:
        key = self.api_key.get_secret_value() if self.api_key is not None else ""
        return (self.provider, self.base_url, key)

    @property
    def host(self) -> str:
        """The base URL's host and port only (`seat_host`)."""
        return seat_host(self.provider, self.base_url)


def is_local(provider: str) -> bool:
    """Whether `provider` runs a local command (an unknown name does not)."""
    spec = PROVIDERS.get(provider)
    return spec is not None and spec.local


def seat_host(provider: str, base_url: str) -> str:
    """The base URL's host and port only: a URL may carry a user, a password or a key in
    its query, and this is what a log line shows. A CLI seat: `local` and the command's
    name (its directory may name a person)."""
    if is_local(provider):
        return "local " + (base_url.replace("\\", "/").rsplit("/", 1)[-1] or "?")
    try:
        parts = urlsplit(base_url)
        host, port = parts.hostname, parts.port
    except ValueError:
        return "?"
    if not host:
        return "?"
    return f"{host}:{port}" if port else host


def parse_alternate(entry: str, default_provider: str) -> tuple[str, str]:
    """`provider:model` or `model` -> (provider, model). Only a known provider name counts
    as a prefix, so model ids with colons (`llama3:70b`) stay intact."""
    head, sep, tail = entry.partition(":")
    known = head.strip() in PROVIDERS
    if sep and known and tail.strip():
        return head.strip(), tail.strip()
    return default_provider, entry.strip()


def alternate_setting(provider: str, what: Literal["base_url", "api_key"]) -> str:
    """The field of an HTTP provider's own alternate endpoint, `JUDGE_ALTERNATE_<PROVIDER>_`
    `BASE_URL` / `_API_KEY` (tests/judge/test_provider_registry.py holds each declared)."""
    return f"alternate_{provider.replace('-', '_')}_{what}"


def cli_setting(provider: str) -> str:
    """The field of a CLI provider's command, `JUDGE_<PROVIDER>` (`claude_cli`)."""
    return provider.replace("-", "_")


def _split_list(value: Any) -> Any:
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


class JudgeSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_",
        extra="ignore",
        frozen=True,
        env_parse_none_str="none",
        hide_input_in_errors=True,
    )

    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_provider: ProviderName = "openai"

    quick_model: str | None = None
    deep_model: str | None = None
    tiebreaker_model: str | None = None
    quick_base_url: str | None = None
    deep_base_url: str | None = None
    tiebreaker_base_url: str | None = None
    quick_api_key: SecretStr | None = None
    deep_api_key: SecretStr | None = None
    tiebreaker_api_key: SecretStr | None = None
    quick_provider: ProviderName | None = None
    deep_provider: ProviderName | None = None
    tiebreaker_provider: ProviderName | None = None
    quick_family: str | None = None
    deep_family: str | None = None
    tiebreaker_family: str | None = None

    alternate_models: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Each HTTP provider's own alternate endpoint (`alternate_route`); declared one by one
    # because pydantic-settings reads declared fields only.
    alternate_openai_base_url: str | None = None
    alternate_openai_api_key: SecretStr | None = None
    alternate_anthropic_base_url: str | None = None
    alternate_anthropic_api_key: SecretStr | None = None
    allow_shared_family: bool = False
    # The commands the CLI providers run (a name on PATH or a path; `cli_command`).
    claude_cli: str = Field(default=CLI_PROVIDERS["claude-cli"], min_length=1)
    opencode_cli: str = Field(default=CLI_PROVIDERS["opencode-cli"], min_length=1)
    # Globs of the models a repository's `.github/judge.yml` may pick; empty allows any.
    allowed_models: Annotated[list[str], NoDecode] = Field(default_factory=list)

    # A tier's own timeout counts when it was set (`timeout_of`); its default otherwise
    # gives way to JUDGE_TIMEOUT.
    timeout: float | None = Field(default=None, gt=0)
    quick_timeout: float = Field(default=DEFAULT_TIMEOUTS[Tier.QUICK], gt=0)
    deep_timeout: float = Field(default=DEFAULT_TIMEOUTS[Tier.DEEP], gt=0)
    tiebreaker_timeout: float = Field(default=DEFAULT_TIMEOUTS[Tier.TIEBREAKER], gt=0)
    wall_clock_budget: float = Field(default=180.0, gt=0)
    quick_max_chars: int = Field(default=4000, ge=200)
    deep_max_chars: int = Field(default=32000, ge=200)
    tiebreaker_max_chars: int = Field(default=32000, ge=200)
    max_output_tokens: int = Field(default=DEFAULT_MAX_OUTPUT_TOKENS, ge=64)
    quick_max_output_tokens: int | None = Field(default=None, ge=64)
    deep_max_output_tokens: int | None = Field(default=None, ge=64)
    tiebreaker_max_output_tokens: int | None = Field(default=None, ge=64)
    context_tokens: int | None = Field(default=None, ge=MIN_CONTEXT_TOKENS)
    quick_context_tokens: int | None = Field(default=None, ge=MIN_CONTEXT_TOKENS)
    deep_context_tokens: int | None = Field(default=None, ge=MIN_CONTEXT_TOKENS)
    tiebreaker_context_tokens: int | None = Field(default=None, ge=MIN_CONTEXT_TOKENS)
    temperature: float = Field(default=0.0, ge=0, le=2)
    quick_temperature: float | None = Field(default=None, ge=0, le=2)
    deep_temperature: float | None = Field(default=None, ge=0, le=2)
    tiebreaker_temperature: float | None = Field(default=None, ge=0, le=2)
    response_format: ResponseFormatName = "auto"
    quick_response_format: ResponseFormatName | None = None
    deep_response_format: ResponseFormatName | None = None
    tiebreaker_response_format: ResponseFormatName | None = None

    # The throttle counts per repository within an installation, the budgets per
    # installation; the CLI and the hook are one local installation (cost.usage_scopes).
    throttle_per_hour: int = Field(default=20, ge=0)
    daily_call_budget: int | None = Field(default=500, ge=0)
    daily_token_budget: int | None = Field(default=None, ge=0)

    authorship_patterns: dict[str, str] | None = None

    mode: Mode = Mode.ADVISORY
    on_outage: OnOutage = OnOutage.PASS
    paths: Annotated[list[str], NoDecode] = Field(
        default_factory=lambda: list(DEFAULT_WATCHED_PATHS)
    )
    authors: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("alternate_models", "paths", "authors", mode="before")
    @classmethod
    def _comma_list(cls, value: Any) -> Any:
        return _split_list(value)

    @field_validator("allowed_models", mode="before")
    @classmethod
    def _model_globs(cls, value: Any) -> Any:
        # An empty entry (`a,,b`, a trailing comma) is a slip that would otherwise vanish
        # and leave the operator believing a glob is in force.
        if isinstance(value, str):
            if not value.strip():
                return []
            value = value.split(",")
        if not isinstance(value, list | tuple):
            return value
        globs = [glob.strip() if isinstance(glob, str) else glob for glob in value]
        empty = [str(n) for n, glob in enumerate(globs, 1) if glob == ""]
        if empty:
            entries = (
                f"entry {empty[0]} is" if len(empty) == 1 else f"entries {', '.join(empty)} are"
            )
            raise ValueError(
                f"{entries} empty (of {len(globs)}); separate the model globs with single "
                "commas, e.g. claude-*,openai/*"
            )
        return globs

    @model_validator(mode="after")
    def _independent_tiers(self) -> JudgeSettings:
        tiers = self.tiers()
        validate_tiers(
            {tier: seat.family for tier, seat in tiers.items()},
            allow_shared_family=self.allow_shared_family,
        )
        if tiers:
            self._check_alternate_routes(tiers)
        return self

    def _check_alternate_routes(self, tiers: Mapping[Tier, Endpoint]) -> None:
        problems = []
        for entry in self.alternate_models:
            provider, _ = parse_alternate(entry, self.llm_provider)
            if self._alternate_route(provider, tiers) is None:
                env = f"JUDGE_ALTERNATE_{provider.upper()}"
                problems.append(
                    f"alternate {entry!r} speaks {provider}, which no tier uses and which has "
                    f"no endpoint of its own: set {env}_BASE_URL and/or {env}_API_KEY (other "
                    "providers' keys are never sent to its host)"
                )
        if problems:
            raise TierSettingsError("invalid judge alternates: " + "; ".join(problems))

    # -- resolution ----------------------------------------------------------
    def _tier_value(self, tier: Tier, name: str) -> Any:
        return getattr(self, f"{tier.value}_{name}")

    def output_tokens(self, tier: Tier) -> int:
        """The tier's answer length limit: its own setting, else the global one."""
        own: int | None = self._tier_value(tier, "max_output_tokens")
        return own if own is not None else self.max_output_tokens

    def timeout_of(self, tier: Tier) -> float:
        """Seconds per call: the tier's own, else JUDGE_TIMEOUT, else the tier's default."""
        own: float = self._tier_value(tier, "timeout")
        if f"{tier.value}_timeout" in self.model_fields_set or self.timeout is None:
            return own
        return self.timeout

    def context_tokens_of(self, tier: Tier) -> int | None:
        """The tier's context as configured: its own, else the global one (None: ask)."""
        own: int | None = self._tier_value(tier, "context_tokens")
        return own if own is not None else self.context_tokens

    def temperature_of(self, tier: Tier) -> float:
        """The tier's sampling temperature: its own, else the global one."""
        own: float | None = self._tier_value(tier, "temperature")
        return own if own is not None else self.temperature

    def response_format_of(self, tier: Tier) -> ResponseFormatName:
        """The tier's structured-output mode: its own setting, else the global one."""
        own: ResponseFormatName | None = self._tier_value(tier, "response_format")
        return own if own is not None else self.response_format

    def cli_command(self, provider: str) -> str:
        """The command a CLI provider runs."""
        return str(getattr(self, cli_setting(provider)))

    def _endpoint(
        self,
        *,
        model: str,
        provider: str,
        base_url: str | None,
        api_key: SecretStr | None,
        family: str | None,
        tier: Tier,
        response_format: ResponseFormatName,
        context_tokens: int | None,
    ) -> Endpoint | None:
        if is_local(provider):
            base_url, api_key = self.cli_command(provider), None
        if base_url is None and api_key is not None:
            base_url = DEFAULT_BASE_URLS[provider]
        if base_url is None:
            return None
        return Endpoint(
            model=model,
            family=(family or family_of_model(model, self.authorship_patterns)).lower(),
            provider=provider,
            base_url=base_url.rstrip("/"),
            api_key=api_key,
            timeout=self.timeout_of(tier),
            max_chars=self._tier_value(tier, "max_chars"),
            max_output_tokens=self.output_tokens(tier),
            response_format=response_format,
            context_tokens=context_tokens,
            temperature=self.temperature_of(tier),
        )

    def tiers(self) -> dict[Tier, Endpoint]:
        """The tiers that can run (model and endpoint known), in protocol order."""
        out: dict[Tier, Endpoint] = {}
        for tier in TIER_ORDER:
            model = self._tier_value(tier, "model")
            if not model:
                continue
            provider = self._tier_value(tier, "provider") or self.llm_provider
            base_url = self._tier_value(tier, "base_url") or self.llm_base_url
            seat = self._endpoint(
                model=model,
                provider=provider,
                base_url=base_url,
                api_key=self._tier_value(tier, "api_key")
                or self._global_key_for(provider, base_url),
                family=self._tier_value(tier, "family"),
                tier=tier,
                response_format=self.response_format_of(tier),
                context_tokens=self.context_tokens_of(tier),
            )
            if seat is not None:
                out[tier] = seat
        return out

    def _global_key_for(self, provider: str, base_url: str | None) -> SecretStr | None:
        """JUDGE_LLM_API_KEY goes only to the global endpoint: a tier with a host of its
        own (a local server, another provider) never receives it."""
        home = (self.llm_base_url or DEFAULT_BASE_URLS.get(self.llm_provider, "")).rstrip("/")
        there = (base_url or DEFAULT_BASE_URLS.get(provider, "")).rstrip("/")
        return self.llm_api_key if there and there == home else None

    def _alternate_route(
        self, provider: str, tiers: Mapping[Tier, Endpoint]
    ) -> tuple[str, SecretStr | None] | None:
        """(base URL, key) an alternate of `provider` may use, None when nothing was
        configured for that provider (see the module docstring for the order)."""
        if is_local(provider):
            return self.cli_command(provider), None
        own_url = getattr(self, alternate_setting(provider, "base_url"))
        own_key = getattr(self, alternate_setting(provider, "api_key"))
        if own_url or own_key is not None:
            return own_url or DEFAULT_BASE_URLS[provider], own_key
        same = next((seat for seat in tiers.values() if seat.provider == provider), None)
        if same is not None:
            return same.base_url, same.api_key
        if provider == self.llm_provider:
            if self.llm_base_url:
                return self.llm_base_url, self.llm_api_key
            if self.llm_api_key is not None:
                return DEFAULT_BASE_URLS[provider], self.llm_api_key
        return None

    def alternates(self, tier: Tier) -> list[Endpoint]:
        """Stand-ins for `tier` when its family authored the change, in configured order.

        Each uses the endpoint configured for its provider (module docstring); with
        tiers configured, an alternate without one was refused at validation.
        """
        tiers = self.tiers()
        out: list[Endpoint] = []
        for entry in self.alternate_models:
            provider, model = parse_alternate(entry, self.llm_provider)
            route = self._alternate_route(provider, tiers)
            if route is None:
                continue
            base_url, api_key = route
            seat = self._endpoint(
                model=model,
                provider=provider,
                base_url=base_url,
                api_key=api_key,
                family=None,
                tier=tier,
                response_format=self.response_format,
                context_tokens=self.context_tokens,
            )
            if seat is not None:
                out.append(seat)
        return out

    def family_names(self) -> dict[str, str]:
        """Names a commit's authorship trailer may call a family by (`Agent-Model:
        acme-large` is family acme), for `authorship.detect_authoring_families`: every
        seated family (tiers and alternates; an unrecognised model's `unknown:<name>` by
        its name), and every family `JUDGE_AUTHORSHIP_PATTERNS` declares."""
        tiers = self.tiers()
        seats = [*tiers.values(), *(e for tier in tiers for e in self.alternates(tier))]
        families = {seat.family for seat in seats}
        families.update(f.lower() for f in (self.authorship_patterns or {}).values())
        return {family.removeprefix("unknown:"): family for family in sorted(families)}

    @property
    def llm_configured(self) -> bool:
        return bool(self.tiers())

    def describe_tiers(self) -> str:
        """One line for the start-up log: each tier's model, family, provider and host,
        never a key."""
        tiers = self.tiers()
        if not tiers:
            return "none configured: mechanical checks only"
        return "; ".join(
            f"{tier.value} {seat.model} (family {seat.family}, {seat.provider} at {seat.host})"
            for tier, seat in tiers.items()
        )

    def api_keys(self) -> list[str]:
        """Every configured API key, for log scrubbing: every `SecretStr` setting in the
        order declared, so a new provider's key setting is scrubbed without a second edit."""
        keys = (getattr(self, name) for name in type(self).model_fields)
        return [
            k.get_secret_value() for k in keys if isinstance(k, SecretStr) and k.get_secret_value()
        ]

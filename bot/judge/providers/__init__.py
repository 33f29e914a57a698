"""LLM providers: two wire protocols and two local CLIs behind one small interface.

`OpenAIChatProvider` (bot/judge/providers/openai_chat.py) speaks OpenAI chat completions, which
most proxies and open-model hosts also speak; `AnthropicMessagesProvider`
(bot/judge/providers/anthropic_messages.py) speaks Anthropic Messages. Both take ONE shared
`httpx.AsyncClient` (built by the application, never here), a base URL and an API key,
and answer `complete(model=..., messages=..., ...)` with a `Completion`: the text, token
counts, latency and whether the server cut it at the output-token limit (`cut_off`). The
model is a call argument so one provider serves every tier on its endpoint, and so is a
tier's fixed structured-output mode (`output_mode`; only the OpenAI protocol has one to
choose). `CLIProvider` (bot/judge/providers/agent_cli.py) answers the same call by running
`claude -p` or `opencode run` (providers `claude-cli` and `opencode-cli`); its "base URL"
is the command.

How long a prompt a model takes is the server's to say: `server_facts.py` reads the
context it serves a model with (`discover_context_tokens`, `ContextMemory`), and
`overflow.py` how it refuses a prompt past it (raised as `ContextOverflow`).

The room:

    openai_chat         the OpenAI chat-completions protocol
    anthropic_messages  the Anthropic Messages protocol
    agent_cli           judges run through a local agent CLI (`claude -p`, `opencode run`)
    http                what both wire protocols share: failures, the answer, the POST
    server_facts        the context a server says it serves a model with
    overflow            how a server says a prompt is longer than its model's context

This module is where the rest of the judge gets providers from: the interface the
engine relies on, the registry, the factory, and (re-exported) the protocol classes and
the failures they raise (defined in bot/judge/providers/http.py).

The registry (`PROVIDERS`, one `ProviderSpec` a provider) is what the rest of the judge
ASKS about a provider instead of comparing its name: the settings (the names
`JUDGE_*_PROVIDER` accepts, the public endpoint a key alone means, whether it is a local
command), `make_provider`, the self-check (how its models are listed), the doctor's probe
(the one way it asks for the answer) and `server_facts` (whether its server may say a
model's context). A new provider is its module, its `ProviderSpec` and its name in
`ProviderName` here; an HTTP one also declares its `JUDGE_ALTERNATE_<NAME>_BASE_URL` /
`_API_KEY` settings and a CLI its `JUDGE_<NAME>` command in bot/judge/settings.py
(pydantic-settings reads declared fields only; tests/judge/test_provider_registry.py names
a missing one).

Exceptions (every one carries `provider` and `model`, never an API key):

    ProviderError
     ├── ProviderTimeout          the call took longer than its timeout
     ├── ProviderTransportError   connection refused/reset, DNS, protocol and body
     │                            decoding errors, an invalid URL, a header (API key)
     │                            that cannot be encoded
     ├── ProviderHTTPError        the server answered 4xx/5xx (`status`, `detail`, and
     │                            `server_message`: its error's message, short and
     │                            scrubbed, for records and logs)
     │    ├── ProviderRateLimited 429 (`retry_after` seconds when the server said)
     │    └── ContextOverflow     the prompt is longer than the model's context
     │                            (`overflow`: the tokens the server counted, its
     │                            context; bot/judge/providers/overflow.py)
     ├── MalformedResponse        2xx, but not the protocol's JSON envelope, or longer
     │                            than `answer_limit(max_tokens)` bytes (a CLI: output
     │                            that is not its envelope, or that much on a stream)
     ├── EmptyAnswer              a valid envelope with no text in it
     └── ProviderCommandError     a CLI that said it failed or exited non-zero
                                  (`exit_code`, `detail`)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal, Protocol

import httpx

from bot.judge.providers.agent_cli import CLI_PROVIDERS, CLIProvider
from bot.judge.providers.anthropic_messages import ANTHROPIC_VERSION, AnthropicMessagesProvider
from bot.judge.providers.http import (
    OUTPUT_MODES,
    Completion,
    ContextOverflow,
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.providers.openai_chat import (
    ErrorInfo,
    OpenAIChatProvider,
    OutputMode,
    StructuredOutputMemory,
    error_info,
    format_refused,
)

__all__ = [
    "ANTHROPIC_VERSION",
    "CLI_PROVIDERS",
    "DEFAULT_BASE_URLS",
    "OUTPUT_MODES",
    "PROVIDERS",
    "AnthropicMessagesProvider",
    "CLIProvider",
    "Completion",
    "ContextOverflow",
    "EmptyAnswer",
    "ErrorInfo",
    "LLMProvider",
    "MalformedResponse",
    "ModelList",
    "OpenAIChatProvider",
    "OutputMode",
    "ProviderCommandError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderName",
    "ProviderRateLimited",
    "ProviderSpec",
    "ProviderTimeout",
    "ProviderTransportError",
    "StructuredOutputMemory",
    "error_info",
    "format_refused",
    "make_provider",
    "provider_spec",
]

ProviderName = Literal["openai", "anthropic", "claude-cli", "opencode-cli"]
"""The values `JUDGE_*_PROVIDER` accepts: every name in `PROVIDERS`, and only those (a test
holds the two equal; pydantic needs the literal spelled out)."""


class ModelList(StrEnum):
    """How a server lists its models (bot/judge/engine/self_check.py reads each)."""

    OPENAI = "openai"
    """`GET {base}/models`, as OpenAI-compatible servers answer it."""
    ANTHROPIC = "anthropic"
    """`GET {base}/v1/models`, paged."""


class LLMProvider(Protocol):
    """What the engine needs from a provider."""

    kind: str
    base_url: str

    async def complete(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, str]],
        time_limit: float,
        response_schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
        max_tokens: int = 1024,
        output_mode: OutputMode | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """One chat turn; raises a `ProviderError` subclass on any failure."""
        ...


Build = Callable[[httpx.AsyncClient, str, str, StructuredOutputMemory | None], LLMProvider]
"""(client, base URL or command, API key, structured-output memory) -> the provider."""


@dataclass(frozen=True)
class ProviderSpec:
    """Everything the judge outside this room knows of one provider."""

    name: ProviderName
    build: Build
    public_base_url: str | None = None
    """The endpoint a key without a base URL means; None for a CLI."""
    command: str | None = None
    """A CLI's command unless `JUDGE_<NAME>` says otherwise; None for an HTTP provider."""
    model_list: ModelList | None = None
    """How its server lists the models it serves; None: it has no list to ask."""
    answer_mode: OutputMode | None = None
    """The one way it asks for the JSON answer; None: the tier's `JUDGE_*_RESPONSE_FORMAT`
    decides, or the negotiation (bot/judge/providers/openai_chat.py)."""
    reports_context: bool = False
    """Whether its server may say the context it serves a model with (llama.cpp, vLLM and
    Ollama speak the OpenAI protocol; bot/judge/providers/server_facts.py)."""

    @property
    def local(self) -> bool:
        """Whether it runs a local command (its "base URL" is the command), sent no key."""
        return self.command is not None


def _openai(
    client: httpx.AsyncClient, base_url: str, api_key: str, memory: StructuredOutputMemory | None
) -> LLMProvider:
    return OpenAIChatProvider(client, base_url, api_key, memory=memory)


def _anthropic(
    client: httpx.AsyncClient, base_url: str, api_key: str, memory: StructuredOutputMemory | None
) -> LLMProvider:
    return AnthropicMessagesProvider(client, base_url, api_key)


def _cli(kind: str) -> Build:
    def build(
        client: httpx.AsyncClient,
        command: str,
        api_key: str,
        memory: StructuredOutputMemory | None,
    ) -> LLMProvider:
        return CLIProvider(kind, command)

    return build


PROVIDERS: Mapping[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "openai",
            _openai,
            public_base_url="https://api.openai.com/v1",
            model_list=ModelList.OPENAI,
            reports_context=True,
        ),
        ProviderSpec(
            "anthropic",
            _anthropic,
            public_base_url="https://api.anthropic.com",
            model_list=ModelList.ANTHROPIC,
            answer_mode=OutputMode.INSTRUCTIONS,
        ),
        ProviderSpec(
            "claude-cli",
            _cli("claude-cli"),
            command=CLI_PROVIDERS["claude-cli"],
            answer_mode=OutputMode.JSON_SCHEMA,
        ),
        ProviderSpec(
            "opencode-cli",
            _cli("opencode-cli"),
            command=CLI_PROVIDERS["opencode-cli"],
            answer_mode=OutputMode.INSTRUCTIONS,
        ),
    )
}
"""Every provider, by name, in the order messages list them."""

DEFAULT_BASE_URLS: Mapping[str, str] = {
    name: spec.public_base_url for name, spec in PROVIDERS.items() if spec.public_base_url
}


def provider_spec(kind: str) -> ProviderSpec:
    """The registry's entry for a provider name; ValueError naming the known ones."""
    spec = PROVIDERS.get(kind)
    if spec is None:
        known = ", ".join(repr(k) for k in PROVIDERS)
        raise ValueError(f"unknown LLM provider {kind!r} (expected one of {known})")
    return spec


def make_provider(
    kind: str,
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    *,
    memory: StructuredOutputMemory | None = None,
) -> LLMProvider:
    """Build the provider for a protocol name (`openai`, `anthropic`) or a CLI's
    (`claude-cli`, `opencode-cli`, whose `base_url` is the command to run)."""
    return provider_spec(kind).build(client, base_url, api_key, memory)

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
engine relies on, the factory, and (re-exported) the protocol classes and the failures
they raise (defined in bot/judge/providers/http.py).

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

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

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
    "AnthropicMessagesProvider",
    "CLIProvider",
    "Completion",
    "ContextOverflow",
    "EmptyAnswer",
    "ErrorInfo",
    "LLMProvider",
    "MalformedResponse",
    "OpenAIChatProvider",
    "OutputMode",
    "ProviderCommandError",
    "ProviderError",
    "ProviderHTTPError",
    "ProviderRateLimited",
    "ProviderTimeout",
    "ProviderTransportError",
    "StructuredOutputMemory",
    "error_info",
    "format_refused",
    "make_provider",
]

DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}


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
    if kind == "anthropic":
        return AnthropicMessagesProvider(client, base_url, api_key)
    if kind == "openai":
        return OpenAIChatProvider(client, base_url, api_key, memory=memory)
    if kind in CLI_PROVIDERS:
        return CLIProvider(kind, base_url)
    known = ", ".join(repr(k) for k in (*DEFAULT_BASE_URLS, *CLI_PROVIDERS))
    raise ValueError(f"unknown LLM provider {kind!r} (expected one of {known})")

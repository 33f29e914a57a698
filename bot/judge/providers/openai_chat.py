"""The OpenAI chat-completions protocol (`POST {base}/chat/completions`).

Most proxies and open-model hosts speak this protocol, each with its own gaps, so the
provider negotiates instead of assuming. It asks for a JSON-schema answer via
`response_format: {"type": "json_schema", ...}`. A server that refuses it, with an error
that names the response format, is asked again with `{"type": "json_object"}` and then
with plain instructions (the schema appended to the system prompt, beside the rubric's
JSON example). Servers refuse in different ways, all of which count:

    OpenAI, vLLM, llama.cpp's llama-server   400  (llama-server: `response_format type
                                                   must be one of "text" or "json_object"`)
    FastAPI servers                          422  (`detail[].loc` names response_format)
    llama-cpp-python's server                500  (its request validation error, naming
                                                   `response_format`, becomes an internal
                                                   error)

"Naming" means the error's `param` field when the server sets one, else its message;
never the whole body, which some proxies fill with an echo of the request (where
`response_format` always appears). Refused sampling parameters are matched the same way.

What worked is remembered per base URL and model in a `StructuredOutputMemory` shared by
the providers, and forgotten after `REPROBE_SECONDS` so a server upgraded since is asked
for the stronger format again. A tier whose server misreports (accepts json_schema and
ignores it, or refuses what it supports) fixes its format instead
(`JUDGE_<TIER>_RESPONSE_FORMAT`, passed here as `output_mode`): no negotiation then, and a
refusal is the HTTP error it is.

Reasoning models served this way (vLLM, Ollama, DeepSeek) may return their thinking in a
`reasoning_content` (or `reasoning`) field beside the content: it is never read as the
answer. When that thinking used up `max_tokens` before the answer began, the content is
empty and the `EmptyAnswer` says so (the tier's `JUDGE_<TIER>_MAX_OUTPUT_TOKENS` is then
too low). Thinking written into the content itself is set aside by bot/judge/rubrics/parsing.py.
An answer stopped at the limit (`finish_reason: length`, as OpenAI, vLLM, llama.cpp,
llama-cpp-python and Ollama all report it) is returned marked `cut_off`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bot.judge.providers.http import (
    OUTPUT_MODES,
    Completion,
    EmptyAnswer,
    ErrorInfo,
    HTTPProvider,
    MalformedResponse,
    OutputMode,
    completion_of,
    error_info,
    overflow_of,
    with_instructions,
)

__all__ = [
    "OUTPUT_MODES",
    "REPROBE_SECONDS",
    "ErrorInfo",
    "OpenAIChatProvider",
    "OutputMode",
    "StructuredOutputMemory",
    "error_info",
    "format_refused",
]

_OUTPUT_FORMAT_WORDS = (
    "response_format",
    "json_schema",
    "json_object",
    "json schema",
    "structured output",
    "grammar",
)
_FORMAT_REFUSAL_STATUSES = frozenset({400, 422, 500, 501})
REPROBE_SECONDS = 3600.0
"""How long a fallback is remembered before the stronger format is tried again."""


@dataclass
class StructuredOutputMemory:
    """What each endpoint accepted, shared by providers: per (base URL, model) the
    strongest output mode that worked and since when (forgotten `reprobe_after` seconds
    later), and the sampling parameters it refused (reasoning models refuse
    `temperature` and want `max_completion_tokens`)."""

    modes: dict[tuple[str, str], tuple[OutputMode, float]] = field(default_factory=dict)
    refused: dict[tuple[str, str], set[str]] = field(default_factory=dict)
    reprobe_after: float = REPROBE_SECONDS
    clock: Callable[[], float] = time.monotonic

    def get(self, base_url: str, model: str | None = None) -> OutputMode:
        """The mode to start with for `model` at `base_url`; without a model, the
        weakest any model there needed."""
        if model is None:
            known = [self.get(url, name) for url, name in list(self.modes) if url == base_url]
            return max(known, default=OutputMode.JSON_SCHEMA)
        learned = self.modes.get((base_url, model))
        if learned is None:
            return OutputMode.JSON_SCHEMA
        mode, since = learned
        if self.clock() - since >= self.reprobe_after:
            del self.modes[(base_url, model)]
            return OutputMode.JSON_SCHEMA
        return mode

    def downgrade(self, base_url: str, model: str, mode: OutputMode) -> None:
        if mode > self.get(base_url, model):
            self.modes[(base_url, model)] = (mode, self.clock())


def format_refused(status: int, info: ErrorInfo) -> bool:
    """Whether an error answer refuses the response format (the statuses servers use
    for it, and an error naming it)."""
    return status in _FORMAT_REFUSAL_STATUSES and info.names(
        "response_format", message_words=_OUTPUT_FORMAT_WORDS
    )


def _refused_parameter(info: ErrorInfo, body: Mapping[str, Any]) -> str | None:
    """The optional parameter a 400 complains about, if it is one we can drop."""
    for name in ("temperature", "max_tokens"):
        if name in body and info.names(name, message_words=(f"'{name}'", f'"{name}"')):
            return name
    return None


def _text_of(content: Any) -> str:
    """A chat message's content: a string, or (some servers) a list of typed parts of
    which the string `text` ones count."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"]
            for part in content
            if isinstance(part, dict)
            and part.get("type") in ("text", "output_text")
            and isinstance(part.get("text"), str)
        )
    return ""


def _reasoned_without_answer(message: Mapping[str, Any]) -> bool:
    return any(
        isinstance(message.get(key), str) and bool(message[key].strip())
        for key in ("reasoning_content", "reasoning")
    )


class OpenAIChatProvider(HTTPProvider):
    kind = "openai"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: str,
        *,
        memory: StructuredOutputMemory | None = None,
    ) -> None:
        super().__init__(client, base_url, api_key)
        self.memory = memory if memory is not None else StructuredOutputMemory()

    def _body(
        self,
        model: str,
        messages: Sequence[Mapping[str, str]],
        schema: Mapping[str, Any] | None,
        schema_name: str,
        mode: OutputMode,
        max_tokens: int,
        temperature: float = 0.0,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "temperature": temperature,
        }
        refused = self.memory.refused.get((self.base_url, model), set())
        if "temperature" in refused:
            del body["temperature"]
        if "max_tokens" in refused:
            body["max_completion_tokens"] = body.pop("max_tokens")
        if schema is None:
            body["messages"] = [dict(m) for m in messages]
        elif mode is OutputMode.JSON_SCHEMA:
            body["messages"] = [dict(m) for m in messages]
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(schema), "strict": False},
            }
        elif mode is OutputMode.JSON_OBJECT:
            # json_object mode needs the shape spelled out in the prompt.
            body["messages"] = with_instructions(messages, schema)
            body["response_format"] = {"type": "json_object"}
        else:
            body["messages"] = with_instructions(messages, schema)
        return body

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
        """One chat turn; `output_mode` fixes the structured-output mode (None: the
        remembered one, negotiated down on a refusal)."""
        started = time.perf_counter()
        response = await self._negotiated(
            model,
            messages,
            time_limit,
            response_schema,
            schema_name,
            (max_tokens, temperature),
            output_mode,
        )
        self._raise_for_status(response, model)
        payload = self._json(response, model)
        latency_ms = (time.perf_counter() - started) * 1000.0
        choices = payload.get("choices")
        if not isinstance(choices, list):
            raise MalformedResponse(
                f"openai answer for model {model} has no choices", provider=self.kind, model=model
            )
        text, cut_off = "", False
        if choices and isinstance(choices[0], dict):
            cut_off = choices[0].get("finish_reason") == "length"
            message = choices[0].get("message")
            if isinstance(message, dict):
                text = _text_of(message.get("content"))
                if not text.strip() and _reasoned_without_answer(message):
                    raise EmptyAnswer(
                        f"openai model {model} returned its reasoning but no answer: its "
                        f"thinking may have used up the output-token limit ({max_tokens})",
                        provider=self.kind,
                        model=model,
                    )
        return completion_of(
            self.kind,
            model,
            text,
            payload,
            latency_ms,
            ("prompt_tokens", "completion_tokens"),
            cut_off=cut_off,
        )

    async def _negotiated(
        self,
        model: str,
        messages: Sequence[Mapping[str, str]],
        time_limit: float,
        schema: Mapping[str, Any] | None,
        schema_name: str,
        sampling: tuple[int, float],
        fixed: OutputMode | None,
    ) -> httpx.Response:
        """The first answer that is not a refusal this provider can work around: a
        response format it may step down from, or a sampling parameter it may drop."""
        mode = fixed if fixed is not None else self.memory.get(self.base_url, model)
        while True:
            max_tokens, temperature = sampling
            body = self._body(model, messages, schema, schema_name, mode, max_tokens, temperature)
            response = await self._post(
                self.base_url + "/chat/completions",
                model=model,
                # A local server needs no key; "Bearer " alone is an invalid header.
                headers={"Authorization": f"Bearer {self._api_key}"} if self._api_key else {},
                body=body,
                time_limit=time_limit,
                max_tokens=max_tokens,
            )
            if response.status_code < 400:
                return response
            info = error_info(response)
            if (
                fixed is None
                and "response_format" in body
                and mode < OutputMode.INSTRUCTIONS
                and format_refused(response.status_code, info)
            ):
                mode = OutputMode(mode + 1)
                self.memory.downgrade(self.base_url, model, mode)
                continue
            if response.status_code != 400 or overflow_of(response) is not None:
                # vLLM's overflow names 'max_tokens' ("is too large"): the prompt is what
                # is refused, not the parameter, which must not be dropped for good.
                return response
            refused = _refused_parameter(info, body)
            known = self.memory.refused.setdefault((self.base_url, model), set())
            if refused is None or refused in known:
                return response
            known.add(refused)

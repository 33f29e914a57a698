"""The OpenAI chat-completions protocol (`POST {base}/chat/completions`).

Most proxies and open-model hosts speak this protocol, each with its own gaps, so the
provider negotiates instead of assuming. It asks for a JSON-schema answer via
`response_format: {"type": "json_schema", ...}`. Servers that do not support it answer
400 naming response_format; the provider then retries with `{"type": "json_object"}` and
then with plain instructions (the schema appended to the system prompt), and remembers
what worked per base URL in a `StructuredOutputMemory` shared by the providers.
"Naming" means the error's `param` field when the server sets one, else its message;
never the whole body, which some proxies fill with an echo of the request (where
`response_format` always appears). Refused sampling parameters are matched the same way.

Reasoning models served this way (vLLM, Ollama, DeepSeek) may return their thinking in a
`reasoning_content` (or `reasoning`) field beside the content: it is never read as the
answer. When that thinking used up `max_tokens` before the answer began, the content is
empty and the `EmptyAnswer` says so (the tier's `JUDGE_<TIER>_MAX_OUTPUT_TOKENS` is then
too low). Thinking written into the content itself is set aside by bot/judge/rubrics/parsing.py.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from bot.judge.providers.http import (
    Completion,
    EmptyAnswer,
    HTTPProvider,
    MalformedResponse,
    completion_of,
    with_instructions,
)

_OUTPUT_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")


class OutputMode(enum.IntEnum):
    """Structured-output strategies, strongest first."""

    JSON_SCHEMA = 0
    JSON_OBJECT = 1
    INSTRUCTIONS = 2


@dataclass
class StructuredOutputMemory:
    """What each endpoint accepted, shared by providers: the strongest output mode per
    base URL, and per (base URL, model) the sampling parameters it refused (reasoning
    models refuse `temperature` and want `max_completion_tokens`)."""

    modes: dict[str, OutputMode] = field(default_factory=dict)
    refused: dict[tuple[str, str], set[str]] = field(default_factory=dict)

    def get(self, base_url: str) -> OutputMode:
        return self.modes.get(base_url, OutputMode.JSON_SCHEMA)

    def downgrade(self, base_url: str, mode: OutputMode) -> None:
        self.modes[base_url] = max(mode, self.get(base_url))


@dataclass(frozen=True)
class ErrorInfo:
    """What an error answer says about itself: the parameter it names (`param`, when the
    server sets one) and its message. Read from the error object only, not the rest of
    the body."""

    param: str | None
    message: str

    def names(self, parameter: str, *, message_words: Sequence[str]) -> bool:
        if self.param is not None:
            return self.param == parameter or self.param.startswith(
                (parameter + ".", parameter + "[")
            )
        lowered = self.message.lower()
        return any(word in lowered for word in message_words)


def error_info(response: httpx.Response) -> ErrorInfo:
    """The error object of a 4xx/5xx answer in the shapes OpenAI-compatible servers use:
    `{"error": {"message", "param"}}`, `{"error": "text"}`, a bare `{"message", "param"}`
    (vLLM), `{"detail": ...}` (FastAPI); any other body is the message itself."""
    try:
        payload = response.json()
    except (ValueError, RecursionError):
        return ErrorInfo(None, response.text)
    if not isinstance(payload, dict):
        return ErrorInfo(None, "")
    error = payload.get("error", payload)
    if isinstance(error, str):
        return ErrorInfo(None, error)
    if not isinstance(error, dict):
        return ErrorInfo(None, "")
    param = error.get("param")
    message = error.get("message")
    if not isinstance(message, str):
        message = _detail_text(error.get("detail"))
    return ErrorInfo(param if isinstance(param, str) and param else None, message)


def _detail_text(detail: Any) -> str:
    if isinstance(detail, str):
        return detail
    if isinstance(detail, list):
        parts = []
        for item in detail:
            if isinstance(item, dict):
                where = item.get("loc")
                loc = ".".join(str(p) for p in where) if isinstance(where, list) else ""
                parts.append(f"{loc}: {item.get('msg', '')}")
        return "; ".join(parts)
    return ""


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
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0}
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
    ) -> Completion:
        url = self.base_url + "/chat/completions"
        headers = {"Authorization": f"Bearer {self._api_key}"}
        started = time.perf_counter()
        mode = self.memory.get(self.base_url)
        while True:
            body = self._body(model, messages, response_schema, schema_name, mode, max_tokens)
            response = await self._post(
                url,
                model=model,
                headers=headers,
                body=body,
                time_limit=time_limit,
                max_tokens=max_tokens,
            )
            if response.status_code != 400:
                break
            info = error_info(response)
            if (
                "response_format" in body
                and mode < OutputMode.INSTRUCTIONS
                and info.names("response_format", message_words=_OUTPUT_FORMAT_WORDS)
            ):
                mode = OutputMode(mode + 1)
                self.memory.downgrade(self.base_url, mode)
                continue
            refused = _refused_parameter(info, body)
            known = self.memory.refused.setdefault((self.base_url, model), set())
            if refused is not None and refused not in known:
                known.add(refused)
                continue
            break
        self._raise_for_status(response, model)
        payload = self._json(response, model)
        latency_ms = (time.perf_counter() - started) * 1000.0
        choices = payload.get("choices")
        if not isinstance(choices, list):
            raise MalformedResponse(
                f"openai answer for model {model} has no choices", provider=self.kind, model=model
            )
        text = ""
        if choices and isinstance(choices[0], dict):
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
            self.kind, model, text, payload, latency_ms, ("prompt_tokens", "completion_tokens")
        )

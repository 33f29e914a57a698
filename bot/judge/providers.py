"""LLM providers: two wire protocols behind one small interface.

`OpenAIChatProvider` speaks OpenAI chat completions (`POST {base}/chat/completions`),
which most proxies and open-model hosts also speak; `AnthropicMessagesProvider` speaks
Anthropic Messages (`POST {base}/v1/messages`). Both take ONE shared `httpx.AsyncClient`
(built by the application, never here), a base URL and an API key, and answer
`complete(model=..., messages=..., ...)` with a `Completion`: the text, token counts and
latency. The model is a call argument so one provider serves every tier on its endpoint.

Structured output (OpenAI protocol): the request asks for a JSON-schema answer via
`response_format: {"type": "json_schema", ...}`. Servers that do not support it answer
400 naming response_format; the provider then retries with `{"type": "json_object"}` and
then with plain instructions (the schema appended to the system prompt), and remembers
what worked per base URL in a `StructuredOutputMemory` shared by the providers.
"Naming" means the error's `param` field when the server sets one, else its message;
never the whole body, which some proxies fill with an echo of the request (where
`response_format` always appears). Refused sampling parameters are matched the same way.

Exceptions (every one carries `provider` and `model`, never an API key):

    ProviderError
     ├── ProviderTimeout          the call took longer than its timeout
     ├── ProviderTransportError   connection refused/reset, DNS, protocol and body
     │                            decoding errors, an invalid URL, a header (API key)
     │                            that cannot be encoded
     ├── ProviderHTTPError        the server answered 4xx/5xx (`status`, `detail`)
     │    └── ProviderRateLimited 429 (`retry_after` seconds when the server said)
     ├── MalformedResponse        2xx, but not the protocol's JSON envelope
     └── EmptyAnswer              a valid envelope with no text in it
"""

from __future__ import annotations

import enum
import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import httpx

ProviderKind = Literal["openai", "anthropic"]

ANTHROPIC_VERSION = "2023-06-01"
DEFAULT_BASE_URLS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "anthropic": "https://api.anthropic.com",
}
_DETAIL_LIMIT = 300


class ProviderError(Exception):
    """Base of every provider failure."""

    def __init__(self, message: str, *, provider: str, model: str) -> None:
        super().__init__(message)
        self.provider = provider
        self.model = model


class ProviderTimeout(ProviderError):
    pass


class ProviderTransportError(ProviderError):
    def __init__(self, message: str, *, provider: str, model: str, cause: str) -> None:
        super().__init__(message, provider=provider, model=model)
        self.cause = cause
        """The name of the underlying error type (for records; never its text)."""


class ProviderHTTPError(ProviderError):
    def __init__(
        self, message: str, *, provider: str, model: str, status: int, detail: str
    ) -> None:
        super().__init__(message, provider=provider, model=model)
        self.status = status
        self.detail = detail


class ProviderRateLimited(ProviderHTTPError):
    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int,
        detail: str,
        retry_after: float | None,
    ) -> None:
        super().__init__(message, provider=provider, model=model, status=status, detail=detail)
        self.retry_after = retry_after


class MalformedResponse(ProviderError):
    pass


class EmptyAnswer(ProviderError):
    pass


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    provider: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float


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
    ) -> Completion:
        """One chat turn; raises a `ProviderError` subclass on any failure."""
        ...


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


def _scrub(text: str, secret: str) -> str:
    if secret:
        text = text.replace(secret, "***")
    return text[:_DETAIL_LIMIT]


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _schema_instruction(schema: Mapping[str, Any]) -> str:
    return (
        "Respond with one JSON object only, no prose and no markdown fence, "
        "matching this JSON Schema:\n" + json.dumps(schema, sort_keys=True)
    )


def _with_instructions(
    messages: Sequence[Mapping[str, str]], schema: Mapping[str, Any] | None
) -> list[dict[str, str]]:
    """Copy the messages, appending the schema to the system prompt when there is one."""
    out = [dict(m) for m in messages]
    if schema is None:
        return out
    note = _schema_instruction(schema)
    for message in out:
        if message.get("role") == "system":
            message["content"] = message.get("content", "") + "\n\n" + note
            return out
    return [{"role": "system", "content": note}, *out]


class _HTTPProvider:
    kind: str = ""

    def __init__(self, client: httpx.AsyncClient, base_url: str, api_key: str) -> None:
        self._client = client
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key

    def __repr__(self) -> str:
        # The key stays out of reprs so it never reaches a log line by accident.
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    async def _post(
        self,
        url: str,
        *,
        model: str,
        headers: dict[str, str],
        body: dict[str, Any],
        time_limit: float,
    ) -> httpx.Response:
        try:
            return await self._client.post(url, headers=headers, json=body, timeout=time_limit)
        except httpx.TimeoutException as exc:
            raise ProviderTimeout(
                f"{self.kind} call to model {model} timed out after {time_limit:g}s",
                provider=self.kind,
                model=model,
            ) from exc
        except (httpx.RequestError, httpx.InvalidURL) as exc:
            # transport failures, an undecodable body, too many redirects, a bad base URL
            raise self._transport_error(model, type(exc).__name__) from exc
        except UnicodeError:
            # A header that is not ASCII: in practice the API key. The exception text
            # and its `object` hold the header value, so it is dropped, not chained.
            raise self._transport_error(model, "UnicodeEncodeError") from None

    def _transport_error(self, model: str, cause: str) -> ProviderTransportError:
        return ProviderTransportError(
            f"{self.kind} transport error for model {model}: {cause}",
            provider=self.kind,
            model=model,
            cause=cause,
        )

    def _raise_for_status(self, response: httpx.Response, model: str) -> None:
        if response.status_code < 400:
            return
        detail = _scrub(response.text, self._api_key)
        message = f"{self.kind} answered HTTP {response.status_code} for model {model}"
        if response.status_code == 429:
            raise ProviderRateLimited(
                message,
                provider=self.kind,
                model=model,
                status=429,
                detail=detail,
                retry_after=_retry_after(response),
            )
        raise ProviderHTTPError(
            message, provider=self.kind, model=model, status=response.status_code, detail=detail
        )

    def _json(self, response: httpx.Response, model: str) -> dict[str, Any]:
        try:
            payload = response.json()
        except (ValueError, RecursionError) as exc:
            raise MalformedResponse(
                f"{self.kind} answered non-JSON for model {model}", provider=self.kind, model=model
            ) from exc
        if not isinstance(payload, dict):
            raise MalformedResponse(
                f"{self.kind} answered a non-object for model {model}",
                provider=self.kind,
                model=model,
            )
        return payload


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


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


_OUTPUT_FORMAT_WORDS = ("response_format", "json_schema", "json_object", "structured output")


class OpenAIChatProvider(_HTTPProvider):
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
            body["messages"] = _with_instructions(messages, schema)
            body["response_format"] = {"type": "json_object"}
        else:
            body["messages"] = _with_instructions(messages, schema)
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
                url, model=model, headers=headers, body=body, time_limit=time_limit
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
        return _completion(
            self.kind, model, text, payload, latency_ms, ("prompt_tokens", "completion_tokens")
        )


class AnthropicMessagesProvider(_HTTPProvider):
    kind = "anthropic"

    def __init__(
        self,
        client: httpx.AsyncClient,
        base_url: str,
        api_key: str,
        *,
        anthropic_version: str = ANTHROPIC_VERSION,
    ) -> None:
        super().__init__(client, base_url, api_key)
        self._version = anthropic_version

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
        prepared = _with_instructions(messages, response_schema)
        system = "\n\n".join(m["content"] for m in prepared if m.get("role") == "system")
        turns = [
            {"role": m["role"], "content": m["content"]}
            for m in prepared
            if m.get("role") != "system"
        ]
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": max_tokens,
            "temperature": 0,
            "messages": turns,
        }
        if system:
            body["system"] = system
        headers = {
            "x-api-key": self._api_key,
            "anthropic-version": self._version,
            "content-type": "application/json",
        }
        started = time.perf_counter()
        response = await self._post(
            self.base_url + "/v1/messages",
            model=model,
            headers=headers,
            body=body,
            time_limit=time_limit,
        )
        self._raise_for_status(response, model)
        payload = self._json(response, model)
        latency_ms = (time.perf_counter() - started) * 1000.0
        content = payload.get("content")
        if not isinstance(content, list):
            raise MalformedResponse(
                f"anthropic answer for model {model} has no content",
                provider=self.kind,
                model=model,
            )
        text = "".join(
            block["text"]
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "text"
            and isinstance(block.get("text"), str)
        )
        return _completion(
            self.kind, model, text, payload, latency_ms, ("input_tokens", "output_tokens")
        )


def _completion(
    provider: str,
    model: str,
    text: str,
    payload: Mapping[str, Any],
    latency_ms: float,
    usage_keys: tuple[str, str],
) -> Completion:
    """The answer, or EmptyAnswer; token counts read from the provider's own usage keys."""
    if not text.strip():
        raise EmptyAnswer(
            f"{provider} model {model} returned an empty answer", provider=provider, model=model
        )
    usage = payload.get("usage")
    counts = usage if isinstance(usage, dict) else {}
    return Completion(
        text=text,
        model=model,
        provider=provider,
        prompt_tokens=_int(counts.get(usage_keys[0])),
        completion_tokens=_int(counts.get(usage_keys[1])),
        latency_ms=latency_ms,
    )


def make_provider(
    kind: str,
    client: httpx.AsyncClient,
    base_url: str,
    api_key: str,
    *,
    memory: StructuredOutputMemory | None = None,
) -> LLMProvider:
    """Build the provider for a protocol name (`openai` or `anthropic`)."""
    if kind == "anthropic":
        return AnthropicMessagesProvider(client, base_url, api_key)
    if kind == "openai":
        return OpenAIChatProvider(client, base_url, api_key, memory=memory)
    raise ValueError(f"unknown LLM provider {kind!r} (expected 'openai' or 'anthropic')")

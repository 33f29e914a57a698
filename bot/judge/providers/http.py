"""What both wire protocols share: their failures, their answer, and the POST itself.

Every way a call can go wrong becomes one `ProviderError` subclass here, so the engine
can decide what to do from the type alone (bot/judge/engine/rounds.py) without knowing which
protocol or which httpx error was behind it. Error texts carry the provider and model
but never the API key: a key must not reach a record or a log line through a message.

What a provider sends back is read up to `answer_limit(max_tokens)` bytes and no further:
a longer answer is refused as a `MalformedResponse`, a longer error body is kept as its
start and raised with its status. A compressed body counts at its inflated size and is
inflated here, never much past the limit (httpx would inflate each 64 KiB read whole:
up to 64 MiB and a fifth of a second from one read of a gzip bomb). A misbehaving
endpoint, or a model talked into endless output by a server that ignores `max_tokens`,
can then cost neither memory nor event-loop time past that bound.

What a server said when it refused a call travels with the `ProviderHTTPError` as
`server_message`: the message of its error object (`error_info`; never the rest of the
body, which some proxies fill with an echo of the request), the API key and anything
credential-shaped scrubbed (`bot.credentials.redact`), on one line, at most
`SERVER_MESSAGE_LIMIT` characters. It is what a round's error, the log line, the CLI and
the check run show, so "HTTP 400" comes with the server's own reason ("request (9315
tokens) exceeds the available context size (8192 tokens)").

An answer the server stopped at the output-token limit (OpenAI `finish_reason: length`,
Anthropic `stop_reason: max_tokens`) comes back with `Completion.cut_off` set: it is not
an answer, whatever JSON its start holds, and the engine treats it so.
"""

from __future__ import annotations

import enum
import json
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict, Unpack

import httpx

from bot.credentials import redact
from bot.judge.providers.overflow import Overflow, context_overflow

_DETAIL_LIMIT = 300
SERVER_MESSAGE_LIMIT = 200
# Redaction reads this much of a message at most (a credential cut at the end of it would
# be past the excerpt anyway); it keeps an echo of a long request from costing much.
_MESSAGE_SCAN_LIMIT = 4000
# English takes about 4 bytes a token; 32 leaves room for JSON escapes (\uXXXX is 6 bytes
# a character), runs of whitespace and an answer a CLI prints twice (claude's `result`
# beside `structured_output`). The allowance covers the envelope around the text (ids,
# usage, a CLI's event lines), which real servers keep under a few KiB. At the default
# 1024 tokens the limit is 96 KiB, about 20 times a full real answer. The ceiling holds
# for any token limit: json.loads runs on the event loop without letting go (it is C),
# and its slowest shape (`[[],[],...]`) takes ~90 ms a MiB; 512 KiB is still 130,000
# tokens of English, more than a tier's timeout lets any model write.
_BYTES_PER_TOKEN = 32
_ENVELOPE_ALLOWANCE = 64 * 1024
_ANSWER_CEILING = 512 * 1024
# Headers that describe the body as it came over the wire, not the decoded bytes kept.
_WIRE_HEADERS = frozenset({"content-encoding", "content-length", "transfer-encoding"})
# The encodings asked for, each inflated here: gzip, and deflate with a zlib header or,
# as some servers send it, without one (raw).
ACCEPT_ENCODING = "gzip, deflate"
_ZLIB_WINDOWS = {
    "gzip": zlib.MAX_WBITS | 16,
    "x-gzip": zlib.MAX_WBITS | 16,
    "deflate": zlib.MAX_WBITS | 32,
}
_RAW_DEFLATE = -zlib.MAX_WBITS


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
        self,
        message: str,
        *,
        provider: str,
        model: str,
        status: int,
        detail: str,
        server_message: str = "",
    ) -> None:
        super().__init__(message, provider=provider, model=model)
        self.status = status
        self.detail = detail
        """The body's start, the key scrubbed (for debugging; may be an echo of the request)."""
        self.server_message = server_message
        """The error's own message, short and scrubbed (`excerpt`); "" when it had none."""


class _HTTPErrorFields(TypedDict):
    """What every `ProviderHTTPError` is built from; its subclasses pass them on whole."""

    provider: str
    model: str
    status: int
    detail: str
    server_message: NotRequired[str]


class ContextOverflow(ProviderHTTPError):
    """The server refused the prompt as longer than the model's context (`overflow`: the
    prompt's tokens and the context, as far as it said; bot/judge/providers/overflow.py)."""

    def __init__(
        self, message: str, *, overflow: Overflow, **fields: Unpack[_HTTPErrorFields]
    ) -> None:
        super().__init__(message, **fields)
        self.overflow = overflow


class ProviderRateLimited(ProviderHTTPError):
    def __init__(
        self, message: str, *, retry_after: float | None, **fields: Unpack[_HTTPErrorFields]
    ) -> None:
        super().__init__(message, **fields)
        self.retry_after = retry_after


class MalformedResponse(ProviderError):
    pass


class EmptyAnswer(ProviderError):
    pass


class ProviderCommandError(ProviderError):
    """A local CLI provider ran but reported failure: a non-zero exit without an answer,
    or an envelope marked as an error (not logged in, out of turns, quota)."""

    def __init__(
        self, message: str, *, provider: str, model: str, exit_code: int | None, detail: str
    ) -> None:
        super().__init__(message, provider=provider, model=model)
        self.exit_code = exit_code
        self.detail = detail


class OutputMode(enum.IntEnum):
    """Structured-output strategies, strongest first."""

    JSON_SCHEMA = 0
    JSON_OBJECT = 1
    INSTRUCTIONS = 2


OUTPUT_MODES: dict[str, OutputMode] = {
    "json_schema": OutputMode.JSON_SCHEMA,
    "json_object": OutputMode.JSON_OBJECT,
    "prompt": OutputMode.INSTRUCTIONS,
}
"""The settings' names for the modes (`JUDGE_RESPONSE_FORMAT`; `auto` is no entry)."""


@dataclass(frozen=True)
class Completion:
    text: str
    model: str
    provider: str
    prompt_tokens: int
    completion_tokens: int
    latency_ms: float
    cut_off: bool = False
    """The server stopped the answer at the output-token limit: whatever `text` holds is
    the start of an answer, not an answer."""


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
    `{"error": {"message", "param"}}` (OpenAI, llama.cpp, llama-cpp-python, Ollama, and
    Anthropic's `{"type": "error", "error": {...}}`), `{"error": "text"}`, a bare
    `{"message", "param"}` (vLLM), `{"detail": ...}` (FastAPI); any other body is the
    message itself."""
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


def overflow_of(response: httpx.Response) -> Overflow | None:
    """Whether an error answer refuses the prompt as longer than the context (overflow.py)."""
    return context_overflow(response.status_code, _payload(response), error_info(response).message)


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


def excerpt(message: str, secret: str = "") -> str:
    """A server's message as records, logs and check runs may show it: the key and
    anything credential-shaped replaced, on one line, at most `SERVER_MESSAGE_LIMIT`
    characters (an ellipsis says it was cut)."""
    text = message[:_MESSAGE_SCAN_LIMIT]
    if secret:
        text = text.replace(secret, "***")
    text = " ".join(redact(text).split())
    if len(text) > SERVER_MESSAGE_LIMIT:
        text = text[: SERVER_MESSAGE_LIMIT - 1].rstrip() + "…"
    return text


def answer_limit(max_tokens: int) -> int:
    """The most bytes a provider may send back for an answer of `max_tokens` tokens."""
    return min(_ANSWER_CEILING, _ENVELOPE_ALLOWANCE + max(0, max_tokens) * _BYTES_PER_TOKEN)


def _inflater(response: httpx.Response) -> Callable[[bytes, int], bytes] | None:
    """What inflates the body at most so many bytes at a time; None: it is not compressed."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding in ("", "identity"):
        return None
    if encoding not in _ZLIB_WINDOWS:
        raise httpx.DecodingError(f"unsupported encoding {encoding!r}", request=response.request)
    if encoding == "deflate":
        return _DeflateInflater().inflate
    return zlib.decompressobj(_ZLIB_WINDOWS[encoding]).decompress


class _DeflateInflater:
    """Deflate with a zlib header, or raw deflate if the first two bytes are no such header
    (zlib tells from those two; they are held back until both have arrived)."""

    def __init__(self) -> None:
        self._inflater = zlib.decompressobj(_ZLIB_WINDOWS["deflate"])
        self._head: bytes | None = b""

    def inflate(self, data: bytes, max_length: int) -> bytes:
        if self._head is None:
            return self._inflater.decompress(data, max_length)
        data = self._head + data
        if len(data) < 2:
            self._head = data
            return b""
        self._head = None
        try:
            return self._inflater.decompress(data, max_length)
        except zlib.error:
            self._inflater = zlib.decompressobj(_RAW_DEFLATE)
            return self._inflater.decompress(data, max_length)


async def read_up_to(response: httpx.Response, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the inflated body, and whether they are all of it."""
    if response.is_stream_consumed:
        # Made in memory (a mock transport): already whole and inflated.
        return response.content[:limit], len(response.content) <= limit
    inflate = _inflater(response)
    chunks: list[bytes] = []
    size = 0
    async for raw in response.aiter_raw():
        try:
            # Past the limit by one byte at most: enough to know it was passed.
            chunk = raw if inflate is None else inflate(raw, limit - size + 1)
        except zlib.error as exc:
            raise httpx.DecodingError(str(exc), request=response.request) from exc
        if size + len(chunk) > limit:
            chunks.append(chunk[: limit - size])
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), True


def _as_read(response: httpx.Response, content: bytes) -> httpx.Response:
    """The response with `content` as its body, already decoded."""
    headers = [
        (name, value)
        for name, value in response.headers.multi_items()
        if name.lower() not in _WIRE_HEADERS
    ]
    return httpx.Response(
        response.status_code, headers=headers, content=content, request=response.request
    )


def _scrub(text: str, secret: str) -> str:
    if secret:
        text = text.replace(secret, "***")
    return text[:_DETAIL_LIMIT]


def _payload(response: httpx.Response) -> Any:
    try:
        return response.json()
    except (ValueError, RecursionError):
        return None


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return None


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _schema_instruction(schema: Mapping[str, Any]) -> str:
    return (
        "Respond with one JSON object only, no prose and no markdown fence, "
        "matching this JSON Schema:\n" + json.dumps(schema, sort_keys=True)
    )


def with_instructions(
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


def completion_of(
    provider: str,
    model: str,
    text: str,
    payload: Mapping[str, Any],
    latency_ms: float,
    usage_keys: tuple[str, str],
    *,
    cut_off: bool = False,
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
        cut_off=cut_off,
    )


class HTTPProvider:
    """The POST and the envelope checks both protocols share."""

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
        max_tokens: int,
    ) -> httpx.Response:
        """The answer, read whole if it fits `answer_limit(max_tokens)` bytes."""
        try:
            request = self._client.build_request(
                "POST",
                url,
                headers={**headers, "Accept-Encoding": ACCEPT_ENCODING},
                json=body,
                timeout=time_limit,
            )
            response = await self._client.send(request, stream=True)
            try:
                limit = answer_limit(max_tokens)
                if response.status_code >= 400:
                    # Some proxies echo the request in an error: it may be that much longer.
                    limit += len(request.content)
                content, whole = await read_up_to(response, limit)
            finally:
                await response.aclose()
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
        answer = _as_read(response, content)
        if not whole:
            # An error cut short is raised with its status and its start; what the rest
            # would have said (a parameter it names) is not guessed at.
            self._raise_for_status(answer, model)
            raise MalformedResponse(
                f"{self.kind} answered more than {limit} bytes for model {model}",
                provider=self.kind,
                model=model,
            )
        return answer

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
        info = error_info(response)
        said = excerpt(info.message, self._api_key)
        message = f"{self.kind} answered HTTP {response.status_code} for model {model}"
        overflow = context_overflow(response.status_code, _payload(response), info.message)
        fields: _HTTPErrorFields = {
            "provider": self.kind,
            "model": model,
            "status": response.status_code,
            "detail": detail,
            "server_message": said,
        }
        if overflow is not None:
            raise ContextOverflow(message, overflow=overflow, **fields)
        if response.status_code == 429:
            raise ProviderRateLimited(message, retry_after=_retry_after(response), **fields)
        raise ProviderHTTPError(message, **fields)

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

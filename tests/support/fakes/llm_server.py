"""Fake LLM servers: real aiohttp servers on loopback speaking two wire protocols.

`FakeOpenAIServer` answers `POST /v1/chat/completions` (OpenAI chat completions);
`FakeAnthropicServer` answers `POST /v1/messages` (Anthropic Messages). Each test
scripts what a model says with a queue of `Reply` values per model name (then an
optional `responder(request) -> Reply`, then an optional `default`); the server pops one
per request and records every request so tests can assert on prompts,
nonce delimiters, `response_format` and auth headers.

Structured output is modelled as a capability of the OpenAI server:
`accepted_formats` lists the `response_format.type` values it understands; a request
asking for another one gets the 400 real servers give, without consuming the queue.

Both list `models` at `GET /v1/models` in their provider's shape (OpenAI: one page;
Anthropic: paged by `limit` and `after_id`); `models = None` answers 404, as servers
without a model list do. A `Reply.reasoning` answer carries a reasoning model's
`reasoning_content` beside its content (OpenAI server).

A `Reply.flood_of` answer (or any reply with `flood` set, errors too) is a valid envelope
whose text runs on in spaces to a body of the given size, as a model that will not stop
or a hostile endpoint sends: whole with a Content-Length, or streamed in chunks without
one. A streamed flood stops when the client hangs up, and records how much it got to send
(`RecordedRequest.sent`, `ended`).

A `Reply.cut_off` answer carries `finish_reason: length` (the model stopped at the
output-token limit), and `Reply.error_body` sends an error body exactly as given, for
servers whose errors are not OpenAI's shape.

Local servers (`behaviour`, a `ServerBehaviour`): the OpenAI server can stand in for a
real local server with its defaults, around whatever its scripted model writes: the
response formats it takes and the status and body it refuses others with, its context
and what it does with a prompt past it, the output cut at `max_tokens` or at the end of
the context (`finish_reason: length`), and how long reading and writing take. The three
built here (`llama_cpp_python`, `llama_server`, `ollama`) reproduce the bodies those
servers send; each factory's docstring says from what.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from aiohttp import web

ReplyKind = Literal["text", "status", "unsupported", "raw"]

# Where a flood's padding goes: it stands in the answer's text (or error message) while the
# envelope is encoded, and the padding is sent in its place.
_PADDING_MARK = "<<fake-padding>>"
_FLOOD_CHUNK = 64 * 1024


@dataclass(frozen=True)
class Reply:
    """One scripted answer. Build with the class methods."""

    kind: ReplyKind
    body: str = ""
    status: int = 200
    delay: float = 0.0
    message: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    reasoning_content: str | None = None
    param: str | None = None
    """The parameter an error names (OpenAI server)."""
    flood: int = 0
    """A flood's body size in bytes (0: an ordinary answer)."""
    chunked: bool = False
    """Stream the flood without a Content-Length."""
    finish_reason: str | None = None
    """The choice's `finish_reason` (OpenAI server); None: "length" for an empty answer,
    else "stop"."""

    @classmethod
    def flood_of(cls, size: int, *, answer: Any, chunked: bool = False) -> Reply:
        """A body of `size` bytes: `answer` as JSON text, then spaces in the same text.
        `dataclasses.replace(reply, flood=size)` floods any other reply, errors too."""
        return cls("text", body=json.dumps(answer), flood=size, chunked=chunked)

    @classmethod
    def reasoning(cls, thinking: str, answer: str) -> Reply:
        """A reasoning model's answer: `thinking` in `reasoning_content`, `answer` (maybe
        empty, when the thinking used up the tokens) as the content."""
        return cls("text", body=answer, reasoning_content=thinking)

    @classmethod
    def json(cls, obj: Any, *, delay: float = 0.0) -> Reply:
        """The model answers with this object as compact JSON text."""
        return cls("text", body=json.dumps(obj), delay=delay)

    @classmethod
    def pretty(cls, obj: Any) -> Reply:
        """Indented JSON, as chatty models produce."""
        return cls("text", body=json.dumps(obj, indent=2))

    @classmethod
    def fenced(cls, obj: Any, *, prose: bool = True) -> Reply:
        """JSON inside a markdown fence, optionally wrapped in prose."""
        body = "```json\n" + json.dumps(obj, indent=2) + "\n```"
        if prose:
            body = "Here is my evaluation:\n\n" + body + "\n\nLet me know if you need more."
        return cls("text", body=body)

    @classmethod
    def text(cls, text: str, *, delay: float = 0.0) -> Reply:
        return cls("text", body=text, delay=delay)

    @classmethod
    def garbage(cls) -> Reply:
        return cls("text", body="I think this looks fine overall, nice work! 10/10")

    @classmethod
    def empty(cls) -> Reply:
        return cls("text", body="")

    @classmethod
    def http(
        cls, status: int, message: str = "fake error", *, retry_after: str | None = None
    ) -> Reply:
        headers = (("Retry-After", retry_after),) if retry_after is not None else ()
        return cls("status", status=status, message=message, headers=headers)

    @classmethod
    def rate_limited(cls) -> Reply:
        return cls.http(429, "Rate limit reached for requests", retry_after="20")

    @classmethod
    def server_error(cls) -> Reply:
        return cls.http(500, "The server had an error while processing your request")

    @classmethod
    def slow(cls, seconds: float, then: Reply | None = None) -> Reply:
        """Answer only after `seconds` (longer than the client's timeout in tests)."""
        inner = then or cls.text('{"semantic": 5, "pragmatic": 5, "syntactic": 5}')
        return cls(
            inner.kind,
            body=inner.body,
            status=inner.status,
            delay=seconds,
            message=inner.message,
            headers=inner.headers,
        )

    @classmethod
    def cut_off(cls, text: str) -> Reply:
        """The start of an answer, stopped at the output-token limit (`finish_reason:
        length`), as every OpenAI-compatible server reports it."""
        return cls("text", body=text, finish_reason="length")

    @classmethod
    def error_body(cls, status: int, payload: Any) -> Reply:
        """An error answered with exactly this JSON body (a server's own shape)."""
        return cls("raw", status=status, body=json.dumps(payload))

    @classmethod
    def structured_output_unsupported(cls) -> Reply:
        """A 400 complaining about response_format, whatever the request asked."""
        return cls("unsupported")


@dataclass
class RecordedRequest:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    sent: int = 0
    """Body bytes a streamed flood got to send before it ended or the client hung up."""
    ended: bool = False
    """Whether a streamed flood has stopped sending."""
    answer: str | None = None
    """The text the OpenAI server answered with (None: it answered an error)."""
    finish_reason: str | None = None
    """The `finish_reason` it sent with that answer."""

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.body.get("messages", []))

    @property
    def system(self) -> str:
        """The system prompt, wherever the protocol puts it."""
        if "system" in self.body:
            return str(self.body["system"])
        return "\n".join(str(m["content"]) for m in self.messages if m.get("role") == "system")

    @property
    def user_text(self) -> str:
        return "\n".join(str(m["content"]) for m in self.messages if m.get("role") == "user")

    @property
    def response_format(self) -> dict[str, Any] | None:
        value = self.body.get("response_format")
        return value if isinstance(value, dict) else None


@dataclass
class _Base:
    api_key: str = "test-key"
    models: list[str] | None = field(default_factory=list)
    """What `GET /v1/models` lists; None: the server has no model list (404)."""
    model_list_requests: list[dict[str, str]] = field(default_factory=list)
    """The query of every `GET /v1/models`."""
    requests: list[RecordedRequest] = field(default_factory=list)
    default: Reply | None = None
    responder: Callable[[RecordedRequest], Reply] | None = None
    """Answers by looking at the request when the model's queue is empty (workloads)."""
    _queues: dict[str, deque[Reply]] = field(default_factory=lambda: defaultdict(deque))
    _runner: web.AppRunner | None = None
    _port: int = 0
    _closing: asyncio.Event = field(default_factory=asyncio.Event)

    def script(self, model: str, *replies: Reply) -> None:
        """Queue replies for `model`, answered in order."""
        self._queues[model].extend(replies)

    def pending(self, model: str) -> int:
        return len(self._queues[model])

    def requests_for(self, model: str) -> list[RecordedRequest]:
        return [r for r in self.requests if r.model == model]

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def _next(self, recorded: RecordedRequest) -> Reply | None:
        queue = self._queues[recorded.model]
        if queue:
            return queue.popleft()
        if self.responder is not None:
            return self.responder(recorded)
        return self.default

    async def start(self) -> None:
        app = web.Application()
        self._routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        self._closing.set()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _pause(self, seconds: float) -> None:
        # Slow replies stop waiting when the server shuts down so tests end promptly.
        if seconds > 0:
            try:
                await asyncio.wait_for(self._closing.wait(), timeout=seconds)
            except TimeoutError:
                return

    async def _read(self, request: web.Request) -> RecordedRequest:
        body = await request.json()
        recorded = RecordedRequest(
            path=request.path, headers={k.lower(): v for k, v in request.headers.items()}, body=body
        )
        self.requests.append(recorded)
        return recorded

    def _routes(self, app: web.Application) -> None:
        raise AssertionError("subclass must add routes")

    async def _answer(
        self,
        request: web.Request,
        recorded: RecordedRequest,
        payload: dict[str, Any],
        *,
        reply: Reply,
        status: int = 200,
        headers: dict[str, str] | None = None,
    ) -> web.StreamResponse:
        """`payload` as JSON; for a flood, with the padding in place of its mark."""
        if not reply.flood:
            return web.json_response(payload, status=status, headers=headers)
        head, tail = (part.encode() for part in json.dumps(payload).split(_PADDING_MARK, 1))
        padding = max(0, reply.flood - len(head) - len(tail))
        extra = {**(headers or {}), "Content-Type": "application/json"}
        if not reply.chunked:
            body = head + b" " * padding + tail
            return web.Response(body=body, status=status, headers=extra)
        response = web.StreamResponse(status=status, headers=extra)
        response.enable_chunked_encoding()
        await response.prepare(request)
        try:
            for part in _flood_parts(head, padding, tail):
                await response.write(part)
                recorded.sent += len(part)
            await response.write_eof()
        except ConnectionError:
            pass  # the client hung up: what a limit on its side does
        finally:
            recorded.ended = True
        return response


def _flood_parts(head: bytes, padding: int, tail: bytes) -> Iterator[bytes]:
    yield head
    while padding > 0:
        step = min(padding, _FLOOD_CHUNK)
        yield b" " * step
        padding -= step
    yield tail


def _padded(text: str, reply: Reply) -> str:
    return text + _PADDING_MARK if reply.flood else text


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


def prompt_tokens(recorded: RecordedRequest) -> int:
    """The prompt's size as the fake servers count it (about four characters a token)."""
    return _estimate_tokens("".join(str(m.get("content", "")) for m in recorded.messages))


def _output_limit(recorded: RecordedRequest) -> int | None:
    value = recorded.body.get("max_tokens", recorded.body.get("max_completion_tokens"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


Refusal = tuple[int, dict[str, Any]]
"""A status and the JSON body a server refuses a request with."""
Speed = tuple[float, float]
"""Seconds a server takes per prompt token read and per answer token written."""


@dataclass(frozen=True)
class ServerBehaviour:
    """How a real OpenAI-compatible server treats a request around what its model
    writes. Build one with `llama_cpp_python`, `llama_server` or `ollama`."""

    name: str
    context_tokens: int
    formats: frozenset[str]
    """The `response_format.type` values it understands ("text" always)."""
    refuse_format: Callable[[str], Refusal] | None
    """How it refuses another type; None: it ignores it and answers unconstrained."""
    overflow: Callable[[int, int, int], Refusal] | None
    """How it refuses a prompt of `context_tokens` or more (prompt, context, the request's
    max_tokens); None: it cuts the prompt to fit, silently."""
    output_within_context: bool = True
    """Whether the answer stops where the context ends (else it shifts and goes on)."""
    seconds_per_prompt_token: float = 0.0
    seconds_per_output_token: float = 0.0

    def understands(self, recorded: RecordedRequest) -> str | None:
        """The format the model is held to: `json_schema`, `json_object`, or None."""
        fmt = recorded.response_format
        kind = fmt.get("type") if fmt is not None else None
        return kind if isinstance(kind, str) and kind in self.formats else None

    def refusal(self, recorded: RecordedRequest) -> Refusal | None:
        fmt = recorded.response_format
        kind = str(fmt.get("type")) if fmt is not None else "text"
        if kind != "text" and kind not in self.formats and self.refuse_format is not None:
            return self.refuse_format(kind)
        prompt = prompt_tokens(recorded)
        if self.overflow is not None and prompt >= self.context_tokens:
            return self.overflow(prompt, self.context_tokens, _output_limit(recorded) or 0)
        return None

    def served(self, recorded: RecordedRequest, reply: Reply) -> Reply:
        """The model's reply as the server sends it: cut at `max_tokens` or at the end of
        the context (`finish_reason: length`), after the time reading and writing take."""
        if reply.kind != "text":
            return reply
        prompt = min(prompt_tokens(recorded), self.context_tokens)
        allowed = _output_limit(recorded)
        if self.output_within_context:
            room = self.context_tokens - prompt
            allowed = room if allowed is None else min(allowed, room)
        body, finish = reply.body, reply.finish_reason
        if allowed is not None and body and _estimate_tokens(body) > allowed:
            body, finish = body[: max(0, allowed) * 4], "length"
        seconds = (
            prompt * self.seconds_per_prompt_token
            + _estimate_tokens(body) * self.seconds_per_output_token
        )
        return replace(reply, body=body, finish_reason=finish, delay=reply.delay + seconds)


def _openai_error(
    message: str, kind: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def llama_cpp_python(context_tokens: int = 2048, speed: Speed = (0.0, 0.0)) -> ServerBehaviour:
    """llama-cpp-python's OpenAI server (`python -m llama_cpp.server`) with its default
    context (`n_ctx` 2048).

    Formats: its request model types `response_format.type` as `Literal["text",
    "json_object"]` (llama_cpp/llama_types.py `ChatCompletionRequestResponseFormat`), so
    `json_schema` fails FastAPI's request validation inside the route, and its
    `RouteErrorHandler` (llama_cpp/server/errors.py) answers every exception there with
    500 `{"error": {"message": str(exc), "type": "internal_server_error", "param": null,
    "code": null}}`; `str()` of FastAPI's `RequestValidationError` is its list of pydantic
    errors, which names `response_format` in the `loc`. `json_object` is a generic JSON
    grammar.

    Context: a prompt of `n_ctx` tokens or more raises "Requested tokens (N) exceed context
    window of M" (llama.py), which the same handler answers 400 with OpenAI's wording,
    `param: messages`, `code: context_length_exceeded`; a prompt that fits gets at most
    `n_ctx - N` output tokens (llama.py lowers `max_tokens` to fit), `finish_reason:
    length` when the answer stops there or at `max_tokens`."""

    def refuse_format(kind: str) -> Refusal:
        error = [
            {
                "type": "literal_error",
                "loc": ("body", "response_format", "type"),
                "msg": "Input should be 'text' or 'json_object'",
                "input": kind,
                "ctx": {"expected": "'text' or 'json_object'"},
            }
        ]
        return 500, _openai_error(str(error), "internal_server_error")

    def overflow(prompt: int, context: int, completion: int) -> Refusal:
        message = (
            f"This model's maximum context length is {context} tokens. However, you "
            f"requested {prompt + completion} tokens ({prompt} in the messages, "
            f"{completion} in the completion). Please reduce the length of the messages "
            "or completion."
        )
        return 400, _openai_error(
            message, "invalid_request_error", param="messages", code="context_length_exceeded"
        )

    return ServerBehaviour(
        "llama-cpp-python",
        context_tokens,
        frozenset({"json_object"}),
        refuse_format,
        overflow,
        seconds_per_prompt_token=speed[0],
        seconds_per_output_token=speed[1],
    )


def llama_server(context_tokens: int = 8192, speed: Speed = (0.0, 0.0)) -> ServerBehaviour:
    """llama.cpp's `llama-server` with the 8192-token context the issue's trial ran.

    Formats: `json_schema` (`response_format.json_schema.schema`) and `json_object` (its
    optional `schema`) become a grammar (tools/server/server-common.cpp
    `oaicompat_chat_params_parse`); any other type throws `response_format type must be
    one of "text" or "json_object", but got: TYPE`, answered 400 as `{"error": {"code":
    400, "message": ..., "type": "invalid_request_error"}}` (`format_error_response`).

    Context: a prompt of `n_ctx` tokens or more is refused 400 with `{"error": {"code":
    400, "message": "request (N tokens) exceeds the available context size (M tokens), try
    increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx":
    M}}`; the answer stops at `max_tokens` (n_predict) or at the end of the context,
    `finish_reason: length`."""

    def refuse_format(kind: str) -> Refusal:
        message = f'response_format type must be one of "text" or "json_object", but got: {kind}'
        return 400, {"error": {"code": 400, "message": message, "type": "invalid_request_error"}}

    def overflow(prompt: int, context: int, completion: int) -> Refusal:
        del completion  # llama-server names the prompt and the context only
        message = (
            f"request ({prompt} tokens) exceeds the available context size ({context} "
            "tokens), try increasing it"
        )
        error = {
            "code": 400,
            "message": message,
            "type": "exceed_context_size_error",
            "n_prompt_tokens": prompt,
            "n_ctx": context,
        }
        return 400, {"error": error}

    return ServerBehaviour(
        "llama-server",
        context_tokens,
        frozenset({"json_schema", "json_object"}),
        refuse_format,
        overflow,
        seconds_per_prompt_token=speed[0],
        seconds_per_output_token=speed[1],
    )


def ollama(context_tokens: int = 4096, speed: Speed = (0.0, 0.0)) -> ServerBehaviour:
    """Ollama's OpenAI-compatible endpoint (`/v1/chat/completions`) with its default
    context (`num_ctx` 4096; 2048 before 0.6).

    Formats: `json_object` becomes `format: "json"` and `json_schema` its schema as the
    format (openai/openai.go, since 0.5); any other type is ignored, not refused, and the
    model answers unconstrained. Errors, when there are any, are OpenAI's shape
    (`{"error": {"message", "type": "invalid_request_error" | "api_error", "param": null,
    "code": null}}`).

    Context: a prompt past `num_ctx` is cut to fit without an error (the server only logs
    "truncating input prompt"); the answer stops at `max_tokens` (num_predict),
    `finish_reason: length` (its `done_reason`), and shifts the context rather than stop
    at its end."""
    return ServerBehaviour(
        "ollama",
        context_tokens,
        frozenset({"json_schema", "json_object"}),
        None,
        None,
        output_within_context=False,
        seconds_per_prompt_token=speed[0],
        seconds_per_output_token=speed[1],
    )


@dataclass
class FakeOpenAIServer(_Base):
    accepted_formats: set[str] = field(default_factory=lambda: {"json_schema", "json_object"})
    refused_params: set[str] = field(default_factory=set)
    """Request fields answered with 400 (as reasoning models do for temperature)."""
    behaviour: ServerBehaviour | None = None
    """A real local server's ways around the scripted model (formats, context, limits,
    speed); None: the plain fake above (`accepted_formats`)."""

    @property
    def base_url(self) -> str:
        return self.origin + "/v1"

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.Response:
        self.model_list_requests.append(dict(request.query))
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(401, "Incorrect API key provided.")
        if self.models is None:
            return self._error(404, "Not Found")
        data = [
            {"id": name, "object": "model", "created": 1700000000, "owned_by": "fake"}
            for name in self.models
        ]
        return web.json_response({"object": "list", "data": data})

    @staticmethod
    def _error_payload(status: int, message: str, param: str | None = None) -> dict[str, Any]:
        kind = "rate_limit_error" if status == 429 else "invalid_request_error"
        if status >= 500:
            kind = "server_error"
        return {"error": {"message": message, "type": kind, "param": param, "code": None}}

    @classmethod
    def _error(
        cls, status: int, message: str, *, param: str | None = None, **extra: str
    ) -> web.Response:
        payload = cls._error_payload(status, message, param)
        return web.json_response(payload, status=status, headers=extra or None)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._read(request)
        if request.headers.get("Authorization") != f"Bearer {self.api_key}":
            return self._error(401, "Incorrect API key provided.")
        for name in sorted(self.refused_params & set(recorded.body)):
            return self._error(
                400,
                f"Unsupported parameter: '{name}' is not supported with this model.",
                param=name,
            )
        fmt = recorded.response_format
        if self.behaviour is not None:
            refusal = self.behaviour.refusal(recorded)
            if refusal is not None:
                return web.json_response(refusal[1], status=refusal[0])
        elif fmt is not None and fmt.get("type") not in self.accepted_formats:
            return self._error(
                400,
                f"Invalid parameter: 'response_format' of type '{fmt.get('type')}' is not "
                "supported with this model.",
                param="response_format",
            )
        reply = self._next(recorded)
        if reply is None:
            return self._error(500, f"fake: nothing scripted for model {recorded.model!r}")
        if self.behaviour is not None:
            reply = self.behaviour.served(recorded, reply)
        await self._pause(reply.delay)
        if reply.kind == "raw":
            return web.Response(
                text=reply.body, status=reply.status, content_type="application/json"
            )
        if reply.kind == "unsupported":
            return self._error(
                400, "response_format json_schema is not supported", param="response_format"
            )
        if reply.kind == "status":
            payload = self._error_payload(reply.status, _padded(reply.message, reply), reply.param)
            return await self._answer(
                request,
                recorded,
                payload,
                reply=reply,
                status=reply.status,
                headers=dict(reply.headers) or None,
            )
        prompt = "".join(str(m.get("content", "")) for m in recorded.messages)
        usage = {
            "prompt_tokens": _estimate_tokens(prompt),
            "completion_tokens": _estimate_tokens(reply.body),
        }
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        message = {"role": "assistant", "content": _padded(reply.body, reply)}
        if reply.reasoning_content is not None:
            message["reasoning_content"] = reply.reasoning_content
        finish_reason = reply.finish_reason or ("length" if not reply.body else "stop")
        recorded.answer, recorded.finish_reason = reply.body, finish_reason
        return await self._answer(
            request,
            recorded,
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": recorded.model,
                "choices": [
                    {
                        "index": 0,
                        "message": message,
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": usage,
            },
            reply=reply,
        )


@dataclass
class FakeAnthropicServer(_Base):
    @property
    def base_url(self) -> str:
        return self.origin

    def _routes(self, app: web.Application) -> None:
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_get("/v1/models", self._models)

    async def _models(self, request: web.Request) -> web.Response:
        self.model_list_requests.append(dict(request.query))
        if request.headers.get("x-api-key") != self.api_key:
            return self._error(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return self._error(400, "anthropic-version header is required")
        if self.models is None:
            return self._error(404, "Not Found")
        names = self.models
        after = request.query.get("after_id")
        start = names.index(after) + 1 if after in names else 0
        limit = int(request.query.get("limit", "20"))
        page = names[start : start + limit]
        data = [
            {"id": n, "type": "model", "display_name": n, "created_at": "2025-01-01T00:00:00Z"}
            for n in page
        ]
        return web.json_response(
            {
                "data": data,
                "has_more": start + limit < len(names),
                "first_id": page[0] if page else None,
                "last_id": page[-1] if page else None,
            }
        )

    @staticmethod
    def _error_payload(status: int, message: str) -> dict[str, Any]:
        kinds = {401: "authentication_error", 429: "rate_limit_error", 529: "overloaded_error"}
        kind = kinds.get(status, "api_error" if status >= 500 else "invalid_request_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    @classmethod
    def _error(cls, status: int, message: str, **extra: str) -> web.Response:
        payload = cls._error_payload(status, message)
        return web.json_response(payload, status=status, headers=extra or None)

    async def _messages(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._read(request)
        if request.headers.get("x-api-key") != self.api_key:
            return self._error(401, "invalid x-api-key")
        if not request.headers.get("anthropic-version"):
            return self._error(400, "anthropic-version header is required")
        if any(m.get("role") == "system" for m in recorded.messages):
            return self._error(400, "messages: system role is not allowed; use 'system'")
        reply = self._next(recorded)
        if reply is None:
            return self._error(500, f"fake: nothing scripted for model {recorded.model!r}")
        await self._pause(reply.delay)
        if reply.kind == "unsupported":
            return self._error(400, "output_format is not supported")
        if reply.kind == "status":
            return await self._answer(
                request,
                recorded,
                self._error_payload(reply.status, _padded(reply.message, reply)),
                reply=reply,
                status=reply.status,
                headers=dict(reply.headers) or None,
            )
        prompt = recorded.system + "".join(str(m.get("content", "")) for m in recorded.messages)
        text = _padded(reply.body, reply)
        content = [{"type": "text", "text": text}] if text else []
        return await self._answer(
            request,
            recorded,
            {
                "id": f"msg_{len(self.requests)}",
                "type": "message",
                "role": "assistant",
                "model": recorded.model,
                "content": content,
                # A cut-off reply (`Reply.cut_off`) stops as Anthropic says it: max_tokens.
                "stop_reason": "max_tokens" if reply.finish_reason == "length" else "end_turn",
                "usage": {
                    "input_tokens": _estimate_tokens(prompt),
                    "output_tokens": _estimate_tokens(reply.body),
                },
            },
            reply=reply,
        )

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
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

ReplyKind = Literal["text", "status", "unsupported"]

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


@dataclass
class FakeOpenAIServer(_Base):
    accepted_formats: set[str] = field(default_factory=lambda: {"json_schema", "json_object"})
    refused_params: set[str] = field(default_factory=set)
    """Request fields answered with 400 (as reasoning models do for temperature)."""

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
        if fmt is not None and fmt.get("type") not in self.accepted_formats:
            return self._error(
                400,
                f"Invalid parameter: 'response_format' of type '{fmt.get('type')}' is not "
                "supported with this model.",
                param="response_format",
            )
        reply = self._next(recorded)
        if reply is None:
            return self._error(500, f"fake: nothing scripted for model {recorded.model!r}")
        await self._pause(reply.delay)
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
                        "finish_reason": "length" if not reply.body else "stop",
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
                "stop_reason": "end_turn",
                "usage": {
                    "input_tokens": _estimate_tokens(prompt),
                    "output_tokens": _estimate_tokens(reply.body),
                },
            },
            reply=reply,
        )

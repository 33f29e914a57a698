"""Three local model servers as they answer with their defaults, around one scripted small
model: real aiohttp servers on loopback for the tests and benchmarks of issue 27.

Each server reproduces its real counterpart's HTTP surface as far as judge-bot meets it:
the chat-completions route (its refusals, error bodies, `finish_reason`, `usage`), the
endpoints that say how large its context is, what it does with a prompt past that
context, and how many tokens it lets a model write. Tokens are counted as the other fakes
count them, four characters a token (`count_tokens`), over the prompt the chat template
renders (ChatML: `<|im_start|>role\\n...<|im_end|>\\n` per message, then
`<|im_start|>assistant\\n`), so a prompt costs a few tokens more than its messages.
Every server computes one request at a time (a laptop CPU has one model in memory), at
`speed` seconds per prompt token read and per token written (0 by default); a request
waits for the one before it, as its HTTP timeout counts.

**llama-cpp-python** (`LlamaCppPythonServer`, `python -m llama_cpp.server --model M`),
from abetlen/llama-cpp-python at 3691546f (2026-08):

* `llama_cpp/server/types.py` `CreateChatCompletionRequest`: `response_format` is a
  `llama_types.ChatCompletionRequestResponseFormat`, whose `type` is
  `Literal["text", "json_object"]` (with an optional `schema`); `max_tokens` defaults to
  None ("Defaults to inf"), `temperature` to 0.8.
* `llama_cpp/server/errors.py` `RouteErrorHandler`: every exception in a route, FastAPI's
  `RequestValidationError` included (raised inside the route, so a `json_schema` type
  lands here), is answered 500 `{"error": {"message": str(exc), "type":
  "internal_server_error", "param": null, "code": null}}`; `str()` of that error is its
  list of pydantic errors (`[{'type': 'literal_error', 'loc': ('body',
  'response_format', 'type'), 'msg': "Input should be 'text' or 'json_object'", ...}]`).
  "Requested tokens (N) exceed context window of M" (`llama.py`, raised when the prompt
  is `n_ctx` tokens or more) is answered 400 with OpenAI's wording, `param: messages`,
  `code: context_length_exceeded`, the completion counted as the request's `max_tokens`
  (printed `None` when it sent none).
* `llama.py` `_create_completion`: `max_tokens` None or <= 0 means `n_ctx - prompt`, and
  any larger value is lowered to it; `finish_reason` is "length" unless the model ended.
* `llama_cpp/server/settings.py`: `n_ctx` 2048, no API key. `GET /v1/models` lists the
  model alias (`owned_by: me`, `permissions: []`) and nothing about its context; there
  is no `/props`, `/health` or `/api/show` (FastAPI's 404 `{"detail": "Not Found"}`).
  Any model name is served by the one model loaded (`LlamaProxy.__call__`).

**llama.cpp's `llama-server`** (`LlamaServer`), from ggml-org/llama.cpp `tools/server`:

* `server-common.cpp` `oaicompat_chat_params_parse`: `json_object` (with an optional
  `schema`; without one, any object) and `json_schema` (`json_schema.schema`) become a
  grammar; any other type throws `response_format type must be one of "text" or
  "json_object", but got: TYPE`, answered 400 `{"error": {"code": 400, "message": ...,
  "type": "invalid_request_error"}}` (`format_error_response`).
* `server-context.cpp`: a prompt of `n_ctx` (per slot) tokens or more is refused:
  "request (N tokens) exceeds the available context size (M tokens), try increasing it",
  `ERROR_TYPE_EXCEED_CONTEXT_SIZE`, 400 `{"error": {"code": 400, "message": ...,
  "type": "exceed_context_size_error", "n_prompt_tokens": N, "n_ctx": M}}`
  (`server-task.cpp` `server_task_result_error::to_json`). `max_tokens` (`n_predict`)
  defaults to -1, infinity; with context shift off (the default) the answer stops where
  the context ends, `finish_reason: length`.
* `README.md`: `GET /health` `{"status": "ok"}`; `GET /props` `default_generation_settings
  .n_ctx` (the context of one slot, what a request gets), `total_slots`, `model_path`,
  `build_info`; `GET /v1/models` one model (`owned_by: llamacpp`) with `meta.n_ctx_train`,
  the context the model was TRAINED on, not the one the server runs; the answer carries
  `usage` (with `prompt_tokens_details.cached_tokens`) and `timings`.
* Context by default: `-c 4096` from b4000 (ggml-org/llama.cpp#10136, 2024-11) until
  `-c 0`, the model's training context, became the default with `--fit` (2025-12), which
  lowers it to what memory holds but not under 4096 (`-fitc`). `LlamaServer` runs 4096 by
  default, the context both kinds of build can give; pass the model's to run a new build
  with memory to spare.

**Ollama** (`OllamaServer`, `/v1/chat/completions`), from ollama/ollama at fb307609
(v0.32, 2026-08):

* `openai/openai.go` `FromChatRequest`: `response_format` `json_object` becomes `format:
  "json"`, `json_schema` its schema as the `format` (a grammar either way); any other type
  is ignored, not refused. `max_tokens` becomes `num_predict` (default -1); `temperature`
  defaults to 1.0. The answer: `system_fingerprint: fp_ollama`, `finish_reason` from
  `done_reason` ("stop", "length"), `usage` from the evaluated prompt and answer counts.
  Errors are OpenAI's shape (`NewError`: `invalid_request_error` for 400,
  `not_found_error` for 404, else `api_error`; `param` and `code` null); a model not
  pulled is 404 "model 'NAME' not found".
* Context: `num_ctx` is `OLLAMA_CONTEXT_LENGTH`, else by VRAM (`server/routes.go`): 4096
  under 24 GiB (a laptop CPU), 32768 to 48 GiB, 262144 above; 2048 before v0.6.7 and
  4096 from it to v0.15.5. `llm/llama_server.go` `completionPromptForRequest`: a prompt
  longer than `num_ctx - 1` tokens is cut without an error (a log line "truncating input
  prompt"): it keeps its first `num_keep` (4) tokens and the BOS, and its last tokens, to
  `num_ctx - (num_ctx - keep) / 2` in all, so the instructions at its start are gone;
  with context shift the answer runs on past the context to `num_predict`.
* `GET /v1/models` (`owned_by` the namespace, `library`), `POST /api/show` (`model_info`
  `<architecture>.context_length`: the training context; `parameters`: the Modelfile's,
  `num_ctx` only if it set one), `GET /api/ps` (a loaded model's `context_length`: the
  context it runs), `GET /` "Ollama is running", `GET /api/version`.

**The small model** (`SmallModel`) stands for the 0.5-1.5B instruct model of the issue's
trial, as far as judging needs; an assumption, not a recording. It reads the quality mark
the test documents carry (`<!-- quality: good|fair|poor -->`): good scores 4/4/5 and
accepts, fair 3/3/4, poor 2/3/3; it writes a reasoning of `reasoning_chars` and
`ideas[quality]` improvements. It fills the JSON schema it is held to (a grammar) or reads
from the prompt (`with_instructions`); held to a schema or JSON it writes the object only,
asked in the prompt alone it wraps it in a ```json fence after a line of prose. Its lists
end where a grammar's `maxItems` or the prompt's "at most N items" says, and nowhere else:
unbounded, it writes items until the output stops (the issue's "looped inside
improvements until the 1,024-token limit"); a grammar's `maxLength` cuts a string. When a
server cut the instructions off the prompt it still writes what a grammar makes it, but
scores what it can see, and without a grammar it answers in prose. `verbose=True` writes
every string and list to its bound: the longest answer the schema allows.
"""

from __future__ import annotations

import abc
import asyncio
import json
import re
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from aiohttp import web

CHARS_PER_TOKEN = 4
_IM_START, _IM_END = "<|im_start|>", "<|im_end|>"
_GENERATION_PROMPT = f"{_IM_START}assistant\n"

Speed = tuple[float, float]
"""Seconds a server takes per prompt token read and per answer token written."""


def count_tokens(text: str) -> int:
    """Tokens as the fake servers count them: four characters a token, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def render_chatml(messages: Sequence[Mapping[str, Any]]) -> str:
    """The prompt the chat template makes of `messages`, generation prompt included."""
    turns = "".join(
        f"{_IM_START}{m.get('role', 'user')}\n{_content(m)}{_IM_END}\n" for m in messages
    )
    return turns + _GENERATION_PROMPT


# -- the model ---------------------------------------------------------------------------

_QUALITY = re.compile(r"<!-- quality: (good|fair|poor) -->")
_ASKED_BOUND = re.compile(r"at most (\d+|three) (?:items|improvements)")
_SCHEMA_IN_PROMPT = re.compile(r"matching this JSON Schema:\n(\{.*\})\s*$", re.DOTALL)
_SCORES: dict[str, tuple[int, ...]] = {"good": (4, 4, 5), "fair": (3, 3, 4), "poor": (2, 3, 3)}
_UNIT: dict[str, float] = {"good": 0.9, "fair": 0.7, "poor": 0.4}
_VERDICT = {"good": "accept", "fair": "improve", "poor": "reject"}
LOOP_ITEMS = 400
"""Items a looping model writes when nothing stops it (far past any output limit)."""
_REASONING = (
    "The report names the cause and an action, and its figures agree with each other; "
    "the method section is thin and one claim about the cache rests on a single "
    "measurement, so the pragmatic score stays below the top of the scale for now. "
)
_IDEA = "Add a measured example to section {n}, with the figure and how it was taken."
_PROSE = "This looks like a weekly report about queue latency and a cache change."


@dataclass(frozen=True)
class Grammar:
    """What constrained decoding holds the model to: a JSON schema, any JSON, or nothing
    (`FREE`)."""

    kind: Literal["schema", "json", "none"]
    schema: Mapping[str, Any] | None = None


FREE = Grammar("none")


@dataclass(frozen=True)
class Written:
    """What the model wrote and why it stopped."""

    text: str
    finish_reason: Literal["stop", "length"]

    @property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass(frozen=True)
class SmallModel:
    """The model behind every server (module docstring)."""

    reasoning_chars: int = 250
    ideas: Mapping[str, int] = field(default_factory=lambda: {"good": 0, "fair": 4, "poor": 6})
    verbose: bool = False

    def write(self, seen: str, *, instructed: bool, grammar: Grammar, limit: int | None) -> Written:
        """Answer the prompt `seen` (rendered, as the server evaluated it); `instructed`:
        whether the system message survived in it; `limit`: the tokens it may write."""
        mark = _QUALITY.search(seen)
        quality = mark.group(1) if mark else "fair"
        schema = grammar.schema if grammar.kind == "schema" else None
        read = _schema_read(seen) if instructed else None
        shape = schema or read
        if shape is None:
            # the instructions were cut off: it tells what it sees, as JSON if it must
            text = json.dumps({"summary": _PROSE}) if grammar.kind == "json" else _PROSE
            return _stopped(text, limit)
        asked = _asked_bound(seen) if instructed else None
        text = json.dumps(self._fill(shape, quality, schema is not None, asked), indent=1)
        if grammar.kind == "none":
            text = "Here is my evaluation:\n\n```json\n" + text + "\n```"
        return _stopped(text, limit)

    def _fill(self, node: Mapping[str, Any], quality: str, held: bool, asked: int | None) -> Any:
        kind = _first_type(node)
        if kind == "object":
            props = node.get("properties", {})
            out = {k: self._fill(v, quality, held, asked) for k, v in props.items()}
            scores = _SCORES[quality]
            integers = [k for k, v in props.items() if _first_type(v) == "integer"]
            out.update({k: scores[i % len(scores)] for i, k in enumerate(integers)})
            if "average" in out and isinstance(out.get("scores"), dict):
                given = list(out["scores"].values())
                out["average"] = round(sum(given) / len(given), 2) if given else 3.0
            return out
        if "enum" in node:
            options = [o for o in node["enum"] if o is not None]
            wanted = _VERDICT[quality]
            return wanted if wanted in options else options[0]
        if kind == "array":
            return self._list(node, quality, held, asked)
        if kind == "string":
            limit = node.get("maxLength") if held or self.verbose else None
            return _sized(_REASONING, self.reasoning_chars, limit, self.verbose)
        if kind == "boolean":
            return quality == "good"
        if kind == "number":
            return _UNIT[quality] if node.get("maximum") == 1 else 3.0
        return None

    def _list(self, node: Mapping[str, Any], quality: str, held: bool, asked: int | None) -> Any:
        bounds = [b for b in (node.get("maxItems") if held else None, asked) if b is not None]
        bound = min(bounds) if bounds else None
        wanted = self.ideas[quality]
        if bound is None:
            count = LOOP_ITEMS if wanted else 0
        else:
            count = bound if self.verbose else min(wanted, bound)
        item = node.get("items", {"type": "string"})
        if _first_type(item) == "string" and "enum" not in item:
            limit = item.get("maxLength") if held or self.verbose else None
            return [_sized(_IDEA.format(n=n % 7 + 1), 0, limit, self.verbose) for n in range(count)]
        return [self._fill(item, quality, held, asked) for _ in range(count)]


def _first_type(node: Mapping[str, Any]) -> str:
    kind = node.get("type", "string")
    if isinstance(kind, list):
        return next((str(k) for k in kind if k != "null"), "null")
    return str(kind)


def _sized(text: str, chars: int, limit: int | None, fill: bool) -> str:
    """`text` at `chars` (its own length when 0), or filling `limit` when `fill`."""
    if fill and limit is not None:
        return (text * (limit // len(text) + 1))[:limit]
    wanted = text if chars == 0 else (text * (chars // len(text) + 1))[:chars]
    return wanted if limit is None else wanted[:limit]


def _schema_read(seen: str) -> Mapping[str, Any] | None:
    """The schema `with_instructions` appended to the system prompt, as the model reads
    it there."""
    system_end = seen.find(_IM_END)
    match = _SCHEMA_IN_PROMPT.search(seen[: max(0, system_end)])
    if match is None:
        return _CONTENT_SHAPE
    try:
        value = json.loads(match.group(1))
    except ValueError:
        return _CONTENT_SHAPE
    return value if isinstance(value, dict) else _CONTENT_SHAPE


_CONTENT_SHAPE: Mapping[str, Any] = {
    "type": "object",
    "properties": {
        "scores": {
            "type": "object",
            "properties": {d: {"type": "integer"} for d in ("semantic", "pragmatic", "syntactic")},
        },
        "average": {"type": "number"},
        "verdict": {"type": "string", "enum": ["accept", "improve", "reject"]},
        "reasoning": {"type": "string"},
        "improvements": {"type": "array", "items": {"type": "string"}},
    },
}
"""What the model writes from the rubric's example when no schema is in the prompt."""


def _asked_bound(seen: str) -> int | None:
    asked = [3 if n == "three" else int(n) for n in _ASKED_BOUND.findall(seen)]
    return min(asked) if asked else None


def _stopped(text: str, limit: int | None) -> Written:
    if limit is not None and count_tokens(text) > limit:
        return Written(text[: max(0, limit) * CHARS_PER_TOKEN], "length")
    return Written(text, "stop")


# -- what every server shares --------------------------------------------------------------


@dataclass
class Call:
    """One chat request as a server saw it and what it did with it."""

    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 200
    prompt_tokens: int = 0
    """The rendered prompt's tokens as sent."""
    evaluated_tokens: int = 0
    """The tokens the model read (fewer when the server cut the prompt)."""
    grammar: Grammar = FREE
    written: Written | None = None
    error: dict[str, Any] | None = None

    @property
    def truncated(self) -> bool:
        """The server cut the prompt without saying so."""
        return self.status == 200 and self.evaluated_tokens < self.prompt_tokens

    @property
    def model(self) -> str:
        return str(self.body.get("model", ""))

    @property
    def format_type(self) -> str | None:
        fmt = self.body.get("response_format")
        return str(fmt.get("type")) if isinstance(fmt, dict) else None


class LocalServer(abc.ABC):
    """A real aiohttp server on loopback (subclasses: one per real server)."""

    name = "local"

    def __init__(
        self,
        *,
        context_tokens: int,
        model: SmallModel | None = None,
        speed: Speed = (0.0, 0.0),
    ) -> None:
        self.context_tokens = context_tokens
        self.model = model or SmallModel()
        self.speed = speed
        self.calls: list[Call] = []
        self.lookups: list[str] = []
        """`METHOD /path` of every request other than a chat completion."""
        self._compute = asyncio.Lock()
        self._runner: web.AppRunner | None = None
        self._port = 0

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    @property
    def base_url(self) -> str:
        """What `JUDGE_<TIER>_BASE_URL` is set to."""
        return self.origin + "/v1"

    async def start(self) -> None:
        app = web.Application(middlewares=[self._note_lookup])
        app.router.add_post("/v1/chat/completions", self._chat)
        self.routes(app)
        self._runner = web.AppRunner(app, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self._port = int(self._runner.addresses[0][1])

    async def close(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def __aenter__(self) -> LocalServer:
        await self.start()
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.close()

    @web.middleware
    async def _note_lookup(self, request: web.Request, handler: Any) -> web.StreamResponse:
        if request.path != "/v1/chat/completions":
            self.lookups.append(f"{request.method} {request.path}")
        response: web.StreamResponse = await handler(request)
        return response

    @abc.abstractmethod
    def routes(self, app: web.Application) -> None:
        """The server's other endpoints."""

    @property
    def chats(self) -> list[Call]:
        """The calls the model answered."""
        return [c for c in self.calls if c.written is not None]

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        call = Call(headers={k.lower(): v for k, v in request.headers.items()}, body={})
        self.calls.append(call)
        try:
            body = await request.json()
        except ValueError:
            return self._refuse(call, *self.malformed())
        call.body = body if isinstance(body, dict) else {}
        refusal = self.refusal(call)
        if refusal is not None:
            return self._refuse(call, *refusal)
        prompt = render_chatml(call.body.get("messages", []))
        call.prompt_tokens = count_tokens(prompt)
        overflow = self.overflow(call)
        if overflow is not None:
            return self._refuse(call, *overflow)
        seen = self.evaluated(prompt)
        call.evaluated_tokens = count_tokens(seen)
        call.grammar = self.grammar(call)
        system_end = prompt.find(_IM_END)
        call.written = self.model.write(
            seen,
            instructed=system_end < 0 or prompt[:system_end] in seen,
            grammar=call.grammar,
            limit=self.output_limit(call),
        )
        async with self._compute:
            await asyncio.sleep(
                call.evaluated_tokens * self.speed[0] + call.written.tokens * self.speed[1]
            )
        return web.json_response(self.completion(call))

    def _refuse(self, call: Call, status: int, payload: dict[str, Any]) -> web.Response:
        call.status, call.error = status, payload
        return web.json_response(payload, status=status)

    # what each server decides its own way
    @abc.abstractmethod
    def malformed(self) -> tuple[int, dict[str, Any]]:
        """The status and body of a refused body that is not JSON."""

    @abc.abstractmethod
    def refusal(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        """The status and body a request is refused with before the model reads it."""

    @abc.abstractmethod
    def overflow(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        """The status and body a prompt past the context is refused with."""

    def evaluated(self, prompt: str) -> str:
        """The prompt as the model reads it (cut, on a server that cuts)."""
        return prompt

    @abc.abstractmethod
    def grammar(self, call: Call) -> Grammar:
        """What the request's `response_format` holds the model to."""

    @abc.abstractmethod
    def output_limit(self, call: Call) -> int | None:
        """The tokens the model may write (None: no limit)."""

    @abc.abstractmethod
    def completion(self, call: Call) -> dict[str, Any]:
        """The answer's envelope."""

    def _usage(self, call: Call) -> dict[str, int]:
        written = call.written.tokens if call.written else 0
        return {
            "prompt_tokens": call.evaluated_tokens,
            "completion_tokens": written,
            "total_tokens": call.evaluated_tokens + written,
        }

    def _choice(self, call: Call) -> dict[str, Any]:
        assert call.written is not None
        return {
            "index": 0,
            "message": {"role": "assistant", "content": call.written.text},
            "finish_reason": call.written.finish_reason,
        }


def _max_tokens(call: Call) -> int | None:
    value = call.body.get("max_tokens", call.body.get("max_completion_tokens"))
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _schema_of(fmt: Mapping[str, Any], *keys: str) -> Mapping[str, Any] | None:
    node: Any = fmt
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def _openai_error(
    message: str, kind: str, *, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# -- llama-cpp-python ----------------------------------------------------------------------


class LlamaCppPythonServer(LocalServer):
    """`python -m llama_cpp.server --model M` with its defaults (module docstring)."""

    name = "llama-cpp-python"

    def __init__(
        self,
        *,
        context_tokens: int = 2048,
        model: SmallModel | None = None,
        speed: Speed = (0.0, 0.0),
        alias: str = "models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
    ) -> None:
        super().__init__(context_tokens=context_tokens, model=model, speed=speed)
        self.alias = alias

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/v1/models", self._models)

    async def _models(self, _: web.Request) -> web.Response:
        entry = {"id": self.alias, "object": "model", "owned_by": "me", "permissions": []}
        return web.json_response({"object": "list", "data": [entry]})

    def malformed(self) -> tuple[int, dict[str, Any]]:
        return 422, {"detail": [{"type": "json_invalid", "loc": ["body", 0]}]}

    def refusal(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        kind = call.format_type
        if kind is None or kind in ("text", "json_object"):
            return None
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

    def overflow(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.prompt_tokens < self.context_tokens:
            return None
        asked = _max_tokens(call)
        message = (
            f"This model's maximum context length is {self.context_tokens} tokens. However, "
            f"you requested {(asked or 0) + call.prompt_tokens} tokens ({call.prompt_tokens} "
            f"in the messages, {asked} in the completion). Please reduce the length of the "
            "messages or completion."
        )
        return 400, _openai_error(
            message, "invalid_request_error", param="messages", code="context_length_exceeded"
        )

    def grammar(self, call: Call) -> Grammar:
        if call.format_type != "json_object":
            return FREE
        fmt = call.body["response_format"]
        schema = _schema_of(fmt, "schema")
        return Grammar("schema", schema) if schema else Grammar("json")

    def output_limit(self, call: Call) -> int | None:
        room = self.context_tokens - call.prompt_tokens
        asked = _max_tokens(call)
        return room if asked is None or asked <= 0 else min(asked, room)

    def completion(self, call: Call) -> dict[str, Any]:
        choice = self._choice(call) | {"logprobs": None}
        return {
            "id": f"chatcmpl-{uuid.uuid4()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": call.model or self.alias,
            "choices": [choice],
            "usage": self._usage(call),
        }


# -- llama.cpp's llama-server -------------------------------------------------------------


class LlamaServer(LocalServer):
    """`llama-server -m M` with its defaults (module docstring)."""

    name = "llama-server"
    BUILD = "b7200-1a2b3c4d"

    def __init__(
        self,
        *,
        context_tokens: int = 4096,
        model: SmallModel | None = None,
        speed: Speed = (0.0, 0.0),
        train_context: int = 32768,
        model_path: str = "models/qwen2.5-0.5b-instruct-q4_k_m.gguf",
        slots: int = 1,
    ) -> None:
        super().__init__(context_tokens=context_tokens, model=model, speed=speed)
        self.train_context = train_context
        self.model_path = model_path
        self.slots = slots

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/health", self._health)
        app.router.add_get("/props", self._props)
        app.router.add_get("/v1/models", self._models)

    async def _health(self, _: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    async def _props(self, _: web.Request) -> web.Response:
        settings = {
            "id": 0,
            "id_task": -1,
            "n_ctx": self.context_tokens,
            "speculative": False,
            "is_processing": False,
            "params": {"n_predict": -1, "temperature": 0.8, "max_tokens": -1, "n_keep": 0},
        }
        return web.json_response(
            {
                "default_generation_settings": settings,
                "total_slots": self.slots,
                "model_path": self.model_path,
                "chat_template": "{% for message in messages %}...{% endfor %}",
                "modalities": {"vision": False},
                "build_info": self.BUILD,
                "is_sleeping": False,
            }
        )

    async def _models(self, _: web.Request) -> web.Response:
        meta = {
            "vocab_type": 2,
            "n_vocab": 151936,
            "n_ctx_train": self.train_context,
            "n_embd": 896,
            "n_params": 494032768,
            "size": 397807936,
        }
        entry = {
            "id": self.model_path,
            "object": "model",
            "created": int(time.time()),
            "owned_by": "llamacpp",
            "meta": meta,
        }
        return web.json_response({"object": "list", "data": [entry]})

    @staticmethod
    def _error(status: int, message: str, kind: str, **extra: Any) -> tuple[int, dict[str, Any]]:
        return status, {"error": {"code": status, "message": message, "type": kind, **extra}}

    def malformed(self) -> tuple[int, dict[str, Any]]:
        return self._error(500, "[json.exception.parse_error.101]", "server_error")

    def refusal(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        kind = call.format_type
        if kind is None or kind in ("", "text", "json_object", "json_schema"):
            return None
        message = f'response_format type must be one of "text" or "json_object", but got: {kind}'
        return self._error(400, message, "invalid_request_error")

    def overflow(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.prompt_tokens < self.context_tokens:
            return None
        message = (
            f"request ({call.prompt_tokens} tokens) exceeds the available context size "
            f"({self.context_tokens} tokens), try increasing it"
        )
        return self._error(
            400,
            message,
            "exceed_context_size_error",
            n_prompt_tokens=call.prompt_tokens,
            n_ctx=self.context_tokens,
        )

    def grammar(self, call: Call) -> Grammar:
        fmt = call.body.get("response_format")
        if call.format_type == "json_schema":
            return Grammar("schema", _schema_of(fmt or {}, "json_schema", "schema") or {})
        if call.format_type == "json_object":
            schema = _schema_of(fmt or {}, "schema")
            return Grammar("schema", schema) if schema else Grammar("json")
        return FREE

    def output_limit(self, call: Call) -> int | None:
        room = self.context_tokens - call.prompt_tokens - 1
        asked = _max_tokens(call)
        return room if asked is None or asked < 0 else min(asked, room)

    def completion(self, call: Call) -> dict[str, Any]:
        usage = self._usage(call) | {"prompt_tokens_details": {"cached_tokens": 0}}
        written = call.written.tokens if call.written else 0
        return {
            "choices": [self._choice(call)],
            "created": int(time.time()),
            "model": call.model or self.model_path,
            "system_fingerprint": self.BUILD,
            "object": "chat.completion",
            "usage": usage,
            "id": f"chatcmpl-{uuid.uuid4().hex[:32]}",
            "timings": {
                "cache_n": 0,
                "prompt_n": call.evaluated_tokens,
                "prompt_ms": call.evaluated_tokens * self.speed[0] * 1000,
                "predicted_n": written,
                "predicted_ms": written * self.speed[1] * 1000,
            },
        }


# -- Ollama -------------------------------------------------------------------------------

_NUM_KEEP = 4


class OllamaServer(LocalServer):
    """`ollama serve` with its defaults, its OpenAI-compatible endpoint (module
    docstring). `pulled` names the models it has; `context_tokens` is `num_ctx`."""

    name = "ollama"
    VERSION = "0.32.7"

    def __init__(
        self,
        *,
        context_tokens: int = 4096,
        model: SmallModel | None = None,
        speed: Speed = (0.0, 0.0),
        pulled: Sequence[str] = ("qwen2.5:0.5b", "llama3.2:1b"),
        train_context: int = 32768,
        modelfile_num_ctx: int | None = None,
    ) -> None:
        super().__init__(context_tokens=context_tokens, model=model, speed=speed)
        self.pulled = list(pulled)
        self.train_context = train_context
        self.modelfile_num_ctx = modelfile_num_ctx
        self.loaded: set[str] = set()

    def routes(self, app: web.Application) -> None:
        app.router.add_get("/", self._root)
        app.router.add_get("/api/version", self._version)
        app.router.add_get("/v1/models", self._models)
        app.router.add_post("/api/show", self._show)
        app.router.add_get("/api/ps", self._ps)

    async def _root(self, _: web.Request) -> web.Response:
        return web.Response(text="Ollama is running")

    async def _version(self, _: web.Request) -> web.Response:
        return web.json_response({"version": self.VERSION})

    async def _models(self, _: web.Request) -> web.Response:
        data = [
            {"id": n, "object": "model", "created": 1760000000, "owned_by": "library"}
            for n in self.pulled
        ]
        return web.json_response({"object": "list", "data": data})

    def _details(self) -> dict[str, Any]:
        return {
            "parent_model": "",
            "format": "gguf",
            "family": "qwen2",
            "families": ["qwen2"],
            "parameter_size": "494.03M",
            "quantization_level": "Q4_K_M",
        }

    async def _show(self, request: web.Request) -> web.Response:
        body = await request.json()
        name = str(body.get("model") or body.get("name") or "")
        if name not in self.pulled:
            return web.json_response({"error": f"model '{name}' not found"}, status=404)
        parameters = 'stop "<|im_start|>"\nstop "<|im_end|>"'
        if self.modelfile_num_ctx is not None:
            parameters = f"num_ctx {self.modelfile_num_ctx}\n" + parameters
        info = {
            "general.architecture": "qwen2",
            "general.parameter_count": 494032768,
            "qwen2.context_length": self.train_context,
            "qwen2.embedding_length": 896,
        }
        return web.json_response(
            {
                "parameters": parameters,
                "template": "{{- range .Messages }}...{{ end }}",
                "details": self._details(),
                "model_info": info,
                "capabilities": ["completion", "tools"],
            }
        )

    @property
    def num_ctx(self) -> int:
        return self.modelfile_num_ctx or self.context_tokens

    async def _ps(self, _: web.Request) -> web.Response:
        models = [
            {
                "name": n,
                "model": n,
                "size": 1_200_000_000,
                "digest": "a" * 64,
                "details": self._details(),
                "expires_at": "2026-11-28T17:00:00Z",
                "size_vram": 0,
                "context_length": self.num_ctx,
            }
            for n in sorted(self.loaded)
        ]
        return web.json_response({"models": models})

    def malformed(self) -> tuple[int, dict[str, Any]]:
        message = "invalid character 'x' looking for beginning of value"
        return 400, _openai_error(message, "invalid_request_error")

    def refusal(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        if call.model not in self.pulled:
            return 404, _openai_error(f"model '{call.model}' not found", "not_found_error")
        self.loaded.add(call.model)
        return None

    def overflow(self, call: Call) -> tuple[int, dict[str, Any]] | None:
        return None  # cut to fit instead (`evaluated`)

    def evaluated(self, prompt: str) -> str:
        tokens = count_tokens(prompt)
        if tokens < self.num_ctx:
            return prompt
        keep = _NUM_KEEP + 1  # and the BOS token
        limit = self.num_ctx - max((self.num_ctx - keep) // 2, 1)
        head = prompt[: keep * CHARS_PER_TOKEN]
        tail = prompt[len(prompt) - (limit - keep) * CHARS_PER_TOKEN :]
        return head + tail

    def grammar(self, call: Call) -> Grammar:
        kind = (call.format_type or "").strip().lower()
        if kind == "json_object":
            return Grammar("json")
        schema = _schema_of(call.body.get("response_format") or {}, "json_schema", "schema")
        if kind == "json_schema" and schema is not None:
            return Grammar("schema", schema)
        return FREE

    def output_limit(self, call: Call) -> int | None:
        asked = _max_tokens(call)
        return None if asked is None or asked < 0 else asked

    def completion(self, call: Call) -> dict[str, Any]:
        return {
            "id": f"chatcmpl-{len(self.calls)}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": call.model,
            "system_fingerprint": "fp_ollama",
            "choices": [self._choice(call)],
            "usage": self._usage(call),
        }


SERVERS: tuple[type[LocalServer], ...] = (LlamaCppPythonServer, LlamaServer, OllamaServer)
"""The three, each constructible with its defaults alone."""

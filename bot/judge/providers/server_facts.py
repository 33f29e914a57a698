"""What a server says about the context it serves a model with.

A judge's prompt must fit its model's context (prompt and answer together). The
context is a setting (`JUDGE_<TIER>_CONTEXT_TOKENS`, else `JUDGE_CONTEXT_TOKENS`) or, for
an OpenAI-compatible server that says, read from it (`discover_context_tokens`), in this
order, each step taken only when the one before could not say:

    llama.cpp llama-server   GET {root}/props        default_generation_settings.n_ctx
                                                     (the context it runs; `n_ctx` at the
                                                     top level in some versions)
    llama.cpp, vLLM          GET {base}/models       llama.cpp: data[].meta.n_ctx_train
                                                     (what the model was trained for: the
                                                     server may run less); vLLM:
                                                     data[].max_model_len
    Ollama                   POST {root}/api/show    `num_ctx` in `parameters` when the
                                                     model sets it, else the server's
                                                     default (`OLLAMA_DEFAULT_CONTEXT`),
                                                     never more than model_info's
                                                     "<arch>.context_length"

`{root}` is the base URL without its `/v1`. A model list entry counts when its id is the
model, or when the server lists one model only (llama.cpp serves one whatever it is
called). Hosted APIs (the providers' public endpoints, and any endpoint with a key on a
host that is not loopback, private or a bare name: `private_host`), the Anthropic
protocol and the CLIs are not asked: they say nothing of the kind, and the tier reads
its configured characters. A server that cannot be reached ends the discovery at once
(the call itself will say so), and the whole discovery takes at most one request's time
limit; a discovery that finds nothing says what each step got in `detail`. It never
raises for the server's sake: a failed discovery must not fail a judgment.

`ContextMemory` keeps what was found per base URL and model, asks again after
`CONTEXT_REPROBE_SECONDS` (`RETRY_UNKNOWN_SECONDS` after finding nothing), and learns the
context a server states when it refuses a prompt as too long (which then counts before
the setting: the server knows what it runs).

How a server says a prompt did not fit is read in bot/judge/providers/overflow.py.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx
from pydantic import SecretStr

from bot.judge.providers import DEFAULT_BASE_URLS, PROVIDERS
from bot.judge.providers.http import read_up_to
from bot.judge.providers.overflow import positive_count

SETTING = "setting"
LLAMA_PROPS = "llama.cpp /props"
LLAMA_MODELS = "llama.cpp /v1/models"
VLLM_MODELS = "vLLM /v1/models"
OLLAMA_SHOW = "Ollama /api/show"
REFUSAL = "the server's refusal"
UNKNOWN = "unknown"

LEAST_CONTEXT = 512
"""The smallest context believed from a refusal (`bot.judge.settings.MIN_CONTEXT_TOKENS`,
the least a setting may say)."""
DISCOVERY_TIMEOUT = 5.0
"""Seconds each discovery request may take (a tier's own timeout when shorter)."""
CONTEXT_REPROBE_SECONDS = 3600.0
RETRY_UNKNOWN_SECONDS = 300.0
OLLAMA_DEFAULT_CONTEXT = 4096
"""The context Ollama serves a model with when its Modelfile sets no `num_ctx`
(`OLLAMA_CONTEXT_LENGTH`'s default since 0.6; 2048 before): its OpenAI endpoint takes no
per-request context. A server started with more wants JUDGE_<TIER>_CONTEXT_TOKENS."""
_ANSWER_LIMIT = 2 * 1024 * 1024
"""Bytes of a discovery answer read at most (an Ollama licence runs to tens of KiB)."""
_HOSTED = frozenset(DEFAULT_BASE_URLS.values())
"""The providers' public endpoints (`ProviderSpec.public_base_url`)."""


@dataclass(frozen=True)
class ContextFacts:
    """A model's context as far as it is known: `tokens` (None: unknown), where that came
    from (`source`: one of the names above), and what went wrong when nothing was found
    (`detail`, short; never a key)."""

    tokens: int | None
    source: str
    detail: str = ""


class ContextEndpoint(Protocol):
    """What discovery reads of a seat: `bot.judge.settings.Endpoint` is one (the providers
    sit below the configuration, so they name its shape, not its class)."""

    @property
    def model(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def base_url(self) -> str: ...
    @property
    def api_key(self) -> SecretStr | None: ...
    @property
    def timeout(self) -> float: ...
    @property
    def context_tokens(self) -> int | None: ...


class _Unreachable(Exception):
    """The server did not answer at all: no further step is worth asking."""


def _root(base_url: str) -> str:
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


async def discover_context_tokens(
    client: httpx.AsyncClient, endpoint: ContextEndpoint
) -> ContextFacts:
    """The context `endpoint` (a `bot.judge.settings.Endpoint`) serves its model with: its
    setting, else what its server says (module docstring), else unknown with why."""
    configured = positive_count(endpoint.context_tokens)
    if configured is not None:
        return ContextFacts(configured, SETTING)
    spec = PROVIDERS.get(endpoint.provider)
    if spec is None or not spec.reports_context:
        return ContextFacts(None, UNKNOWN, f"the {endpoint.provider} provider reports no context")
    base = endpoint.base_url.rstrip("/")
    if base in _HOSTED:
        return ContextFacts(None, UNKNOWN, "a hosted API reports no context")
    if endpoint.api_key is not None and not private_host(base):
        # OpenRouter, Groq, ...: a key to a public host is a hosted API, which says
        # nothing of the kind; it is not sent three requests with the key to find out.
        return ContextFacts(None, UNKNOWN, "a hosted API (a key, a public host) is not asked")
    asker = _Asker(client, endpoint)
    problems: list[str] = []
    try:
        # All of it within one request's time: a judgment's own clock starts after it.
        async with asyncio.timeout(asker.timeout):
            for step in (asker.llama_props, asker.model_list, asker.ollama_show):
                found = await step()
                if isinstance(found, ContextFacts):
                    return found
                problems.append(found)
    except _Unreachable as exc:
        return ContextFacts(None, UNKNOWN, f"server unreachable ({exc})")
    except TimeoutError:
        problems.append(f"no answer within {asker.timeout:g}s")
    return ContextFacts(None, UNKNOWN, "; ".join(problems))


_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")


def private_host(base_url: str) -> bool:
    """Whether `base_url` names a host of this machine or its network: loopback, a private
    or link-local address, `localhost`, a name without a dot (a container's, a LAN
    host's) or under a private suffix. Decided from the URL alone (no DNS lookup)."""
    try:
        host = httpx.URL(base_url).host
    except httpx.InvalidURL:
        return False
    if host == "localhost" or host.endswith(_PRIVATE_SUFFIXES):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return bool(host) and "." not in host
    return address.is_private or address.is_loopback or address.is_link_local


class _Asker:
    """The three discovery requests against one endpoint."""

    def __init__(self, client: httpx.AsyncClient, endpoint: ContextEndpoint) -> None:
        self._client = client
        self._model = endpoint.model
        self._base = endpoint.base_url.rstrip("/")
        key = endpoint.api_key.get_secret_value() if endpoint.api_key is not None else ""
        # Only ever to the host the key was configured for: these are its own paths.
        self._headers = {"Authorization": f"Bearer {key}"} if key else {}
        self.timeout = min(DISCOVERY_TIMEOUT, endpoint.timeout)

    async def _json(self, method: str, url: str, body: Mapping[str, Any] | None = None) -> Any:
        """The answer's JSON; a string saying why there is none (a status, not JSON)."""
        try:
            request = self._client.build_request(
                method, url, headers=self._headers, json=body, timeout=self.timeout
            )
            response = await self._client.send(request, stream=True)
            try:
                content, whole = await read_up_to(response, _ANSWER_LIMIT)
            finally:
                await response.aclose()
        except (httpx.RequestError, httpx.InvalidURL) as exc:
            raise _Unreachable(type(exc).__name__) from exc
        except UnicodeError:
            # A header that is not ASCII (the key): its text is dropped, never chained.
            raise _Unreachable("UnicodeEncodeError") from None
        if response.status_code >= 400:
            return f"HTTP {response.status_code}"
        if not whole:
            return "answer too long"
        try:
            return json.loads(content)
        except (ValueError, RecursionError):
            return "not JSON"

    async def llama_props(self) -> ContextFacts | str:
        payload = await self._json("GET", _root(self._base) + "/props")
        if isinstance(payload, str):
            return f"/props: {payload}"
        settings = payload.get("default_generation_settings") if isinstance(payload, dict) else None
        found = positive_count(settings.get("n_ctx")) if isinstance(settings, dict) else None
        if found is None and isinstance(payload, dict):
            found = positive_count(payload.get("n_ctx"))
        if found is None:
            return "/props: no n_ctx"
        return ContextFacts(found, LLAMA_PROPS)

    async def model_list(self) -> ContextFacts | str:
        payload = await self._json("GET", self._base + "/models")
        if isinstance(payload, str):
            return f"/models: {payload}"
        data = payload.get("data") if isinstance(payload, dict) else None
        entries = [e for e in data if isinstance(e, dict)] if isinstance(data, list) else []
        entry = next((e for e in entries if e.get("id") == self._model), None)
        if entry is None and len(entries) == 1:
            entry = entries[0]
        if entry is None:
            return f"/models: {self._model} not listed"
        found = positive_count(entry.get("max_model_len"))
        if found is not None:
            return ContextFacts(found, VLLM_MODELS)
        meta = entry.get("meta")
        found = positive_count(meta.get("n_ctx_train")) if isinstance(meta, dict) else None
        if found is not None:
            return ContextFacts(found, LLAMA_MODELS, "the trained context: the server may run less")
        return "/models: no context size"

    async def ollama_show(self) -> ContextFacts | str:
        payload = await self._json("POST", _root(self._base) + "/api/show", {"model": self._model})
        if isinstance(payload, str) or not isinstance(payload, dict):
            return f"/api/show: {payload if isinstance(payload, str) else 'not an object'}"
        info = payload.get("model_info")
        trained = None
        if isinstance(info, dict):
            arch = info.get("general.architecture")
            trained = positive_count(info.get(f"{arch}.context_length")) if arch else None
        parameters = payload.get("parameters")
        text = parameters if isinstance(parameters, str) else ""
        match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", text)
        if match is not None:
            return ContextFacts(int(match[1]), OLLAMA_SHOW, "num_ctx")
        if trained is None:
            return "/api/show: no context_length"
        served = min(trained, OLLAMA_DEFAULT_CONTEXT)
        return ContextFacts(
            served,
            OLLAMA_SHOW,
            f"the server's default context assumed (the model takes {trained})",
        )


@dataclass
class ContextMemory:
    """Discovered contexts per (base URL, model), shared by a panel's seats."""

    facts: dict[tuple[str, str], tuple[ContextFacts, float]] = field(default_factory=dict)
    reprobe_after: float = CONTEXT_REPROBE_SECONDS
    retry_unknown_after: float = RETRY_UNKNOWN_SECONDS
    clock: Callable[[], float] = time.monotonic
    _locks: dict[tuple[str, str], asyncio.Lock] = field(default_factory=dict)

    async def context_of(
        self, client: httpx.AsyncClient, endpoint: ContextEndpoint
    ) -> ContextFacts:
        """The endpoint's context: what its server said refusing a prompt lately, else
        its setting, else what was found lately, else found now (one discovery at a time
        per base URL and model)."""
        key = (endpoint.base_url.rstrip("/"), endpoint.model)
        known = self.known(key)
        if known is not None and known.source == REFUSAL:
            return known
        if positive_count(endpoint.context_tokens) is not None:
            return await discover_context_tokens(client, endpoint)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            known = self.known(key)
            if known is not None:
                return known
            found = await discover_context_tokens(client, endpoint)
            self.facts[key] = (found, self.clock())
            return found

    def known(self, key: tuple[str, str]) -> ContextFacts | None:
        remembered = self.facts.get(key)
        if remembered is None:
            return None
        found, since = remembered
        wait = self.reprobe_after if found.tokens is not None else self.retry_unknown_after
        if self.clock() - since >= wait:
            del self.facts[key]
            return None
        return found

    def learn(self, base_url: str, model: str, tokens: int) -> None:
        """A server stated its context while refusing a prompt: believe it, unless it is
        under `LEAST_CONTEXT` (a number misread from its words must not shrink every
        prompt to nothing for an hour)."""
        if tokens < LEAST_CONTEXT:
            return
        self.facts[(base_url.rstrip("/"), model)] = (ContextFacts(tokens, REFUSAL), self.clock())

"""The provider self-check: is each tier's model still served under its name?

A provider may rename a model under a running judge (Cerebras' `llama3.1-70b` became
`llama-3.3-70b`); every call then fails and the judge fails open, silently. So at start
and every hour each configured tier's model is looked up in its provider's model list
(the list its `ProviderSpec.model_list` names: `GET {base}/models` for OpenAI-compatible
servers, `GET {base}/v1/models`, paged, for Anthropic), and the `TierBoard` the pages read
is replaced with the result. Never fatal: a missing model only shows, and the tier fails
open as it would have anyway.

    listed (or a dated snapshot of it: alias `claude-sonnet-4-5`
      is served as `claude-sonnet-4-5-20250929`) ────────────────► available
    not listed ────────────────────────────────────────────────► missing, with the
                                                                   closest names listed
    key refused (401/403), host unreachable, no answer in time ─► missing, with why
                                                                   (the cause named:
                                                                   connection refused,
                                                                   DNS, TLS...)
    no model list (404/405/501, other errors, unreadable list,
      a CLI provider) ─────────────────────────────────────────► unknown, with why

A missing model is logged once when it goes missing (with up to `LOGGED_NAMES` of the
names that do exist, closest first), not every hour; its return is logged once too. The
advice fits the cause (`advice`): a model the endpoint does not list asks for another
`JUDGE_<TIER>_MODEL`, an endpoint that did not answer or refused the key names the host
and the setting to check instead, since no model name would fix those.
`judge_provider_model_available{tier,model}` is 1 or 0, and absent while unknown. Problem
texts and logs name hosts, models and status codes, never a key or a full URL.
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import logging
import os
import re
import shutil
import socket
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import httpx
from aiohttp import web

from bot.judge.engine.tier_status import TierBoard, TierStatus, statuses_from_settings
from bot.judge.providers import ModelList, provider_spec
from bot.judge.providers.anthropic_messages import ANTHROPIC_VERSION
from bot.judge.providers.http import ACCEPT_ENCODING, read_up_to
from bot.judge.settings import Endpoint, JudgeSettings
from bot.lifetime import CleanupContext, every, running
from bot.metrics import Metrics

logger = logging.getLogger(__name__)

CHECK_INTERVAL_SECONDS = 3600.0
LIST_TIMEOUT_SECONDS = 20.0
CLOSE_NAMES = 3
LOGGED_NAMES = 20
_ANTHROPIC_PAGES = 10
# The largest lists served today (OpenRouter's, with a description per model) are a few
# MiB; past this bound the list is not read, and not decoded on the event loop (about
# 10 ms a MiB here), every hour.
MODEL_LIST_LIMIT = 16 * 2**20
_SNAPSHOT_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})")


class Trouble(StrEnum):
    """Why a tier counts as missing although nobody said its model is gone."""

    UNREACHABLE = "unreachable"
    """No answer: refused, unresolved, TLS, timed out."""
    KEY_REFUSED = "key refused"


@dataclass(frozen=True)
class ModelListing:
    """What an endpoint said its models are, or (`models` None) why it could not say and
    what that means for the tier (`available`)."""

    models: tuple[str, ...] | None
    available: bool | None = None
    problem: str | None = None
    trouble: Trouble | None = None


# -- the comparison (pure) ------------------------------------------------------------


def model_listed(model: str, models: Sequence[str]) -> bool:
    """Whether `model` is served: listed as is (case aside), or as a dated snapshot of it
    (`-20250929`, `-2024-08-06`), which is how providers list the aliases they accept;
    `-latest` aliases count as their base name."""
    wanted = model.lower()
    base = wanted.removesuffix("-latest")
    for listed in (m.lower() for m in models):
        if listed in (wanted, base):
            return True
        if listed.startswith(base + "-") and _SNAPSHOT_SUFFIX.fullmatch(listed[len(base) :]):
            return True
    return False


def names_by_closeness(model: str, models: Sequence[str]) -> list[str]:
    """Every listed name, the ones most like `model` first."""
    if not models:
        return []
    close = difflib.get_close_matches(model, models, n=len(models), cutoff=0.5)
    return close + sorted(m for m in models if m not in close)


def missing_problem(model: str, host: str | None, models: Sequence[str]) -> str:
    where = host or "its provider"
    if not models:
        return f"model {model!r} is not served: {where} lists no models"
    close = difflib.get_close_matches(model, models, n=CLOSE_NAMES, cutoff=0.5)
    hint = f"; closest: {', '.join(close)}" if close else ""
    return f"model {model!r} is not among the {len(models)} models {where} lists{hint}"


_MAX_CAUSES = 8


def connection_cause(exc: BaseException) -> str:
    """What stopped a connection, in words, from the errors chained under an httpx
    error (whose own text is often just "All connection attempts failed"). Errno texts,
    resolver and TLS reasons only: none of them quotes the URL, which may carry a key."""
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and current not in seen and len(seen) < _MAX_CAUSES:
        seen.append(current)
        current = current.__cause__ or current.__context__
    for error in reversed(seen):  # the innermost error is the most precise
        if isinstance(error, socket.gaierror):
            return f"DNS lookup failed ({error.strerror or 'no address'})"
        # The ssl module sets these attributes only on the errors it raises itself.
        if isinstance(error, ssl.SSLCertVerificationError):
            why = getattr(error, "verify_message", None) or "not trusted"
            return f"TLS certificate rejected ({why})"
        if isinstance(error, ssl.SSLError):
            return f"TLS failed ({getattr(error, 'reason', None) or type(error).__name__})"
        if isinstance(error, TimeoutError):
            return "connection timed out"
        if isinstance(error, OSError) and isinstance(error.errno, int) and error.errno > 0:
            return os.strerror(error.errno).lower()
    return type(exc).__name__


def advice(tier: str, listing: ModelListing | None) -> str:
    """What to do about a tier found missing, by its cause (module docstring)."""
    name = tier.upper()
    trouble = listing.trouble if listing is not None else None
    if trouble is Trouble.UNREACHABLE:
        return (
            "the tier fails open until the endpoint answers: is it running, and does "
            f"JUDGE_{name}_BASE_URL (or JUDGE_LLM_BASE_URL) point at it?"
        )
    if trouble is Trouble.KEY_REFUSED:
        return (
            "the tier fails open until the key is accepted: check "
            f"JUDGE_{name}_API_KEY (or JUDGE_LLM_API_KEY)"
        )
    if listing is not None and listing.models is not None:
        return f"the tier fails open until this is fixed (set JUDGE_{name}_MODEL)"
    return "the tier fails open until this is fixed"


def checked_status(status: TierStatus, listing: ModelListing | None) -> TierStatus:
    """`status` after the check; an unconfigured tier (no listing) stays as it is."""
    if listing is None or not status.configured or status.model is None:
        return status
    if listing.models is None:
        return status.checked(available=listing.available, problem=listing.problem)
    if model_listed(status.model, listing.models):
        return status.checked(available=True)
    return status.checked(
        available=False, problem=missing_problem(status.model, status.host, listing.models)
    )


def checked_statuses(
    statuses: Sequence[TierStatus], listings: Mapping[str, ModelListing]
) -> list[TierStatus]:
    """Each tier's status checked against its endpoint's listing (keyed by tier name)."""
    return [checked_status(status, listings.get(status.tier)) for status in statuses]


def health_detail(statuses: Sequence[TierStatus]) -> dict[str, Any]:
    """The judge's part of `/healthz?detail=1`: each tier as the self-check last saw it,
    and the models found missing. Informational: it never makes the service unhealthy."""
    tiers = [
        {
            "tier": s.tier,
            "configured": s.configured,
            "model": s.model,
            "provider": s.provider,
            "host": s.host,
            "available": s.available,
            "problem": s.problem,
        }
        for s in statuses
    ]
    missing = [
        {"tier": s.tier, "model": s.model}
        for s in statuses
        if s.configured and s.available is False
    ]
    return {"tiers": tiers, "models_missing": missing}


# -- asking the providers ---------------------------------------------------------------


def _ids(payload: Any, id_key: str = "id") -> list[str] | None:
    """The model ids of a `{"data": [{"id": ...}, ...]}` list; None when it is not one."""
    if not isinstance(payload, dict) or not isinstance(payload.get("data"), list):
        return None
    return [
        item[id_key]
        for item in payload["data"]
        if isinstance(item, dict) and isinstance(item.get(id_key), str)
    ]


def _refusal(status: int, host: str) -> ModelListing:
    if status in (401, 403):
        return ModelListing(
            None,
            False,
            f"{host} refused the API key when listing models (HTTP {status})",
            Trouble.KEY_REFUSED,
        )
    if status in (404, 405, 501):
        return ModelListing(
            None, None, f"{host} has no model list (HTTP {status}); the model was not checked"
        )
    return ModelListing(
        None, None, f"{host} answered HTTP {status} for its model list; the model was not checked"
    )


async def _get_json(
    client: httpx.AsyncClient,
    url: str,
    headers: Mapping[str, str],
    host: str,
    params: Mapping[str, str | int] | None = None,
) -> Any | ModelListing:
    """The decoded answer, or the listing that explains why there is none."""
    try:
        request = client.build_request(
            "GET",
            url,
            headers={**headers, "Accept-Encoding": ACCEPT_ENCODING},
            params=dict(params or {}),
            timeout=LIST_TIMEOUT_SECONDS,
        )
        response = await client.send(request, stream=True)
        try:
            if response.status_code >= 400:
                return _refusal(response.status_code, host)
            content, whole = await read_up_to(response, MODEL_LIST_LIMIT)
        finally:
            await response.aclose()
    except httpx.ConnectTimeout:
        return _unreachable(host, "connection timed out")
    except httpx.TimeoutException:
        return ModelListing(
            None, False, f"{host} did not send its model list in time", Trouble.UNREACHABLE
        )
    except (httpx.RequestError, httpx.InvalidURL, UnicodeError) as exc:
        return _unreachable(host, connection_cause(exc))
    if not whole:
        return ModelListing(
            None,
            None,
            f"{host} sent a model list over {MODEL_LIST_LIMIT // 2**20} MiB;"
            " the model was not checked",
        )
    try:
        return json.loads(content)
    except (ValueError, RecursionError):
        return _unreadable(host)


def _unreachable(host: str, cause: str) -> ModelListing:
    return ModelListing(None, False, f"{host} could not be reached: {cause}", Trouble.UNREACHABLE)


def _unreadable(host: str) -> ModelListing:
    return ModelListing(
        None, None, f"{host} sent an unreadable model list; the model was not checked"
    )


async def _openai_models(client: httpx.AsyncClient, endpoint: Endpoint) -> ModelListing:
    key = endpoint.api_key.get_secret_value() if endpoint.api_key is not None else ""
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    payload = await _get_json(client, endpoint.base_url + "/models", headers, endpoint.host)
    if isinstance(payload, ModelListing):
        return payload
    ids = _ids(payload)
    return _unreadable(endpoint.host) if ids is None else ModelListing(tuple(ids))


async def _anthropic_models(client: httpx.AsyncClient, endpoint: Endpoint) -> ModelListing:
    key = endpoint.api_key.get_secret_value() if endpoint.api_key is not None else ""
    headers = {"x-api-key": key, "anthropic-version": ANTHROPIC_VERSION}
    found: list[str] = []
    params: dict[str, str | int] = {"limit": 1000}
    for _ in range(_ANTHROPIC_PAGES):
        url = endpoint.base_url + "/v1/models"
        payload = await _get_json(client, url, headers, endpoint.host, params)
        if isinstance(payload, ModelListing):
            return payload
        ids = _ids(payload)
        if ids is None:
            return _unreadable(endpoint.host)
        found += ids
        last = payload.get("last_id")
        if payload.get("has_more") is not True or not isinstance(last, str) or not ids:
            break
        params["after_id"] = last
    return ModelListing(tuple(found))


_MODEL_LISTS: dict[ModelList, Callable[[httpx.AsyncClient, Endpoint], Awaitable[ModelListing]]] = {
    ModelList.OPENAI: _openai_models,
    ModelList.ANTHROPIC: _anthropic_models,
}


def _unlisted(endpoint: Endpoint) -> ModelListing:
    """A provider without a model list: a CLI whose command is missing is missing."""
    if endpoint.local and shutil.which(endpoint.base_url) is None:
        command = endpoint.host.removeprefix("local ")
        return ModelListing(None, False, f"command {command!r} not found")
    return ModelListing(
        None, None, f"{endpoint.provider} has no model list; the model was not checked"
    )


async def list_models(client: httpx.AsyncClient, endpoint: Endpoint) -> ModelListing:
    """Ask `endpoint`'s provider which models it serves. Never raises for the provider's
    failures: they come back as a listing without models."""
    model_list = provider_spec(endpoint.provider).model_list
    if model_list is None:
        return _unlisted(endpoint)
    return await _MODEL_LISTS[model_list](client, endpoint)


# -- the refresher ------------------------------------------------------------------------


class SelfCheck:
    """Checks every configured tier, replaces the board, sets the gauge, and logs what
    changed since the previous check."""

    def __init__(
        self,
        board: TierBoard,
        settings: JudgeSettings,
        client: httpx.AsyncClient,
        metrics: Metrics,
    ) -> None:
        self._board = board
        self._settings = settings
        self._client = client
        self._metrics = metrics
        self._last: dict[str, tuple[str | None, bool | None]] = {}

    async def check_once(self) -> list[TierStatus]:
        seats = self._settings.tiers()
        by_endpoint: dict[tuple[str, str, str], ModelListing] = {}
        listings: dict[str, ModelListing] = {}
        for tier, endpoint in seats.items():
            key = endpoint.endpoint_key()
            if key not in by_endpoint:
                by_endpoint[key] = await list_models(self._client, endpoint)
            listings[tier.value] = by_endpoint[key]
        statuses = checked_statuses(statuses_from_settings(self._settings), listings)
        self._board.replace_all(statuses)
        for status in statuses:
            if status.configured and status.model is not None:
                self._publish(status, listings.get(status.tier))
        return statuses

    def _publish(self, status: TierStatus, listing: ModelListing | None) -> None:
        assert status.model is not None
        gauge = self._metrics.model_available
        if status.available is None:
            with contextlib.suppress(KeyError):
                gauge.remove(status.tier, status.model)
        else:
            gauge.labels(tier=status.tier, model=status.model).set(int(status.available))
        state = (status.model, status.available)
        if self._last.get(status.tier) == state:
            return
        first = status.tier not in self._last
        self._last[status.tier] = state
        self._log(status, listing, first=first)

    @staticmethod
    def _log(status: TierStatus, listing: ModelListing | None, *, first: bool) -> None:
        if status.available is True:
            if not first:
                logger.info("judge %s tier: model %s is available again", status.tier, status.model)
            return
        if status.available is None:
            logger.info("judge %s tier: %s", status.tier, status.problem)
            return
        if listing is None or listing.models is None:
            # No list to show: it would read "none", as if the endpoint served nothing.
            logger.warning(
                "judge %s tier: %s; %s", status.tier, status.problem, advice(status.tier, listing)
            )
            return
        names = names_by_closeness(status.model or "", listing.models)
        more = f" (and {len(names) - LOGGED_NAMES} more)" if len(names) > LOGGED_NAMES else ""
        logger.warning(
            "judge %s tier: %s; %s. Models it lists: %s%s",
            status.tier,
            status.problem,
            advice(status.tier, listing),
            ", ".join(names[:LOGGED_NAMES]) or "none",
            more,
        )

    async def run(self, stop: asyncio.Event, interval: float = CHECK_INTERVAL_SECONDS) -> None:
        """Check now and then every `interval` seconds until `stop` is set."""
        await every(interval, stop, self.check_once)


def self_check_ctx(
    board: TierBoard,
    settings: JudgeSettings,
    metrics: Metrics,
    client: httpx.AsyncClient | None = None,
    *,
    interval: float = CHECK_INTERVAL_SECONDS,
) -> CleanupContext:
    """An aiohttp cleanup context running the self-check in the background for the app's
    life (start-up does not wait for it). Without `client` it opens its own for that life."""

    async def self_check(app: web.Application) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            http = client
            if http is None:
                http = await stack.enter_async_context(httpx.AsyncClient())
            check = SelfCheck(board, settings, http, metrics)
            async with running(lambda stop: check.run(stop, interval)):
                yield

    return self_check

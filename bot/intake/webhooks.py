"""Webhook intake: verify, store durably, acknowledge. Nothing else happens on the request path.

    GitHub --POST--> check_request (pure) --> storage.record_delivery --> 202 / 200
                                                       |
                                                       +--> wake the workers

A delivery is written to storage before the 2xx goes out, so an accepted delivery survives
a crash. GitHub keeps `X-GitHub-Delivery` on redelivery, so a repeated id is acknowledged
with 200 and not processed again.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from aiohttp import web
from gidgethub import ValidationFailure
from gidgethub.sansio import validate_event

from bot.metrics import Metrics
from bot.storage.base import NewDelivery, Storage

log = logging.getLogger(__name__)

# GitHub caps webhook payloads at 25 MB and does not deliver larger ones.
MAX_BODY_BYTES = 25 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Accepted:
    delivery: NewDelivery


def check_request(
    headers: Mapping[str, str],
    body: bytes,
    secret: str,
    received_at: datetime,
) -> Rejection | Accepted:
    """Decide what to do with a webhook request. Pure: no I/O, headers are case-insensitive."""
    lowered = {key.lower(): value for key, value in headers.items()}
    if len(body) > MAX_BODY_BYTES:
        return Rejection(413, "too-large", "payload exceeds GitHub's 25 MB limit")
    # Only SHA-256: accepting the legacy SHA-1 header would let a forger pick the weaker one.
    signature = lowered.get("x-hub-signature-256")
    if not signature:
        return Rejection(401, "unsigned", "missing X-Hub-Signature-256")
    try:
        validate_event(body, signature=signature, secret=secret)
    except ValidationFailure:
        return Rejection(401, "bad-signature", "signature does not match")
    content_type = lowered.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "application/json":
        return Rejection(415, "content-type", "webhook content type must be application/json")
    event = lowered.get("x-github-event", "").strip()
    delivery_id = lowered.get("x-github-delivery", "").strip()
    if not event:
        return Rejection(400, "no-event", "missing X-GitHub-Event")
    if not delivery_id or len(delivery_id) > 200:
        return Rejection(400, "no-delivery-id", "missing or oversized X-GitHub-Delivery")
    try:
        payload = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return Rejection(400, "not-json", "body is not valid JSON")
    if not isinstance(payload, dict):
        return Rejection(400, "not-json", "body is not a JSON object")
    return Accepted(
        NewDelivery(
            delivery_id=delivery_id,
            event=event,
            action=_str_or_none(payload.get("action")),
            installation_id=_installation_id(payload),
            repository=_repository(payload),
            body=body,
            received_at=received_at,
        )
    )


def _str_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _installation_id(payload: Mapping[str, Any]) -> int | None:
    installation = payload.get("installation")
    if isinstance(installation, dict):
        value = installation.get("id")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def _repository(payload: Mapping[str, Any]) -> str | None:
    repository = payload.get("repository")
    if isinstance(repository, dict):
        return _str_or_none(repository.get("full_name"))
    return None


def make_webhook_handler(
    storage: Storage,
    secret: str,
    metrics: Metrics,
    wake_workers: Callable[[], None],
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> Callable[[web.Request], Any]:
    async def handle(request: web.Request) -> web.Response:
        if request.content_length is not None and request.content_length > MAX_BODY_BYTES:
            metrics.rejected.labels(reason="too-large").inc()
            return _problem(413, "payload exceeds GitHub's 25 MB limit")
        body = await request.read()
        outcome = check_request(request.headers, body, secret, clock())
        if isinstance(outcome, Rejection):
            metrics.rejected.labels(reason=outcome.reason).inc()
            log.warning(
                "webhook refused: %s",
                outcome.message,
                extra={"delivery_id": request.headers.get("X-GitHub-Delivery")},
            )
            return _problem(outcome.status, outcome.message)
        delivery = outcome.delivery
        if delivery.event == "ping":
            return web.json_response({"ok": True, "zen": "pong"}, status=200)
        if not await storage.record_delivery(delivery):
            metrics.duplicates.labels(event=delivery.event).inc()
            return web.json_response({"ok": True, "duplicate": True}, status=200)
        metrics.received.labels(event=delivery.event).inc()
        wake_workers()
        return web.json_response({"ok": True, "delivery": delivery.delivery_id}, status=202)

    return handle


def _problem(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)

"""Webhook intake: verify, store durably, acknowledge. Nothing else happens on the request path.

    GitHub --POST--> check_request (pure) --> storage.record_delivery --> 202 / 200
                                                       |
                                                       +--> wake the workers

A delivery is written to storage before the 2xx goes out, so an accepted delivery survives
a crash. GitHub keeps `X-GitHub-Delivery` on redelivery, so a repeated id is acknowledged
with 200 and not processed again, unless it was parked as failed: a person's "Redeliver"
queues it again (202, attempts reset). A delivery no handler subscribes to (GitHub sends every
event the App is subscribed to, most of which no feature reads) is stored as done in the
same insert: a claim and a completion for nothing would cost more than its intake. The body
is checked whole but decoded only as far as intake reads it (`body_fields`); the worker
decodes the stored body when it runs the handlers.

Nothing a sender puts in a request yields a 5xx. Two things are refused from the headers
alone, with the body unread (`refuse_unread`): a declared length over the limit (413), and
a compressed body, any Content-Encoding but `identity` (415). GitHub never compresses a
delivery, and its signature covers the inflated bytes, so a compressed body could only be
inflated before the signature is checked: 24 KB of gzip inflate to 24 MiB, and a few
megabytes sent would make intake hold gigabytes. (`serve` also turns aiohttp's request
decompression off, so no route inflates what it is sent.)

Then the signature is checked before anything else is read, so all that follows concerns a
holder of the secret; even then, every value handed to storage is one both backends store
as is, or the request is refused with a 4xx naming what is wrong, and nothing is stored:

* headers: only a `sha256=` signature counts. `X-GitHub-Event` and `X-GitHub-Delivery` are
  printable ASCII (no NUL, no bytes a text column cannot hold), at most `MAX_NAME_CHARS`
  and 200 characters. A body aiohttp cannot read (a broken chunked encoding) is a 400.
* body: UTF-8, one JSON object, nested at most `MAX_JSON_DEPTH` levels (the deepest of
  GitHub's example payloads nests 7). NaN, Infinity, numbers beyond a double and unpaired
  surrogate escapes are refused: they are not JSON GitHub writes, and the worker must read
  the body as intake did (`json_body`). Duplicate keys are accepted: intake reads the last
  value of a key, as the worker's orjson keeps it, so the stored fields are the ones the
  handlers see.
* `action`, `repository.full_name`: absent or null is stored as NULL; otherwise a string of
  at most `MAX_NAME_CHARS` characters without NUL, else 400.
* `installation.id`: absent or null is stored as NULL; otherwise an integer from 1 to
  2^63 - 1 (PostgreSQL's bigint, SQLite's INTEGER), else 400 rather than stored as absent:
  a payload with such an id is not GitHub's, and the handlers would read the same bad id.
* `installation`, `repository`: absent or null, or an object, else 400.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from json.encoder import encode_basestring_ascii
from typing import Any, NoReturn

from aiohttp import web
from gidgethub import ValidationFailure
from gidgethub.routing import Router
from gidgethub.sansio import validate_event

from bot.intake.body_fields import webhook_fields
from bot.intake.dispatch import has_handlers
from bot.intake.json_body import BodyRefused
from bot.intake.worker import IntakeLoad
from bot.metrics import Metrics
from bot.storage.base import MAX_BODY_BYTES, NewDelivery, Storage

log = logging.getLogger(__name__)

# Event names, actions and `owner/name` are far shorter; this only bounds what is stored.
MAX_NAME_CHARS = 255
MAX_DELIVERY_ID_CHARS = 200
_INT64_MAX = 2**63 - 1
_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


@dataclass(frozen=True, slots=True)
class Rejection:
    status: int
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Accepted:
    delivery: NewDelivery
    # The body's top-level members as intake read them (`body_fields`), for routing.
    fields: dict[str, Any]


class _Refused(Exception):
    def __init__(self, rejection: Rejection) -> None:
        super().__init__(rejection.message)
        self.rejection = rejection


def _refuse(status: int, reason: str, message: str) -> NoReturn:
    raise _Refused(Rejection(status, reason, message))


def check_request(
    headers: Mapping[str, str],
    body: bytes,
    secret: str,
    received_at: datetime,
) -> Rejection | Accepted:
    """Decide what to do with a webhook request. Pure: no I/O, headers are case-insensitive."""
    lowered = {key.lower(): value for key, value in headers.items()}
    unread = refuse_unread(lowered.get("content-encoding", ""), len(body))
    if unread is not None:
        return unread
    try:
        _verify_signature(lowered.get("x-hub-signature-256", ""), body, secret)
        content_type = lowered.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            _refuse(415, "content-type", "webhook content type must be application/json")
        event = _header_token(lowered, "X-GitHub-Event", MAX_NAME_CHARS, "event")
        delivery_id = _header_token(
            lowered, "X-GitHub-Delivery", MAX_DELIVERY_ID_CHARS, "delivery-id"
        )
        fields = _read_fields(body)
        return Accepted(
            NewDelivery(
                delivery_id=delivery_id,
                event=event,
                action=_name(fields.get("action"), "action"),
                installation_id=_installation_id(fields),
                repository=_name(
                    _member(fields, "repository").get("full_name"), "repository.full_name"
                ),
                body=body,
                received_at=received_at,
            ),
            fields,
        )
    except _Refused as refused:
        return refused.rejection


_TOO_LARGE = Rejection(413, "too-large", "payload exceeds GitHub's 25 MB limit")
_COMPRESSED = Rejection(
    415,
    "compressed",
    "webhook bodies must not be compressed (Content-Encoding): GitHub sends them as they are",
)


def refuse_unread(content_encoding: str, length: int | None) -> Rejection | None:
    """What intake refuses before reading a byte of the body: a declared `length` over the
    limit, or a compressed body (module docstring). Pure."""
    if length is not None and length > MAX_BODY_BYTES:
        return _TOO_LARGE
    codings = content_encoding.lower().split(",")
    if any(coding.strip() not in ("", "identity") for coding in codings):
        return _COMPRESSED
    return None


def _verify_signature(signature: str, body: bytes, secret: str) -> None:
    if not signature:
        _refuse(401, "unsigned", "missing X-Hub-Signature-256")
    # Only SHA-256: gidgethub also verifies a "sha1=" value here, which would let a forger
    # pick the weaker hash. Non-ASCII text would make hmac.compare_digest raise TypeError.
    if not signature.isascii() or not signature.startswith("sha256="):
        _refuse(401, "bad-signature", "signature does not match")
    try:
        validate_event(body, signature=signature, secret=secret)
    except ValidationFailure:
        _refuse(401, "bad-signature", "signature does not match")


def _header_token(lowered: Mapping[str, str], name: str, limit: int, reason: str) -> str:
    value = lowered.get(name.lower(), "").strip()
    if not value:
        _refuse(400, f"no-{reason}", f"missing {name}")
    # Header bytes that are not ASCII arrive as surrogates, which no text column stores.
    if len(value) > limit or not (value.isascii() and value.isprintable()):
        _refuse(400, f"bad-{reason}", f"{name} must be at most {limit} printable ASCII characters")
    return value


def _read_fields(body: bytes) -> dict[str, Any]:
    try:
        return webhook_fields(body)
    except BodyRefused as refused:
        _refuse(400, refused.reason, refused.message)


def _member(payload: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = payload.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        _refuse(400, "bad-field", f"{key} must be an object")
    return value


def _name(value: Any, field: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or len(value) > MAX_NAME_CHARS or _UNSTORABLE.search(value):
        _refuse(
            400,
            "bad-field",
            f"{field} must be a string of at most {MAX_NAME_CHARS} characters"
            " without NUL or unpaired surrogates",
        )
    return value


def _installation_id(payload: Mapping[str, Any]) -> int | None:
    value = _member(payload, "installation").get("id")
    if value is None:
        return None
    # bool is an int in Python; JSON's true is not an id.
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= _INT64_MAX:
        _refuse(400, "bad-field", "installation.id must be a positive integer below 2^63")
    return value


def make_webhook_handler(
    storage: Storage,
    secret: str,
    metrics: Metrics,
    wake_workers: Callable[[], None],
    clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    *,
    router: Router | None = None,
    intake: IntakeLoad | None = None,
) -> Callable[[web.Request], Any]:
    """The aiohttp handler. With `router` (the one the workers dispatch to), a delivery it
    has no callback for is stored as done and never queued; with `intake` (the workers' pool's),
    each request is counted from its body's arrival until it is answered, so the workers
    give way to it."""
    load = intake if intake is not None else IntakeLoad()

    async def handle(request: web.Request) -> web.Response:
        # Every Content-Encoding header as one list: a second one must not hide a coding.
        encoding = ",".join(request.headers.getall("Content-Encoding", ()))
        unread = refuse_unread(encoding, request.content_length)
        if unread is not None:
            return _refused_unread(unread, request, metrics)
        try:
            body = await request.read()
        except web.RequestPayloadError:
            # A body aiohttp cannot parse (a broken chunked encoding): the rest of the body
            # cannot be parsed either, so the connection is not reused.
            response = _refused(_UNREADABLE, request, metrics)
            response.force_close()
            return response
        # Counted only from here: reading waits on the sender, and anyone (the signature is
        # not checked yet) trickling a body in must not hold the workers back.
        with load.request():
            return await answer(request, body)

    async def answer(request: web.Request, body: bytes) -> web.Response:
        outcome = check_request(request.headers, body, secret, clock())
        if isinstance(outcome, Rejection):
            return _refused(outcome, request, metrics)
        delivery = outcome.delivery
        if delivery.event == "ping":
            return web.json_response({"ok": True, "zen": "pong"}, status=200)
        queued = router is None or has_handlers(router, delivery.event, outcome.fields)
        if not queued:
            delivery = replace(delivery, done=True)
        if not await storage.record_delivery(delivery):
            return await _redelivered(delivery, storage, metrics, wake_workers, clock())
        metrics.received_for(delivery.event).inc()
        if queued:
            wake_workers()
        else:
            metrics.processed_for(delivery.event).inc()
        return _stored(delivery.delivery_id)

    return handle


async def _redelivered(
    delivery: NewDelivery,
    storage: Storage,
    metrics: Metrics,
    wake_workers: Callable[[], None],
    now: datetime,
) -> web.Response:
    """A delivery id seen before. GitHub keeps the id when a person presses "Redeliver", so
    a delivery parked as failed is queued again (the conditional update re-queues only a
    failed row: a pending, processing or done one is left alone and this is a duplicate).
    The stored body stays the one first received, and this request's payload is not left
    for the worker: the worker decodes the stored body, so what runs is what was stored."""
    if not await storage.requeue_failed(delivery.delivery_id, now):
        metrics.duplicates.labels(event=delivery.event).inc()
        return web.json_response({"ok": True, "duplicate": True}, status=200)
    metrics.requeued.labels(event=delivery.event).inc()
    stored = await storage.get_delivery(delivery.delivery_id)
    log.info(
        "failed delivery re-queued on redelivery (last error: %s)",
        stored.last_error if stored is not None else None,
        extra={
            "delivery_id": delivery.delivery_id,
            "event": delivery.event,
            "installation": delivery.installation_id,
            "repository": delivery.repository,
        },
    )
    wake_workers()
    return web.json_response(
        {"ok": True, "delivery": delivery.delivery_id, "requeued": True}, status=202
    )


_UNREADABLE = Rejection(400, "bad-payload", "body could not be read as sent")


def _refused_unread(rejection: Rejection, request: web.Request, metrics: Metrics) -> web.Response:
    """A refusal with the body unread. aiohttp then discards what is left of the body for a
    few seconds at most (its lingering time), in bounded chunks, before it reuses or closes
    the connection, so a client still sending is not reset before it reads the answer."""
    response = _refused(rejection, request, metrics)
    if rejection is _COMPRESSED:
        # RFC 9110, 15.5.16: name the content codings that would be accepted.
        response.headers["Accept-Encoding"] = "identity"
        # Where aiohttp inflates bodies, one that does not inflate ends the connection
        # while the rest is discarded; the client must not send its next request on it.
        response.force_close()
    return response


def _refused(rejection: Rejection, request: web.Request, metrics: Metrics) -> web.Response:
    metrics.rejected_for(rejection.reason).inc()
    log.warning(
        "webhook refused: %s",
        rejection.message,
        extra={"delivery_id": request.headers.get("X-GitHub-Delivery")},
    )
    return _problem(rejection.status, rejection.message)


def _stored(delivery_id: str) -> web.Response:
    """The 202 for a newly stored delivery: `json_response({"ok": True, "delivery": id})`
    byte for byte (json.dumps writes a string with this very function), without serialising
    a dict for every delivery."""
    return web.json_response(
        text='{"ok": true, "delivery": ' + encode_basestring_ascii(delivery_id) + "}",
        status=202,
    )


def _problem(status: int, message: str) -> web.Response:
    return web.json_response({"ok": False, "error": message}, status=status)

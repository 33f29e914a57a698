"""A compressed webhook body is refused unread (issue 24, item 5).

GitHub never compresses a delivery, and its signature covers the inflated bytes, so a
compressed body could only be inflated before the signature holds: 24 KB of gzip made
intake hold 24 MiB, signed or not. The handler here runs under aiohttp's defaults, which
inflate request bodies as they are read (`serve` turns that off as well)."""

from __future__ import annotations

import gzip
import zlib
from datetime import UTC, datetime

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer
from aiohttp.typedefs import Handler

from bot.intake.webhooks import (
    Accepted,
    Rejection,
    check_request,
    make_webhook_handler,
    refuse_unread,
)
from bot.metrics import Metrics
from bot.storage.base import MAX_BODY_BYTES, Storage
from tests.support.webhook_helpers import SECRET, example, webhook_headers

PATH = "/api/github/webhooks"
NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
MIB = 1024 * 1024
# 24 MiB of JSON in about 24 KB of gzip.
INFLATED = b'{"pad": "' + b" " * (24 * MIB - 12) + b'"}'
BOMB = gzip.compress(INFLATED, compresslevel=9)


@pytest.mark.parametrize(
    "encoding", ["gzip", "deflate", "br", "zstd", "x-unknown", "GZip", "identity, gzip", " gzip "]
)
def test_any_content_coding_but_identity_is_refused_before_the_signature(encoding: str) -> None:
    body = example("push", "payload")
    unsigned = {k: v for k, v in webhook_headers("push", body).items() if "Signature" not in k}
    for headers in (webhook_headers("push", body), unsigned):
        outcome = check_request(headers | {"Content-Encoding": encoding}, body, SECRET, NOW)
        assert isinstance(outcome, Rejection)
        assert (outcome.status, outcome.reason) == (415, "compressed")
        assert "must not be compressed" in outcome.message


@pytest.mark.parametrize("encoding", ["", "identity", "Identity", "identity, identity"])
def test_identity_is_no_compression(encoding: str) -> None:
    assert refuse_unread(encoding, 1000) is None
    body = example("push", "payload")
    headers = webhook_headers("push", body) | {"Content-Encoding": encoding}
    assert isinstance(check_request(headers, body, SECRET, NOW), Accepted)


def test_a_declared_length_over_the_limit_is_refused_first() -> None:
    refused = refuse_unread("gzip", MAX_BODY_BYTES + 1)
    assert refused is not None and refused.status == 413
    assert refuse_unread("", MAX_BODY_BYTES) is None
    assert refuse_unread("", None) is None


def _app(storage: Storage, inflated: list[int]) -> web.Application:
    """The webhook handler, and a note of how much of each body had been inflated when it
    answered."""

    @web.middleware
    async def note(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        inflated.append(request.content.total_bytes)
        return response

    app = web.Application(middlewares=[note], client_max_size=MAX_BODY_BYTES + 1)
    app.router.add_post(PATH, make_webhook_handler(storage, SECRET, Metrics(), lambda: None))
    return app


async def test_a_gzip_bomb_is_answered_415_without_being_inflated(storage: Storage) -> None:
    inflated: list[int] = []
    async with TestClient(TestServer(_app(storage, inflated), host="127.0.0.1")) as client:
        for signed in (False, True):
            headers = webhook_headers("push", INFLATED) | {"Content-Encoding": "gzip"}
            if not signed:
                del headers["X-Hub-Signature-256"]
            response = await client.post(PATH, data=BOMB, headers=headers)
            assert response.status == 415
            assert response.headers["Accept-Encoding"] == "identity"
            assert "must not be compressed" in (await response.json())["error"]
        # Deflate and garbage alike: refused for what the headers say, not for the bytes.
        for encoding, body in (("deflate", zlib.compress(INFLATED)), ("gzip", b"not gzip")):
            headers = webhook_headers("push", body) | {"Content-Encoding": encoding}
            response = await client.post(PATH, data=body, headers=headers)
            assert response.status == 415
        # A plain delivery on the same server is still taken.
        body = example("push", "payload")
        response = await client.post(PATH, data=body, headers=webhook_headers("push", body))
        assert response.status == 202
    # aiohttp inflates a little ahead of any reader (in bounded chunks); the handler read
    # none of it, where it once read all 24 MiB before looking at the signature.
    assert len(inflated) == 5
    assert max(inflated[:4]) < 4 * MIB, inflated
    assert sum((await storage.count_deliveries()).values()) == 1

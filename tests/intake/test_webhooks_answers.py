"""What intake answers and counts for a stored delivery, pinned to the bytes: the handler
builds its 202 and looks up its counters' children without aiohttp's and prometheus_client's
general paths (`bot/intake/webhooks.py`, `bot/metrics.py`)."""

from __future__ import annotations

import json

from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from bot.intake.webhooks import make_webhook_handler
from bot.metrics import Children, Metrics
from bot.storage.base import Storage
from tests.support.webhook_helpers import example, webhook_headers

PATH = "/api/github/webhooks"


async def test_the_202_is_json_response_byte_for_byte(storage: Storage) -> None:
    """Quotes and backslashes are printable ASCII, so a delivery id may hold them: the
    body still reads back as the id, written exactly as json.dumps writes it."""
    metrics = Metrics()
    app = web.Application()
    app.router.add_post(PATH, make_webhook_handler(storage, "s3cret-value", metrics, lambda: None))
    body = example("push", "payload")
    async with TestClient(TestServer(app, host="127.0.0.1")) as client:
        for delivery_id in ("72d3162e-cc78-11e3-81ab-4c9367dc0958", 'a"b\\c/d'):
            headers = webhook_headers("push", body, secret="s3cret-value", delivery_id=delivery_id)
            response = await client.post(PATH, data=body, headers=headers)
            expected = web.json_response({"ok": True, "delivery": delivery_id}, status=202)
            assert response.status == 202
            assert await response.read() == expected.body
            assert response.headers["Content-Type"] == expected.headers["Content-Type"]
            assert json.loads(await response.read())["delivery"] == delivery_id
    sample = metrics.registry.get_sample_value
    assert sample("judge_deliveries_received_total", {"event": "push"}) == 2


def test_a_cached_child_is_the_one_the_metric_renders() -> None:
    metrics = Metrics()
    received = Children(metrics.received)
    assert received("push") is received("push") is metrics.received.labels(event="push")
    received("push").inc()
    metrics.received.labels(event="push").inc()
    received("issues").inc(3)
    sample = metrics.registry.get_sample_value
    assert sample("judge_deliveries_received_total", {"event": "push"}) == 2
    assert sample("judge_deliveries_received_total", {"event": "issues"}) == 3
    metrics.processing_seconds_for("push").observe(0.2)
    assert sample("judge_delivery_processing_seconds_count", {"event": "push"}) == 1

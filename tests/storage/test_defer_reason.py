"""A deferred delivery says what it waits for: `defer_delivery(..., error)` replaces
`last_error`, and a deferral without one keeps the last (on SQLite and PostgreSQL)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.storage.base import DeliveryStatus, NewDelivery, Storage

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def test_a_deferral_records_what_the_delivery_waits_for(storage: Storage) -> None:
    delivery = NewDelivery("d-1", "push", None, 1, "octo/hello", b"{}", T0)
    assert await storage.record_delivery(delivery)
    [claimed] = await storage.claim_deliveries("w", 1, 60, T0)
    until = T0 + timedelta(minutes=4)
    reason = "GitHub at api.github.com unavailable: GET /repos/octo/hello: refused (5 attempts)"
    assert await storage.defer_delivery(claimed.delivery_id, "w", until, reason)
    waiting = await storage.get_delivery("d-1")
    assert waiting is not None
    assert (waiting.status, waiting.attempts, waiting.last_error) == (
        DeliveryStatus.PENDING,
        0,
        reason,
    )
    [again] = await storage.claim_deliveries("w", 1, 60, until)
    assert await storage.defer_delivery(again.delivery_id, "w", until + timedelta(minutes=4))
    kept = await storage.get_delivery("d-1")
    assert kept is not None and kept.last_error == reason

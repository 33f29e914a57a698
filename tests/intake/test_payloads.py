"""The payload cache (`bot/intake/payloads.py`): intake's decoded body handed to the worker,
bounded, and only a shortcut (the dispatcher decodes the stored body when it finds nothing)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context, Dispatcher, event_from_delivery
from bot.intake.payloads import PayloadCache
from bot.storage.base import Delivery, DeliveryStatus, Storage
from tests.support.delivery_helpers import new_delivery


def payload(n: int) -> dict[str, Any]:
    return {"n": n}


# Steps: ("put", id, body bytes), ("take", id, whether it is found) or ("wait", "", seconds);
# then the ids kept. The cache holds 3 entries, 100 bytes of bodies, each for 60 seconds.
@pytest.mark.parametrize(
    ("steps", "kept"),
    [
        pytest.param([("put", "a", 10), ("take", "a", 1), ("take", "a", 0)], [], id="taken-once"),
        pytest.param([("take", "missing", 0)], [], id="unknown"),
        pytest.param(
            [("put", "a", 10), ("put", "b", 10), ("put", "c", 10), ("put", "d", 10)],
            ["a", "b", "c"],
            id="full-by-count-keeps-the-oldest",
        ),
        pytest.param(
            [("put", "a", 40), ("put", "b", 40), ("put", "c", 30), ("put", "d", 20)],
            ["a", "b", "d"],
            id="full-by-bytes-keeps-what-fits",
        ),
        pytest.param([("put", "a", 10), ("put", "big", 101)], ["a"], id="too-big-not-kept"),
        pytest.param(
            [("put", "a", 10), ("put", "b", 10), ("put", "a", 10), ("put", "c", 10)],
            ["b", "a", "c"],
            id="put-again-replaces",
        ),
        pytest.param(
            [("put", "a", 10), ("put", "b", 10), ("put", "c", 10), ("put", "a", 10)],
            ["b", "c", "a"],
            id="put-again-when-full",
        ),
        pytest.param([("put", "a", 60), ("take", "a", 1), ("put", "b", 60)], ["b"], id="frees"),
        pytest.param(
            [
                ("put", "a", 10),
                ("wait", "", 30),
                ("put", "b", 10),
                ("wait", "", 31),
                ("put", "c", 10),
            ],
            ["b", "c"],
            id="past-its-age-dropped",
        ),
        pytest.param(
            [
                ("put", "a", 10),
                ("put", "b", 10),
                ("put", "c", 10),
                ("wait", "", 61),
                ("take", "b", 1),
                ("put", "d", 10),
            ],
            ["d"],
            id="all-past-their-age",
        ),
        pytest.param(
            [("put", "a", 10), ("put", "b", 10), ("wait", "", 60), ("put", "c", 10)],
            ["a", "b", "c"],
            id="at-its-age-kept",
        ),
    ],
)
def test_cache_bounds(steps: list[tuple[str, str, int]], kept: list[str]) -> None:
    now = [0.0]
    cache = PayloadCache(
        max_entries=3, max_body_bytes=100, max_age_seconds=60, monotonic=lambda: now[0]
    )
    sizes: dict[str, int] = {}
    put: dict[str, dict[str, Any]] = {}
    for n, (op, key, value) in enumerate(steps):
        if op == "wait":
            now[0] += value
        elif op == "put":
            put[key] = payload(n)
            cache.put(key, put[key], value)
            sizes[key] = value
        else:
            taken = cache.take(key)
            assert (taken is not None) == bool(value)
            assert taken is None or taken is put[key]
    assert sorted(key for key in sizes if key in cache) == sorted(kept)
    assert len(cache) == len(kept)
    assert cache.body_bytes == sum(sizes[key] for key in kept)


def test_a_cache_of_no_entries_keeps_nothing() -> None:
    cache = PayloadCache(max_entries=0)
    cache.put("a", payload(1), 10)
    assert cache.take("a") is None and len(cache) == 0


async def test_the_worker_takes_the_payload_intake_decoded(storage: Storage) -> None:
    cache = PayloadCache()
    incoming = new_delivery("p-1", ref="refs/heads/main")
    await storage.record_delivery(incoming)
    decoded = json.loads(incoming.body)
    cache.put("p-1", decoded, len(incoming.body))
    seen: list[dict[str, Any]] = []
    router = Router()

    @router.register("push")
    async def record(event: Event, context: Context) -> None:
        seen.append(event.data)

    delivery = await storage.get_delivery("p-1")
    assert delivery is not None
    await Dispatcher(router, storage, payloads=cache)(delivery)
    assert seen == [decoded] and seen[0] is decoded, "not decoded a second time"
    assert len(cache) == 0
    # Nothing cached (a retry, another replica, a restart): the stored body, decoded.
    await Dispatcher(router, storage, payloads=cache)(delivery)
    assert seen[1] == decoded and seen[1] is not decoded


def test_an_event_is_built_from_the_body_without_a_cache() -> None:
    incoming = new_delivery("p-2", ref="x")
    stored = Delivery(
        delivery_id=incoming.delivery_id,
        event=incoming.event,
        action=incoming.action,
        installation_id=incoming.installation_id,
        repository=incoming.repository,
        body=incoming.body,
        status=DeliveryStatus.PROCESSING,
        attempts=1,
        received_at=incoming.received_at,
        next_attempt_at=incoming.received_at,
        lease_owner="w",
        lease_expires_at=None,
        last_error=None,
        finished_at=None,
    )
    event = event_from_delivery(stored)
    assert event.data == {"action": None, "ref": "x"} and event.delivery_id == "p-2"

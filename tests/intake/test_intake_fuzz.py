"""Fuzzing the real webhook endpoint: hostile signed requests never get a 5xx, and every 202 is
stored exactly once, with the routing fields the worker will read from the same body.

The requests come from `tests/support/intake_mutations.py` with a fixed seed, so a failure
names a request that can be replayed. They go out in small concurrent bursts so that good and
bad deliveries share SQLite's group commits, where one unstorable row used to fail them all.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

from bot.storage.base import Storage
from tests.support.app_helpers import make_settings, running_app
from tests.support.intake_mutations import (
    FuzzRequest,
    Mutator,
    RawResponse,
    expected_fields,
    send_raw,
)
from tests.support.storage_fixtures import StorageBackend

SEED = 20261122
REQUESTS = 400
BURST = 8
INT64_MAX = 2**63 - 1


def storable(value: Any) -> bool:
    """A value every backend keeps as is: no NUL or lone surrogate, ids in signed 64 bits."""
    if value is None or isinstance(value, bytes):
        return True
    if isinstance(value, int) and not isinstance(value, bool):
        return 0 < value <= INT64_MAX
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return "\x00" not in value
    return False


async def check_stored(store: Storage, accepted: dict[str, FuzzRequest]) -> None:
    for delivery_id, request in accepted.items():
        stored = await store.get_delivery(delivery_id)
        assert stored is not None, (delivery_id, request.label)
        actual = {
            "event": stored.event,
            "action": stored.action,
            "installation_id": stored.installation_id,
            "repository": stored.repository,
            "body": stored.body,
        }
        assert actual == expected_fields(request), request.label
        assert all(storable(value) for value in actual.values()), request.label
    # Delivery ids are unique in storage, so this many rows means each one once.
    assert sum((await store.count_deliveries()).values()) == len(accepted)


def record(
    request: FuzzRequest,
    response: RawResponse,
    accepted: dict[str, FuzzRequest],
    duplicates: list[str],
) -> None:
    assert 0 < response.status < 500, (response.status, response.body[:200], request.label)
    answer = response.json()
    if response.status == 202:
        delivery_id = answer["delivery"]
        assert delivery_id not in accepted, ("stored twice", delivery_id, request.label)
        accepted[delivery_id] = request
    elif response.status == 200 and answer.get("duplicate"):
        duplicates.append((request.header("X-GitHub-Delivery") or "").strip())


async def test_fuzzed_requests_never_get_a_5xx_and_202s_are_stored_once(
    storage_backend: StorageBackend, tmp_path: Path, github_keypair: Any
) -> None:
    settings = make_settings(github_keypair.private_pem, tmp_path)
    store = storage_backend.new()
    requests = list(Mutator(SEED).many(REQUESTS))
    statuses: Counter[int] = Counter()
    accepted: dict[str, FuzzRequest] = {}
    duplicates: list[str] = []
    async with running_app(settings, storage=store, start_workers=False) as (client, _):
        host, port = str(client.server.host), int(client.server.port or 0)
        for start in range(0, len(requests), BURST):
            burst = requests[start : start + BURST]
            responses = await asyncio.gather(
                *(send_raw(host, port, settings.webhook_path, request) for request in burst)
            )
            for request, response in zip(burst, responses, strict=True):
                statuses[response.status] += 1
                record(request, response, accepted, duplicates)
        await check_stored(store, accepted)
    assert set(duplicates) <= set(accepted)
    # The mix must reach both sides of every check, or the fuzz proves little.
    assert statuses[202] >= REQUESTS // 8 and statuses[400] >= REQUESTS // 4, statuses
    assert statuses[401] and statuses[200] and duplicates, statuses

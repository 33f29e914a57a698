"""`write_probe`: the one small write /healthz makes while writes were failing; it writes
(and rewrites) a row of its own, and raises when the store cannot write."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.storage.base import Storage
from bot.storage.keyed import PROBE_NAMESPACE

T0 = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


async def test_the_probe_rewrites_its_own_row(storage: Storage) -> None:
    await storage.write_probe(T0)
    await storage.write_probe(T0 + timedelta(seconds=5))
    rows = await storage.kv_list(PROBE_NAMESPACE)
    assert rows == [("write", {"at": (T0 + timedelta(seconds=5)).isoformat()})]


async def test_a_closed_store_cannot_write(storage: Storage) -> None:
    await storage.close()
    with pytest.raises(Exception):  # noqa: B017 - each backend's own error
        await storage.write_probe(T0)

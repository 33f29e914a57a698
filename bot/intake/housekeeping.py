"""Periodic clean-up: finished deliveries are kept for a retention period, then dropped.

The verdict records are the audit log and are never pruned; deliveries are only the raw
webhook bodies and their processing state.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import datetime, timedelta

from bot.storage.base import Storage

log = logging.getLogger(__name__)

PRUNE_EVERY_SECONDS = 3600.0


def retention_cutoff(now: datetime, retention_days: float) -> datetime | None:
    """Deliveries finished before this are dropped; None keeps everything."""
    if retention_days <= 0:
        return None
    return now - timedelta(days=retention_days)


async def prune_forever(
    storage: Storage,
    retention_days: float,
    clock: Callable[[], datetime],
    stop: asyncio.Event,
    interval: float = PRUNE_EVERY_SECONDS,
) -> None:
    while not stop.is_set():
        cutoff = retention_cutoff(clock(), retention_days)
        if cutoff is not None:
            try:
                removed = await storage.prune_deliveries(cutoff)
            except Exception:
                log.exception("pruning old deliveries failed; will try again")
            else:
                if removed:
                    log.info("pruned %d deliveries finished before %s", removed, cutoff)
        try:
            async with asyncio.timeout(interval):
                await stop.wait()
        except TimeoutError:
            pass

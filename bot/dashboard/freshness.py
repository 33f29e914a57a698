"""When a computed view may still be shown, and the cache that keeps one per filter.

A view over a large log takes seconds to compute (every record of the window is decoded
and counted), so the page shows the last one computed while it is younger than `max_age`.
A stale view that took little to compute is computed again while the person waits; one
that took long is shown as it is, with its age on the page, while a new one is computed
in the background, one computation per filter at a time.

Age is the only test of freshness: storage offers no cheap "newest record" read (on
SQLite a `since` filter ordered by sequence scans the whole table), so a new record shows
within `max_age` plus one computation.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

V = TypeVar("V")
K = TypeVar("K", bound=Hashable)


class Action(enum.Enum):
    SERVE = "serve"
    COMPUTE = "compute"
    SERVE_AND_REFRESH = "serve-and-refresh"


@dataclass(frozen=True)
class Freshness:
    max_age_seconds: float = 30.0
    wait_limit_seconds: float = 0.25
    """A stale view whose computation took at most this long is computed again in line."""
    max_entries: int = 32


DEFAULT_FRESHNESS = Freshness()


@dataclass(frozen=True)
class Cached(Generic[V]):
    value: V
    computed_at: float
    """`time.monotonic()` when the computation finished."""
    took: float


def plan(cached: Cached[V] | None, now: float, policy: Freshness) -> Action:
    """What to do for one request."""
    if cached is None:
        return Action.COMPUTE
    if now - cached.computed_at < policy.max_age_seconds:
        return Action.SERVE
    if cached.took <= policy.wait_limit_seconds:
        return Action.COMPUTE
    return Action.SERVE_AND_REFRESH


Monotonic = Callable[[], float]


class ViewCache(Generic[K, V]):
    """One cached value per key, computed by `compute`; at most `max_entries` kept."""

    def __init__(
        self,
        compute: Callable[[K], Awaitable[V]],
        policy: Freshness = DEFAULT_FRESHNESS,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        self._compute = compute
        self._policy = policy
        self._monotonic = monotonic
        self._entries: dict[K, Cached[V]] = {}
        self._running: dict[K, asyncio.Task[Cached[V]]] = {}

    def peek(self, key: K) -> Cached[V] | None:
        return self._entries.get(key)

    async def get(self, key: K) -> Cached[V]:
        cached = self._entries.get(key)
        action = plan(cached, self._monotonic(), self._policy)
        if cached is not None and action is Action.SERVE:
            return cached
        if cached is not None and action is Action.SERVE_AND_REFRESH:
            self._start(key)
            return cached
        return await asyncio.shield(self._start(key))

    def warm(self, key: K) -> None:
        """Compute `key` in the background unless it is cached or being computed: the
        first person to ask then waits for nothing."""
        if key not in self._entries:
            self._start(key)

    def _start(self, key: K) -> asyncio.Task[Cached[V]]:
        running = self._running.get(key)
        if running is None:
            running = asyncio.create_task(self._run(key))
            # Retrieved and logged here once, whether a request awaits it or nobody does.
            running.add_done_callback(_log_failure)
            self._running[key] = running
        return running

    async def _run(self, key: K) -> Cached[V]:
        started = self._monotonic()
        try:
            value = await self._compute(key)
        finally:
            del self._running[key]
        finished = self._monotonic()
        cached = Cached(value, finished, finished - started)
        self._entries.pop(key, None)
        self._entries[key] = cached
        while len(self._entries) > self._policy.max_entries:
            del self._entries[next(iter(self._entries))]
        return cached

    async def close(self) -> None:
        """Stop computations still running (the app is shutting down)."""
        running = list(self._running.values())
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)


def _log_failure(task: asyncio.Task[object]) -> None:
    if not task.cancelled() and task.exception() is not None:
        log.error("dashboard: computing a view failed", exc_info=task.exception())

"""When a computed view may still be shown, and the cache that keeps one per filter.

A view over a large log takes seconds to compute (every record of the window is decoded
and counted), so the page is built from the last one computed, brought up to date at
each request by `update`: what was appended since it was read is folded in (one small
read), so a record shows on the next page load. The whole window is read again once the
view is older than `max_age`, which picks up what folding cannot see (a record committed
long after a newer one, the window's start moving on, the open issues and merge queues):
a stale view that took little to compute is computed again while the person waits; one
that took long is shown as it is (brought up to date) while a new one is computed in the
background, one computation per filter at a time.
"""

from __future__ import annotations

import asyncio
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

log = logging.getLogger(__name__)

V = TypeVar("V")
K = TypeVar("K", bound=Hashable)


class CacheAction(enum.Enum):
    SERVE = "serve"
    COMPUTE = "compute"
    SERVE_AND_REFRESH = "serve-and-refresh"


@dataclass(frozen=True)
class Freshness:
    max_age_seconds: float = 30.0
    wait_limit_seconds: float = 0.25
    """A stale view whose computation took at most this long is computed again in line."""
    max_entries: int = 32
    kept_facts: int = 120_000
    """The most records whose facts the views keep in memory to fold new ones into
    (about 1 KB each); a view beyond it is read again when a record of it arrives."""


DEFAULT_FRESHNESS = Freshness()


@dataclass(frozen=True)
class Cached(Generic[V]):
    value: V
    computed_at: float
    """`time.monotonic()` when the computation finished."""
    took: float


def cache_action(cached: Cached[V] | None, now: float, policy: Freshness) -> CacheAction:
    """What to do for one request."""
    if cached is None:
        return CacheAction.COMPUTE
    if now - cached.computed_at < policy.max_age_seconds:
        return CacheAction.SERVE
    if cached.took <= policy.wait_limit_seconds:
        return CacheAction.COMPUTE
    return CacheAction.SERVE_AND_REFRESH


Monotonic = Callable[[], float]


Update = Callable[[K, V], Awaitable[V | None]]
"""A value brought up to date, or None when it must be computed again."""


class ViewCache(Generic[K, V]):
    """One cached value per key, computed by `compute` and brought up to date by `update`
    at each `get`; at most `max_entries` kept."""

    def __init__(
        self,
        compute: Callable[[K], Awaitable[V]],
        policy: Freshness = DEFAULT_FRESHNESS,
        monotonic: Monotonic = time.monotonic,
        update: Update[K, V] | None = None,
    ) -> None:
        self._compute = compute
        self._policy = policy
        self._monotonic = monotonic
        self._update = update
        self._entries: dict[K, Cached[V]] = {}
        self._running: dict[K, asyncio.Task[Cached[V]]] = {}
        self._updating: dict[K, asyncio.Lock] = {}

    @property
    def policy(self) -> Freshness:
        return self._policy

    def peek(self, key: K) -> Cached[V] | None:
        return self._entries.get(key)

    async def get(self, key: K) -> Cached[V]:
        cached = self._entries.get(key)
        action = cache_action(cached, self._monotonic(), self._policy)
        if cached is None or action is CacheAction.COMPUTE:
            # Perhaps joined: a computation that read the log before this request began.
            cached = await asyncio.shield(self._start(key))
        elif action is CacheAction.SERVE_AND_REFRESH:
            self._start(key)
        if self._update is None:
            return cached
        return await self._brought_up_to_date(key, cached, self._update)

    async def _brought_up_to_date(
        self, key: K, cached: Cached[V], update: Update[K, V]
    ) -> Cached[V]:
        # One update of a key at a time, each request its own: one that joined an update
        # begun before it might miss what was appended just before it.
        async with self._updating.setdefault(key, asyncio.Lock()):
            current = self._entries.get(key, cached)  # a computation may have finished
            value = await update(key, current.value)
            if value is None:
                return await self._recount(key)
            fresh = replace(current, value=value)
            if self._entries.get(key) is current:
                self._entries[key] = fresh
            return fresh

    async def _recount(self, key: K) -> Cached[V]:
        """A computation begun after this request: one already running may have read the
        log before it (its outcome is logged by `_log_failure`, not raised here)."""
        running = self._running.get(key)
        if running is not None:
            await asyncio.wait([running])
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
            oldest = next(iter(self._entries))
            del self._entries[oldest]
            self._updating.pop(oldest, None)
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

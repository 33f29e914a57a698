"""When a computed view is shown again, and the cache that computes one per filter."""

from __future__ import annotations

import asyncio
import logging

import pytest

from bot.dashboard.freshness import CacheAction, Cached, Freshness, ViewCache, cache_action

POLICY = Freshness(max_age_seconds=60, wait_limit_seconds=0.25, max_entries=2)


def cached(computed_at: float = 100.0, took: float = 0.1) -> Cached[str]:
    return Cached("view", computed_at, took)


@pytest.mark.parametrize(
    ("entry", "now", "action"),
    [
        (None, 100.0, CacheAction.COMPUTE),
        (cached(), 100.0, CacheAction.SERVE),
        (cached(), 159.9, CacheAction.SERVE),
        (cached(), 160.0, CacheAction.COMPUTE),  # too old, quick to count again
        (cached(took=0.25), 160.0, CacheAction.COMPUTE),
        (cached(took=3.0), 160.0, CacheAction.SERVE_AND_REFRESH),  # slow: shown, refreshed
        (cached(took=3.0), 120.0, CacheAction.SERVE),
    ],
)
def test_cache_action(entry: Cached[str] | None, now: float, action: CacheAction) -> None:
    assert cache_action(entry, now, POLICY) is action


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Counter:
    """A compute function that counts its calls and can be held or made to fail."""

    def __init__(self, clock: Clock, took: float = 0.0) -> None:
        self.calls: list[str] = []
        self.clock = clock
        self.took = took
        self.gate: asyncio.Event | None = None
        self.fail = False

    async def __call__(self, key: str) -> str:
        self.calls.append(key)
        if self.gate is not None:
            await self.gate.wait()
        self.clock.now += self.took
        if self.fail:
            raise RuntimeError("storage went away")
        return f"{key}#{len(self.calls)}"


async def test_a_fresh_view_is_served_and_an_old_quick_one_recounted() -> None:
    clock = Clock()
    views: ViewCache[str, str] = ViewCache(Counter(clock), POLICY, clock)
    assert (await views.get("a")).value == "a#1"
    clock.now += 59
    assert (await views.get("a")).value == "a#1"
    clock.now += 1
    assert (await views.get("a")).value == "a#2"
    assert views.peek("a") is not None and views.peek("b") is None


async def test_concurrent_requests_share_one_computation() -> None:
    clock = Clock()
    compute = Counter(clock)
    compute.gate = asyncio.Event()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock)
    waiting = [asyncio.create_task(views.get("a")) for _ in range(3)]
    await asyncio.sleep(0)
    compute.gate.set()
    results = await asyncio.gather(*waiting)
    assert {r.value for r in results} == {"a#1"}
    assert compute.calls == ["a"]


async def test_a_slow_stale_view_is_shown_while_a_new_one_is_computed() -> None:
    clock = Clock()
    compute = Counter(clock, took=3.0)
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock)
    first = await views.get("a")
    assert first.took == 3.0 and first.computed_at == 3.0
    compute.gate = asyncio.Event()
    clock.now += 60
    assert (await views.get("a")).value == "a#1"
    assert (await views.get("a")).value == "a#1"  # the refresh already running is reused
    compute.gate.set()
    for _ in range(5):
        await asyncio.sleep(0)
    assert compute.calls == ["a", "a"]
    assert (await views.get("a")).value == "a#2"


async def test_failures_reach_the_request_and_the_log(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    compute = Counter(clock, took=3.0)
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock)
    compute.fail = True
    with pytest.raises(RuntimeError, match="storage went away"):
        await views.get("a")
    compute.fail = False
    await views.get("a")
    compute.fail = True
    clock.now += 60
    kept = await views.get("a")  # stale and slow: refreshed in the background, which fails
    for _ in range(5):
        await asyncio.sleep(0)
    assert kept.value == "a#2"
    assert views.peek("a") == kept
    failures = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert len(failures) == 2
    assert all("computing a view failed" in r.getMessage() for r in failures)


async def test_the_oldest_filters_are_forgotten() -> None:
    clock = Clock()
    views: ViewCache[str, str] = ViewCache(Counter(clock), POLICY, clock)
    for key in ("a", "b", "c"):
        await views.get(key)
    assert views.peek("a") is None
    assert views.peek("b") is not None and views.peek("c") is not None
    clock.now += 60
    await views.get("b")  # recomputed: now the newest
    await views.get("d")
    assert views.peek("c") is None and views.peek("b") is not None


async def test_close_stops_running_computations() -> None:
    clock = Clock()
    compute = Counter(clock, took=3.0)
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock)
    await views.get("a")
    compute.gate = asyncio.Event()
    clock.now += 60
    await views.get("a")
    await asyncio.sleep(0)
    await views.close()
    kept = views.peek("a")
    assert kept is not None and kept.value == "a#1"
    await views.close()  # nothing left to stop


async def test_warming_computes_once_in_the_background() -> None:
    clock = Clock()
    compute = Counter(clock)
    compute.gate = asyncio.Event()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock)
    views.warm("a")
    views.warm("a")  # already being computed
    compute.gate.set()
    assert (await views.get("a")).value == "a#1"
    views.warm("a")  # cached: nothing to do
    assert compute.calls == ["a"]

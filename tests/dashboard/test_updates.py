"""The cache brings its value up to date at every request (`ViewCache`'s `update`)."""

from __future__ import annotations

import asyncio

import pytest

from bot.dashboard.freshness import Freshness, ViewCache
from tests.dashboard.test_freshness import Clock, Counter

POLICY = Freshness(max_age_seconds=60, wait_limit_seconds=0.25, max_entries=2)


class Updates:
    """Appends "+" per update; answers None (compute again) or fails on demand."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self.recount = False
        self.fail = False
        self.gate: asyncio.Event | None = None

    async def __call__(self, key: str, value: str) -> str | None:
        self.seen.append(value)
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise RuntimeError("storage went away")
        if self.recount:
            self.recount = False
            return None
        return value + "+"


async def test_every_request_brings_the_value_up_to_date() -> None:
    clock = Clock()
    compute, update = Counter(clock), Updates()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock, update)
    assert (await views.get("a")).value == "a#1+"
    assert (await views.get("a")).value == "a#1++"
    assert compute.calls == ["a"]
    kept = views.peek("a")
    assert kept is not None and kept.value == "a#1++" and kept.computed_at == 0.0


async def test_an_update_asking_for_it_has_the_value_computed_again() -> None:
    clock = Clock()
    compute, update = Counter(clock), Updates()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock, update)
    await views.get("a")
    update.recount = True
    assert (await views.get("a")).value == "a#2"
    assert compute.calls == ["a", "a"]


async def test_a_recount_starts_after_the_request_began() -> None:
    """A computation already running may have read the log before the request: the
    recount waits for it and computes once more."""
    clock = Clock()
    compute, update = Counter(clock, took=3.0), Updates()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock, update)
    await views.get("a")
    compute.gate = asyncio.Event()
    clock.now += 60  # old and slow: refreshed in the background
    update.recount = True
    asking = asyncio.create_task(views.get("a"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert compute.calls == ["a", "a"]
    compute.gate.set()
    assert (await asking).value == "a#3"


async def test_requests_update_one_at_a_time_each_its_own() -> None:
    clock = Clock()
    compute, update = Counter(clock), Updates()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock, update)
    await views.get("a")
    update.gate = asyncio.Event()
    waiting = [asyncio.create_task(views.get("a")) for _ in range(2)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert update.seen == ["a#1", "a#1+"]  # the second waits for the first
    update.gate.set()
    assert [(await w).value for w in waiting] == ["a#1++", "a#1+++"]


async def test_an_update_that_fails_reaches_the_request() -> None:
    clock = Clock()
    update = Updates()
    views: ViewCache[str, str] = ViewCache(Counter(clock), POLICY, clock, update)
    await views.get("a")
    update.fail = True
    with pytest.raises(RuntimeError, match="storage went away"):
        await views.get("a")
    kept = views.peek("a")
    assert kept is not None and kept.value == "a#1+"


async def test_an_update_does_not_replace_a_newer_computation() -> None:
    clock = Clock()
    compute, update = Counter(clock, took=3.0), Updates()
    views: ViewCache[str, str] = ViewCache(compute, POLICY, clock, update)
    await views.get("a")
    clock.now += 60
    update.gate = asyncio.Event()
    asking = asyncio.create_task(views.get("a"))  # refresh started; update waits
    for _ in range(5):
        await asyncio.sleep(0)
    assert compute.calls == ["a", "a"]
    update.gate.set()
    served = await asking
    assert served.value == "a#1++"  # this request: the old value brought up to date
    kept = views.peek("a")
    assert kept is not None and kept.value == "a#2"  # the cache: the new computation

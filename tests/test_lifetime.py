"""The background loops' shared pieces: a step taken every so often until stopped, and a
task run for a cleanup context's life, stopped and cancelled after it."""

from __future__ import annotations

import asyncio

from bot.lifetime import every, running


async def test_every_steps_at_once_then_each_interval_until_stopped() -> None:
    """The first step does not wait; a stop set while waiting ends the wait at once."""
    stop = asyncio.Event()
    steps: list[float] = []
    loop = asyncio.get_running_loop()

    async def step() -> None:
        steps.append(loop.time())
        if len(steps) == 3:
            stop.set()

    async with asyncio.timeout(5):
        await every(0.05, stop, step)
    assert len(steps) == 3
    assert steps[2] - steps[0] >= 0.09

    stop.clear()
    waiting = asyncio.create_task(every(3600, stop, step))
    await asyncio.sleep(0.01)
    assert len(steps) == 4
    stop.set()
    async with asyncio.timeout(5):
        await waiting
    assert len(steps) == 4


async def test_running_sets_stop_and_cancels_what_is_still_in_progress() -> None:
    """The loop runs while the block does; after it, `stop` is set and work in progress
    is cancelled rather than waited for."""
    seen: list[str] = []
    stops: list[asyncio.Event] = []

    async def loop(stop: asyncio.Event) -> None:
        stops.append(stop)
        seen.append("started")
        try:
            await asyncio.sleep(3600)  # work that ignores `stop`
        except asyncio.CancelledError:
            seen.append("cancelled")
            raise

    async with asyncio.timeout(5):
        async with running(loop):
            await asyncio.sleep(0.01)
            assert seen == ["started"] and not stops[0].is_set()
    assert seen == ["started", "cancelled"] and stops[0].is_set()

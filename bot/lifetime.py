"""What the process's long-running parts share, below every feature: the clock they read,
the aiohttp cleanup context that runs a background task for the app's life, and two pieces
of such a task: `running` it for the context's life, and its loop stepping `every` so often.

The judge's probes, intake's recovery and proxy, the merge queue's worker, the reports'
gauges, the dashboard and the app that composes them all name the first two, so each is
spelled once, here, where the lowest of them (the judge) may import it; the judge's probes
and the reports' gauges run their loops with the other two.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from datetime import datetime
from typing import Any

from aiohttp import web

Clock = Callable[[], datetime]
"""What time it is, in UTC; a test passes a fixed or a stepped one."""

CleanupContext = Callable[[web.Application], AsyncIterator[None]]
"""An entry of `web.Application.cleanup_ctx`: it starts its task up to its `yield`, and
stops it after, when the app shuts down."""


async def every(
    interval: float, stop: asyncio.Event, step: Callable[[], Awaitable[object]]
) -> None:
    """`step` now and then every `interval` seconds until `stop` is set; a `stop` set
    while waiting ends the wait at once."""
    while not stop.is_set():
        await step()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), interval)


@contextlib.asynccontextmanager
async def running(
    loop: Callable[[asyncio.Event], Coroutine[Any, Any, None]],
) -> AsyncIterator[None]:
    """`loop(stop)` as a task while the block runs (a cleanup context's `yield`); after
    it, `stop` is set and the task cancelled: work in progress is not waited for."""
    stop = asyncio.Event()
    task = asyncio.create_task(loop(stop))
    yield
    stop.set()
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task

"""The views as the page shows them: computed from one full read of the window, then
brought up to date at every request with what was appended since (`reading.fold`), so a
record written a moment ago is counted on the next page load. The decisions are pure
(`reading.fold`, `watermark`, `freshness.cache_action`); the reads and the counting are here.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Final

from bot.dashboard.filters import Filter
from bot.dashboard.reading import KeptFacts, ViewWindow, fold, read_window, sources_of, window_start
from bot.dashboard.view import DashboardView, build_view, repositories_of
from bot.lifetime import Clock
from bot.reports.sources import collector_paused
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.base import Storage

FOLD_LIMIT: Final = 5000
"""More new records than this at once and the window is read again: a request decodes a
bounded number on the event loop."""


@dataclass(frozen=True)
class Live:
    view: DashboardView
    window: ViewWindow
    as_of: datetime
    """When the log was last read for this view: every record committed by then is
    counted (one committed after a newer one is picked up as `watermark` says)."""


class FactBudget:
    """The windows whose facts stay in memory, least recently shown let go first, at most
    `limit` facts in all; a window alone over it keeps none."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._held: OrderedDict[Filter, KeptFacts] = OrderedDict()

    def use(self, key: Filter, kept: KeptFacts) -> None:
        """`kept` is now `key`'s window (what another held for it is no longer counted)."""
        self._held.pop(key, None)
        self._held[key] = kept
        total = sum(len(facts) for facts in self._held.values())
        while total > self._limit:
            _, oldest = self._held.popitem(last=False)
            total -= len(oldest)
            oldest.facts = None

    def __len__(self) -> int:
        return sum(len(facts) for facts in self._held.values())


class LiveViews:
    """`compute` and `update` for a `freshness.ViewCache` of `Live` views per filter."""

    def __init__(
        self,
        storage: Storage,
        thresholds: CalibrationThresholds,
        clock: Clock,
        web_url: str,
        kept_facts: int,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._storage = storage
        self._thresholds = thresholds
        self._clock = clock
        self._web_url = web_url
        self._monotonic = monotonic
        self.budget = FactBudget(kept_facts)
        self._computing = asyncio.Lock()

    async def compute(self, chosen: Filter) -> Live:
        # One view at a time, with the garbage collector at rest as `judge-bot calibrate`
        # runs: the window's decoded records are many long-lived objects the collector
        # would walk again and again (most of the time) without finding garbage.
        async with self._computing:
            with collector_paused():
                now = self._clock()
                since = window_start(chosen, now)
                window = await read_window(self._storage, chosen, since, self._monotonic())
                return await self._built(chosen, window, now)

    async def update(self, chosen: Filter, live: Live) -> Live | None:
        """`live` with the records appended since it was read; None when it must be read
        again (too many new, or its facts were let go and a new record counts)."""
        now = self._clock()
        after = live.window.mark.read_after()
        rows = await self._storage.list_verdict_facts_after(after, limit=FOLD_LIMIT)
        if len(rows) >= FOLD_LIMIT:
            return None
        self.budget.use(chosen, live.window.kept)
        since = window_start(chosen, now)
        if rows:
            # Merging into a large window is a list copy: off the event loop.
            folded = await asyncio.to_thread(
                fold, live.window, rows, chosen, since, self._monotonic()
            )
        else:
            folded = fold(live.window, rows, chosen, since, self._monotonic())
        if folded is None:
            return None
        if not folded.counted:
            names = repositories_of(folded.window.names, chosen.repository)
            view = live.view
            if names != view.repositories:
                view = replace(view, repositories=names)
            return Live(view, folded.window, now)
        async with self._computing:
            with collector_paused():
                return await self._built(chosen, folded.window, now)

    async def _built(self, chosen: Filter, window: ViewWindow, now: datetime) -> Live:
        facts = window.kept.facts
        if facts is None:
            raise RuntimeError("a window is counted only with its facts")
        sources = await sources_of(self._storage, window, chosen, self._web_url, facts)
        # Counting is seconds of pure Python over a large window: off the event loop, so
        # webhooks keep being answered meanwhile.
        view = await asyncio.to_thread(build_view, sources, chosen, self._thresholds, now)
        self.budget.use(chosen, window.kept)
        return Live(view, window, now)

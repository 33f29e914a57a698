"""What one dashboard view reads from storage, through the reports' own readers: the
window's facts of the chosen repository (of every one when none is chosen), the names
of the repositories with records in the window (the filter's choices), the full records
and links of the flagged items the page lists, the open disagreement issues and the
merge queues."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from bot.dashboard.filters import Filter
from bot.dashboard.view import FLAGGED_SHOWN, Sources, repositories_of
from bot.reports import sources
from bot.reports.facts import RecordFact, facts_of_rows, in_repository
from bot.reports.triage import flagged_facts, subject_keys
from bot.storage.base import Storage, VerdictFacts


@dataclass(frozen=True)
class FilteredWindow:
    """The window's rows reduced for one filter."""

    facts: list[RecordFact]
    unreadable: int
    listed: list[RecordFact]
    """The flagged items the page lists (the newest): the only ones whose records and
    links it reads, where a window can hold tens of thousands flagged."""


def reduce_window(rows: Sequence[VerdictFacts], chosen: Filter) -> FilteredWindow:
    facts, unreadable = facts_of_rows(in_repository(rows, chosen.repository))
    return FilteredWindow(
        facts=facts,
        unreadable=unreadable,
        listed=flagged_facts(facts, chosen.tag)[:FLAGGED_SHOWN],
    )


async def read_sources(storage: Storage, chosen: Filter, now: datetime, web_url: str) -> Sources:
    since = now - timedelta(days=chosen.days)
    rows = await storage.list_verdict_facts(since=since, repository=chosen.repository)
    # A while of pure Python over a large window: off the event loop.
    window = await asyncio.to_thread(reduce_window, rows, chosen)
    del rows
    names = await storage.list_verdict_repositories(since=since)
    return Sources(
        facts=window.facts,
        unreadable=window.unreadable,
        repositories=repositories_of(names, chosen.repository),
        details=await sources.details(storage, window.listed),
        subjects=await sources.subjects(storage, subject_keys(window.listed)),
        open_issues=await sources.open_issues(storage, chosen.repository),
        queues=await storage.list_active_merges(),
        web_url=web_url,
    )

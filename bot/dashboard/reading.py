"""What one dashboard view reads from storage, through the reports' own readers: the
window's facts of the chosen repository (of every one when none is chosen), the names
of the repositories with records in the window (the filter's choices), the full records
and links of the flagged items the page lists, the open disagreement issues and the
merge queues (the App's, what it handed to GitHub's, and their recent history).

A view is read in full once (`read_window`); after that each page load reads only the
records appended since (`Storage.list_verdict_facts_after`) and `fold`s them in, so a
record shows on the next load without the window being read again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from operator import attrgetter

from bot.dashboard.filters import Filter
from bot.dashboard.view import FLAGGED_SHOWN, Sources, repositories_of
from bot.dashboard.watermark import LOOKBACK, Mark, advance, initial_mark, unseen
from bot.merging.github_handover import HandedOver, list_handed_over
from bot.reports import sources
from bot.reports.facts import RecordFact, facts_of_rows, in_repository
from bot.reports.triage import flagged_facts, subject_keys
from bot.storage.base import MergeEntry, MergeEvent, Storage, VerdictFacts

# The merge-queue history read for repositories that only have records in the window: the
# page shows why pull requests left their queues, without reading every repository's.
HISTORY_REPOSITORIES = 20


class KeptFacts:
    """A window's facts, held while the memory they take is allowed (`live.FactBudget`
    lets go of the least recently shown); `facts` is None once let go."""

    __slots__ = ("facts",)

    def __init__(self, facts: list[RecordFact] | None) -> None:
        self.facts = facts

    def __len__(self) -> int:
        return 0 if self.facts is None else len(self.facts)


@dataclass(frozen=True)
class ViewWindow:
    """What a view has counted: the chosen repository's readable facts in the window,
    oldest first, when each unreadable record was written, the repositories with records
    in the window (as storage spells them), and the mark of what it has seen."""

    kept: KeptFacts
    unreadable: tuple[datetime, ...]
    names: tuple[str, ...]
    mark: Mark


@dataclass(frozen=True)
class Folded:
    window: ViewWindow
    counted: bool
    """Whether a new record of the view's repository and days was counted (the figures
    change); else only the mark and perhaps the repository names moved on."""


def listed_of(facts: Sequence[RecordFact], chosen: Filter) -> list[RecordFact]:
    """The flagged items the page lists (the newest): the only ones whose records and
    links it reads, where a window can hold tens of thousands flagged."""
    return flagged_facts(facts, chosen.tag)[:FLAGGED_SHOWN]


def reduce_rows(rows: Sequence[VerdictFacts]) -> tuple[list[RecordFact], tuple[datetime, ...]]:
    """The readable rows' facts, and when each unreadable one was written."""
    facts, unreadable = facts_of_rows(rows)
    if not unreadable:
        return facts, ()
    readable = {fact.seq for fact in facts}
    return facts, tuple(row.created_at for row in rows if row.seq not in readable)


def _tail(rows: Sequence[VerdictFacts], low: int) -> list[int]:
    """The numbers above `low` of rows ordered by number, read from the end."""
    found = []
    for row in reversed(rows):
        if row.seq <= low:
            break
        found.append(row.seq)
    return found


def window_of(
    rows: Sequence[VerdictFacts], names: Sequence[str], before: int, now: float
) -> ViewWindow:
    """A full read's window: `rows` are the facts of the view's repository and days,
    `before` the log's last number read just before them."""
    facts, unreadable = reduce_rows(rows)
    mark = initial_mark(before, _tail(rows, before - LOOKBACK), now)
    return ViewWindow(KeptFacts(facts), unreadable, tuple(names), mark)


async def read_window(storage: Storage, chosen: Filter, since: datetime, now: float) -> ViewWindow:
    """The whole window, read and decoded; `now` is `time.monotonic()`."""
    before = await storage.last_verdict_seq()
    rows = await storage.list_verdict_facts(since=since, repository=chosen.repository)
    names = await storage.list_verdict_repositories(since=since)
    # A while of pure Python over a large window: off the event loop.
    return await asyncio.to_thread(window_of, rows, names, before, now)


def fold(
    window: ViewWindow, rows: Sequence[VerdictFacts], chosen: Filter, since: datetime, now: float
) -> Folded | None:
    """`window` with the rows of a read from `window.mark.read_after()` counted: those not
    seen yet, of the chosen repository, written at or after `since`. The facts are kept in
    the log's order (a record committed late takes its place) and those now older than
    `since` leave. None when a row counts but the facts were let go: read the window again."""
    new = [row for row in unseen(window.mark, rows) if row.created_at >= since]
    mark = advance(window.mark, (row.seq for row in rows), now)
    names = tuple(dict.fromkeys((*window.names, *(r.repository for r in new if r.repository))))
    counted = in_repository(new, chosen.repository)
    if not counted:
        return Folded(replace(window, names=names, mark=mark), counted=False)
    held = window.kept.facts
    if held is None:
        return None
    facts, unreadable = reduce_rows(counted)
    merged = held + facts
    if facts and held and facts[0].seq < held[-1].seq:
        merged.sort(key=attrgetter("seq"))
    kept = KeptFacts([fact for fact in merged if fact.at >= since])
    still = tuple(at for at in (*window.unreadable, *unreadable) if at >= since)
    return Folded(ViewWindow(kept, still, names, mark), counted=True)


async def sources_of(
    storage: Storage, window: ViewWindow, chosen: Filter, web_url: str, facts: list[RecordFact]
) -> Sources:
    """The view's sources: `facts` (the window's, kept) and the few small reads besides."""
    listed = await asyncio.to_thread(listed_of, facts, chosen)
    queues = await storage.list_active_merges()
    handed = await list_handed_over(storage)
    return Sources(
        facts=facts,
        unreadable=len(window.unreadable),
        repositories=repositories_of(window.names, chosen.repository),
        details=await sources.details(storage, listed),
        subjects=await sources.subjects(storage, subject_keys(listed)),
        open_issues=await sources.open_issues(storage, chosen.repository),
        queues=queues,
        web_url=web_url,
        queue_history=await queue_history(storage, window.names, queues, handed, chosen),
        handed_over=handed,
    )


async def queue_history(
    storage: Storage,
    names: Iterable[str | None],
    queues: Sequence[MergeEntry],
    handed: Sequence[HandedOver],
    chosen: Filter,
) -> dict[str, list[MergeEvent]]:
    """The merge-queue moves of each repository the page may show: those with a queue
    now, those handed to GitHub's queue, and those with records in the window (capped)."""
    if chosen.repository:
        wanted = {chosen.repository.lower()}
    else:
        wanted = {entry.repository.lower() for entry in queues}
        wanted |= {record.repository.lower() for record in handed}
        wanted |= {name.lower() for name in list(names)[:HISTORY_REPOSITORIES] if name}
    return {name: await storage.list_merge_events(name) for name in sorted(wanted)}


def window_start(chosen: Filter, now: datetime) -> datetime:
    return now - timedelta(days=chosen.days)

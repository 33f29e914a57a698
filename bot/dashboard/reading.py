"""What one dashboard view reads from storage, through the reports' own readers: the
window's records of every repository (the filter's choices come from them), the links of
the flagged commits the page lists, and the open disagreement issues of the chosen
repository's changes."""

from __future__ import annotations

from datetime import datetime, timedelta

from bot.dashboard.filters import Filter
from bot.dashboard.view import FLAGGED_SHOWN, Sources
from bot.reports import sources
from bot.reports.facts import in_repository
from bot.reports.triage import is_flagged, subject_keys, task_keys
from bot.storage.base import Storage, StoredVerdict


def listed_flagged(stored: list[StoredVerdict]) -> list[StoredVerdict]:
    """The flagged records the page lists (the newest), the only ones whose links it needs:
    one keyed read per link, where a window can hold tens of thousands flagged."""
    flagged = [item for item in stored if is_flagged(item)]
    return sorted(flagged, key=lambda item: item.created_at, reverse=True)[:FLAGGED_SHOWN]


async def read_sources(storage: Storage, chosen: Filter, now: datetime) -> Sources:
    stored = await sources.window_records(storage, now - timedelta(days=chosen.days))
    mine = in_repository(stored, chosen.repository)
    return Sources(
        stored=stored,
        subjects=await sources.subjects(storage, subject_keys(listed_flagged(mine))),
        open_issues=await sources.open_issues(storage, task_keys(mine)),
    )

"""A dashboard view's window reduced in one step, for tests that build `Sources` without a
database: the same calls `bot.dashboard.reading` makes, the product's own pieces."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.dashboard.filters import Filter
from bot.dashboard.reading import listed_of
from bot.reports.facts import RecordFact, facts_of_rows, in_repository
from bot.storage.base import VerdictFacts


@dataclass(frozen=True)
class FilteredWindow:
    """The window's rows reduced for one filter."""

    facts: list[RecordFact]
    unreadable: int
    listed: list[RecordFact]
    """The flagged items the page lists (the newest): the only ones whose records and
    links it reads."""


def reduce_window(rows: Sequence[VerdictFacts], chosen: Filter) -> FilteredWindow:
    facts, unreadable = facts_of_rows(in_repository(rows, chosen.repository))
    return FilteredWindow(facts, unreadable, listed_of(facts, chosen))

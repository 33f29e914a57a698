"""Report facts straight from stored records, as storage's facts rows would give them.

Production reads the rows storage keeps (`facts_of_rows` over `Storage.list_verdict_facts`);
tests that hold `StoredVerdict`s build the same facts with these.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.reports.facts import RecordFact, fact_of_row, facts_of_rows
from bot.storage.base import StoredVerdict, VerdictFacts
from bot.storage.verdict_facts import decode_tags, fact_columns


def facts_of_stored(stored: StoredVerdict) -> VerdictFacts:
    """A stored record's facts as `Storage.list_verdict_facts` lists them, without a
    database: the same extraction, so the two never differ."""
    c = fact_columns(stored.record)
    return VerdictFacts(
        stored.seq, stored.task_id, stored.repository, stored.head_sha, stored.created_at,
        c.decision, c.label, c.mode, c.decided_by, c.overridden, c.rounds, c.calls,
        decode_tags(c.tags), c.readable,
    )  # fmt: skip


def fact_of(stored: StoredVerdict) -> RecordFact | None:
    """The facts of one stored record, as storage's facts row would give them."""
    return fact_of_row(facts_of_stored(stored))


def facts_of(stored: Sequence[StoredVerdict]) -> tuple[list[RecordFact], int]:
    """The readable records, oldest first, and how many could not be read."""
    return facts_of_rows(facts_of_stored(s) for s in stored)

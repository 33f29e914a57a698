"""The reads that tell a reader what was appended since it last looked (the dashboard's
watermark), on SQLite and PostgreSQL: the highest sequence number, and the facts after one."""

from __future__ import annotations

from bot.storage.base import Storage
from tests.reports.seeded import SEEDED, store_all


async def test_an_empty_log_starts_at_zero(storage: Storage) -> None:
    assert await storage.last_verdict_seq() == 0
    assert await storage.list_verdict_facts_after(0, limit=10) == []


async def test_the_facts_after_a_sequence_number(storage: Storage) -> None:
    await store_all(storage, SEEDED[:4])
    every = await storage.list_verdict_facts()
    seqs = [row.seq for row in every]
    assert await storage.last_verdict_seq() == seqs[-1]
    assert await storage.list_verdict_facts_after(0, limit=10) == every
    assert await storage.list_verdict_facts_after(seqs[1], limit=10) == every[2:]
    assert await storage.list_verdict_facts_after(seqs[0], limit=2) == every[1:3]
    assert await storage.list_verdict_facts_after(seqs[-1], limit=10) == []
    await store_all(storage, SEEDED[4:5])
    [new] = await storage.list_verdict_facts_after(seqs[-1], limit=10)
    assert new.seq > seqs[-1] and new.task_id == SEEDED[4].task_id
    assert await storage.last_verdict_seq() == new.seq

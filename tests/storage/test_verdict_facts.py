"""The verdict facts storage keeps beside each record, on SQLite and PostgreSQL: written
with the record, equal to what the record itself gives, backfilled for records without
them, and read by window and repository. Also the other reads the reports use: records
by sequence number, kv rows by key prefix, every active merge-queue entry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.judge.records import Tier, Verdict
from bot.reports.facts import facts_of_rows
from bot.storage.base import (
    MergeOptions,
    MergeStatus,
    NewMergeEntry,
    Storage,
    StoredVerdict,
)
from bot.storage.postgres import PostgresStorage
from bot.storage.sqlite import SqliteStorage
from bot.storage.verdict_facts import UNREADABLE, fact_columns, tags_of
from tests.reports.seeded import NOW, SEEDED, judgment, store_all
from tests.support.fact_builders import facts_of, facts_of_stored
from tests.support.storage_fixtures import StorageBackend

ODD: list[dict[str, Any]] = [
    # a model name holding NUL: stored as U+FFFD on both backends, facts alike
    judgment(
        "octo/docs",
        50,
        Verdict.REJECT,
        "NO-GO",
        [(Tier.QUICK, ("m\x00odel", "x"), Verdict.REJECT)],
        [],
        NOW,
    ).model_dump(mode="json"),
    # tags, repeated and mixed with a number
    SEEDED[0].model_dump(mode="json") | {"tags": ["a", "b", "a", 3], "task_id": "octo/docs#51"},
    # no label: unreadable, still listed (and counted as such)
    {"task_id": "broken", "final_decision": "reject"},
    # a verdict this version does not know: unreadable for the reports
    SEEDED[0].model_dump(mode="json") | {"final_decision": "maybe"},
]


async def store_odd(storage: Storage) -> None:
    for n, record in enumerate(ODD):
        await storage.append_verdict(
            task_id=str(record.get("task_id")),
            repository="Octo/Docs",
            head_sha=f"{n:040x}",
            verdict=str(record.get("final_decision")),
            created_at=NOW - timedelta(hours=n),
            record=record,
        )


async def all_facts(storage: Storage) -> list[Any]:
    return await storage.list_verdict_facts()


async def test_the_stored_facts_are_the_records_own(storage: Storage) -> None:
    """Whatever a record holds, the lean read gives what reading the record gives."""
    await store_all(storage, SEEDED)
    await store_odd(storage)
    rows = await all_facts(storage)
    stored = await storage.list_verdicts()
    assert rows == [facts_of_stored(s) for s in stored]
    assert facts_of_rows(rows) == facts_of(stored)
    facts, unreadable = facts_of_rows(rows)
    assert (len(facts), unreadable) == (len(SEEDED) + 2, 2)
    assert facts[-2].rounds[0].model == "m\ufffdodel"
    assert facts[-1].tags == ("a", "b")


async def test_window_and_repository(storage: Storage) -> None:
    await store_all(storage, SEEDED)
    await store_odd(storage)
    since = NOW - timedelta(days=3)
    window = await storage.list_verdict_facts(since=since)
    assert window and all(row.created_at >= since for row in window)
    assert [r.seq for r in window] == sorted(r.seq for r in window)
    docs = await storage.list_verdict_facts(repository="OCTO/docs")
    assert {r.repository for r in docs} == {"octo/docs", "Octo/Docs"}
    both = await storage.list_verdict_facts(since=since, repository="octo/api")
    assert {r.task_id for r in both} == {"octo/api#1", "octo/api#2", "octo/api#3"}
    assert await storage.list_verdict_facts(repository="nobody/here") == []


async def test_repository_names_of_a_window(storage: Storage) -> None:
    """One spelling per name compared without case: the oldest record's."""
    await store_all(storage, SEEDED)
    await store_odd(storage)
    assert sorted(await storage.list_verdict_repositories()) == ["octo/api", "octo/docs"]
    recent = await storage.list_verdict_repositories(since=NOW - timedelta(days=1))
    assert sorted(recent) == ["Octo/Docs", "octo/api"]  # the odd records, spelled so, are newer
    assert await storage.list_verdict_repositories(since=NOW + timedelta(days=1)) == []


async def test_records_without_facts_get_them_when_the_store_opens(
    storage_backend: StorageBackend,
) -> None:
    """As after migration 4, or after an older version appended records: the facts are
    written from the stored records, the same as at append time."""
    store = await storage_backend.opened()
    await store_all(store, SEEDED)
    await store_odd(store)
    before = await all_facts(store)
    await _drop_facts(store)
    reopened = await storage_backend.opened()
    assert await all_facts(reopened) == before


async def _drop_facts(store: Storage) -> None:
    if isinstance(store, PostgresStorage):
        await store._db.execute("DROP TABLE verdict_facts")
        await store._db.execute("DELETE FROM schema_version WHERE version = 4")
    else:
        assert isinstance(store, SqliteStorage)
        await store._execute("DROP TABLE verdict_facts")
        await store._execute("DELETE FROM schema_version WHERE version = 4")


async def test_the_backfill_reads_in_batches(
    storage_backend: StorageBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await storage_backend.opened()
    await store_all(store, SEEDED)
    before = await all_facts(store)
    await _drop_facts(store)
    monkeypatch.setattr("bot.storage.sqlite_facts.FILL_BATCH", 4)
    monkeypatch.setattr("bot.storage.postgres_facts.FILL_BATCH", 4)
    assert await all_facts(await storage_backend.opened()) == before


async def test_postgres_fills_a_rolling_upgrades_gap_when_read(
    storage_backend: StorageBackend,
) -> None:
    """A replica of an older version appends records without facts while this one runs."""
    store = await storage_backend.opened()
    if not isinstance(store, PostgresStorage):
        pytest.skip("SQLite is one process per file: an older writer means a restart")
    await store_all(store, SEEDED)
    before = await all_facts(store)
    await store._db.execute("DELETE FROM verdict_facts WHERE seq % 2 = 0")
    assert await store.list_verdict_facts(since=NOW - timedelta(days=14)) == [
        r for r in before if r.created_at >= NOW - timedelta(days=14)
    ]
    assert await all_facts(store) == before


async def test_records_by_sequence_number(storage: Storage) -> None:
    await store_all(storage, SEEDED)
    seqs = [s.seq for s in await storage.list_verdicts()]
    found = await storage.get_verdicts([seqs[3], seqs[0], seqs[3], 999_999])
    assert [s.seq for s in found] == [seqs[0], seqs[3]]
    assert found[1].record["task_id"] == SEEDED[3].task_id
    assert await storage.get_verdicts([]) == []


async def test_many_records_by_sequence_number_on_sqlite(tmp_path: Any) -> None:
    store = SqliteStorage(str(tmp_path / "many.db"))
    await store.open()
    try:
        record = SEEDED[0].model_dump(mode="json")
        for n in range(1203):
            await store.append_verdict(task_id=f"t{n}", repository=None, head_sha=None,
                                       verdict="accept", created_at=NOW, record=record)  # fmt: skip
        found = await store.get_verdicts(range(1, 1204))
        assert [s.seq for s in found] == list(range(1, 1204))
    finally:
        await store.close()


async def test_kv_rows_by_key_prefix(storage: Storage) -> None:
    for key in ("a|2", "a|1", "a%|x", "a_|y", "b|1", "é|1", "A|3"):
        await storage.kv_put("ns", key, {"key": key})
    await storage.kv_put("other", "a|9", {"key": "other"})
    assert [k for k, _ in await storage.kv_list("ns", "a|")] == ["a|1", "a|2"]
    assert [k for k, _ in await storage.kv_list("ns", "a%")] == ["a%|x"]
    assert [k for k, _ in await storage.kv_list("ns", "a_")] == ["a_|y"]
    assert [k for k, _ in await storage.kv_list("ns", "é")] == ["é|1"]
    everything = await storage.kv_list("ns")
    assert [k for k, _ in everything] == ["A|3", "a%|x", "a_|y", "a|1", "a|2", "b|1", "é|1"]
    assert everything[0][1] == {"key": "A|3"}
    assert await storage.kv_list("none") == []


def new_entry(repository: str, base: str, pull: int) -> NewMergeEntry:
    return NewMergeEntry(repository=repository, base_branch=base, pull_number=pull,
                         installation_id=7, judged_sha="a" * 40, method="squash",
                         options=MergeOptions())  # fmt: skip


async def test_every_active_merge_entry(storage: Storage) -> None:
    at = datetime(2026, 3, 1, tzinfo=UTC)
    for repository, base, pull in (("octo/docs", "main", 4), ("Octo/api", "main", 1),
                                   ("octo/docs", "main", 2), ("octo/docs", "dev", 3),
                                   ("octo/docs", "main", 5)):  # fmt: skip
        await storage.enqueue_merge(new_entry(repository, base, pull), actor="a", reason="r",
                                    now=at)  # fmt: skip
    await storage.leave_merge_queue("octo/docs", 2, status=MergeStatus.DROPPED, actor="a",
                                    reason="closed", now=at)  # fmt: skip
    active = await storage.list_active_merges()
    assert [(e.repository, e.base_branch, e.pull_number) for e in active] == [
        ("Octo/api", "main", 1),
        ("octo/docs", "dev", 3),
        ("octo/docs", "main", 4),
        ("octo/docs", "main", 5),
    ]


@pytest.mark.parametrize(
    "record",
    [
        {},
        {"go_no_go": "GO"},
        {"go_no_go": 1, "final_decision": "accept"},
        {"go_no_go": "GO", "final_decision": "accept", "decided_by": 5},
        {"go_no_go": "GO", "final_decision": "accept", "previous_rounds": [{"round": "x"}]},
        {"go_no_go": "GO", "final_decision": "accept", "calls": [{"tier": "quick"}]},
        {
            "go_no_go": "GO",
            "final_decision": "accept",
            "round": 1,
            "judge_tier": "quick",
            "verdict": ["accept"],
        },
    ],
)
def test_records_missing_what_reports_need_are_unreadable(record: dict[str, Any]) -> None:
    assert fact_columns(record) == UNREADABLE


def test_compact_columns() -> None:
    record = SEEDED[4].model_dump(mode="json") | {"tags": ["x"]}  # a4: quick then deep
    columns = fact_columns(record)
    assert columns.rounds == (
        '[["quick","opencode/gpt-5-nano","openai","improve"],'
        '["deep","opencode/kimi-k2.5-free","kimi","improve"]]'
    )
    assert columns.calls == (
        '[["quick","opencode/gpt-5-nano",1200.0,500,1,true],'
        '["deep","opencode/kimi-k2.5-free",4800.0,1500,1,true]]'
    )
    assert (columns.decision, columns.label, columns.mode) == ("improve", "NO-GO", "deep")
    assert (columns.decided_by, columns.overridden, columns.tags) == (None, False, '["x"]')
    top_level_only = {"go_no_go": "GO", "final_decision": "accept", "round": 1,
                      "judge_tier": "quick", "model": "m", "verdict": "accept"}  # fmt: skip
    assert fact_columns(top_level_only).rounds == '[["quick","m",null,"accept"]]'


@pytest.mark.parametrize(
    ("tags", "stored"),
    [(None, None), ("x", None), ([], None), ([1, None], None), (["b", "a", "b"], '["b","a"]')],
)
def test_tags(tags: object, stored: str | None) -> None:
    assert tags_of({"tags": tags}) == stored


async def test_a_closed_sqlite_store_refuses_the_read(tmp_path: Any) -> None:
    store = SqliteStorage(str(tmp_path / "closed.db"))
    with pytest.raises(RuntimeError, match="open"):
        await store.list_verdict_facts()


def test_a_stored_verdict_without_a_database() -> None:
    stored = StoredVerdict(1, "t", None, None, "accept", NOW, SEEDED[0].model_dump(mode="json"))
    row = facts_of_stored(stored)
    assert (row.seq, row.task_id, row.created_at, row.readable) == (1, "t", NOW, True)

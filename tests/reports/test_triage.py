"""The morning triage: distribution, flagged items with their links and overrides, open
disagreement issues; its table and JSON are golden-tested."""

from __future__ import annotations

import json
import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from bot.disagreement.sync import BY_TASK
from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.judging.state import ShaState, save_state, state_key
from bot.reports import sources
from bot.reports.triage import (
    UNREAD_RECORD,
    OpenIssue,
    Subject,
    Triage,
    flagged_facts,
    subject_keys,
    triage,
)
from bot.reports.triage_view import render_triage, triage_json
from bot.storage.base import Storage, StoredVerdict
from tests.reports.seeded import (
    NOW,
    QUICK,
    SEEDED,
    call,
    day,
    judgment,
    sha,
    store_all,
    stored_of,
)
from tests.support.fact_builders import facts_of
from tests.support.verdict_builders import FAKE_SECRETS, make_finding

GOLDEN = Path(__file__).parent / "golden"
PAGE = "https://github.com/octo/docs"


def golden(name: str, text: str) -> None:
    """Compare with the golden file; JUDGE_UPDATE_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    if os.environ.get("JUDGE_UPDATE_GOLDEN") == "1":
        path.write_text(text + "\n", encoding="utf-8")
    assert text + "\n" == path.read_text(encoding="utf-8")


def report_of(stored: list[StoredVerdict], **options: Any) -> Triage:
    """The report as the command makes it: facts, and every flagged item's full record."""
    facts, unreadable = facts_of(stored)
    details = {s.seq: s for s in stored}
    return triage(facts, details=details, unreadable=unreadable, **options)


def seeded_triage(days: int = 14, repository: str | None = None) -> Triage:
    extra = judgment(
        "octo/docs", 7, Verdict.REJECT, "NO-GO", [(Tier.QUICK, QUICK, Verdict.REJECT)],
        [call(Tier.QUICK, QUICK, 900, 300)], day(0.2),
        mechanical_findings=[make_finding()],
        reasoning="Leaks " + FAKE_SECRETS["openai"] + "\x1b[31m in red",
        improvements=["remove the key", "cite a source", "fix the heading"],
        files=["docs/a.md", "docs/b.md"],
        reason="a hard mechanical finding",
    )  # fmt: skip
    stored = stored_of([*SEEDED, extra])
    return report_of(
        [s for s in stored if s.created_at >= NOW - timedelta(days=days)],
        now=NOW,
        days=days,
        repository=repository,
        subjects={
            ("octo/docs", sha(3)): Subject(7, f"{PAGE}/runs/3"),
            ("octo/docs", sha(7)): Subject(None, None),
        },
        open_issues=[
            OpenIssue("octo/docs", "octo/docs#4", 12, f"{PAGE}/issues/12"),
            OpenIssue("octo/api", "octo/api#2", 3, None),
        ],
    )


def test_distribution_and_flagged_items() -> None:
    report = seeded_triage()
    assert report.judgments == 10
    assert report.decisions == {
        "accept": 5, "improve": 1, "reject": 2, "escalate": 1, "undetermined": 1,
    }  # fmt: skip
    assert report.labels == {"GO": 5, "NO-GO": 4, "UNDETERMINED": 1}
    flagged = report.flagged
    assert [f.task_id for f in flagged] == [
        "octo/docs#7", "octo/api#2", "octo/docs#6", "octo/docs#4", "octo/docs#3",
    ]  # fmt: skip
    by_task = {f.task_id: f for f in flagged}
    assert by_task["octo/docs#3"].override == "accept by @alice"
    assert by_task["octo/docs#3"].link == f"{PAGE}/runs/3"
    assert by_task["octo/docs#3"].pull_number == 7
    assert by_task["octo/api#2"].override is None  # carol cancelled her override
    assert by_task["octo/docs#4"].link is None


def test_secrets_never_reach_either_output() -> None:
    report = seeded_triage()
    for text in (render_triage(report, 100), triage_json(report)):
        assert "proj-AbCdEf" not in text
        assert "\x1b" not in text


def test_triage_table_is_golden() -> None:
    golden("triage.txt", render_triage(seeded_triage(), 100))


def test_triage_table_fits_a_narrow_terminal() -> None:
    text = render_triage(seeded_triage(), 60)
    golden("triage-narrow.txt", text)
    flagged_rows = text.split("flagged (5):\n", 1)[1].split("\n\n", 1)[0].splitlines()
    assert all(len(line) <= 60 for line in flagged_rows if line.startswith("    "))


def test_triage_json_is_golden() -> None:
    text = triage_json(seeded_triage())
    golden("triage.json", text)
    assert json.loads(text)["flagged"][0]["findings"][0] == "reason: a hard mechanical finding"


def test_one_repository_without_issues_or_flags() -> None:
    report = report_of(stored_of(SEEDED[8:13]), now=NOW, days=7, repository="octo/api")
    text = render_triage(report, None)
    assert "flagged (1):" in text
    assert "open disagreement issues: none" in text
    empty = triage([], now=NOW, days=7)
    assert "flagged: none" in render_triage(empty, None)


def test_unreadable_records_are_counted() -> None:
    stored = stored_of(SEEDED[:1])
    broken = stored_of(SEEDED[:1])[0]
    broken.record.pop("go_no_go")
    report = report_of([*stored, broken], now=NOW, days=14)
    assert report.unreadable == 1 and report.judgments == 1
    assert "left out: 1 record that could not be read" in render_triage(report, None)


def test_a_flagged_item_whose_record_cannot_be_read_keeps_its_verdict() -> None:
    """The facts say it was rejected; the full record fails validation (no rubric)."""
    [stored] = stored_of(SEEDED[2:3])
    stored.record.pop("rubric")
    [item] = report_of([stored], now=NOW, days=14).flagged
    assert (item.verdict, item.go_no_go, item.task_id) == ("reject", "NO-GO", "octo/docs#3")
    assert (item.files, item.scores, item.findings) == ([], {}, [UNREAD_RECORD])
    facts, _ = facts_of([stored])
    [unlisted] = triage(facts, now=NOW, days=14).flagged  # no record read at all
    assert unlisted.findings == [UNREAD_RECORD]


def test_a_local_flagged_item_without_reasoning() -> None:
    """The pre-push hook's records have no repository or sha: the task names the change."""
    local = judgment(None, 60, Verdict.IMPROVE, "NO-GO", [], [], day(1), reasoning="",
                     head_sha=None)  # fmt: skip
    [item] = report_of(stored_of([local]), now=NOW, days=14).flagged
    assert item.findings == [] and item.head_sha is None
    assert "local#60" in render_triage(report_of(stored_of([local]), now=NOW, days=14), None)


def test_keys_to_look_up() -> None:
    facts, _ = facts_of(stored_of(SEEDED))
    assert (("octo/docs", sha(3))) in subject_keys(facts)
    assert (("octo/docs", sha(1))) not in subject_keys(facts)  # accepted


def rejected(number: int, days_back: float) -> VerdictRecord:
    return judgment("octo/docs", number, Verdict.REJECT, "NO-GO",
                    [(Tier.QUICK, QUICK, Verdict.REJECT)], [], day(days_back))  # fmt: skip


def with_tags(record: VerdictRecord, tags: object) -> StoredVerdict:
    [stored] = stored_of([record])
    stored.record["tags"] = tags
    return stored


def test_a_tag_narrows_the_flagged_items_and_tags_are_shown() -> None:
    security = with_tags(rejected(20, 1), ["security", "docs", "security", 7])
    other = with_tags(rejected(21, 2), ["docs"])
    untagged = with_tags(rejected(22, 3), "security")  # not a list: no tags
    stored = [security, other, untagged]
    report = report_of(stored, now=NOW, days=14, tag="security")
    assert [f.task_id for f in report.flagged] == ["octo/docs#20"]
    assert report.flagged[0].tags == ["security", "docs"]
    assert (report.flagged_total, report.judgments) == (1, 3)
    text = render_triage(report, None)
    assert "flagged items tagged 'security'" in text and "    tags: security, docs" in text
    document = json.loads(triage_json(report))
    assert document["tag"] == "security"
    assert document["flagged"][0]["tags"] == ["security", "docs"]
    everything = report_of(stored, now=NOW, days=14)
    assert [f.tags for f in everything.flagged] == [["security", "docs"], ["docs"], []]
    facts, _ = facts_of(stored)
    assert [f.task_id for f in flagged_facts(facts, "docs")] == ["octo/docs#20", "octo/docs#21"]


@pytest.fixture
async def remembered(storage: Storage) -> Storage:
    """The judging state of two flagged commits and one open and one closed issue."""
    await store_all(storage, SEEDED)
    sha3, sha6 = sha(3), sha(6)
    pull = {"html_url": PAGE, "pull_number": 7, "repository": "octo/docs"}
    await save_state(
        storage,
        state_key("octo/docs", sha3),
        ShaState(target=pull, check_run_url=f"{PAGE}/runs/3"),
    )
    await save_state(
        storage,
        state_key("octo/docs", sha6),
        ShaState(target={"html_url": PAGE, "pull_number": None}),
    )
    await storage.kv_put(BY_TASK, "octo/docs|octo/docs#3", {"number": 12, "state": "open",
                                                             "last_sha": sha3})  # fmt: skip
    await storage.kv_put(BY_TASK, "octo/api|octo/api#2", {"number": 3, "state": "closed"})
    await storage.kv_put(BY_TASK, "octo/docs|octo/docs#4", {"number": 5, "state": "open"})
    # judged long before any window, still open: listed all the same
    await storage.kv_put(BY_TASK, "octo/old|octo/old#1", {"number": 2, "state": "open"})
    await storage.kv_put(BY_TASK, "no separator", {"number": 9, "state": "open"})
    await storage.kv_put("judged-sha", state_key("octo/docs", sha(4)), {"version": "x"})
    return storage


async def test_links_and_issues_come_from_storage(remembered: Storage) -> None:
    facts, unreadable = await sources.window_facts(remembered, NOW - timedelta(days=14))
    assert (len(facts), unreadable) == (13, 0)
    found = await sources.subjects(remembered, subject_keys(facts))
    assert found == {
        ("octo/docs", sha(3)): Subject(7, f"{PAGE}/runs/3"),
        ("octo/docs", sha(6)): Subject(None, f"{PAGE}/commit/{sha(6)}"),
    }
    issues = await sources.open_issues(remembered)
    assert issues == [
        OpenIssue("octo/docs", "octo/docs#3", 12, f"{PAGE}/issues/12"),
        OpenIssue("octo/docs", "octo/docs#4", 5, None),
        OpenIssue("octo/old", "octo/old#1", 2, None),
    ]
    assert await sources.open_issues(remembered, "Octo/Docs") == [
        OpenIssue("Octo/Docs", "octo/docs#3", 12, f"{PAGE}/issues/12"),
        OpenIssue("Octo/Docs", "octo/docs#4", 5, None),
    ]
    flagged = flagged_facts(facts)
    details = await sources.details(remembered, flagged)
    assert sorted(details) == sorted(f.seq for f in flagged)
    assert details[flagged[0].seq].task_id == flagged[0].task_id

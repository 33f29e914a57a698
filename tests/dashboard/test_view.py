"""One filter's view: the reports' numbers, shaped for the page."""

from __future__ import annotations

from datetime import timedelta

import pytest

from bot.dashboard.filters import Filter
from bot.dashboard.view import (
    FLAGGED_SHOWN,
    Sources,
    build_view,
    flagged_tags,
    repositories_of,
    web_link,
)
from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.reports.kpis import calibrate
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage import OpenIssue, Subject, SubjectKey, triage
from bot.storage.base import StoredVerdict
from tests.reports.seeded import NOW, QUICK, SEEDED, call, day, judgment, sha, stored_of
from tests.support.dashboard_window import reduce_window
from tests.support.fact_builders import facts_of, facts_of_stored

LIMITS = CalibrationThresholds(_env_file=None)


def window(days: int = 14) -> list[StoredVerdict]:
    return [s for s in stored_of(SEEDED) if s.created_at >= NOW - timedelta(days=days)]


def sources_of(
    stored: list[StoredVerdict],
    chosen: Filter,
    subjects: dict[SubjectKey, Subject] | None = None,
    issues: list[OpenIssue] | None = None,
) -> Sources:
    """What `read_sources` would hand over for these records, without a database."""
    reduced = reduce_window([facts_of_stored(s) for s in stored], chosen)
    return Sources(
        facts=reduced.facts,
        unreadable=reduced.unreadable,
        repositories=repositories_of((s.repository for s in stored), chosen.repository),
        details={s.seq: s for s in stored},
        subjects=subjects or {},
        open_issues=issues or [],
    )


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "data:text/html,x", "//evil.example", "ftp://x", "", None],
)
def test_only_web_addresses_become_links(url: str | None) -> None:
    assert web_link(url) is None


def test_web_addresses_stay() -> None:
    assert web_link("https://github.com/o/r/pull/1") == "https://github.com/o/r/pull/1"
    assert web_link("http://ghe.local/o/r") == "http://ghe.local/o/r"


def test_the_view_holds_the_reports_numbers() -> None:
    stored = window()
    issue = OpenIssue("octo/docs", "octo/docs#3", 12, "https://github.com/octo/docs/issues/12")
    subjects = {("octo/docs", sha(3)): Subject(7, "javascript:alert(1)")}
    chosen = Filter(None, 14)
    view = build_view(sources_of(stored, chosen, subjects, [issue]), chosen, LIMITS, NOW)
    facts, _ = facts_of(stored)
    report = triage(facts, now=NOW, days=14, subjects=subjects, open_issues=[issue])
    figures = calibrate(facts, LIMITS, now=NOW, days=14).overall.figures
    assert view.report.judgments == report.judgments == view.chart.total == 9
    assert view.report.decisions == report.decisions
    assert view.flagged_total == len(report.flagged) == 4
    assert view.overall.judgments == figures.judgments
    assert view.overall.go == "55.6% 5/9"
    assert view.overall.ready is False and view.overall.reasons
    assert [s.scope for s in view.scopes] == ["octo/api", "octo/docs"]
    assert [m.name for m in view.models] == ["opencode/gpt-5-nano", "opencode/kimi-k2.5-free"]
    assert view.models[0].availability == "70.0% 7/10"
    rejected = next(row for row in view.flagged if row.verdict == "reject")
    assert rejected.change == f"#7 {sha(3)[:7]}" and rejected.link is None
    assert rejected.override == "accept by @alice"
    assert view.issues[0].link == issue.url and view.issues[0].number == 12
    assert view.repositories == ["octo/api", "octo/docs"]
    assert (view.since, view.until) == (NOW - timedelta(days=14), NOW)


def test_one_repository() -> None:
    chosen = Filter("OCTO/API", 14)
    view = build_view(sources_of(window(), chosen), chosen, LIMITS, NOW)
    assert view.report.judgments == 3
    assert view.overall.judgments == 3
    assert view.flagged_total == 1 and view.flagged[0].repository == "octo/api"
    assert view.repositories == ["octo/api", "octo/docs"]


def test_only_the_newest_flagged_rows_are_kept() -> None:
    many = [
        judgment("octo/docs", 100 + n, Verdict.REJECT, "NO-GO",
                 [(Tier.QUICK, QUICK, Verdict.REJECT)], [call(Tier.QUICK, QUICK, 900, 10)],
                 day(1 + n / 100))
        for n in range(FLAGGED_SHOWN + 5)
    ]  # fmt: skip
    chosen = Filter(None, 14)
    view = build_view(sources_of(stored_of(many), chosen), chosen, LIMITS, NOW)
    assert view.flagged_total == FLAGGED_SHOWN + 5
    assert len(view.flagged) == len(view.report.flagged) == FLAGGED_SHOWN
    assert view.flagged[0].when == "2026-02-28 12:00"


def test_repositories_offered() -> None:
    names = ["b/x", "A/y", "a/Y", None]
    assert repositories_of(names, None) == ["A/y", "b/x"]
    assert repositories_of(names, "c/z") == ["A/y", "b/x", "c/z"]
    assert repositories_of([], "B/X") == ["B/X"]


def test_records_and_links_are_read_for_the_listed_flagged_only() -> None:
    many = [
        judgment("octo/docs", 100 + n, Verdict.REJECT, "NO-GO",
                 [(Tier.QUICK, QUICK, Verdict.REJECT)], [], day(1 + n / 100))
        for n in range(FLAGGED_SHOWN + 5)
    ]  # fmt: skip
    accepted = judgment("octo/docs", 1, Verdict.ACCEPT, "GO", [], [], day(0.1))
    rows = [facts_of_stored(s) for s in stored_of([*many, accepted])]
    listed = reduce_window(rows, Filter(None, 14)).listed
    assert [item.task_id for item in listed] == [r.task_id for r in many[:FLAGGED_SHOWN]]


def tagged(number: int, tags: list[str], decision: Verdict = Verdict.REJECT) -> StoredVerdict:
    record: VerdictRecord = judgment("octo/docs", number, decision, "NO-GO", [], [], day(1))
    [stored] = stored_of([record])
    stored.record["tags"] = tags
    return stored


def test_the_tag_filter_lists_only_tagged_flagged_items() -> None:
    stored = [tagged(1, ["security"]), tagged(2, ["docs"]), tagged(3, [], Verdict.ACCEPT)]
    stored[2].record["tags"] = ["accepted-only"]
    chosen = Filter(None, 14, "security")
    view = build_view(sources_of(stored, chosen), chosen, LIMITS, NOW)
    assert [row.tags for row in view.flagged] == ["security"]
    assert view.flagged_total == 1 and view.report.judgments == 3
    assert view.tags == ["docs", "security"]  # an accepted judgment's tags are no choice
    facts, _ = facts_of(stored)
    assert flagged_tags(facts, "gone") == ["docs", "gone", "security"]

"""One filter's dashboard, computed from the window's records with the reports' own
functions (`triage`, `calibrate`), so every number equals what `judge-bot triage` and
`judge-bot calibrate` print for the same repository and days. Pure.

Figures are formatted here, once, with the reports' formatters: the template only places
strings.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from bot.dashboard.chart import Chart, layout, per_day
from bot.dashboard.filters import Filter
from bot.reports.calibration_view import percent, seconds, with_counts
from bot.reports.facts import facts_of, in_repository
from bot.reports.kpis import Calibration, ScopeReport, calibrate
from bot.reports.model_kpis import GroupFigures
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage import Flagged, OpenIssue, Subject, SubjectKey, Triage, triage
from bot.reports.triage_view import change_of, when
from bot.storage.base import StoredVerdict

FLAGGED_SHOWN = 50


def web_link(url: str | None) -> str | None:
    """Only http(s) addresses become links: a stored value never runs script on click."""
    return url if url is not None and url.startswith(("https://", "http://")) else None


@dataclass(frozen=True)
class FlaggedRow:
    when: str
    repository: str
    change: str
    verdict: str
    label: str
    override: str
    finding: str
    link: str | None


@dataclass(frozen=True)
class IssueRow:
    repository: str
    task: str
    number: int
    link: str | None


@dataclass(frozen=True)
class ScopeRow:
    scope: str
    judgments: int
    false_positives: str
    false_negatives: str
    go: str
    undetermined: str
    availability: str
    latency_median: str
    latency_p95: str
    ready: bool
    reasons: list[str]


@dataclass(frozen=True)
class ModelRow:
    name: str
    rounds: int
    failed: str
    availability: str
    latency_median: str
    latency_p95: str


@dataclass(frozen=True)
class Sources:
    """What storage held for the window: every repository's records (oldest first), the
    flagged commits' links and the open disagreement issues of the filtered records."""

    stored: Sequence[StoredVerdict]
    subjects: Mapping[SubjectKey, Subject]
    open_issues: Sequence[OpenIssue]


@dataclass(frozen=True)
class DashboardView:
    filter: Filter
    since: datetime
    until: datetime
    repositories: list[str]
    report: Triage
    calibration: Calibration
    chart: Chart
    flagged: list[FlaggedRow]
    """The newest `FLAGGED_SHOWN`; `flagged_total` counts them all."""
    flagged_total: int
    issues: list[IssueRow]
    overall: ScopeRow
    scopes: list[ScopeRow]
    models: list[ModelRow]


def build_view(
    sources: Sources,
    chosen: Filter,
    thresholds: CalibrationThresholds,
    now: datetime,
) -> DashboardView:
    since = now - timedelta(days=chosen.days)
    report = triage(
        sources.stored,
        now=now,
        days=chosen.days,
        repository=chosen.repository,
        subjects=sources.subjects,
        open_issues=sources.open_issues,
    )
    facts, unreadable = facts_of(in_repository(sources.stored, chosen.repository))
    calibration = calibrate(
        facts,
        thresholds,
        now=now,
        days=chosen.days,
        repository=chosen.repository,
        unreadable=unreadable,
    )
    return DashboardView(
        filter=chosen,
        since=since,
        until=now,
        repositories=repositories_of(sources.stored, chosen.repository),
        # Only the rows shown are kept: a cached view must not hold every flagged record.
        report=replace(report, flagged=report.flagged[:FLAGGED_SHOWN]),
        calibration=calibration,
        chart=layout(per_day(facts, since, now)),
        flagged=[flagged_row(item) for item in report.flagged[:FLAGGED_SHOWN]],
        flagged_total=len(report.flagged),
        issues=[
            IssueRow(i.repository, i.task, i.number, web_link(i.url)) for i in report.open_issues
        ],
        overall=scope_row(calibration.overall),
        scopes=[scope_row(s) for s in calibration.repositories],
        models=[model_row(m) for m in calibration.models],
    )


def repositories_of(stored: Sequence[StoredVerdict], chosen: str | None) -> list[str]:
    """The filter's choices: every repository with records in the window, and the chosen
    one even without any."""
    names: dict[str, str] = {}
    for item in stored:
        if item.repository:
            names.setdefault(item.repository.lower(), item.repository)
    if chosen is not None:
        names.setdefault(chosen.lower(), chosen)
    return [names[key] for key in sorted(names)]


def flagged_row(item: Flagged) -> FlaggedRow:
    return FlaggedRow(
        when=when(item.at),
        repository=item.repository or "(local)",
        change=change_of(item),
        verdict=item.verdict,
        label=item.go_no_go,
        override=item.override or "",
        finding=item.findings[0] if item.findings else "",
        link=web_link(item.link),
    )


def scope_row(scope: ScopeReport) -> ScopeRow:
    f = scope.figures
    return ScopeRow(
        scope=f.scope,
        judgments=f.judgments,
        false_positives=with_counts(f.false_positives),
        false_negatives=with_counts(f.false_negatives),
        go=with_counts(f.go),
        undetermined=with_counts(f.undetermined),
        availability=with_counts(f.availability),
        latency_median=seconds(f.latency_median_s),
        latency_p95=seconds(f.latency_p95_s),
        ready=scope.readiness.ready,
        reasons=[reason.message for reason in scope.readiness.reasons],
    )


def model_row(group: GroupFigures) -> ModelRow:
    return ModelRow(
        name=group.name,
        rounds=group.rounds,
        failed=percent(group.failed),
        availability=with_counts(group.availability),
        latency_median=seconds(group.latency_median_s),
        latency_p95=seconds(group.latency_p95_s),
    )

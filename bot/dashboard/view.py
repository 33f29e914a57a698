"""One filter's dashboard, computed from the window's facts with the reports' own
functions (`triage`, `calibrate`), so every number equals what `judge-bot triage` and
`judge-bot calibrate` print for the same repository, days and tag. Pure.

Figures are formatted here, once, with the reports' formatters: the template only places
strings.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from bot.dashboard.chart import Chart, layout, per_day
from bot.dashboard.filters import Filter
from bot.dashboard.queues import DepartedPanel, QueuePanel, departed_panels, queue_panels
from bot.merging.github_handover import HandedOver
from bot.reports.calibration_view import percent, seconds, with_counts
from bot.reports.facts import RecordFact
from bot.reports.kpis import Calibration, ScopeReport, calibrate
from bot.reports.model_kpis import GroupFigures
from bot.reports.thresholds import CalibrationThresholds
from bot.reports.triage import (
    Flagged,
    OpenIssue,
    Subject,
    SubjectKey,
    Triage,
    is_flagged,
    triage,
)
from bot.reports.triage_view import change_of, when
from bot.storage.base import MergeEntry, MergeEvent, StoredVerdict

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
    tags: str


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
    """What storage held for the window: the chosen repository's facts (every one's when
    none was chosen; oldest first) and how many records could not be read, the
    repositories with records in the window, the full records and links of the flagged
    items listed, the open disagreement issues and the active merge-queue entries."""

    facts: Sequence[RecordFact]
    unreadable: int
    repositories: Sequence[str]
    details: Mapping[int, StoredVerdict]
    subjects: Mapping[SubjectKey, Subject]
    open_issues: Sequence[OpenIssue]
    queues: Sequence[MergeEntry] = ()
    web_url: str = "https://github.com"
    queue_history: Mapping[str, Sequence[MergeEvent]] = field(default_factory=dict)
    """Each repository's merge-queue moves (lower-cased name): times to merge, departures."""
    handed_over: Sequence[HandedOver] = ()


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
    tags: list[str]
    """The tags of the window's flagged items: the tag filter's choices."""
    queues: list[QueuePanel]
    departed: list[DepartedPanel] = field(default_factory=list)
    """Per repository, the pull requests that left a merge queue lately, and why."""


def build_view(
    sources: Sources,
    chosen: Filter,
    thresholds: CalibrationThresholds,
    now: datetime,
) -> DashboardView:
    since = now - timedelta(days=chosen.days)
    report = triage(
        sources.facts,
        now=now,
        days=chosen.days,
        repository=chosen.repository,
        details=sources.details,
        subjects=sources.subjects,
        open_issues=sources.open_issues,
        tag=chosen.tag,
        unreadable=sources.unreadable,
        shown=FLAGGED_SHOWN,
    )
    calibration = calibrate(
        sources.facts,
        thresholds,
        now=now,
        days=chosen.days,
        repository=chosen.repository,
        unreadable=sources.unreadable,
    )

    def shown(repository: str) -> bool:
        return chosen.repository is None or repository.lower() == chosen.repository.lower()

    queues = [entry for entry in sources.queues if shown(entry.repository)]
    handed = [record for record in sources.handed_over if shown(record.repository)]
    history = {name: moves for name, moves in sources.queue_history.items() if shown(name)}
    return DashboardView(
        filter=chosen,
        since=since,
        until=now,
        repositories=list(sources.repositories),
        report=report,
        calibration=calibration,
        chart=layout(per_day(sources.facts, since, now)),
        flagged=[flagged_row(item) for item in report.flagged],
        flagged_total=report.flagged_total,
        issues=[
            IssueRow(i.repository, i.task, i.number, web_link(i.url)) for i in report.open_issues
        ],
        overall=scope_row(calibration.overall),
        scopes=[scope_row(s) for s in calibration.repositories],
        models=[model_row(m) for m in calibration.models],
        tags=flagged_tags(sources.facts, chosen.tag),
        queues=queue_panels(queues, sources.web_url, now, history, handed),
        departed=departed_panels(history, handed, sources.web_url),
    )


def repositories_of(repositories: Iterable[str | None], chosen: str | None) -> list[str]:
    """The filter's choices: every repository with records in the window (one spelling
    per name compared without case, the first given), and the chosen one even without
    any."""
    names: dict[str, str] = {}
    for name in repositories:
        if name:
            names.setdefault(name.lower(), name)
    if chosen is not None:
        names.setdefault(chosen.lower(), chosen)
    return [names[key] for key in sorted(names)]


def flagged_tags(facts: Iterable[RecordFact], chosen: str | None) -> list[str]:
    """Every tag a flagged judgment carries, and the chosen one even without any."""
    tags = {tag for fact in facts if is_flagged(fact) for tag in fact.tags}
    if chosen is not None:
        tags.add(chosen)
    return sorted(tags)


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
        tags=", ".join(item.tags),
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

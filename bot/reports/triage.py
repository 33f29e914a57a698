"""Seed 000's morning triage: what the judges decided over the last days, the items a
person should look at, and the disagreement issues still open. Pure.

Flagged: every judgment that did not accept (improve, reject, escalate, undetermined),
newest first, with its change, files, scores, findings and a link. A person's override
of the change is shown beside it, so what was already dealt with is told apart.
Judge text is untrusted: credential-shaped strings are scrubbed here, before either
rendering sees them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from bot.gfm import scrub_secrets
from bot.judge.records import Verdict, VerdictRecord
from bot.reports.facts import LABELS, Window, facts_of, human_decisions, in_repository
from bot.storage.base import StoredVerdict

SubjectKey = tuple[str, str]
"""(repository lower-cased, head sha): a judged commit of a repository."""


@dataclass(frozen=True)
class Subject:
    """What is remembered of a judged commit: its pull request and where to look."""

    pull_number: int | None
    url: str | None


@dataclass(frozen=True)
class OpenIssue:
    repository: str
    task: str
    number: int
    url: str | None


@dataclass(frozen=True)
class Flagged:
    at: datetime
    repository: str | None
    task_id: str
    pull_number: int | None
    head_sha: str | None
    files: list[str]
    verdict: str
    go_no_go: str
    scores: dict[str, float]
    findings: list[str]
    link: str | None
    override: str | None
    """`accept by @login` when a person decided the change since."""


@dataclass(frozen=True)
class Triage:
    window: Window
    repository: str | None
    judgments: int
    decisions: dict[str, int]
    labels: dict[str, int]
    flagged: list[Flagged]
    open_issues: list[OpenIssue]
    unreadable: int


def is_judgment(stored: StoredVerdict) -> bool:
    return stored.record.get("decided_by") is None


def is_flagged(stored: StoredVerdict) -> bool:
    return is_judgment(stored) and stored.verdict != Verdict.ACCEPT.value


def subject_keys(stored: Iterable[StoredVerdict]) -> set[SubjectKey]:
    """The commits whose links the flagged items need."""
    return {
        (s.repository.lower(), s.head_sha)
        for s in stored
        if is_flagged(s) and s.repository and s.head_sha
    }


def task_keys(stored: Iterable[StoredVerdict]) -> set[tuple[str, str]]:
    """(repository, task) of every judged change of a repository: where an issue may be open."""
    return {(s.repository, s.task_id) for s in stored if s.repository and is_judgment(s)}


def findings_of(record: VerdictRecord) -> list[str]:
    """Why the item is flagged, as lines: the reason, the checks' findings, the judges'
    reasoning and what they asked to improve."""
    lines = [f"reason: {record.reason}"] if record.reason else []
    for f in (*record.mechanical_findings, *record.injection_findings):
        where = f.path + (f":{f.line}" if f.line else "")
        lines.append(f"[{f.severity}] {f.kind} {where}: {f.message}")
    if record.reasoning:
        lines.append(f"reasoning: {record.reasoning}")
    lines.extend(f"improve: {item}" for item in record.improvements)
    return [scrub_secrets(line) for line in lines]


def triage(
    stored: Sequence[StoredVerdict],
    *,
    now: datetime,
    days: int,
    repository: str | None = None,
    subjects: Mapping[SubjectKey, Subject] | None = None,
    open_issues: Sequence[OpenIssue] = (),
) -> Triage:
    """The report over the window's records (oldest first, as storage lists them)."""
    chosen = in_repository(stored, repository)
    facts, _ = facts_of(chosen)
    humans = human_decisions(facts)
    decisions: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    flagged: list[Flagged] = []
    unreadable = 0
    for item in chosen:
        try:
            record = VerdictRecord.model_validate(item.record)
        except ValidationError:
            unreadable += 1
            continue
        if record.decided_by is not None:
            continue
        decisions[record.final_decision.value] += 1
        labels[record.go_no_go] += 1
        if record.final_decision is not Verdict.ACCEPT:
            key = ((item.repository or "").lower(), item.head_sha or "", item.task_id)
            human = humans.get(key)
            override = None if human is None or human.verdict is None else (
                f"{human.verdict.value} by @{human.by}"
            )  # fmt: skip
            flagged.append(_flagged(item, record, subjects or {}, override))
    return Triage(
        window=Window(since=now - timedelta(days=days), until=now, days=days),
        repository=repository,
        judgments=sum(decisions.values()),
        decisions={v.value: decisions[v.value] for v in Verdict},
        labels={label: labels[label] for label in LABELS},
        flagged=sorted(flagged, key=lambda f: f.at, reverse=True),
        open_issues=sorted(open_issues, key=lambda i: (i.repository.lower(), i.number)),
        unreadable=unreadable,
    )


def _flagged(
    item: StoredVerdict,
    record: VerdictRecord,
    subjects: Mapping[SubjectKey, Subject],
    override: str | None,
) -> Flagged:
    subject = subjects.get(((item.repository or "").lower(), item.head_sha or ""))
    return Flagged(
        at=record.timestamp,
        repository=record.repository,
        task_id=record.task_id,
        pull_number=None if subject is None else subject.pull_number,
        head_sha=record.head_sha,
        files=list(record.files),
        verdict=record.final_decision.value,
        go_no_go=record.go_no_go,
        scores=dict(record.scores),
        findings=findings_of(record),
        link=None if subject is None else subject.url,
        override=override,
    )

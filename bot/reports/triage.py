"""Seed 000's morning triage: what the judges decided over the last days, the items a
person should look at, and the disagreement issues still open. Pure.

Counts come from the window's facts (`bot.reports.facts`). Flagged: every judgment that
did not accept (improve, reject, escalate, undetermined), newest first, optionally only
those carrying a tag, each shown with its change, files, scores, findings and a link,
read from its full record (only the listed ones are read). A person's override of the
change is shown beside it, so what was already dealt with is told apart. Judge text is
untrusted: credential-shaped strings are scrubbed here, before either rendering sees
them.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import ValidationError

from bot.gfm import scrub_secrets
from bot.judge.records import Verdict, VerdictRecord
from bot.reports.facts import (
    LABELS,
    HumanFact,
    RecordFact,
    ReportWindow,
    human_decisions,
    in_repository,
)
from bot.storage.base import StoredVerdict

SubjectKey = tuple[str, str]
"""(repository lower-cased, head sha): a judged commit of a repository."""
UNREAD_RECORD = "the full record could not be read: only its verdict is shown"
# The longest tag a triage filter takes, from `triage --tag` and the dashboard's `?tag=`.
MAX_TAG_CHARS = 100


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
    tags: list[str]


@dataclass(frozen=True)
class Triage:
    window: ReportWindow
    repository: str | None
    judgments: int
    decisions: dict[str, int]
    labels: dict[str, int]
    flagged: list[Flagged]
    """The listed ones: all, or the newest `shown`."""
    flagged_total: int
    open_issues: list[OpenIssue]
    unreadable: int
    tag: str | None


def is_flagged(fact: RecordFact) -> bool:
    return fact.human is None and fact.decision is not Verdict.ACCEPT


def flagged_facts(facts: Iterable[RecordFact], tag: str | None = None) -> list[RecordFact]:
    """Every flagged judgment (only those tagged `tag`, when given), newest first."""
    chosen = [f for f in facts if is_flagged(f) and (tag is None or tag in f.tags)]
    return sorted(chosen, key=lambda f: f.at, reverse=True)


def subject_keys(facts: Iterable[RecordFact]) -> set[SubjectKey]:
    """The commits whose links the flagged items need."""
    return {
        (f.change[0], f.change[1]) for f in facts if is_flagged(f) and f.repository and f.change[1]
    }


def why_flagged(record: VerdictRecord) -> list[str]:
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
    facts: Sequence[RecordFact],
    *,
    now: datetime,
    days: int,
    repository: str | None = None,
    details: Mapping[int, StoredVerdict] | None = None,
    subjects: Mapping[SubjectKey, Subject] | None = None,
    open_issues: Sequence[OpenIssue] = (),
    tag: str | None = None,
    unreadable: int = 0,
    shown: int | None = None,
) -> Triage:
    """The report over the window's facts (oldest first, as storage lists them).
    `details` are the full records of the listed flagged items, by sequence number."""
    chosen = in_repository(facts, repository)
    humans = human_decisions(chosen)
    decisions: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    for fact in chosen:
        if fact.human is None:
            decisions[fact.decision.value] += 1
            labels[fact.label] += 1
    flagged = flagged_facts(chosen, tag)
    listed = flagged if shown is None else flagged[:shown]
    records = details or {}
    return Triage(
        window=ReportWindow(since=now - timedelta(days=days), until=now, days=days),
        repository=repository,
        judgments=sum(decisions.values()),
        decisions={v.value: decisions[v.value] for v in Verdict},
        labels={label: labels[label] for label in LABELS},
        flagged=[
            flagged_item(f, records.get(f.seq), subjects or {}, humans.get(f.change))
            for f in listed
        ],
        flagged_total=len(flagged),
        open_issues=sorted(open_issues, key=lambda i: (i.repository.lower(), i.number)),
        unreadable=unreadable,
        tag=tag,
    )


def _record(stored: StoredVerdict | None) -> VerdictRecord | None:
    if stored is None:
        return None
    try:
        return VerdictRecord.model_validate(stored.record)
    except ValidationError:
        return None


def flagged_item(
    fact: RecordFact,
    stored: StoredVerdict | None,
    subjects: Mapping[SubjectKey, Subject],
    human: HumanFact | None,
) -> Flagged:
    """One flagged judgment as listed: its facts, and what its full record adds."""
    record = _record(stored)
    subject = subjects.get((fact.change[0], fact.change[1]))
    override = None if human is None or human.verdict is None else (
        f"{human.verdict.value} by @{human.by}"
    )  # fmt: skip
    return Flagged(
        at=fact.at,
        repository=fact.repository,
        task_id=fact.task_id,
        pull_number=None if subject is None else subject.pull_number,
        head_sha=fact.head_sha,
        files=[] if record is None else list(record.files),
        verdict=fact.decision.value,
        go_no_go=fact.label,
        scores={} if record is None else dict(record.scores),
        findings=[UNREAD_RECORD] if record is None else why_flagged(record),
        link=None if subject is None else subject.url,
        override=override,
        tags=[scrub_secrets(t) for t in fact.tags],
    )

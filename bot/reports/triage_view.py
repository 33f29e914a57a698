"""The triage report as a terminal table or as JSON for scripts. Pure.

The table shows up to `FINDINGS_SHOWN` findings under each flagged item, each cut to
the terminal's width; the JSON carries them all, untrimmed (scrubbed, as every output).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from bot.gfm import plural
from bot.record_view import scores_glance
from bot.reports.facts import ReportWindow
from bot.reports.table import Column, fit_line, render_rows
from bot.reports.triage import Flagged, OpenIssue, Triage

FINDINGS_SHOWN = 4
FLAGGED_COLUMNS = (
    Column("when"),
    Column("repository", flex=True),
    Column("change"),
    Column("verdict"),
    Column("label"),
    Column("scores"),
    Column("files", flex=True),
    Column("link", flex=True),
)
ISSUE_COLUMNS = (
    Column("repository", flex=True),
    Column("task", flex=True),
    Column("issue", right=True),
    Column("link", flex=True),
)


def when(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M")


def window_line(command: str, window: ReportWindow, repository: str | None) -> str:
    scope = repository or "all repositories"
    return (
        f"judge-bot {command}: {plural(window.days, 'day')} "
        f"({when(window.since)} to {when(window.until)} UTC), {scope}"
    )


def change_of(item: Flagged) -> str:
    parts = [f"#{item.pull_number}"] if item.pull_number is not None else []
    if item.head_sha:
        parts.append(item.head_sha[:7])
    return " ".join(parts) or item.task_id


def render_triage(report: Triage, width: int | None) -> str:
    heading = window_line("triage", report.window, report.repository)
    if report.tag is not None:
        heading += f", flagged items tagged {report.tag!r}"
    lines = [heading, ""]
    counts = "  ".join(f"{k} {v}" for k, v in report.decisions.items())
    lines.append(f"{plural(report.judgments, 'judgment')}: {counts}")
    lines.append("labels: " + "  ".join(f"{k} {v}" for k, v in report.labels.items()))
    if report.unreadable:
        lines.append(f"left out: {plural(report.unreadable, 'record')} that could not be read")
    lines.append("")
    lines.extend(_flagged_lines(report.flagged, width))
    lines.append("")
    lines.extend(_issue_lines(report.open_issues, width))
    return "\n".join(lines)


def _flagged_lines(flagged: list[Flagged], width: int | None) -> list[str]:
    if not flagged:
        return ["flagged: none"]
    rows = [
        [
            when(item.at),
            item.repository or "(local)",
            change_of(item),
            item.verdict,
            item.go_no_go,
            scores_glance(item.scores) or "-",
            ", ".join(item.files) or "-",
            item.link or "-",
        ]
        for item in flagged
    ]
    header, *body = render_rows(FLAGGED_COLUMNS, rows, width)
    lines = [f"flagged ({len(flagged)}):", header]
    inner = None if width is None else max(width - 4, 20)
    for item, row in zip(flagged, body, strict=True):
        lines.append(row)
        notes = [
            *([f"overridden: {item.override}"] if item.override else []),
            *([f"tags: {', '.join(item.tags)}"] if item.tags else []),
            *item.findings,
        ]
        lines.extend("    " + fit_line(note, inner) for note in notes[:FINDINGS_SHOWN])
        if len(notes) > FINDINGS_SHOWN:
            lines.append(f"    … {plural(len(notes) - FINDINGS_SHOWN, 'more line')} in --json")
    return lines


def _issue_lines(issues: list[OpenIssue], width: int | None) -> list[str]:
    if not issues:
        return ["open disagreement issues: none"]
    rows = [[i.repository, i.task, f"#{i.number}", i.url or "-"] for i in issues]
    return [f"open disagreement issues ({len(issues)}):", *render_rows(ISSUE_COLUMNS, rows, width)]


def window_json(window: ReportWindow) -> dict[str, Any]:
    return {
        "since": window.since.isoformat(),
        "until": window.until.isoformat(),
        "days": window.days,
    }


def triage_json(report: Triage) -> str:
    document = {
        "window": window_json(report.window),
        "repository": report.repository,
        "judgments": report.judgments,
        "verdicts": report.decisions,
        "go_no_go": report.labels,
        "tag": report.tag,
        "flagged": [_flagged_json(item) for item in report.flagged],
        "open_issues": [
            {"repository": i.repository, "task": i.task, "number": i.number, "url": i.url}
            for i in report.open_issues
        ],
        "unreadable_records": report.unreadable,
    }
    return json.dumps(document, indent=2)


def _flagged_json(item: Flagged) -> dict[str, Any]:
    return {
        "timestamp": item.at.isoformat(),
        "repository": item.repository,
        "task_id": item.task_id,
        "pull_number": item.pull_number,
        "head_sha": item.head_sha,
        "files": item.files,
        "verdict": item.verdict,
        "go_no_go": item.go_no_go,
        "scores": item.scores,
        "findings": item.findings,
        "link": item.link,
        "override": item.override,
        "tags": item.tags,
    }

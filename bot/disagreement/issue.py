"""The human fallback: the `[JUDGE-DISAGREEMENT]` issue and its comments.

When the judges escalate (they disagree, or ask for a human), a person with write
access decides. The issue carries a scores comparison table across rounds and models
(seed 000's `handle-disagreement.sh`), what each judge said, links to the pull request
or commit and the check run, and how to override. A second escalation of the same task
adds a follow-up comment instead of a second issue (find it by `issue_marker`); a later
accepting verdict or an override closes it with `render_close_comment`.

Bodies stay within GitHub's 65,536-character limit by dropping whole sections with a
note; the override instructions are always kept. Judge text is untrusted and quoted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum

from bot.gfm import (
    COMMENT_LIMIT,
    bullet_untrusted,
    cell,
    code,
    code_cell,
    finish,
    fit_blocks,
    one_line,
    plural,
    quote_untrusted,
    short_sha,
    table,
)
from bot.judge.records import RubricName, Verdict, VerdictRecord
from bot.record_view import dimensions_of, format_score, round_verdict_cell, rounds_of

LABEL = "judge-disagreement"
LABEL_COLOR = "d93f0b"
LABEL_DESCRIPTION = "The judges disagree; a maintainer who is not the author decides"

TITLE_PREFIX = "[JUDGE-DISAGREEMENT] Review needed: "
ISSUE_TITLE_LIMIT = 256

ISSUE_REASONING_LIMIT = 4_000
MARKER_PREFIX = "<!-- judge-bot:disagreement task="


def issue_title(task: str) -> str:
    """Exactly `[JUDGE-DISAGREEMENT] Review needed: <task>` (one line, capped)."""
    return TITLE_PREFIX + one_line(task, ISSUE_TITLE_LIMIT - len(TITLE_PREFIX))


def issue_marker(task: str) -> str:
    """Hidden line in the issue body that identifies the task, for finding the issue
    again on a second escalation."""
    safe = one_line(task, 200).replace("--", "-").replace(">", "")
    return f"{MARKER_PREFIX}{safe} -->"


@dataclass(frozen=True)
class IssueLinks:
    """Where the disagreement happened. `subject_url` is the pull request or commit
    page; `check_run_url` the judge check run, when there is one."""

    task: str
    subject_url: str | None
    check_run_url: str | None = None
    is_pull_request: bool = True


def _evaluation_label(index: int, record: VerdictRecord) -> str:
    when = record.timestamp.strftime("%Y-%m-%d %H:%M")
    head = f" · {short_sha(record.head_sha)}" if record.head_sha else ""
    # No `#1`: GitHub would link it to issue 1.
    return f"Run {index} · {when}{head}"


def _comparison_tables(records: Sequence[VerdictRecord]) -> list[str]:
    """One table per rubric (each rubric has its own dimensions), a row per round."""
    blocks: list[str] = []
    rubrics: dict[RubricName, list[tuple[int, VerdictRecord]]] = {}
    for index, record in enumerate(records, start=1):
        rubrics.setdefault(record.rubric, []).append((index, record))
    for rubric, entries in rubrics.items():
        dims = dimensions_of(v for _, r in entries for v in rounds_of(r))
        header = [
            "Evaluation",
            "Round",
            "Tier",
            "Model",
            *(d.replace("_", " ") for d in dims),
            "Average",
            "Verdict",
        ]
        rows: list[list[str]] = []
        for index, record in entries:
            label = cell(_evaluation_label(index, record), 60)
            rounds = rounds_of(record)
            if not rounds:
                rows.append(
                    [label, "-", "-", "-", *("-" for _ in dims), "-", record.final_decision.value]
                )
            for view in rounds:
                rows.append(
                    [
                        label,
                        str(view.round),
                        view.tier.value,
                        code_cell(view.model, 80),
                        *(format_score(view.scores.get(d)) for d in dims),
                        format_score(view.average),
                        round_verdict_cell(view),
                    ]
                )
        blocks.append(f"### Scores comparison ({rubric.value} rubric)\n\n" + table(header, rows))
    return blocks


def _decisions_block(records: Sequence[VerdictRecord]) -> str:
    lines = ["### Decisions"]
    for index, record in enumerate(records, start=1):
        line = (
            f"- {cell(_evaluation_label(index, record), 60)}: **{record.final_decision.value}** "
            f"({plural(len(record.files), 'file')})"
        )
        if record.consensus:
            line += f", consensus {record.consensus}"
        if record.reason:
            line += f": {cell(record.reason, 300)}"
        if record.human_override:
            who = f"@{cell(record.decided_by, 40)}" if record.decided_by else "a maintainer"
            line += f" (human override by {who})"
        lines.append(line)
    return "\n".join(lines)


def _judge_blocks(records: Sequence[VerdictRecord]) -> list[str]:
    blocks: list[str] = []
    for index, record in enumerate(records, start=1):
        label = cell(_evaluation_label(index, record), 60)
        for view in rounds_of(record):
            parts = [
                f"#### {label} · round {view.round} · {view.tier.value} · "
                f"{code_cell(view.model, 80)} · {round_verdict_cell(view)}"
            ]
            if view.reasoning:
                parts.append(quote_untrusted(view.reasoning, ISSUE_REASONING_LIMIT))
            if view.improvements:
                parts.append(bullet_untrusted(view.improvements, max_items=20, item_limit=400))
            blocks.append("\n\n".join(parts))
    return blocks


def _files_block(records: Sequence[VerdictRecord]) -> str:
    files = sorted({f for r in records for f in r.files})
    shown = ", ".join(code(f, 120) for f in files[:30])
    if len(files) > 30:
        shown += f" and {len(files) - 30} more"
    return f"Judged files: {shown or '_none recorded_'}"


def _links_block(links: IssueLinks) -> str:
    subject = "pull request" if links.is_pull_request else "commit"
    task = one_line(links.task, 120)
    named = f"[{task}]({links.subject_url})" if links.subject_url else task
    line = f"The judges could not agree on the {subject} {named}."
    if links.check_run_url:
        line += f" Check run: [judge]({links.check_run_url})."
    return line


def _how_to_decide(links: IssueLinks) -> str:
    where = "on the pull request or on this issue" if links.is_pull_request else "on this issue"
    return (
        "### How to decide\n\n"
        f"Someone with write access who is not an author of the change comments {where}, "
        "on a line of its own:\n\n"
        "- `/judge override accept` to accept the change\n"
        "- `/judge override reject` to reject it\n\n"
        "This issue closes when a later judgement accepts the change or an override "
        "decides. Overrides are recorded in the audit log with who decided."
    )


def render_issue_body(records: Sequence[VerdictRecord], links: IssueLinks) -> str:
    """Body of the disagreement issue for the task's verdict history."""
    head = "\n\n".join(
        [
            issue_marker(links.task),
            f"## Judges disagree on {one_line(links.task, 120)}",
            _links_block(links),
            _files_block(records),
        ]
    )
    return _with_verdicts(head, records, links)


def render_followup_comment(records: Sequence[VerdictRecord], links: IssueLinks) -> str:
    """Comment for a later escalation of a task whose issue is already open."""
    heads = sorted({short_sha(r.head_sha) for r in records if r.head_sha})
    at = f" at {', '.join(code(h) for h in heads)}" if heads else ""
    head = f"The judges escalated {one_line(links.task, 120)} again{at}.\n\n" + _links_block(links)
    return _with_verdicts(head, records, links)


def _with_verdicts(head: str, records: Sequence[VerdictRecord], links: IssueLinks) -> str:
    """`head`, what the judges decided and said, and how to decide, within GitHub's
    comment limit: sections past it give way to a note, how to decide never does."""
    body = fit_blocks(
        [head, _decisions_block(records), *_comparison_tables(records), *_judge_blocks(records)],
        COMMENT_LIMIT,
        tail=[_how_to_decide(links)],
        what="section",
    )
    return finish(body, COMMENT_LIMIT)


class CloseReason(StrEnum):
    ACCEPTED = "accepted"
    OVERRIDDEN = "overridden"


def render_close_comment(reason: CloseReason, by: str, *, verdict: Verdict | None = None) -> str:
    """Comment posted when the issue is closed.

    ACCEPTED: a later judgement accepted; `by` is the accepted head sha.
    OVERRIDDEN: a human decided; `by` is their login and `verdict` what they decided."""
    if reason is CloseReason.ACCEPTED:
        sha = f" at {code(short_sha(by))}" if by else ""
        text = f"A later judgement accepted the change{sha}. Closing this issue."
    else:
        if verdict is None:
            raise ValueError("an override close needs the decided verdict")
        text = (
            f"@{one_line(by, 39)} decided **{verdict.value}** by override. "
            "Closing this issue; the decision is recorded in the audit log."
        )
    return finish(text, COMMENT_LIMIT)

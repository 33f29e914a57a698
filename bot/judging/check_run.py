"""What the `judge` check run says: conclusion, title, summary, text, annotations, buttons.

Pure functions over verdict records; the webhook handlers send what these return.

Conclusion per verdict (`conclusion_for`):

    verdict        advisory   blocking
    accept         success    success
    improve        neutral    failure
    reject         neutral    failure
    escalate       neutral    action_required
    undetermined   neutral    neutral      (outage, budget: never blocks anyone)

A change may be judged as several records (one per rubric group of files). Their
combined verdict is the worst one, in the order reject > escalate > improve >
undetermined > accept (`bot.rendering.VERDICT_SEVERITY`): a part that was not judged
keeps the whole from being accepted, and a rejected part outweighs everything else.

GitHub limits are respected by summarising, never by failing: title <= 255 characters
(kept far shorter), summary and text <= 65,535 characters each (whole tables or
paragraphs are dropped with a note), at most 50 annotations per request
(`annotation_batches`, `CheckRunOutput.payloads`) and at most three requested actions.
Every rendered string passes the secret scrubber last.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from bot.gfm import (
    bullet_untrusted,
    cell,
    code,
    combined_verdict,
    dimensions_of,
    finish,
    fit_blocks,
    format_score,
    one_line,
    plural,
    quote_untrusted,
    round_verdict_cell,
    rounds_of,
    scores_glance,
    scrub_secrets,
    short_sha,
    table,
)
from bot.judge.config import Mode
from bot.judge.records import Finding, Tier, Verdict, VerdictRecord
from bot.judging.repo_config import LeftOut

CHECK_NAME = "judge"
TITLE_LIMIT = 255
TITLE_TARGET = 120
SUMMARY_LIMIT = 65_535
TEXT_LIMIT = 65_535
ANNOTATIONS_PER_REQUEST = 50
ANNOTATION_MESSAGE_LIMIT = 4_000
ANNOTATION_TITLE_LIMIT = 255
MAX_ACTIONS = 3
ACTION_LABEL_LIMIT = 20
ACTION_DESCRIPTION_LIMIT = 40
ACTION_IDENTIFIER_LIMIT = 20
REASONING_LIMIT = 6_000
MAX_LISTED_FILES = 20
LINE_REF_SCAN = 1_000
MAX_LINE = 1_000_000

ACTION_REJUDGE_DEEP = "rejudge-deep"
ACTION_OVERRIDE_ACCEPT = "override-accept"

Annotation = dict[str, str | int]


def conclusion_for(verdict: Verdict, mode: Mode) -> str:
    """Check-run conclusion for a verdict (table in the module docstring)."""
    if verdict is Verdict.ACCEPT:
        return "success"
    if verdict is Verdict.UNDETERMINED or mode is Mode.ADVISORY:
        return "neutral"
    if verdict is Verdict.ESCALATE:
        return "action_required"
    return "failure"


@dataclass(frozen=True)
class RequestedAction:
    """A check-run button. Limits are GitHub's; breaking one is a programming error."""

    label: str
    description: str
    identifier: str

    def __post_init__(self) -> None:
        if not 0 < len(self.label) <= ACTION_LABEL_LIMIT:
            raise ValueError(f"action label must be 1-{ACTION_LABEL_LIMIT} characters")
        if not 0 < len(self.description) <= ACTION_DESCRIPTION_LIMIT:
            raise ValueError(f"action description must be 1-{ACTION_DESCRIPTION_LIMIT} characters")
        if not 0 < len(self.identifier) <= ACTION_IDENTIFIER_LIMIT:
            raise ValueError(f"action identifier must be 1-{ACTION_IDENTIFIER_LIMIT} characters")

    def as_dict(self) -> dict[str, str]:
        return {"label": self.label, "description": self.description, "identifier": self.identifier}


REJUDGE_DEEP = RequestedAction(
    "Re-judge (deep)", "Run the deep judge again on this commit", ACTION_REJUDGE_DEEP
)
OVERRIDE_ACCEPT = RequestedAction(
    "Accept (override)", "Accept as a maintainer (not the author)", ACTION_OVERRIDE_ACCEPT
)


@dataclass(frozen=True)
class CheckDetails:
    """Facts about the run that are not in the records."""

    left_out: Sequence[LeftOut] = ()
    disagreement_issue_url: str | None = None
    skipped_by_budget: bool = False


@dataclass
class CheckRunOutput:
    """Everything the check run shows. `annotations` holds all of them; send them in
    batches of 50 (`payloads` does that)."""

    conclusion: str | None
    title: str
    summary: str
    text: str = ""
    annotations: list[Annotation] = field(default_factory=list)
    actions: list[dict[str, str]] = field(default_factory=list)
    status: str = "completed"

    def payloads(self) -> list[dict[str, Any]]:
        """Request bodies: the first creates or updates the run with its status,
        conclusion, output and first 50 annotations; each further one (for a PATCH of
        the same run) appends the next 50 annotations."""
        batches = annotation_batches(self.annotations) or [[]]
        first_output: dict[str, Any] = {"title": self.title, "summary": self.summary}
        if self.text:
            first_output["text"] = self.text
        if batches[0]:
            first_output["annotations"] = batches[0]
        first: dict[str, Any] = {"status": self.status, "output": first_output}
        if self.conclusion is not None:
            first["conclusion"] = self.conclusion
        if self.actions:
            first["actions"] = self.actions
        rest = [
            {"output": {"title": self.title, "summary": self.summary, "annotations": batch}}
            for batch in batches[1:]
        ]
        return [first, *rest]


def annotation_batches(
    annotations: Sequence[Annotation], size: int = ANNOTATIONS_PER_REQUEST
) -> list[list[Annotation]]:
    """Split annotations into requests of at most `size` (GitHub accepts 50)."""
    if size < 1:
        raise ValueError("batch size must be positive")
    return [list(annotations[i : i + size]) for i in range(0, len(annotations), size)]


# --- annotations ----------------------------------------------------------------------

# `docs/x.md:12`, `docs/x.md:12-14`; the path must be one of the judged files, which
# keeps URLs (`http://host:80`) and times (`12:30`) out.
_PATH_LINE = re.compile(
    r"(?P<path>[^\s:`'\"()\[\]<>,;]+):(?P<start>\d+)(?:\s*[-\u2013]\s*(?P<end>\d+))?"
)
_LINE_WORD = re.compile(
    r"(?i:\blines?)\s+(?P<start>\d+)(?:\s*(?:[-\u2013]|to)\s*(?P<end>\d+))?"
    r"|\bL(?P<lstart>\d+)(?:-L?(?P<lend>\d+))?\b"
)


@dataclass(frozen=True)
class LineRef:
    path: str
    start: int
    end: int


def _span(start: str, end: str | None) -> tuple[int, int] | None:
    first = int(start)
    last = int(end) if end else first
    # Zero is no line; absurd numbers are a model's noise and GitHub would refuse them.
    if not 1 <= first <= MAX_LINE or last > MAX_LINE:
        return None
    return (first, last) if last >= first else (first, first)


def line_ref(text: str, files: Sequence[str]) -> LineRef | None:
    """The file line an improvement points at, if it names one.

    `path:12` (or `path:12-14`) with a judged path wins; otherwise `line 12` /
    `lines 12-14` / `L12` refers to a judged file named in the text, or to the only
    judged file. Only the start of the text is read: that is where a judge names the
    place, and long answers would make this slow."""
    text = text[:LINE_REF_SCAN]
    known = set(files)
    for match in _PATH_LINE.finditer(text):
        candidate = match.group("path")
        if candidate not in known:
            candidate = candidate.removeprefix("./")
        if candidate in known:
            span = _span(match.group("start"), match.group("end"))
            if span:
                return LineRef(candidate, *span)
    word = _LINE_WORD.search(text)
    if word is None:
        return None
    start = word.group("start") or word.group("lstart")
    end = word.group("end") or word.group("lend")
    span = _span(start, end)
    if span is None:
        return None
    named = sorted((f for f in files if f and f in text), key=len, reverse=True)
    if named:
        return LineRef(named[0], *span)
    if len(known) == 1:
        return LineRef(next(iter(known)), *span)
    return None


def _finding_level(finding: Finding, mode: Mode) -> str:
    # A hard finding fails the run only where the run can fail; in advisory mode a red
    # annotation on a neutral check would contradict the conclusion.
    if finding.severity == "hard" and mode is Mode.BLOCKING:
        return "failure"
    return "warning"


def _annotation(
    path: str, start: int, end: int, level: str, message: str, title: str
) -> Annotation:
    return {
        "path": path,
        "start_line": start,
        "end_line": end,
        "annotation_level": level,
        "message": one_line(message, ANNOTATION_MESSAGE_LIMIT) or "(no message)",
        "title": one_line(title, ANNOTATION_TITLE_LIMIT),
    }


def annotations_for(record: VerdictRecord, mode: Mode) -> list[Annotation]:
    """Findings with a line, and improvements that name a line, as annotations."""
    out: list[Annotation] = []
    seen: set[tuple[str, int, int, str]] = set()

    def add(item: Annotation) -> None:
        key = (
            str(item["path"]),
            int(item["start_line"]),
            int(item["end_line"]),
            str(item["message"]),
        )
        if key not in seen:
            seen.add(key)
            out.append(item)

    for finding in [*record.mechanical_findings, *record.injection_findings]:
        if finding.line is None:
            continue
        add(
            _annotation(
                finding.path,
                finding.line,
                finding.line,
                _finding_level(finding, mode),
                finding.message,
                f"{finding.source} finding: {finding.kind} ({finding.severity})",
            )
        )
    for view in rounds_of(record):
        for improvement in dict.fromkeys(view.improvements):
            ref = line_ref(improvement, record.files)
            if ref is None:
                continue
            add(
                _annotation(
                    ref.path,
                    ref.start,
                    ref.end,
                    "notice",
                    improvement,
                    f"{view.tier.value} judge ({view.model}) suggests",
                )
            )
    return out


# --- summary and text -----------------------------------------------------------------


def _files_line(files: Sequence[str]) -> str:
    shown = ", ".join(code(f) for f in files[:MAX_LISTED_FILES])
    if len(files) > MAX_LISTED_FILES:
        shown += f" and {len(files) - MAX_LISTED_FILES} more"
    return shown or "_no files_"


def _group_heading(index: int, total: int, record: VerdictRecord) -> str:
    label = f"Group {index} of {total}" if total > 1 else "Judged files"
    return (
        f"### {label} · {record.rubric.value} rubric · {plural(len(record.files), 'file')} "
        f"· **{record.final_decision.value}**"
    )


def _scores_table(record: VerdictRecord) -> str:
    rounds = rounds_of(record)
    if not rounds:
        note = record.models_not_run_note or record.reason or f"decided by {record.mode}"
        return f"No model ran ({cell(note, 300)})."
    dims = dimensions_of(rounds)
    header = ["Tier", "Model", *(d.replace("_", " ") for d in dims), "Average", "Verdict"]
    rows = [
        [
            view.tier.value
            + (f" (instead of {cell(view.substituted_for, 40)})" if view.substituted_for else ""),
            code(view.model, 80),
            *(format_score(view.scores.get(d)) for d in dims),
            format_score(view.average),
            round_verdict_cell(view),
        ]
        for view in rounds
    ]
    return table(header, rows)


def _truncation_line(record: VerdictRecord) -> str:
    if not record.truncation:
        return "Truncated: nothing."
    parts = [
        f"{code(t.path, 120)} {t.original_chars:,} → {t.kept_chars:,} characters "
        f"for the {t.tier.value} judge"
        for t in record.truncation[:MAX_LISTED_FILES]
    ]
    more = len(record.truncation) - MAX_LISTED_FILES
    if more > 0:
        parts.append(f"{more} more")
    return "Truncated: " + "; ".join(parts) + "."


def _findings_line(record: VerdictRecord) -> str:
    def count(findings: Sequence[Finding]) -> str:
        hard = sum(1 for f in findings if f.severity == "hard")
        return f"{len(findings)} ({hard} hard, {len(findings) - hard} soft)"

    return (
        f"Findings: mechanical {count(record.mechanical_findings)}, "
        f"injection {count(record.injection_findings)}."
    )


def _override_line(record: VerdictRecord) -> str | None:
    if not record.human_override:
        return None
    who = f"@{cell(record.decided_by, 60)}" if record.decided_by else "a maintainer"
    return f"**Human override:** {record.final_decision.value} by {who}."


def _group_summary(index: int, total: int, record: VerdictRecord) -> str:
    decision = f"Decision: **{record.final_decision.value}**"
    if record.consensus:
        decision += f" (consensus: {record.consensus})"
    if record.reason:
        decision += f" — {cell(record.reason, 300)}"
    facts = [decision + "."]
    override = _override_line(record)
    if override:
        facts.append(override)
    facts.append(_truncation_line(record))
    facts.append(_findings_line(record))
    if record.models_not_run and record.models_not_run_note:
        facts.append(f"Models not run: {cell(record.models_not_run_note, 300)}.")
    return "\n".join(
        [
            _group_heading(index, total, record),
            "",
            "Files: " + _files_line(record.files),
            "",
            _scores_table(record),
            "",
            *(f"- {fact}" for fact in facts),
        ]
    )


def _mode_line(verdict: Verdict, mode: Mode) -> str:
    if mode is Mode.ADVISORY and verdict is Verdict.ACCEPT:
        return "Mode: **advisory**. This check never blocks merging."
    if mode is Mode.ADVISORY:
        return (
            "Mode: **advisory**. This check never blocks merging; in blocking mode "
            f"this verdict would conclude `{conclusion_for(verdict, Mode.BLOCKING)}`."
        )
    return (
        "Mode: **blocking**. Reject and improve fail this check, escalate asks for a "
        "maintainer; provider outages and budget limits never fail it."
    )


def _left_out_block(details: CheckDetails) -> str:
    if not details.left_out:
        return "Left out: nothing; every changed file in scope was judged."
    rows = [[code(item.path, 120), cell(item.reason, 120)] for item in details.left_out[:100]]
    block = f"Left out ({plural(len(details.left_out), 'file')} not judged):\n\n" + table(
        ["File", "Why"], rows
    )
    if len(details.left_out) > 100:
        block += f"\n\n_… {len(details.left_out) - 100} more not listed._"
    return block


def _overall_block(records: Sequence[VerdictRecord], mode: Mode, details: CheckDetails) -> str:
    verdict = combined_verdict(r.final_decision for r in records)
    lines = [f"## Verdict: {verdict.value}"]
    if len(records) > 1:
        counts = ", ".join(
            f"{sum(1 for r in records if r.final_decision is v)} {v.value}"
            for v in Verdict
            if any(r.final_decision is v for r in records)
        )
        lines.append(
            f"The change was judged as {len(records)} groups ({counts}); the check shows "
            "the worst (reject > escalate > improve > undetermined > accept)."
        )
    lines.append(_mode_line(verdict, mode))
    if details.skipped_by_budget:
        lines.append("Some judging was skipped because the cost budget was reached.")
    if details.disagreement_issue_url:
        lines.append(f"The judges disagree; a human decides in {details.disagreement_issue_url}.")
    if verdict is not Verdict.ACCEPT:
        lines.append(
            "Someone with write access who is not an author can comment "
            "`/judge override accept` (or `reject`), or `/judge rerun`."
        )
    return "\n\n".join(lines)


def _round_text(record: VerdictRecord, group: str) -> list[str]:
    blocks: list[str] = []
    for view in rounds_of(record):
        head = f"### {group}{view.tier.value} judge · {code(view.model, 80)}"
        parts = [head]
        if view.error:
            parts.append(f"The call failed: {cell(view.error, 300)}.")
        if view.reasoning:
            parts.append(quote_untrusted(view.reasoning, REASONING_LIMIT))
        if view.improvements:
            parts.append(
                "Improvements:\n\n"
                + bullet_untrusted(view.improvements, max_items=30, item_limit=500)
            )
        blocks.append("\n\n".join(parts))
    return blocks


def _findings_text(record: VerdictRecord, group: str) -> str | None:
    findings = [*record.mechanical_findings, *record.injection_findings]
    if not findings:
        return None
    rows = [
        [
            f.source,
            f.severity,
            cell(f.kind, 40),
            code(f"{f.path}:{f.line}" if f.line else f.path, 120),
            cell(f.message, 300),
        ]
        for f in findings[:200]
    ]
    block = f"### {group}Findings\n\n" + table(
        ["Source", "Severity", "Kind", "Where", "Message"], rows
    )
    if len(findings) > 200:
        block += f"\n\n_… {len(findings) - 200} more findings not listed._"
    return block


def _title(records: Sequence[VerdictRecord]) -> str:
    verdict = combined_verdict(r.final_decision for r in records)
    worst = next(r for r in records if r.final_decision is verdict)
    head = verdict.value
    overrides = [r for r in records if r.human_override]
    if overrides and all(r.human_override for r in records):
        who = overrides[0].decided_by
        head += f" (override by @{one_line(who, 39)})" if who else " (override)"
    glance = scores_glance(worst.scores) if worst.scores else "no scores"
    files = {f for r in records for f in r.files}
    count = plural(len(files), "file")
    if len(records) > 1:
        count += f" in {len(records)} groups"
    return one_line(f"{head} · {glance} · {count}", TITLE_TARGET)


def _actions(verdict: Verdict, overridden: bool) -> list[dict[str, str]]:
    actions = [REJUDGE_DEEP]
    if verdict is not Verdict.ACCEPT and not overridden:
        actions.append(OVERRIDE_ACCEPT)
    return [a.as_dict() for a in actions[:MAX_ACTIONS]]


def _finish(output: CheckRunOutput) -> CheckRunOutput:
    output.title = finish(output.title, TITLE_LIMIT)
    output.summary = finish(output.summary, SUMMARY_LIMIT)
    output.text = finish(output.text, TEXT_LIMIT)
    output.annotations = [
        {k: scrub_secrets(v) if isinstance(v, str) else v for k, v in a.items()}
        for a in output.annotations
    ]
    return output


def render_check_run(
    records: Sequence[VerdictRecord], mode: Mode, *, details: CheckDetails | None = None
) -> CheckRunOutput:
    """The completed check run for a change judged as one or more records."""
    details = details or CheckDetails()
    if not records:
        return _finish(
            CheckRunOutput(
                conclusion=conclusion_for(Verdict.UNDETERMINED, mode),
                title="undetermined · nothing was judged",
                summary="## Verdict: undetermined\n\nNo file group was judged.\n\n"
                + _left_out_block(details),
            )
        )
    verdict = combined_verdict(r.final_decision for r in records)
    total = len(records)
    groups = [_group_summary(i, total, r) for i, r in enumerate(records, start=1)]
    summary = fit_blocks(
        [_overall_block(records, mode, details), *groups, _left_out_block(details)],
        SUMMARY_LIMIT,
        what="summary section",
    )
    text_blocks: list[str] = []
    for index, record in enumerate(records, start=1):
        prefix = f"Group {index} · " if total > 1 else ""
        text_blocks.extend(_round_text(record, prefix))
        findings = _findings_text(record, prefix)
        if findings:
            text_blocks.append(findings)
    text = fit_blocks(text_blocks, TEXT_LIMIT, what="detail section")
    annotations = [a for r in records for a in annotations_for(r, mode)]
    overridden = all(r.human_override for r in records)
    return _finish(
        CheckRunOutput(
            conclusion=conclusion_for(verdict, mode),
            title=_title(records),
            summary=summary,
            text=text,
            annotations=annotations,
            actions=_actions(verdict, overridden),
        )
    )


def render_in_progress(files: Sequence[str], *, tier: Tier | None = None) -> CheckRunOutput:
    """The run while judges work (no conclusion yet)."""
    stage = f" ({tier.value} judge)" if tier else ""
    summary = "Independent judges are scoring this change."
    if files:
        summary += " Files:\n\n" + _files_line(files)
    # Before the file list is fetched there is nothing to count yet.
    what = plural(len(files), "file") if files else "this change"
    return _finish(
        CheckRunOutput(
            conclusion=None,
            status="in_progress",
            title=f"Judging {what}{stage}",
            summary=summary,
        )
    )


class SkipReason(StrEnum):
    LABEL = "label"
    COMMIT_MESSAGE = "commit-message"


def render_skipped(reason: SkipReason, by: str, *, label: str = "skip-judge") -> CheckRunOutput:
    """Neutral run saying who or what bypassed the judge.

    `by` is the login that applied the skip label, or the head commit sha whose message
    carries `[skip judge]`."""
    if reason is SkipReason.LABEL:
        who = f"@{one_line(by, 39)}" if by else "someone"
        title = f"skipped · label {one_line(label, 50)} by {who}"
        summary = (
            f"Judging was bypassed: {who} applied the {code(label, 50)} label. "
            "Remove the label to judge this change."
        )
    else:
        sha = short_sha(one_line(by, 40)) if by else "the head commit"
        title = f"skipped · [skip judge] in {sha}"
        summary = (
            f"Judging was bypassed: the head commit {code(sha)} has `[skip judge]` in its "
            "message. Push a commit without it to judge this change."
        )
    return _finish(CheckRunOutput(conclusion="neutral", title=title, summary=summary))


def render_config_error(
    error_message: str,
    *,
    path: str = ".github/judge.yml",
    line: int | None = None,
    key: str | None = None,
) -> CheckRunOutput:
    """Neutral run explaining which line or key of the repository config is wrong;
    with a line it also annotates the config file."""
    where = code(path, 120)
    if line is not None:
        where += f" line {line}"
    if key:
        where += f", key {code(key, 80)}"
    summary = (
        f"The judge configuration in {where} is invalid, so this change was not judged.\n\n"
        + quote_untrusted(error_message, 4_000)
        + "\n\nFix the file and push again; until then the judge stays neutral."
    )
    annotations: list[Annotation] = []
    if line is not None and line >= 1:
        annotations.append(
            _annotation(path, line, line, "warning", error_message, "invalid judge configuration")
        )
    title = "configuration error · " + (f"line {line}" if line else path)
    if key:
        title += f" · {key}"
    return _finish(
        CheckRunOutput(
            conclusion="neutral",
            title=one_line(title, TITLE_TARGET),
            summary=summary,
            annotations=annotations,
        )
    )


def render_override(
    override: VerdictRecord | Verdict,
    decided_by: str,
    mode: Mode,
    *,
    judged: Verdict | None = None,
) -> CheckRunOutput:
    """The run after a human override. `override` is the override record (its
    `final_decision` is the decision) or just the decided verdict; `judged` is what the
    judges had concluded, when known."""
    verdict = override.final_decision if isinstance(override, VerdictRecord) else override
    who = f"@{one_line(decided_by, 39)}"
    lines = [
        f"## Verdict: {verdict.value} (human override)",
        f"{who} decided **{verdict.value}**, overriding the judges.",
    ]
    if judged is not None:
        lines.append(f"The judges had concluded **{judged.value}**.")
    if isinstance(override, VerdictRecord):
        lines.append(f"Recorded at {override.timestamp.isoformat()}.")
    lines.append(_mode_line(verdict, mode))
    lines.append("To restore the judges' verdict, comment `/judge override cancel`.")
    return _finish(
        CheckRunOutput(
            conclusion=conclusion_for(verdict, mode),
            title=one_line(f"{verdict.value} · human override by {who}", TITLE_TARGET),
            summary="\n\n".join(lines),
            actions=[REJUDGE_DEEP.as_dict()],
        )
    )

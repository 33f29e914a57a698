"""What the `judge` check run says: title, summary, text, annotations, buttons.

Pure functions over verdict records; the webhook handlers send what these return. Every
output the app puts on the run is built here, including the runs that judge nothing
(skipped, nothing to judge, invalid configuration, gave up), so every one gets the same
escaping and the same finishing step (`_finish`).

The conclusion is `bot.judging.conclusion.run_conclusion` (verdict by mode, and for an
undetermined verdict its cause: a throttle or budget refusal asks for a maintainer in
blocking mode, an outage fails open; the run says which in words). A change may be
judged as several records (one per rubric group of files, each described by
`bot.judging.group_sections`). Their combined verdict is the worst one, in the order
reject > escalate > improve > undetermined > accept
(`bot.judging.conclusion.VERDICT_SEVERITY`): a part that was not judged keeps the whole
from being accepted, and a rejected part outweighs everything else.

GitHub limits are respected by summarising, never by failing: title <= 255 characters
(kept far shorter), summary and text <= 65,535 characters each (whole tables or
paragraphs are dropped with a note), at most 50 annotations per request
(`bot.judging.annotations.annotation_batches`, `CheckRunOutput.payloads`) and at most
three requested actions. A judged run also carries at most 50 annotations in all, the
most relevant (`bot.judging.annotations.run_annotations`), and its summary says how many
were left out. Every rendered string passes the secret scrubber last.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.gfm import (
    app_line,
    cell,
    code_cell,
    finish,
    fit_blocks,
    one_line,
    plural,
    scrub_secrets,
    table,
)
from bot.judge.records import Tier, Verdict, VerdictRecord
from bot.judge.settings import Mode, OnOutage
from bot.judging.annotations import (
    Annotation,
    RunAnnotations,
    annotation_batches,
    run_annotations,
)
from bot.judging.conclusion import (
    NEXT_STEP,
    Cause,
    conclusion_for,
    run_conclusion,
    run_outcome,
)
from bot.judging.group_sections import files_line, group_details, group_summary
from bot.judging.repo_config import LeftOut
from bot.record_view import scores_glance

CHECK_NAME = "judge"
TITLE_LIMIT = 255
TITLE_TARGET = 120
SUMMARY_LIMIT = 65_535
TEXT_LIMIT = 65_535
MAX_ACTIONS = 3
ACTION_LABEL_LIMIT = 20
ACTION_DESCRIPTION_LIMIT = 40
ACTION_IDENTIFIER_LIMIT = 20
# "Nothing to judge" lists the files left out as bullets; past this many, a count.
MAX_LISTED_LEFT_OUT = 50
NOTE_LIMIT = 500

ACTION_REJUDGE_DEEP = "rejudge-deep"
ACTION_OVERRIDE_ACCEPT = "override-accept"


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
    """Facts about the run that are not in the records. `notes` are the app's own
    sentences about the run (a skip that was not honoured, ...): shown under the
    verdict, their Markdown kept, the names inside them kept from forming HTML."""

    left_out: Sequence[LeftOut] = ()
    disagreement_issue_url: str | None = None
    skipped_by_budget: bool = False
    notes: Sequence[str] = ()
    queue_line: str | None = None
    """The merge queue's line (already rendered by `bot.merging.merge_notices`) when the
    accept put the pull request in a queue."""
    on_outage: OnOutage = OnOutage.PASS
    """What a provider outage concludes in blocking mode (the repository's `on_outage`)."""


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


# --- summary and text -----------------------------------------------------------------


def _mode_line(
    verdict: Verdict, mode: Mode, cause: Cause = Cause.JUDGES, on_outage: OnOutage = OnOutage.PASS
) -> str:
    if mode is Mode.ADVISORY and verdict is Verdict.ACCEPT:
        return "Mode: **advisory**. This check never blocks merging."
    if mode is Mode.ADVISORY:
        blocking = run_conclusion(verdict, Mode.BLOCKING, cause, on_outage)
        return (
            "Mode: **advisory**. This check never blocks merging; in blocking mode "
            f"this verdict would conclude `{blocking}`."
        )
    outage = "never fail it" if on_outage is OnOutage.PASS else "ask for a maintainer"
    return (
        "Mode: **blocking**. Only a change the judges read in full and accepted passes; "
        "reject and improve fail this check; escalate, and a change the judges did not "
        f"read in full, ask for a maintainer; provider outages {outage}."
    )


_REFUSAL_WORD = {
    Cause.THROTTLED: "throttle",
    Cause.BUDGET: "budget",
    Cause.FOUR_EYES: "four eyes",
    Cause.PARTIAL_VIEW: "too long to read whole",
    Cause.UNANSWERED: "no usable answer",
    Cause.UNREAD: "files no judge read",
    Cause.UNCONFIGURED: "no judge configured",
    Cause.JUDGES: "the judges could not be reached",
}
_REFUSAL_WHY = {
    Cause.THROTTLED: "the hourly limit of judgments for this repository was reached",
    Cause.BUDGET: "the day's model budget was used up",
    Cause.FOUR_EYES: "every configured judge belongs to a model family that wrote the change",
    Cause.PARTIAL_VIEW: "no configured judge could read the whole of it",
    Cause.UNANSWERED: "a judge was reached but answered nothing usable",
    Cause.UNREAD: "some watched files could not be given to a judge (listed below)",
    Cause.UNCONFIGURED: "no judge model is configured",
    Cause.JUDGES: "the judges could not be reached and `on_outage` is `block`",
}


def _refused(verdict: Verdict, mode: Mode, cause: Cause, on_outage: OnOutage) -> bool:
    """An undetermined run that, in blocking mode, does not pass."""
    return (
        verdict is Verdict.UNDETERMINED
        and mode is Mode.BLOCKING
        and run_conclusion(verdict, mode, cause, on_outage) != "neutral"
    )


def _not_judged(cause: Cause) -> str:
    return f"not judged: {_REFUSAL_WORD[cause]}; a maintainer may rerun or override"


def _cause_line(verdict: Verdict, mode: Mode, cause: Cause, on_outage: OnOutage) -> str | None:
    """Why an undetermined run has the conclusion it has: a refusal is not a pass in
    blocking mode, an outage fails open unless `on_outage` says block. Said in words."""
    if verdict is not Verdict.UNDETERMINED or cause not in _REFUSAL_WORD:
        return None
    if _refused(verdict, mode, cause, on_outage):
        return (
            f"**This change was {_not_judged(cause)}.** No verdict covers all of it because "
            f"{_REFUSAL_WHY[cause]}. A refusal is not a pass, so in blocking mode this "
            f"check waits for a maintainer, who can {NEXT_STEP[cause]}."
        )
    if cause is Cause.JUDGES:
        return (
            "Undetermined: the judges could not be reached; fail-open, so this check "
            "stays neutral in every mode. Comment `/judge rerun` to try again."
        )
    return f"This change was not judged: {_REFUSAL_WORD[cause]} ({_REFUSAL_WHY[cause]})."


def _left_out_block(details: CheckDetails) -> str:
    if not details.left_out:
        return "Left out: nothing; every changed file in scope was judged."
    # The files no judge read come first: they are why a run is not a pass.
    ranked = sorted(details.left_out, key=lambda item: not item.unread)
    rows = [[code_cell(item.path, 120), cell(item.reason, 200)] for item in ranked[:100]]
    block = f"Left out ({plural(len(details.left_out), 'file')} not judged):\n\n" + table(
        ["File", "Why"], rows
    )
    if len(details.left_out) > 100:
        block += f"\n\n_… {len(details.left_out) - 100} more not listed._"
    return block


def _overall_block(
    records: Sequence[VerdictRecord],
    mode: Mode,
    details: CheckDetails,
    verdict: Verdict,
    cause: Cause,
) -> str:
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
    because = _cause_line(verdict, mode, cause, details.on_outage)
    if because:
        lines.append(because)
    lines.append(_mode_line(verdict, mode, cause, details.on_outage))
    lines.extend(app_line(note, NOTE_LIMIT) for note in details.notes)
    if details.skipped_by_budget:
        lines.append("Some judging was skipped because the cost budget was reached.")
    if details.disagreement_issue_url:
        lines.append(f"The judges disagree; a human decides in {details.disagreement_issue_url}.")
    if details.queue_line:
        lines.append(details.queue_line)
    if verdict is not Verdict.ACCEPT:
        lines.append(
            "Someone with write access who is not an author can comment "
            "`/judge override accept` (or `reject`), or `/judge rerun`."
        )
    return "\n\n".join(lines)


def _annotations_line(annotations: RunAnnotations) -> str:
    """Says what the cap left out, so nobody takes the annotations for all there is."""
    if not annotations.left_out:
        return ""
    return (
        f"Annotations: {len(annotations.shown)} of {annotations.total:,} shown on the files "
        "(hard findings first, then soft findings, then the judges' suggestions; by file "
        f"and line); {annotations.left_out:,} left out. The findings table below lists more."
    )


def _title(
    records: Sequence[VerdictRecord],
    mode: Mode,
    verdict: Verdict,
    cause: Cause,
    on_outage: OnOutage,
) -> str:
    worst = next((r for r in records if r.final_decision is verdict), records[0])
    files = {f for r in records for f in r.files}
    count = plural(len(files), "file")
    if len(records) > 1:
        count += f" in {len(records)} groups"
    if _refused(verdict, mode, cause, on_outage):
        return one_line(f"{_not_judged(cause)} · {count}", TITLE_TARGET)
    if verdict is Verdict.UNDETERMINED and cause in _REFUSAL_WORD and cause is not Cause.JUDGES:
        head = f"undetermined (not judged: {_REFUSAL_WORD[cause]})"
    else:
        head = verdict.value
    overrides = [r for r in records if r.human_override]
    if overrides and all(r.human_override for r in records):
        who = overrides[0].decided_by
        head += f" (override by @{one_line(who, 39)})" if who else " (override)"
    glance = scores_glance(worst.scores) if worst.scores else "no scores"
    return one_line(f"{head} · {glance} · {count}", TITLE_TARGET)


def _actions(verdict: Verdict, overridden: bool) -> list[dict[str, str]]:
    actions = [REJUDGE_DEEP]
    if verdict is not Verdict.ACCEPT and not overridden:
        actions.append(OVERRIDE_ACCEPT)
    return [a.as_dict() for a in actions[:MAX_ACTIONS]]


def finish_output(output: CheckRunOutput) -> CheckRunOutput:
    # Every render function ends here, so no output reaches GitHub unscrubbed or over a
    # limit, whatever its parts were built from.
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
        # Files were owed a judgment (else the run says "nothing to judge") and none
        # could be read: not a pass in blocking mode.
        conclusion = run_conclusion(Verdict.UNDETERMINED, mode, Cause.UNREAD, details.on_outage)
        return finish_output(
            CheckRunOutput(
                conclusion=conclusion,
                title="undetermined · nothing was judged",
                summary="\n\n".join(
                    [
                        "## Verdict: undetermined",
                        "No file group was judged.",
                        *filter(
                            None,
                            [
                                _cause_line(
                                    Verdict.UNDETERMINED, mode, Cause.UNREAD, details.on_outage
                                )
                            ],
                        ),
                        *(app_line(note, NOTE_LIMIT) for note in details.notes),
                        _left_out_block(details),
                    ]
                ),
            )
        )
    verdict, cause = run_outcome(records, unread=any(item.unread for item in details.left_out))
    annotations = run_annotations(records, mode)
    total = len(records)
    groups = [group_summary(i, total, r) for i, r in enumerate(records, start=1)]
    summary = fit_blocks(
        [
            _overall_block(records, mode, details, verdict, cause),
            _annotations_line(annotations),
            *groups,
            _left_out_block(details),
        ],
        SUMMARY_LIMIT,
        what="summary section",
    )
    text_blocks = [
        block
        for index, record in enumerate(records, start=1)
        for block in group_details(record, f"Group {index} · " if total > 1 else "")
    ]
    text = fit_blocks(text_blocks, TEXT_LIMIT, what="detail section")
    overridden = all(r.human_override for r in records)
    return finish_output(
        CheckRunOutput(
            conclusion=run_conclusion(verdict, mode, cause, details.on_outage),
            title=_title(records, mode, verdict, cause, details.on_outage),
            summary=summary,
            text=text,
            annotations=annotations.shown,
            actions=_actions(verdict, overridden),
        )
    )


def render_in_progress(files: Sequence[str], *, tier: Tier | None = None) -> CheckRunOutput:
    """The run while judges work (no conclusion yet)."""
    stage = f" ({tier.value} judge)" if tier else ""
    summary = "Independent judges are scoring this change."
    if files:
        summary += " Files:\n\n" + files_line(files)
    # Before the file list is fetched there is nothing to count yet.
    what = plural(len(files), "file") if files else "this change"
    return finish_output(
        CheckRunOutput(
            conclusion=None,
            status="in_progress",
            title=f"Judging {what}{stage}",
            summary=summary,
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
        f"@{cell(decided_by, 39)} decided **{verdict.value}**, overriding the judges.",
    ]
    if judged is not None:
        lines.append(f"The judges had concluded **{judged.value}**.")
    if isinstance(override, VerdictRecord):
        lines.append(f"Recorded at {override.timestamp.isoformat()}.")
    lines.append(_mode_line(verdict, mode))
    lines.append("To restore the judges' verdict, comment `/judge override cancel`.")
    return finish_output(
        CheckRunOutput(
            conclusion=conclusion_for(verdict, mode),
            title=one_line(f"{verdict.value} · human override by {who}", TITLE_TARGET),
            summary="\n\n".join(lines),
            actions=[REJUDGE_DEEP.as_dict()],
        )
    )

"""The `judge` check run's conclusion: one table, cause x mode (docs/judging.md shows it).

GitHub counts `neutral` and `skipped` as a passing required check, so in blocking mode
the table keeps a pass for three things: the judges accepted every watched byte of the
head (`success`), nothing was owed (no watched content changed, or a skip granted for
this head by a person entitled to grant it), and a provider outage (the seeds'
fail-open rule, which `on_outage: block` turns into a refusal). Everything else an
author could bring about (a throttle, a budget, a held loop, CI they broke, content no
judge could read) asks for a maintainer with `action_required`.

    verdict        advisory   blocking
    accept         success    success
    improve        neutral    failure
    reject         neutral    failure
    escalate       neutral    action_required
    undetermined   neutral    by cause (`UNDETERMINED_BLOCKING`)

An undetermined verdict (and every run that judged nothing) has a `Cause`: the record's
`mode` when a rule settled it without a model (`cause_of`), or the flow's reason for
not judging at all. `conclusion_for` is the table without causes (overrides use it: a
human decided); `run_conclusion` is the one every run the judges or the flow finish uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum

from bot.judge.engine import rounds
from bot.judge.records import Verdict, VerdictRecord
from bot.judge.settings import Mode, OnOutage


def conclusion_for(verdict: Verdict, mode: Mode) -> str:
    """Check-run conclusion for a decided verdict (table in the module docstring)."""
    if verdict is Verdict.ACCEPT:
        return "success"
    if verdict is Verdict.UNDETERMINED or mode is Mode.ADVISORY:
        return "neutral"
    if verdict is Verdict.ESCALATE:
        return "action_required"
    return "failure"


class Cause(StrEnum):
    """Why a run has its verdict, as far as the conclusion cares.

    The first seven are `mode` values of a verdict record (bot.judge.engine.judgment
    writes them when no model decided; JUDGES stands for any tier's); UNANSWERED is read
    from the failed round's error. The rest are the flow's reasons for finishing a run
    without asking the judges."""

    JUDGES = "judges"  # the judges were asked; undetermined then means they failed
    THROTTLED = "throttled"
    BUDGET = "budget"
    UNCONFIGURED = "unconfigured"
    FOUR_EYES = "four-eyes"
    MECHANICAL = "mechanical"
    PARTIAL_VIEW = "partial-view"  # no configured judge could read the whole change
    UNANSWERED = "unanswered"  # a judge was reached and answered nothing usable
    NOTHING_TO_JUDGE = "nothing-to-judge"
    SKIP_GRANTED = "skip-granted"
    CI_WAIT = "ci-wait"
    HELD = "held"  # loop prevention: a tripped breaker, the cooldown
    UNREAD = "unread"  # a watched file no judge read (binary, too long, too many files)
    CONFIG_ERROR = "config-error"
    GAVE_UP = "gave-up"  # the App kept failing to finish the judgment
    NO_KEYS = "no-keys"  # a fork's pull request in a workflow: the judges' keys are withheld


# Blocking mode, undetermined verdict: which causes pass. Every cause has a row (a test
# fails for a new one without); the outage row is the one setting (`on_outage`).
UNDETERMINED_BLOCKING: Mapping[Cause, str] = {
    Cause.JUDGES: "neutral",  # a provider outage fails open; on_outage: block refuses
    Cause.NOTHING_TO_JUDGE: "neutral",
    Cause.SKIP_GRANTED: "neutral",
    Cause.THROTTLED: "action_required",
    Cause.BUDGET: "action_required",
    Cause.UNCONFIGURED: "action_required",
    Cause.FOUR_EYES: "action_required",
    Cause.MECHANICAL: "action_required",  # never undetermined; here for completeness
    Cause.PARTIAL_VIEW: "action_required",
    Cause.UNANSWERED: "action_required",  # the content can steer a judge off its format
    Cause.CI_WAIT: "action_required",
    Cause.HELD: "action_required",
    Cause.UNREAD: "action_required",
    Cause.CONFIG_ERROR: "action_required",
    Cause.GAVE_UP: "action_required",
    Cause.NO_KEYS: "action_required",
}

# What a maintainer can do about each refusal, said on the run in blocking mode.
NEXT_STEP: Mapping[Cause, str] = {
    Cause.JUDGES: "comment `/judge rerun` once the judges answer again, or "
    "`/judge override accept|reject`",
    Cause.THROTTLED: "comment `/judge rerun` after the hour, or `/judge override accept|reject`",
    Cause.BUDGET: "comment `/judge rerun` tomorrow or after raising the budget, or "
    "`/judge override accept|reject`",
    Cause.UNCONFIGURED: "configure the judges (JUDGE_* settings), then comment `/judge rerun`; "
    "or `/judge override accept|reject`",
    Cause.FOUR_EYES: "add a judge of another model family (JUDGE_ALTERNATE_MODELS), or "
    "comment `/judge override accept|reject`",
    Cause.MECHANICAL: "comment `/judge override accept|reject`",
    Cause.PARTIAL_VIEW: "configure a judge that reads more (JUDGE_DEEP_MAX_CHARS), or comment "
    "`/judge override accept|reject` after reading it yourself",
    Cause.UNANSWERED: "comment `/judge rerun`, or `/judge override accept|reject` after "
    "reading it (content that steers a judge off its answer format is suspect)",
    Cause.NOTHING_TO_JUDGE: "nothing",
    Cause.SKIP_GRANTED: "nothing",
    Cause.CI_WAIT: "re-run the failed checks, or comment `/judge rerun` to judge now",
    Cause.HELD: "comment `/judge rerun` to judge it anyway, or `/judge override accept|reject`",
    Cause.UNREAD: "exclude such files in `paths.exclude` if they need no judge, or comment "
    "`/judge override accept|reject` after reading them yourself",
    Cause.CONFIG_ERROR: "fix `.github/judge.yml` on the default branch, then comment "
    "`/judge rerun`",
    Cause.GAVE_UP: "comment `/judge rerun`, or `/judge override accept|reject`",
    Cause.NO_KEYS: "read the change and comment `/judge override accept|reject`, or "
    "comment `/judge rerun` to judge it with the keys",
}


# Which cause speaks for several undetermined groups: a refusal first, so one
# throttled group cannot hide behind another group's outage.
_CAUSE_PRIORITY: tuple[Cause, ...] = (
    Cause.BUDGET,
    Cause.THROTTLED,
    Cause.FOUR_EYES,
    Cause.PARTIAL_VIEW,
    Cause.UNANSWERED,
    Cause.UNCONFIGURED,
    Cause.MECHANICAL,
    Cause.JUDGES,
)


def cause_of(record: VerdictRecord) -> Cause:
    """The cause behind one record: its `mode` when a rule settled it without a model,
    a budget cut when the day's calls ran out mid-way, else the judges."""
    try:
        cause = Cause(record.mode)
    except ValueError:
        cause = Cause.JUDGES
    if cause not in _CAUSE_PRIORITY:
        cause = Cause.JUDGES  # a record's mode never names one of the flow's causes
    if cause is not Cause.JUDGES or record.final_decision is not Verdict.UNDETERMINED:
        return cause
    errors = [r.error or "" for r in record.previous_rounds]
    # The day's calls ran out between attempts: the budget stopped the judges.
    if any(error.startswith(rounds.BUDGET_CUT) for error in errors):
        return Cause.BUDGET
    # Any round the judge could not answer for the change's own sake, not only the last:
    # a later tier's outage must not turn quick's overflow into a pass.
    if any(error.startswith(rounds.UNANSWERED) for error in errors):
        return Cause.UNANSWERED
    return cause


def run_cause(records: Sequence[VerdictRecord]) -> Cause:
    """The cause behind the combined verdict of several records: among the records
    that have that verdict, the one that matters most (refusals first)."""
    verdict = combined_verdict(r.final_decision for r in records)
    causes = {cause_of(r) for r in records if r.final_decision is verdict}
    return next((c for c in _CAUSE_PRIORITY if c in causes), Cause.JUDGES)


def run_outcome(records: Sequence[VerdictRecord], *, unread: bool = False) -> tuple[Verdict, Cause]:
    """The run's verdict and cause. A watched file no judge read keeps the run from an
    accept: the verdict is at best undetermined, for that reason (`Cause.UNREAD`), unless
    a refusal of the judges' own speaks for it."""
    verdicts = [r.final_decision for r in records]
    verdict = combined_verdict([*verdicts, Verdict.UNDETERMINED] if unread else verdicts)
    cause = run_cause(records) if records else Cause.UNREAD
    if unread and verdict is Verdict.UNDETERMINED and cause in (Cause.JUDGES, Cause.MECHANICAL):
        cause = Cause.UNREAD
    return verdict, cause


def run_conclusion(
    verdict: Verdict, mode: Mode, cause: Cause, on_outage: OnOutage = OnOutage.PASS
) -> str:
    """The run's conclusion: `conclusion_for`, except that an undetermined verdict in
    blocking mode passes only for the causes `UNDETERMINED_BLOCKING` lets pass (and an
    outage only while `on_outage` is pass)."""
    if verdict is not Verdict.UNDETERMINED or mode is Mode.ADVISORY:
        return conclusion_for(verdict, mode)
    if cause is Cause.JUDGES and on_outage is OnOutage.BLOCK:
        return "action_required"
    return UNDETERMINED_BLOCKING[cause]


# Worst first. Reject is the strongest statement against the content; escalate needs a
# human; improve still blames the content; undetermined means part of the change was
# not judged, so the whole cannot be called accepted; accept only when every part is.
VERDICT_SEVERITY: tuple[Verdict, ...] = (
    Verdict.REJECT,
    Verdict.ESCALATE,
    Verdict.IMPROVE,
    Verdict.UNDETERMINED,
    Verdict.ACCEPT,
)


def combined_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """The worst of several verdicts (see VERDICT_SEVERITY); undetermined when none."""
    seen = set(verdicts)
    for verdict in VERDICT_SEVERITY:
        if verdict in seen:
            return verdict
    return Verdict.UNDETERMINED

"""The `judge` check run's conclusion: verdict by mode, and why nobody judged.

Kept apart from rendering because more than the renderer needs it: an override
command states the conclusion it will set before any run is rendered.

    verdict        advisory   blocking
    accept         success    success
    improve        neutral    failure
    reject         neutral    failure
    escalate       neutral    action_required
    undetermined   neutral    neutral          (the judges failed: an outage)
                   neutral    action_required  (throttle or budget refusal)

Only accept succeeds and only blocking mode fails. An undetermined verdict has a cause
(`Cause`, read from the record's `mode`). A provider outage is never the author's
fault, so it never fails a run (fail-open, the seeds' rule). A throttle or budget
refusal is different: an author can exhaust the hourly throttle or the day's budget on
purpose, and a neutral conclusion passes a required check, so in blocking mode a
refusal asks for a maintainer (`action_required`) instead. The other causes settle
before any model is asked and stay neutral: no judge configured is a setup matter,
a mechanical verdict is never undetermined, and four-eyes is the panel's own limit.

`conclusion_for` is the table without causes (overrides use it: a human decided);
`run_conclusion` is the one the judges' run uses.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from enum import StrEnum

from bot.judge.config import Mode
from bot.judge.records import Verdict, VerdictRecord


def conclusion_for(verdict: Verdict, mode: Mode) -> str:
    """Check-run conclusion for a verdict (table in the module docstring)."""
    if verdict is Verdict.ACCEPT:
        return "success"
    if verdict is Verdict.UNDETERMINED or mode is Mode.ADVISORY:
        return "neutral"
    if verdict is Verdict.ESCALATE:
        return "action_required"
    return "failure"


class Cause(StrEnum):
    """Why a record has its verdict, as far as the conclusion cares. Every value but
    JUDGES is a `mode` that bot.judge.engine.judgment writes when no model was asked."""

    JUDGES = "judges"  # the judges were asked; undetermined then means they failed
    THROTTLED = "throttled"
    BUDGET = "budget"
    UNCONFIGURED = "unconfigured"
    FOUR_EYES = "four-eyes"
    MECHANICAL = "mechanical"


# Refusals the author could bring about: exhausting the throttle or budget, or naming
# every judge's model family in commit trailers so nobody independent is left to judge.
# None of them may pass a required check.
REFUSALS = frozenset({Cause.THROTTLED, Cause.BUDGET, Cause.FOUR_EYES})

# bot.judge.engine.rounds gives up a round with this when the day's model calls run out
# between attempts; the judges were stopped by the budget, not failing.
_BUDGET_CUT = "daily model-call budget"

# Which cause speaks for several undetermined groups: a refusal first, so one
# throttled group cannot hide behind another group's outage.
_CAUSE_PRIORITY: tuple[Cause, ...] = (
    Cause.BUDGET,
    Cause.THROTTLED,
    Cause.FOUR_EYES,
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
    if cause is Cause.JUDGES and any(
        (r.error or "").startswith(_BUDGET_CUT) for r in record.previous_rounds
    ):
        return Cause.BUDGET
    return cause


def run_cause(records: Sequence[VerdictRecord]) -> Cause:
    """The cause behind the combined verdict of several records: among the records
    that have that verdict, the one that matters most (refusals first)."""
    verdict = combined_verdict(r.final_decision for r in records)
    causes = {cause_of(r) for r in records if r.final_decision is verdict}
    return next((c for c in _CAUSE_PRIORITY if c in causes), Cause.JUDGES)


def run_conclusion(verdict: Verdict, mode: Mode, cause: Cause) -> str:
    """The judges' run: `conclusion_for`, except that a throttle or budget refusal
    asks for a maintainer in blocking mode instead of passing."""
    if verdict is Verdict.UNDETERMINED and mode is Mode.BLOCKING and cause in REFUSALS:
        return "action_required"
    return conclusion_for(verdict, mode)


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

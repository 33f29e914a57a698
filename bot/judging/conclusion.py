"""The `judge` check run's conclusion: verdict by mode, nothing else.

Kept apart from rendering because more than the renderer needs it: an override
command states the conclusion it will set before any run is rendered.

    verdict        advisory   blocking
    accept         success    success
    improve        neutral    failure
    reject         neutral    failure
    escalate       neutral    action_required
    undetermined   neutral    neutral      (outage, budget: never blocks anyone)

Only accept succeeds and only blocking mode fails; undetermined means the judges could
not answer (a provider outage, the cost budget), which is never the author's fault, so
it never fails a run in either mode.
"""

from __future__ import annotations

from collections.abc import Iterable

from bot.judge.config import Mode
from bot.judge.records import Verdict


def conclusion_for(verdict: Verdict, mode: Mode) -> str:
    """Check-run conclusion for a verdict (table in the module docstring)."""
    if verdict is Verdict.ACCEPT:
        return "success"
    if verdict is Verdict.UNDETERMINED or mode is Mode.ADVISORY:
        return "neutral"
    if verdict is Verdict.ESCALATE:
        return "action_required"
    return "failure"


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

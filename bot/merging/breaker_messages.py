"""What people read when loop prevention acts: the neutral `judge` run of a held
judgment, the line and comment of a trip. Pure."""

from __future__ import annotations

from datetime import datetime

from bot.gfm import COMMENT_LIMIT, code, finish
from bot.judging.check_run import CheckRunOutput, finish_output
from bot.merging.breaker import NEEDS_HUMAN_LABEL, BreakerPolicy, Hold, HoldReason, Trip

RESET = "An authorised `/judge rerun` judges the head now and turns automatic judging back on."


def trip_reason(trip: Trip, policy: BreakerPolicy) -> str:
    if trip is Trip.DOOM_LOOP:
        return (
            f"the same content came back {policy.doom_loop_retries} times with the same "
            "verdict other than accept"
        )
    return f"{policy.non_approve_retries} consecutive judgments were not accept"


def trip_line(trip: Trip, policy: BreakerPolicy) -> str:
    """The line under the verdict in the `judge` run that tripped the breaker."""
    return (
        f"Automatic judging stopped ({trip.value} circuit breaker): "
        f"{trip_reason(trip, policy)}. New pushes wait for a person. {RESET}"
    )


def trip_comment(trip: Trip, policy: BreakerPolicy) -> str:
    text = (
        f"**[Needs-Human]** {trip_line(trip, policy)}\n\n"
        f"Label: {code(NEEDS_HUMAN_LABEL)}. It comes off with the `/judge rerun`."
    )
    return finish(text, COMMENT_LIMIT)


def _hold_summary(hold: Hold, policy: BreakerPolicy) -> tuple[str, str]:
    if hold.reason is HoldReason.TRIPPED:
        assert hold.trip is not None
        return (
            f"not judged · {hold.trip.value} circuit breaker",
            f"Not judged automatically: the {hold.trip.value} circuit breaker tripped "
            f"({trip_reason(hold.trip, policy)}), so a person looks first. {RESET}",
        )
    if hold.reason is HoldReason.NO_REQUEUE:
        return (
            "not judged · waiting for /judge rerun",
            "Not judged automatically: after a verdict other than accept this repository "
            "judges new pushes only when a person asks. Comment `/judge rerun` to judge it.",
        )
    assert hold.until is not None
    return (
        "not judged · cooling down",
        "Not judged automatically: this content was judged other than accept less than "
        f"{_duration(policy)} ago, and it is not judged again before {_clock(hold.until)}. "
        "Push a change, or comment `/judge rerun` to judge it now.",
    )


def hold_output(hold: Hold, policy: BreakerPolicy) -> CheckRunOutput:
    """The neutral run of an automatic judgment loop prevention held back."""
    title, summary = _hold_summary(hold, policy)
    return finish_output(CheckRunOutput(conclusion="neutral", title=title, summary=summary))


def _duration(policy: BreakerPolicy) -> str:
    seconds = int(policy.cooldown.total_seconds())
    return f"{seconds // 60} min {seconds % 60} s" if seconds >= 60 else f"{seconds} s"


def _clock(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M:%S UTC")

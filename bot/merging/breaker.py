"""Loop prevention (seed 004): when a pull request's new pushes stop being judged
automatically, and what is remembered to decide it. Pure.

    after_judgment(state, verdict, fingerprint, now, policy) -> the new state, and the trip
        accept ──────────────> everything forgotten (a trip too)
        reject/improve/escalate by the judges ──> one more consecutive non-accept; one more
            sighting of this content with this verdict; trips at the configured counts
        anything else (skipped, undetermined, a person's override) ──> unchanged
    automatic_hold(state, now, policy, content) -> why an automatic judgment is held, or None

An authorised `/judge rerun` forgets the state (`BreakerState()`), so people always can
judge again; only automatic judgments (pushes, pull-request events) are held.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from datetime import datetime, timedelta

from pydantic import BaseModel, ConfigDict

NEEDS_HUMAN_LABEL = "judge:needs-human"
NON_ACCEPT = frozenset({"reject", "improve", "escalate"})
# Sightings kept per pull request: enough for any sane threshold, bounded for storage.
MAX_SIGHTINGS = 32


class Trip(enum.StrEnum):
    NON_APPROVE = "non-approve"
    DOOM_LOOP = "doom-loop"


class HoldReason(enum.StrEnum):
    TRIPPED = "tripped"
    COOLDOWN = "cooldown"
    NO_REQUEUE = "no-requeue"


@dataclass(frozen=True)
class BreakerPolicy:
    """Thresholds of 0 never trip."""

    non_approve_retries: int
    doom_loop_retries: int
    cooldown: timedelta
    requeue_on_non_approve: bool = True


class BreakerState(BaseModel):
    """One pull request's recent outcomes. `sightings` maps a content fingerprint and a
    verdict to the times the judges gave that verdict on that content."""

    model_config = ConfigDict(frozen=True)

    non_accepts: int = 0
    sightings: dict[str, int] = {}
    last_non_accept_at: datetime | None = None
    tripped: Trip | None = None
    trips: int = 0
    counted_sha: str | None = None
    """The head whose judgment was counted last: a retried delivery, or a pull-request
    event judging a sha a push judged, counts once."""


@dataclass(frozen=True)
class Hold:
    reason: HoldReason
    trip: Trip | None = None
    until: datetime | None = None


def after_judgment(
    state: BreakerState,
    verdict: str,
    content: str | None,
    sha: str,
    now: datetime,
    policy: BreakerPolicy,
) -> tuple[BreakerState, Trip | None]:
    """The state after a final outcome at `sha`, and the breaker it trips now (None: none
    newly). `content` is the judged content's fingerprint, None for a person's decision."""
    if verdict == "accept":
        return BreakerState(trips=state.trips), None
    if verdict not in NON_ACCEPT or content is None or sha == state.counted_sha:
        return state, None
    sighting = f"{content}:{verdict}"
    sightings = {k: v for k, v in state.sightings.items() if k != sighting}
    seen = state.sightings.get(sighting, 0) + 1
    kept = dict(list(sightings.items())[-(MAX_SIGHTINGS - 1) :])
    non_accepts = state.non_accepts + 1
    trip: Trip | None = None
    if state.tripped is None:
        if 0 < policy.doom_loop_retries <= seen:
            trip = Trip.DOOM_LOOP
        elif 0 < policy.non_approve_retries <= non_accepts:
            trip = Trip.NON_APPROVE
    updated = BreakerState(
        non_accepts=non_accepts,
        sightings={**kept, sighting: seen},
        last_non_accept_at=now,
        tripped=state.tripped or trip,
        trips=state.trips + (trip is not None),
        counted_sha=sha,
    )
    return updated, trip


def automatic_hold(
    state: BreakerState | None,
    now: datetime,
    policy: BreakerPolicy,
    *,
    content: str | None,
    sha: str,
) -> Hold | None:
    """Why an automatic judgment of the pull request's `content` at `sha` waits, or None:
    a tripped breaker; after a non-accept, any push when the repository does not re-judge
    automatically; content already judged other than accept, within the cooldown. The
    sha counted last is never held: its judgment is being retried or taken over."""
    if state is None or state.counted_sha == sha:
        return None
    if state.tripped is not None:
        return Hold(HoldReason.TRIPPED, trip=state.tripped)
    if state.last_non_accept_at is None:
        return None
    if not policy.requeue_on_non_approve:
        return Hold(HoldReason.NO_REQUEUE)
    seen = any(key.startswith(f"{content}:") for key in state.sightings)
    until = state.last_non_accept_at + policy.cooldown
    if seen and now < until:
        return Hold(HoldReason.COOLDOWN, until=until)
    return None

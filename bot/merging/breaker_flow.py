"""Loop prevention carried out: the breaker state of each pull request in storage (kv),
the hold on automatic judgments, and what a trip or a reset does on GitHub.

    judging, before the judges:  held(context, target) ─> a neutral run's output, or None
    approval.on_concluded:       count_outcome(...) ─> trip: label, comment, one notice;
                                 the run's line
    commands, /judge rerun:      reset(...) ─> state forgotten, the label taken off

The decisions are `breaker.after_judgment` and `breaker.automatic_hold`.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from bot.intake.dispatch import Context
from bot.judging.check_run import CheckRunOutput
from bot.judging.target import Target
from bot.merging.breaker import (
    NEEDS_HUMAN_LABEL,
    BreakerPolicy,
    BreakerState,
    Trip,
    after_judgment,
    automatic_hold,
)
from bot.merging.breaker_messages import hold_output, trip_comment, trip_line, trip_reason
from bot.merging.github_calls import MergeCalls
from bot.notify.notices import Notice, NoticeKind
from bot.settings.merge import MergeSettings
from bot.storage.base import Storage

log = logging.getLogger(__name__)

BREAKER_NAMESPACE = "circuit-breaker"


def breaker_key(repository: str, pull_number: int) -> str:
    return f"{repository.lower()}#{pull_number}"


def policy_of(settings: MergeSettings) -> BreakerPolicy:
    return BreakerPolicy(
        non_approve_retries=settings.non_approve_circuit_breaker_retries,
        doom_loop_retries=settings.doom_loop_circuit_breaker_retries,
        cooldown=timedelta(milliseconds=settings.awaiting_retry_cooldown_ms),
        requeue_on_non_approve=settings.requeue_on_non_approve,
    )


async def load_breaker(storage: Storage, repository: str, pull_number: int) -> BreakerState | None:
    raw = await storage.kv_get(BREAKER_NAMESPACE, breaker_key(repository, pull_number))
    return None if raw is None else BreakerState.model_validate(raw)


async def save_breaker(
    storage: Storage, repository: str, pull_number: int, state: BreakerState
) -> None:
    key = breaker_key(repository, pull_number)
    await storage.kv_put(BREAKER_NAMESPACE, key, state.model_dump(mode="json"))


async def forget_breaker(storage: Storage, repository: str, pull_number: int) -> None:
    await storage.kv_delete(BREAKER_NAMESPACE, breaker_key(repository, pull_number))


async def held(context: Context, target: Target, content: str | None) -> CheckRunOutput | None:
    """The neutral run's output when this automatic judgment waits for a person; explicit
    re-judges (already authorised) are never held."""
    if target.pull_number is None or target.bypass_cache:
        return None
    policy = policy_of(context.services.merge)
    state = await load_breaker(context.storage, target.repository, target.pull_number)
    hold = automatic_hold(state, context.clock(), policy, content=content, sha=target.head_sha)
    return None if hold is None else hold_output(hold, policy)


async def count_outcome(
    context: Context, target: Target, verdict: str, content: str | None
) -> str | None:
    """Count a final outcome; when it trips a breaker, label and tell, and return the line
    for the `judge` run."""
    assert target.pull_number is not None
    storage = context.storage
    policy = policy_of(context.services.merge)
    state = await load_breaker(storage, target.repository, target.pull_number)
    before = state or BreakerState()
    after, trip = after_judgment(before, verdict, content, target.head_sha, context.clock(), policy)
    if after != before:
        await save_breaker(storage, target.repository, target.pull_number, after)
    if trip is None:
        return None
    client = await context.services.github.installation_client(target.installation_id)
    calls = MergeCalls(client, target.repository)
    await calls.add_labels(target.pull_number, [NEEDS_HUMAN_LABEL])
    await calls.comment(target.pull_number, trip_comment(trip, policy))
    _notify(context, target, trip, policy, after.trips)
    log.info(
        "%s circuit breaker tripped on %s#%s",
        trip.value,
        target.repository,
        target.pull_number,
        extra=context.log_extra(),
    )
    return trip_line(trip, policy)


def _notify(
    context: Context, target: Target, trip: Trip, policy: BreakerPolicy, trips: int
) -> None:
    notifier = context.services.notifier
    if notifier is None:
        return
    where = f"{target.repository}#{target.pull_number}"
    url = f"{target.html_url}/pull/{target.pull_number}" if target.html_url else None
    notifier.post(
        Notice(
            kind=NoticeKind.CIRCUIT_BREAKER,
            key=f"circuit-breaker:{where.lower()}:{trips}",
            summary=f"{where}: {trip_reason(trip, policy)}; new pushes wait for `/judge rerun`.",
            repository=target.repository,
            url=url,
            facts={"breaker": trip.value, "pull_request": where, "head_sha": target.head_sha},
        )
    )


async def reset(context: Context, target: Target) -> None:
    """An authorised re-judge forgets the pull request's breaker state."""
    if target.pull_number is None:
        return
    state = await load_breaker(context.storage, target.repository, target.pull_number)
    if state is None:
        return
    await forget_breaker(context.storage, target.repository, target.pull_number)
    if state.tripped is not None:
        client = await context.services.github.installation_client(target.installation_id)
        await MergeCalls(client, target.repository).remove_label(
            target.pull_number, NEEDS_HUMAN_LABEL
        )

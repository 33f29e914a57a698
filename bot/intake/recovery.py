"""Asking GitHub again for deliveries it failed to hand us while the server was down.

Shortly after start and every `JUDGE_REDELIVER_INTERVAL_SECONDS`, one pass:

    GET /app/hook/deliveries (newest first, paged by cursor, back to the window's start)
      -> missed.select_missed (pure: no 2xx attempt, not stored)
      -> claim each event in kv storage -> POST /app/hook/deliveries/{id}/attempts

GitHub then sends the event again, with its original `X-GitHub-Delivery`, to the webhook URL,
and intake stores it as any other delivery: nothing here writes a delivery.

Claims keep replicas (and passes) from asking twice. An event's claim key carries the number
of redeliveries its log already shows (`guid:n`), so every replica reading the same log
competes for the same key and one wins (`kv_put_if_absent`). Once GitHub logs the requested
redelivery, a failed one (the server went down again) makes `n` grow and the event may be
asked for again, up to `MAX_REQUESTS_PER_EVENT` times; a delivered one drops the event's
claims. Claims of events that never got through stay, a row each.

A pass is bounded (`MAX_LOG_ENTRIES` entries read, `MAX_REDELIVERIES` requests) and stops at
the first sign that GitHub cannot take more: a rate-limit pause (`RateLimited`), a 5xx or no
connection. A claim whose request did not go out is given back, so the next pass asks again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from aiohttp import web
from gidgethub import BadRequest, GitHubBroken

from bot.github.client import (
    GitHubApp,
    GitHubClient,
    GitHubUnavailable,
    RateLimited,
    describe_failure,
)
from bot.intake.dispatch import is_github_failure
from bot.intake.missed import (
    LoggedAttempt,
    Missed,
    lookback,
    parse_attempt,
    redelivered_since,
    select_missed,
    undelivered_guids,
)
from bot.lifetime import CleanupContext, Clock
from bot.metrics import Metrics
from bot.services import ServiceHub
from bot.settings import Settings
from bot.storage.base import Storage

log = logging.getLogger(__name__)

CLAIMS_NAMESPACE = "missed-delivery-claims"
PAGE_SIZE = 100  # GitHub's maximum
MAX_LOG_ENTRIES = 5000
MAX_REDELIVERIES = 50
MAX_REQUESTS_PER_EVENT = 3
FIRST_PASS_AFTER_SECONDS = 10.0


@dataclass(frozen=True)
class RecoveryPolicy:
    window: timedelta
    interval: float
    max_log_entries: int = MAX_LOG_ENTRIES
    max_redeliveries: int = MAX_REDELIVERIES

    @classmethod
    def from_settings(cls, settings: Settings) -> RecoveryPolicy:
        return cls(
            window=lookback(settings.redeliver_window_hours, settings.delivery_retention_days),
            interval=settings.redeliver_interval_seconds,
        )


@dataclass
class PassReport:
    """What one pass did: for the log line, and for tests."""

    read: int = 0
    requested: list[str] = field(default_factory=list)
    stopped: str | None = None


class _StopPass(Exception):
    """GitHub cannot take more now; `reason` labels the failure metric."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _stop_reason(exc: Exception) -> str | None:
    """The failure metric's reason for an error that ends the pass, None for others."""
    if isinstance(exc, RateLimited):
        return "rate-limited"
    if isinstance(exc, GitHubUnavailable | GitHubBroken):
        return "unavailable"
    return None


async def read_log(client: GitHubClient, since: datetime, max_entries: int) -> list[LoggedAttempt]:
    """The log's entries newer than `since` (newest first, as GitHub lists them), at most
    `max_entries`; entries that cannot be read are skipped."""
    attempts: list[LoggedAttempt] = []
    read = 0
    async for item in client.getiter(f"/app/hook/deliveries?per_page={PAGE_SIZE}"):
        read += 1
        attempt = parse_attempt(item)
        if attempt is not None:
            if attempt.delivered_at <= since:
                return attempts  # the rest are older still: no further page is fetched
            attempts.append(attempt)
        if read >= max_entries:
            log.warning(
                "webhook delivery log: stopped after %d entries, older ones in the window "
                "are not checked this pass",
                read,
            )
            break
    return attempts


def _claim_key(guid: str, redeliveries: int) -> str:
    return f"{guid}:{redeliveries}"


async def _claim(storage: Storage, key: str, now: datetime, attempt_id: int) -> bool:
    """Whether this pass may ask for the redelivery `key` names (nobody asked yet). The row
    keeps when and which attempt; nothing reads them back."""
    row = {"requested_at": now.isoformat(), "attempt_id": attempt_id}
    return await storage.kv_put_if_absent(CLAIMS_NAMESPACE, key, row)


async def _has_claim(storage: Storage, key: str) -> bool:
    return await storage.kv_get(CLAIMS_NAMESPACE, key) is not None


async def _forget_claim(storage: Storage, key: str) -> None:
    await storage.kv_delete(CLAIMS_NAMESPACE, key)


async def _drop_claims(storage: Storage, guid: str) -> None:
    for n in range(MAX_REQUESTS_PER_EVENT):
        key = _claim_key(guid, n)
        if not await _has_claim(storage, key):
            return
        await _forget_claim(storage, key)


async def _request(
    client: GitHubClient, storage: Storage, metrics: Metrics, missed: Missed, key: str
) -> bool:
    """Ask for one redelivery; True if GitHub took it. Raises _StopPass when it cannot
    take more, after giving the claim back."""
    context = {"delivery_id": missed.guid, "event": missed.event, "action": missed.action}
    try:
        await client.post(
            "/app/hook/deliveries/{delivery_id}/attempts",
            {"delivery_id": str(missed.attempt_id)},
            data=b"",
        )
    except BadRequest as exc:
        # GitHub refuses this one (too old, gone): asking again would not change that, so
        # the claim stays and the others go ahead.
        metrics.redelivery_failures.labels(reason="refused").inc()
        log.warning(
            "GitHub refused to redeliver a missed delivery: %s",
            describe_failure(exc),
            extra=context,
        )
        return False
    except Exception as exc:
        await _forget_claim(storage, key)
        reason = _stop_reason(exc)
        if reason is None:
            raise
        raise _StopPass(reason) from exc
    metrics.redeliveries_requested.labels(event=missed.event).inc()
    log.info("asked GitHub to redeliver a missed delivery", extra=context)
    return True


async def recover_once(
    github: GitHubApp, storage: Storage, metrics: Metrics, now: datetime, policy: RecoveryPolicy
) -> PassReport:
    """One pass (module docstring)."""
    report = PassReport()
    since = now - policy.window
    client = github.app_client()
    try:
        attempts = await read_log(client, since, policy.max_log_entries)
    except Exception as exc:
        reason = _stop_reason(exc) or ("refused" if isinstance(exc, BadRequest) else None)
        if reason is None:
            raise
        metrics.redelivery_failures.labels(reason=reason).inc()
        log.warning(
            "could not read the webhook delivery log (%s): %s", reason, describe_failure(exc)
        )
        report.stopped = reason
        return report
    report.read = len(attempts)
    for guid in redelivered_since(attempts, since):
        await _drop_claims(storage, guid)
    known = {
        guid
        for guid in undelivered_guids(attempts, since)
        if await storage.get_delivery(guid) is not None
    }
    redeliveries: dict[str, int] = {}
    for attempt in attempts:
        if attempt.redelivery:
            redeliveries[attempt.guid] = redeliveries.get(attempt.guid, 0) + 1
    for missed in select_missed(attempts, known, since, limit=len(attempts)):
        if len(report.requested) >= policy.max_redeliveries:
            break
        asked = redeliveries.get(missed.guid, 0)
        if asked >= MAX_REQUESTS_PER_EVENT:
            continue
        key = _claim_key(missed.guid, asked)
        if not await _claim(storage, key, now, missed.attempt_id):
            continue  # asked already, by this replica or another: GitHub has not logged it yet
        metrics.missed_deliveries.labels(event=missed.event).inc()
        try:
            if await _request(client, storage, metrics, missed, key):
                report.requested.append(missed.guid)
        except _StopPass as stop:
            metrics.redelivery_failures.labels(reason=stop.reason).inc()
            log.warning("redelivery of missed deliveries stopped (%s)", stop.reason)
            report.stopped = stop.reason
            break
    return report


async def recover_forever(
    hub: ServiceHub,
    storage: Storage,
    metrics: Metrics,
    policy: RecoveryPolicy,
    clock: Clock,
    stop: asyncio.Event,
    first_pass_after: float = 0.0,
) -> None:
    await _pause(stop, first_pass_after)
    while not stop.is_set():
        if hub.ready:
            try:
                report = await recover_once(hub.services.github, storage, metrics, clock(), policy)
            except Exception as exc:
                metrics.redelivery_failures.labels(reason="error").inc()
                # GitHub's failure says where and why in one line; a bug needs its traceback.
                github = is_github_failure(exc)
                log.log(
                    logging.WARNING if github else logging.ERROR,
                    "recovering missed deliveries failed; will try again: %s",
                    describe_failure(exc),
                    exc_info=None if github else exc,
                )
            else:
                if report.requested:
                    log.info(
                        "asked GitHub to redeliver %d missed deliveries", len(report.requested)
                    )
        await _pause(stop, policy.interval)


async def _pause(stop: asyncio.Event, seconds: float) -> None:
    """Wait `seconds`, or less if `stop` is set meanwhile."""
    try:
        async with asyncio.timeout(seconds):
            await stop.wait()
    except TimeoutError:
        pass


def missed_deliveries_ctx(
    settings: Settings,
    storage: Storage,
    hub: ServiceHub,
    metrics: Metrics,
    clock: Clock,
    *,
    first_pass_after: float = FIRST_PASS_AFTER_SECONDS,
) -> CleanupContext:
    """The recovery loop for the app's lifetime; put it after the context that fills `hub`.
    Nothing runs in setup mode or with JUDGE_REDELIVER_MISSED=false. The first pass waits
    `first_pass_after` seconds: cleanup contexts run before the server listens, and a
    redelivery GitHub sends before then fails again (it is then asked for once more, one
    interval later)."""

    async def missed_ctx(app: web.Application) -> AsyncIterator[None]:
        if not (settings.redeliver_missed and settings.configured):
            yield
            return
        stop = asyncio.Event()
        policy = RecoveryPolicy.from_settings(settings)
        task = asyncio.create_task(
            recover_forever(hub, storage, metrics, policy, clock, stop, first_pass_after)
        )
        yield
        stop.set()
        await task

    return missed_ctx

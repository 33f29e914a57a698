"""Which deliveries GitHub failed to hand us, read from the App's delivery log. Pure.

GitHub does not retry a delivery our server did not answer (it was down, or unreachable), and
its log (`GET /app/hook/deliveries`) keeps one entry per attempt: the first delivery and each
redelivery share the event's `guid`, which is the `X-GitHub-Delivery` id intake stores. An
event counts as missed when

* one of its attempts lies inside the window (newer than `since`),
* none of its attempts got a 2xx answer (GitHub's own "success" also counts 3xx, but a
  redirect is not a delivery intake stored), and
* intake has no row for it (`known`): GitHub may have given up waiting on an answer that
  intake stored anyway, and a stored delivery is intake's to retry, never GitHub's.

One redelivery per missed event is chosen, oldest event first (the order they happened in),
at most `limit`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.github.types import github_time

# An entry's answer is a delivery intake accepted only when it is one of these.
DELIVERED = range(200, 300)


@dataclass(frozen=True, slots=True)
class LoggedAttempt:
    """One entry of GitHub's delivery log: one attempt to deliver one event."""

    id: int
    guid: str
    delivered_at: datetime
    status_code: int
    event: str
    action: str | None
    redelivery: bool

    @property
    def delivered(self) -> bool:
        return self.status_code in DELIVERED


@dataclass(frozen=True, slots=True)
class Missed:
    """An event to ask GitHub to deliver again: `attempt_id` names one of its log entries."""

    guid: str
    attempt_id: int
    event: str
    action: str | None
    first_attempt_at: datetime


def parse_attempt(item: object) -> LoggedAttempt | None:
    """One log entry, or None when it lacks what the decision needs (skipped, not fatal:
    one odd entry must not stop the recovery of the others)."""
    if not isinstance(item, Mapping):
        return None
    entry: Mapping[str, Any] = item
    ident, guid, code = entry.get("id"), entry.get("guid"), entry.get("status_code")
    event, action = entry.get("event"), entry.get("action")
    if not (isinstance(ident, int) and isinstance(code, int) and isinstance(guid, str) and guid):
        return None
    if isinstance(ident, bool) or isinstance(code, bool):  # JSON's true is no number
        return None
    if not isinstance(event, str) or not (action is None or isinstance(action, str)):
        return None
    delivered_at = github_time(entry.get("delivered_at"))
    if delivered_at is None:
        return None
    return LoggedAttempt(
        id=ident,
        guid=guid,
        delivered_at=delivered_at,
        status_code=code,
        event=event,
        action=action,
        redelivery=entry.get("redelivery") is True,
    )


def lookback(window_hours: float, retention_days: float) -> timedelta:
    """How far back to look. Never past the delivery retention: a delivery intake stored and
    then pruned would look missed, and run a second time."""
    window = timedelta(hours=window_hours)
    if retention_days > 0:
        return min(window, timedelta(days=retention_days))
    return window


def undelivered_guids(attempts: Iterable[LoggedAttempt], since: datetime) -> list[str]:
    """Events with an attempt after `since` and no 2xx attempt at all, oldest first: the
    ones whose storage must be looked up before `select_missed` can decide."""
    first_seen: dict[str, datetime] = {}
    delivered: set[str] = set()
    for attempt in attempts:
        if attempt.delivered:
            delivered.add(attempt.guid)
        if attempt.delivered_at > since:
            seen = first_seen.get(attempt.guid)
            if seen is None or attempt.delivered_at < seen:
                first_seen[attempt.guid] = attempt.delivered_at
    pending = [guid for guid in first_seen if guid not in delivered]
    return sorted(pending, key=lambda guid: (first_seen[guid], guid))


def select_missed(
    attempts: Iterable[LoggedAttempt], known: Set[str], since: datetime, limit: int
) -> list[Missed]:
    """The events to redeliver, oldest first, at most `limit` (module docstring)."""
    attempts = list(attempts)
    chosen = [guid for guid in undelivered_guids(attempts, since) if guid not in known][:limit]
    wanted = set(chosen)
    # The event's original attempt when the log still holds it: its payload is the event's.
    best: dict[str, LoggedAttempt] = {}
    for attempt in attempts:
        if attempt.guid not in wanted:
            continue
        current = best.get(attempt.guid)
        if current is None or _earlier(attempt, current):
            best[attempt.guid] = attempt
    return [
        Missed(
            guid=guid,
            attempt_id=best[guid].id,
            event=best[guid].event,
            action=best[guid].action,
            first_attempt_at=best[guid].delivered_at,
        )
        for guid in chosen
    ]


def _earlier(a: LoggedAttempt, b: LoggedAttempt) -> bool:
    return (a.delivered_at, a.id) < (b.delivered_at, b.id)


def redelivered_since(attempts: Iterable[LoggedAttempt], since: datetime) -> list[str]:
    """Events a redelivery after `since` delivered: their claims have done their job."""
    return sorted(
        {a.guid for a in attempts if a.redelivery and a.delivered and a.delivered_at > since}
    )

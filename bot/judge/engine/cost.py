"""Cost controls as pure functions: the verdict-cache key and admission decisions.

The engine does the I/O (storage kv for the cache, storage usage counters for the
throttle and the budgets); these functions decide from the numbers it read.

- Cache key: sha256 over (rubric, the seats that would judge, prompt version, answer
  length limit, content hash). A seat is its model, where it is served (protocol and
  base URL) and how many file characters it reads, since each changes the answer. The
  content hash covers everything the models would see (task text, file paths, statuses
  and contents, the sensitive flag, the review context: diffs, CI, earlier verdicts),
  so a repeated change costs no call, while a new prompt version or a different panel
  (e.g. after four-eyes substitution) misses.
- Where usage counts (`usage_scopes`): the daily budgets belong to an installation
  (`installation:<id>`), the hourly throttle to one repository within it
  (`installation:<id>/repo:<name>`). One installation cannot spend another's budget,
  and one busy repository cannot take its installation's whole day. The CLI and the
  pre-push hook have no installation: they count as the one installation `local`.
- Throttle: at most `throttle_per_hour` judgments that reach the models per repository
  scope in any sliding hour (seed 002: 20/hour against runaway cost).
- Daily budgets: model calls and tokens per installation scope since 00:00 UTC.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from bot.judge.engine.review_context import ReviewContext
from bot.judge.records import JudgedFile, TaskSpec

LOCAL_INSTALLATION = "local"


@dataclass(frozen=True)
class UsageScopes:
    """The storage usage counters one judgment reads and adds to."""

    repository: str
    """Who the hourly throttle counts: one repository within one installation."""
    installation: str
    """Who the daily call and token budgets count: the installation."""

    @property
    def judgments(self) -> str:
        return f"judge:judgments:{self.repository}"

    @property
    def calls(self) -> str:
        return f"judge:model-calls:{self.installation}"

    @property
    def tokens(self) -> str:
        return f"judge:tokens:{self.installation}"


def usage_scopes(installation: int | None, repository: str) -> UsageScopes:
    """`repository` is the caller's name for what the throttle counts (the App: the
    repository's full name; the CLI and hook: a directory or remote)."""
    # The prefixes keep the App's installations and the local stand-in apart, so no
    # repository name can land in another installation's counters.
    owner = LOCAL_INSTALLATION if installation is None else f"installation:{installation}"
    return UsageScopes(repository=f"{owner}/repo:{repository}", installation=owner)


def content_hash(
    task: TaskSpec,
    files: Sequence[JudgedFile],
    *,
    sensitive: bool,
    context: ReviewContext | None = None,
) -> str:
    """Hash of what the judges are shown. The task id is left out on purpose: the same
    content under another id is the same question. The review context counts when there
    is one (the same files with CI now red are another question); without one the hash
    is what it always was, so earlier cache entries still answer."""
    canonical: dict[str, object] = {
        "description": task.description,
        "acceptance": task.acceptance,
        "directives": list(task.directives),
        "sensitive": sensitive,
        # Sorted by each entry's own JSON text: file order carries no meaning, and the
        # text always compares (a list with a None status next to a string would not).
        "files": sorted(
            (_compact([f.path, f.status, f.content, f.added_lines]) for f in files),
        ),
    }
    if context is not None and not context.empty:
        canonical["context"] = context.model_dump(mode="json")
    return hashlib.sha256(_compact(canonical).encode("utf-8")).hexdigest()


def _compact(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclass(frozen=True)
class SeatKey:
    """The parts of a seat that change its answer."""

    model: str
    provider: str
    base_url: str
    max_chars: int
    # A thinking model cut short answers differently from one given room to finish.
    max_output_tokens: int


def cache_key(
    *,
    rubric: str,
    seats: Mapping[str, SeatKey | None],
    prompt_version: str,
    content: str,
    max_output_tokens: int,
) -> str:
    """`seats` maps each configured tier to who sits there (None: nobody independent)."""
    parts = {
        "rubric": rubric,
        "seats": {
            tier: dataclasses.asdict(seat) if seat is not None else None
            for tier, seat in seats.items()
        },
        "prompt_version": prompt_version,
        "max_output_tokens": max_output_tokens,
        "content": content,
    }
    return hashlib.sha256(_compact(parts).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Usage:
    """Counters read from storage just before a judgment (see `UsageScopes`)."""

    judgments_last_hour: int
    calls_today: int
    tokens_today: int


@dataclass(frozen=True)
class Limits:
    throttle_per_hour: int
    daily_call_budget: int | None
    daily_token_budget: int | None


def hour_window_start(now: datetime) -> datetime:
    return now - timedelta(hours=1)


def day_window_start(now: datetime) -> datetime:
    utc = now.astimezone(UTC)
    return utc.replace(hour=0, minute=0, second=0, microsecond=0)


def admission(usage: Usage, limits: Limits, scopes: UsageScopes) -> str | None:
    """None when a judgment may call models; otherwise the reason it may not. `usage`
    holds the counts of `scopes`: the hour's judgments of the repository, the day's
    calls and tokens of its installation."""
    if usage.judgments_last_hour >= limits.throttle_per_hour:
        return (
            f"throttled: {usage.judgments_last_hour} judgments in the last hour for scope "
            f"{scopes.repository!r} (limit {limits.throttle_per_hour}/hour)"
        )
    if limits.daily_call_budget is not None and usage.calls_today >= limits.daily_call_budget:
        return (
            f"daily budget exhausted: {usage.calls_today} model calls today for "
            f"{scopes.installation!r} (budget {limits.daily_call_budget})"
        )
    if limits.daily_token_budget is not None and usage.tokens_today >= limits.daily_token_budget:
        return (
            f"daily budget exhausted: {usage.tokens_today} tokens today for "
            f"{scopes.installation!r} (budget {limits.daily_token_budget})"
        )
    return None


def calls_left_today(usage: Usage, limits: Limits) -> int | None:
    """Model calls still allowed today (None: unlimited). The engine stops a protocol
    mid-way when this reaches zero, so one judgment cannot overshoot the budget; judgments
    running at the same moment each see the count from their own start."""
    if limits.daily_call_budget is None:
        return None
    return max(0, limits.daily_call_budget - usage.calls_today)

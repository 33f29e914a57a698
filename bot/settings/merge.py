"""The `JUDGE_*` settings of merging and its loop prevention (seed 004's names).

Loaded with `bot.settings.load_judge_section(MergeSettings)`, like every feature's own
section; tests build `MergeSettings(...)` directly. Durations are milliseconds, as the
seed names them.
"""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class MergeSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="JUDGE_", extra="ignore", frozen=True, hide_input_in_errors=True
    )

    merge_on_approve: bool = Field(
        default=False,
        description="Merge pull requests the judge accepts, through a queue per base branch. "
        "A repository's `merge.enabled` in .github/judge.yml overrides it either way.",
    )
    merge_queue_max_attempts: int = Field(
        default=3,
        ge=1,
        le=1000,
        description="Merge attempts GitHub refuses (checks pending, reviews missing) before "
        "the pull request is escalated to a person. Attempts a GitHub event set off count "
        "only when GitHub then refuses the merge.",
    )
    merge_queue_retry_delay_ms: int = Field(
        default=30_000,
        ge=0,
        le=86_400_000,
        description="Fallback timer between attempts when no GitHub event says something changed.",
    )
    merge_queue_claim_ttl_ms: int = Field(
        default=120_000,
        ge=1_000,
        le=86_400_000,
        description="Lease of a worker on a queue's head; a lease that runs out (a crashed "
        "worker) is reclaimed.",
    )
    pr_mergeable_precheck_retries: int = Field(
        default=3,
        ge=0,
        le=100,
        description="Times a pull request GitHub has not computed `mergeable` for yet is "
        "read again before it counts as a failed attempt.",
    )
    pr_mergeable_precheck_delay_ms: int = Field(
        default=1_000,
        ge=0,
        le=3_600_000,
        description="Wait between those reads.",
    )
    non_approve_circuit_breaker_retries: int = Field(
        default=2,
        ge=0,
        description="Consecutive non-accept judgments of one pull request after which new "
        "pushes are no longer judged automatically (0: never).",
    )
    doom_loop_circuit_breaker_retries: int = Field(
        default=2,
        ge=0,
        description="Times the same content may come back with the same non-accept verdict "
        "before automatic judging stops (0: never).",
    )
    awaiting_retry_cooldown_ms: int = Field(
        default=120_000,
        ge=0,
        description="Least time between automatic re-judgments of one pull request.",
    )
    requeue_on_non_approve: bool = Field(
        default=True,
        description="After a non-accept judgment, the pull request's next push is judged "
        "again automatically (true) rather than only on a person's `/judge rerun` (false).",
    )
    review: bool = Field(
        default=False,
        description="Also submit each final outcome at a pull request's head as a review: "
        "APPROVE on accept, REQUEST_CHANGES with the improvements on improve or reject, "
        "COMMENT on escalate. A repository's `review` in .github/judge.yml overrides it.",
    )

    @property
    def retry_delay(self) -> timedelta:
        return timedelta(milliseconds=self.merge_queue_retry_delay_ms)

    @property
    def precheck_delay(self) -> timedelta:
        return timedelta(milliseconds=self.pr_mergeable_precheck_delay_ms)

    @property
    def claim_ttl_seconds(self) -> float:
        return self.merge_queue_claim_ttl_ms / 1000


def default_merge_settings() -> MergeSettings:
    """The defaults, without reading the environment (the app passes the loaded ones)."""
    return MergeSettings.model_construct()

"""Prometheus metrics, one registry per app so several apps (tests) never collide."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

from bot.storage.base import DeliveryStatus

__all__ = ["CONTENT_TYPE_LATEST", "MODEL_CALL_BUCKETS", "Metrics"]

_Metric = TypeVar("_Metric", Counter, Histogram)


class Children(Generic[_Metric]):
    """A one-label metric's child for each label value, looked up in prometheus_client once.

    Its `labels` checks its arguments and takes a lock on every call, four times what the
    increment itself costs, and intake counts every delivery. A cached child stays the one
    the metric renders for as long as the metric keeps it: the metrics cached here are never
    cleared, nor their children removed."""

    __slots__ = ("_children", "_metric")

    def __init__(self, metric: _Metric) -> None:
        self._metric: _Metric = metric
        self._children: dict[str, _Metric] = {}

    def __call__(self, value: str) -> _Metric:
        child = self._children.get(value)
        if child is None:
            child = self._children[value] = self._metric.labels(value)
        return child


# Seconds: a quick model answers in a second or two, a reasoning one in a minute or more; a
# call's two attempts at the default per-tier limits (45-60 s) end by the last bucket.
MODEL_CALL_BUCKETS = (0.5, 1, 2, 5, 10, 20, 30, 45, 60, 90, 120)
# Seconds in a merge queue: a minute to a day (a 30-minute CI, a queue of agents' work).
MERGE_QUEUE_BUCKETS = (60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400)
# CI runs or model calls per merged pull request: one each is the goal.
PER_MERGE_BUCKETS = (0, 1, 2, 3, 5, 8, 13, 21)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._add_delivery_metrics()
        self._add_github_metrics()
        self._add_feature_metrics()
        self._add_judgment_metrics()
        self._add_merge_queue_metrics()

    def _add_merge_queue_metrics(self) -> None:
        """The merge queues: the App's own (`app`) and GitHub's (`github`), per merged pull
        request; batches, their failures and splits (the App's queue)."""
        self.merge_queue_merges = self._counter(
            "judge_merge_queue_merges",
            "Pull requests merged from a merge queue, by queue: app (the App merged it) or "
            "github (GitHub's merge queue merged what the App handed it).",
            "queue",
        )
        self.merge_queue_batches = Counter(
            "judge_merge_queue_batches",
            "Batches of the App's merge queue sent to CI (a batch of one counts).",
            registry=self.registry,
        )
        self.merge_queue_batch_failures = Counter(
            "judge_merge_queue_batch_failures",
            "Batches whose CI failed or whose combination the judges did not accept.",
            registry=self.registry,
        )
        self.merge_queue_batch_splits = Counter(
            "judge_merge_queue_batch_splits",
            "Failing batches split to find the pull request at fault (each split counts).",
            registry=self.registry,
        )
        self.merge_queue_seconds = Histogram(
            "judge_merge_queue_seconds",
            "Time from entering a merge queue (the last time) to being merged, by queue.",
            ["queue"],
            buckets=MERGE_QUEUE_BUCKETS,
            registry=self.registry,
        )
        self.merge_queue_ci_runs = Histogram(
            "judge_merge_queue_ci_runs",
            "Per merged pull request: the heads it had that the App judged (each new head "
            "runs the repository's CI once, the queue's own branch updates included).",
            buckets=PER_MERGE_BUCKETS,
            registry=self.registry,
        )
        self.merge_queue_model_calls = Histogram(
            "judge_merge_queue_model_calls",
            "Per merged pull request: model calls its judgments made (cache hits make none).",
            buckets=PER_MERGE_BUCKETS,
            registry=self.registry,
        )

    def _add_delivery_metrics(self) -> None:
        """The webhook intake and the delivery queue."""
        self.received = self._counter(
            "judge_deliveries_received",
            "Webhook deliveries accepted and stored, by event.",
            "event",
        )
        self.duplicates = self._counter(
            "judge_deliveries_duplicate",
            "Webhook deliveries whose id was already stored (redeliveries), by event.",
            "event",
        )
        self.requeued = self._counter(
            "judge_deliveries_requeued",
            "Failed deliveries queued again by a GitHub redelivery, by event.",
            "event",
        )
        self.rejected = self._counter(
            "judge_deliveries_rejected",
            "Webhook requests refused before storage, by reason.",
            "reason",
        )
        self.processed = self._counter(
            "judge_deliveries_processed",
            "Deliveries whose handlers all completed, by event.",
            "event",
        )
        self.retried = self._counter(
            "judge_deliveries_retried",
            "Failed delivery attempts scheduled for another try, by event.",
            "event",
        )
        self.failed = self._counter(
            "judge_deliveries_failed",
            "Deliveries parked as failed after their last attempt, by event.",
            "event",
        )
        self.deferred = self._counter(
            "judge_deliveries_deferred",
            "Deliveries put back until GitHub's rate-limit reset, no attempt used, by event.",
            "event",
        )
        self.lease_lost = self._counter(
            "judge_deliveries_lease_lost",
            "Deliveries whose lease another worker took over while their handlers ran "
            "(this worker stalled past it); the handlers were stopped, by event.",
            "event",
        )
        self.queue_depth = Gauge(
            "judge_delivery_queue_depth",
            "Stored deliveries by status, read from storage at scrape time.",
            ["status"],
            registry=self.registry,
        )
        self.processing_seconds = Histogram(
            "judge_delivery_processing_seconds",
            "Time from a worker's claim to the delivery's completion, by event.",
            ["event"],
            buckets=(0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180),
            registry=self.registry,
        )
        # What the webhook handler and the workers count for each delivery.
        self.received_for = Children(self.received)
        self.processed_for = Children(self.processed)
        self.rejected_for = Children(self.rejected)
        self.processing_seconds_for = Children(self.processing_seconds)

    def _add_github_metrics(self) -> None:
        """GitHub's answers and rate limits."""
        self.github_calls = Counter(
            "judge_github_api_calls",
            "GitHub API responses, by method and status code.",
            ["method", "status"],
            registry=self.registry,
        )
        self.github_rate_remaining = Gauge(
            "judge_github_rate_limit_remaining",
            "The last x-ratelimit-remaining GitHub reported, by rate-limit resource.",
            ["resource"],
            registry=self.registry,
        )
        self.github_pauses = self._counter(
            "judge_github_rate_limit_pauses",
            "Rate-limit pauses begun or lengthened, during which nothing is sent to GitHub for "
            "the installation (scope installation) or for the App's own JWT calls (scope app).",
            "scope",
        )

    def _add_feature_metrics(self) -> None:
        """Missed-delivery recovery, the provider self-check and notifications."""
        self.missed_deliveries = self._counter(
            "judge_missed_deliveries",
            "Deliveries GitHub's log shows as failed that intake never stored, counted each "
            "time a recovery pass claims one for redelivery, by event.",
            "event",
        )
        self.redeliveries_requested = self._counter(
            "judge_redeliveries_requested",
            "Redeliveries of missed deliveries GitHub accepted, by event.",
            "event",
        )
        self.redelivery_failures = self._counter(
            "judge_redelivery_failures",
            "Recovery of missed deliveries that failed, by reason: rate-limited, unavailable "
            "(GitHub 5xx or no connection), refused (GitHub 4xx), error (anything else).",
            "reason",
        )

        self.model_available = Gauge(
            "judge_provider_model_available",
            "1 when the tier's model is in its provider's model list, 0 when it is missing "
            "(or the provider refused the key or could not be reached); absent while unknown. "
            "Checked at start and hourly (bot/judge/engine/self_check.py).",
            ["tier", "model"],
            registry=self.registry,
        )

        self.notifications = Counter(
            "judge_notifications",
            "Notifications to JUDGE_NOTIFY_URL by kind and outcome: sent, failed (every "
            "attempt failed), duplicate (the event was already notified).",
            ["kind", "outcome"],
            registry=self.registry,
        )

    def _add_judgment_metrics(self) -> None:
        """What judgments decided and what their model calls cost (bot/record_metrics.py)."""
        self.verdicts = Counter(
            "judge_verdicts",
            "Judgments by final decision, mode (advisory, blocking, or none outside the App) "
            "and GO/NO-GO label.",
            ["decision", "mode", "go_no_go"],
            registry=self.registry,
        )
        self.verdict_cache_hits = Counter(
            "judge_verdict_cache_hits",
            "Judgments answered from the verdict cache, without a model call.",
            registry=self.registry,
        )
        self.refusals = self._counter(
            "judge_refusals",
            "Judgments settled undetermined before any model was asked, by reason: throttle, "
            "budget, four-eyes (no independent quick judge), unconfigured (no LLM set up).",
            "reason",
        )
        self.model_calls = Counter(
            "judge_model_calls",
            "Model calls (one per round, retries included) by tier and how the last attempt "
            "ended: ok, timeout, rate_limited, http_error, transport_error, malformed, empty, "
            "unparseable, deadline, budget, error.",
            ["tier", "outcome"],
            registry=self.registry,
        )
        self.model_attempts = self._counter(
            "judge_model_attempts",
            "Requests sent to a model provider, by tier (a call retried once is two).",
            "tier",
        )
        self.model_call_seconds = Histogram(
            "judge_model_call_seconds",
            "Time a model call took, its retries included, by tier (calls that sent a request).",
            ["tier"],
            buckets=MODEL_CALL_BUCKETS,
            registry=self.registry,
        )
        self.model_tokens = Counter(
            "judge_model_tokens",
            "Tokens the providers reported, by tier and kind (input: prompt, output: completion).",
            ["tier", "kind"],
            registry=self.registry,
        )

    def observe_notification(self, kind: str, outcome: str) -> None:
        self.notifications.labels(kind=kind, outcome=outcome).inc()

    def _counter(self, name: str, documentation: str, label: str) -> Counter:
        return Counter(name, documentation, [label], registry=self.registry)

    def observe_github_pause(self, installation_id: int | None, until: datetime) -> None:
        """A `GitHubApp` `on_pause` hook: GitHub's rate limit paused an installation or the App."""
        del until
        scope = "app" if installation_id is None else "installation"
        self.github_pauses.labels(scope=scope).inc()

    def observe_github_response(
        self, method: str, url: str, status: int, headers: Mapping[str, str]
    ) -> None:
        del url  # URLs carry repository names; method and status are enough for alerting.
        self.github_calls.labels(method=method.upper(), status=str(status)).inc()
        remaining = headers.get("x-ratelimit-remaining")
        if remaining is not None and remaining.isdigit():
            resource = headers.get("x-ratelimit-resource", "core")
            self.github_rate_remaining.labels(resource=resource).set(int(remaining))

    def set_queue_depth(self, counts: Mapping[DeliveryStatus, int]) -> None:
        for status, count in counts.items():
            self.queue_depth.labels(status=status.value).set(count)

    def render(self) -> bytes:
        return generate_latest(self.registry)

"""Metrics (`bot/metrics.py`): what rate-limit pauses, deferrals and lost leases show."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.metrics import Metrics

RESET = datetime(2026, 11, 22, 13, 0, tzinfo=UTC)


def test_pauses_are_counted_by_scope() -> None:
    """`observe_github_pause` is a GitHubApp `on_pause` hook: the App's own pauses and the
    installations' are told apart, never by installation (unbounded label values)."""
    metrics = Metrics()
    metrics.observe_github_pause(1, RESET)
    metrics.observe_github_pause(2, RESET)
    metrics.observe_github_pause(None, RESET)
    text = metrics.render().decode()
    assert 'judge_github_rate_limit_pauses_total{scope="installation"} 2.0' in text
    assert 'judge_github_rate_limit_pauses_total{scope="app"} 1.0' in text


def test_deferrals_and_lost_leases_are_exposed() -> None:
    metrics = Metrics()
    metrics.deferred.labels(event="push").inc()
    metrics.lease_lost.labels(event="pull_request").inc()
    text = metrics.render().decode()
    assert 'judge_deliveries_deferred_total{event="push"} 1.0' in text
    assert 'judge_deliveries_lease_lost_total{event="pull_request"} 1.0' in text


def test_model_call_latency_buckets_span_llm_calls() -> None:
    """Half a second to two minutes: a quick answer and a deep one land in buckets of their
    own, and a call at its time limits is not lost in +Inf."""
    metrics = Metrics()
    for seconds in (0.7, 42.0, 119.0):
        metrics.model_call_seconds.labels(tier="deep").observe(seconds)
    sample = metrics.registry.get_sample_value
    bucket = "judge_model_call_seconds_bucket"
    assert sample(bucket, {"tier": "deep", "le": "0.5"}) == 0
    assert sample(bucket, {"tier": "deep", "le": "1.0"}) == 1
    assert sample(bucket, {"tier": "deep", "le": "45.0"}) == 2
    assert sample(bucket, {"tier": "deep", "le": "120.0"}) == 3

"""One judgment's verdict record, counted on `/metrics`.

`observe_record` reads nothing but the record and the mode the App judged in, and every
label it sets comes from a closed set (a decision, a mode, a GO/NO-GO label, a tier, a
call outcome, a refusal reason): never a repository, a sha or free text.

Where the record says what is counted:

    cache hit     rounds (`round` >= 1) but no call: a verdict-cache hit repeats the cached
                  judgment's rounds with `calls` empty (bot/judge/engine/__init__.py)
    refusal       `round` 0 with `mode` throttled, budget, four-eyes or unconfigured
                  (bot/judge/engine/judgment.py); a mechanical reject is a verdict, not a refusal
    call outcome  `CallStats.error`, the message bot/judge/engine/rounds.py wrote for the round's
                  last attempt (None: it answered); `call_outcome` has the table
"""

from __future__ import annotations

from bot.judge.records import CallStats, VerdictRecord
from bot.judge.settings import Mode
from bot.metrics import Metrics

# First matching prefix wins: "HTTP 429 " before any other status.
_OUTCOMES: tuple[tuple[str, str], ...] = (
    ("timeout", "timeout"),  # ours ("timeout after 45s") and the provider's ("timeout")
    ("HTTP 429 ", "rate_limited"),
    ("HTTP ", "http_error"),
    ("transport error", "transport_error"),
    ("malformed response", "malformed"),
    ("empty answer", "empty"),
    ("unparseable answer", "unparseable"),
    ("cut-off answer", "cut_off"),
    ("wall-clock budget exhausted", "deadline"),
    ("daily model-call budget exhausted", "budget"),
)

_REFUSALS = {
    "throttled": "throttle",
    "budget": "budget",
    "four-eyes": "four-eyes",
    "unconfigured": "unconfigured",
}

_MODES = frozenset(m.value for m in Mode)


def call_outcome(error: str | None) -> str:
    """How a call ended, as one of a few label values."""
    if error is None:
        return "ok"
    return next((outcome for prefix, outcome in _OUTCOMES if error.startswith(prefix)), "error")


def refusal_reason(record: VerdictRecord) -> str | None:
    """Why no model was asked, for a judgment refused before its first round."""
    if record.round != 0:
        return None
    return _REFUSALS.get(record.mode)


def is_cache_hit(record: VerdictRecord) -> bool:
    return record.round >= 1 and not record.calls


def mode_label(mode: str | None) -> str:
    """advisory or blocking; none outside the App (the CLI, the hook), other for anything
    unexpected, so a caller's mistake cannot add series."""
    if mode is None:
        return "none"
    return mode if mode in _MODES else "other"


def observe_record(metrics: Metrics, record: VerdictRecord, mode: str | None) -> None:
    """Count one judgment: its verdict, a cache hit or a refusal, and each model call."""
    metrics.verdicts.labels(
        decision=record.final_decision.value, mode=mode_label(mode), go_no_go=record.go_no_go
    ).inc()
    if is_cache_hit(record):
        metrics.verdict_cache_hits.inc()
    reason = refusal_reason(record)
    if reason is not None:
        metrics.refusals.labels(reason=reason).inc()
    for call in record.calls:
        _observe_call(metrics, call)


def _observe_call(metrics: Metrics, call: CallStats) -> None:
    tier = call.tier.value
    metrics.model_calls.labels(tier=tier, outcome=call_outcome(call.error)).inc()
    if call.attempts:
        # A call refused before its first request took no time worth a latency sample.
        metrics.model_attempts.labels(tier=tier).inc(call.attempts)
        metrics.model_call_seconds.labels(tier=tier).observe(call.latency_ms / 1000.0)
    if call.prompt_tokens:
        metrics.model_tokens.labels(tier=tier, kind="input").inc(call.prompt_tokens)
    if call.completion_tokens:
        metrics.model_tokens.labels(tier=tier, kind="output").inc(call.completion_tokens)

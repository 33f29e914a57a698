"""Cost decisions as pure functions: cache keys, content hashes, throttle and budgets."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.judge.engine.cost import (
    Limits,
    SeatKey,
    Usage,
    UsageScopes,
    admission,
    cache_key,
    calls_left_today,
    content_hash,
    day_window_start,
    hour_window_start,
    usage_scopes,
)
from bot.judge.engine.review_context import CiResult, ReviewContext
from bot.judge.records import JudgedFile, TaskSpec

TASK = TaskSpec(task_id="t-1", description="d", acceptance="a", directives=["x"])
FILES = [JudgedFile(path="a.md", content="A"), JudgedFile(path="b.md", content="B")]


def test_content_hash_ignores_task_id_and_file_order() -> None:
    base = content_hash(TASK, FILES, sensitive=False)
    other_id = TASK.model_copy(update={"task_id": "t-2"})
    assert content_hash(other_id, FILES, sensitive=False) == base
    assert content_hash(TASK, list(reversed(FILES)), sensitive=False) == base


@pytest.mark.parametrize(
    "change",
    [
        {"task": TASK.model_copy(update={"description": "d2"})},
        {"task": TASK.model_copy(update={"acceptance": "a2"})},
        {"task": TASK.model_copy(update={"directives": []})},
        {"files": [FILES[0]]},
        {"files": [FILES[0], JudgedFile(path="b.md", content="B!")]},
        {"files": [FILES[0], JudgedFile(path="c.md", content="B")]},
        {"files": [FILES[0], JudgedFile(path="b.md", content="B", status="removed")]},
        {"files": [FILES[0], JudgedFile(path="b.md", content="B", added_lines=[1])]},
        {"sensitive": True},
    ],
)
def test_content_hash_changes_with_what_the_judge_sees(change: dict[str, object]) -> None:
    args: dict[str, object] = {"task": TASK, "files": FILES, "sensitive": False}
    args.update(change)
    assert content_hash(**args) != content_hash(TASK, FILES, sensitive=False)  # type: ignore[arg-type]


QUICK_SEAT = SeatKey(
    model="q", provider="openai", base_url="http://a/v1", max_chars=4000, max_output_tokens=1024
)
DEEP_SEAT = SeatKey(
    model="d", provider="openai", base_url="http://a/v1", max_chars=32000, max_output_tokens=1024
)
SEATS: dict[str, SeatKey | None] = {"quick": QUICK_SEAT, "deep": DEEP_SEAT}


def _key(**change: object) -> str:
    args: dict[str, object] = {
        "rubric": "content",
        "seats": SEATS,
        "prompt_version": "1",
        "content": "h",
        "max_output_tokens": 1024,
    }
    args.update(change)
    return cache_key(**args)  # type: ignore[arg-type]


def test_cache_key_parts() -> None:
    key = _key()
    assert len(key) == 64
    assert _key(seats=dict(reversed(SEATS.items()))) == key  # a mapping: order is no part
    variants = [
        _key(rubric="code"),
        _key(seats={"quick": QUICK_SEAT, "deep": replace(DEEP_SEAT, model="x")}),
        _key(seats={"quick": DEEP_SEAT, "deep": QUICK_SEAT}),
        _key(seats={"quick": QUICK_SEAT, "deep": None}),
        _key(seats={"quick": QUICK_SEAT}),
        _key(prompt_version="2"),
        _key(content="i"),
        # what a seat reads, where it is served, and how long it may answer
        _key(seats={"quick": replace(QUICK_SEAT, max_chars=8000), "deep": DEEP_SEAT}),
        _key(seats={"quick": replace(QUICK_SEAT, max_output_tokens=4096), "deep": DEEP_SEAT}),
        _key(seats={"quick": replace(QUICK_SEAT, base_url="http://b/v1"), "deep": DEEP_SEAT}),
        _key(seats={"quick": replace(QUICK_SEAT, provider="anthropic"), "deep": DEEP_SEAT}),
        _key(max_output_tokens=2048),
    ]
    assert key not in variants and len(set(variants)) == len(variants)
    # No ambiguity from joining: a model named "a,b" differs from two seats.
    one = SeatKey(model="a,b", provider="openai", base_url="u", max_chars=1, max_output_tokens=64)
    assert _key(seats={"quick": one}) != _key(
        seats={"quick": replace(one, model="a"), "deep": replace(one, model="b")}
    )


def test_content_hash_with_duplicate_paths_and_missing_status() -> None:
    """The same path twice, one without a status: still a total order, still stable."""
    files = [
        JudgedFile(path="a.md", content="A", status="modified"),
        JudgedFile(path="a.md", content="A"),
        JudgedFile(path="a.md", content="B", added_lines=[1]),
    ]
    digest = content_hash(TASK, files, sensitive=False)
    assert content_hash(TASK, list(reversed(files)), sensitive=False) == digest
    assert content_hash(TASK, files[:2], sensitive=False) != digest


LIMITS = Limits(throttle_per_hour=20, daily_call_budget=100, daily_token_budget=1000)


@pytest.mark.parametrize(
    ("usage", "expected"),
    [
        (Usage(0, 0, 0), None),
        (Usage(19, 99, 999), None),
        (Usage(20, 0, 0), "throttled"),
        (Usage(0, 100, 0), "model calls today"),
        (Usage(0, 0, 1000), "tokens today"),
        (Usage(25, 100, 1000), "throttled"),
    ],
)
def test_admission(usage: Usage, expected: str | None) -> None:
    reason = admission(usage, LIMITS, usage_scopes(7, "acme/widgets"))
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_admission_without_budgets_and_zero_throttle() -> None:
    open_limits = Limits(throttle_per_hour=5, daily_call_budget=None, daily_token_budget=None)
    assert admission(Usage(4, 10**9, 10**12), open_limits, usage_scopes(None, "s")) is None
    closed = Limits(throttle_per_hour=0, daily_call_budget=None, daily_token_budget=None)
    reason = admission(Usage(0, 0, 0), closed, usage_scopes(None, "s"))
    assert reason is not None and "limit 0/hour" in reason


def test_calls_left_today() -> None:
    assert calls_left_today(Usage(0, 40, 0), LIMITS) == 60
    assert calls_left_today(Usage(0, 140, 0), LIMITS) == 0
    assert calls_left_today(Usage(0, 40, 0), Limits(20, None, None)) is None


def test_windows() -> None:
    now = datetime(2026, 2, 15, 0, 30, tzinfo=UTC)
    assert hour_window_start(now) == now - timedelta(hours=1)
    assert day_window_start(now) == datetime(2026, 2, 15, tzinfo=UTC)
    # A local time just after midnight east of UTC is still the previous UTC day.
    tokyo = datetime(2026, 2, 15, 0, 30, tzinfo=timezone(timedelta(hours=9)))
    assert day_window_start(tokyo) == datetime(2026, 2, 14, tzinfo=UTC)


@pytest.mark.parametrize(
    ("installation", "repository", "judgments", "calls", "tokens"),
    [
        (
            42,
            "acme/widgets",
            "judge:judgments:installation:42/repo:acme/widgets",
            "judge:model-calls:installation:42",
            "judge:tokens:installation:42",
        ),
        (
            None,
            "pre-push:git@host:acme/widgets.git",
            "judge:judgments:local/repo:pre-push:git@host:acme/widgets.git",
            "judge:model-calls:local",
            "judge:tokens:local",
        ),
        # a repository named like an installation stays inside the local installation
        (
            None,
            "installation:42",
            "judge:judgments:local/repo:installation:42",
            "judge:model-calls:local",
            "judge:tokens:local",
        ),
    ],
)
def test_usage_scopes(
    installation: int | None, repository: str, judgments: str, calls: str, tokens: str
) -> None:
    """The throttle counts per repository within an installation, the budgets per
    installation; without one (the CLI, the hook) everything is the local installation."""
    scopes = usage_scopes(installation, repository)
    assert (scopes.judgments, scopes.calls, scopes.tokens) == (judgments, calls, tokens)


ONE_A = usage_scopes(1, "acme/a")
ONE_B = usage_scopes(1, "acme/b")
TWO_A = usage_scopes(2, "acme/a")
LOCAL_A = usage_scopes(None, "acme/a")
ONE_A_FULL_HOUR = {ONE_A.judgments: 20}
ONE_SPENT_CALLS = {ONE_A.calls: 100}
ONE_SPENT_TOKENS = {ONE_A.tokens: 1000}


@pytest.mark.parametrize(
    ("ledger", "scopes", "expected"),
    [
        # the hour's throttle is the repository's own
        (ONE_A_FULL_HOUR, ONE_A, "throttled"),
        (ONE_A_FULL_HOUR, ONE_B, None),
        (ONE_A_FULL_HOUR, TWO_A, None),
        (ONE_A_FULL_HOUR, LOCAL_A, None),
        # the day's budgets are the installation's: every repository in it shares them
        (ONE_SPENT_CALLS, ONE_A, "model calls today for 'installation:1'"),
        (ONE_SPENT_CALLS, ONE_B, "model calls today for 'installation:1'"),
        (ONE_SPENT_CALLS, TWO_A, None),
        (ONE_SPENT_CALLS, LOCAL_A, None),
        (ONE_SPENT_TOKENS, ONE_B, "tokens today for 'installation:1'"),
        (ONE_SPENT_TOKENS, TWO_A, None),
        # the CLI and the hook spend the one local budget
        ({LOCAL_A.calls: 100}, usage_scopes(None, "cli:/elsewhere"), "for 'local'"),
        ({LOCAL_A.calls: 100}, ONE_A, None),
        # a full hour is reported before a spent day
        ({**ONE_A_FULL_HOUR, **ONE_SPENT_CALLS}, ONE_A, "throttled"),
    ],
)
def test_admission_per_installation_and_repository(
    ledger: dict[str, int], scopes: UsageScopes, expected: str | None
) -> None:
    """What the engine reads (the counters of `scopes`) decides; other scopes' use never
    counts."""
    usage = Usage(
        judgments_last_hour=ledger.get(scopes.judgments, 0),
        calls_today=ledger.get(scopes.calls, 0),
        tokens_today=ledger.get(scopes.tokens, 0),
    )
    reason = admission(usage, LIMITS, scopes)
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_content_hash_counts_the_review_context_only_when_there_is_one() -> None:
    base = content_hash(TASK, FILES, sensitive=False)
    assert content_hash(TASK, FILES, sensitive=False, context=ReviewContext()) == base
    red = ReviewContext(ci=[CiResult(name="tests", state="failure")])
    green = ReviewContext(ci=[CiResult(name="tests", state="success")])
    assert (
        len(
            {
                base,
                content_hash(TASK, FILES, sensitive=False, context=red),
                content_hash(TASK, FILES, sensitive=False, context=green),
            }
        )
        == 3
    )

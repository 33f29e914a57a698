"""Cost decisions as pure functions: cache keys, content hashes, throttle and budgets."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from bot.judge.cost import (
    Limits,
    Usage,
    admission,
    cache_key,
    calls_left_today,
    content_hash,
    day_window_start,
    hour_window_start,
    throttle_scope,
)
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


def test_cache_key_parts() -> None:
    key = cache_key(rubric="content", tier_models=["q", "d"], prompt_version="1", content="h")
    assert len(key) == 64
    variants = [
        cache_key(rubric="code", tier_models=["q", "d"], prompt_version="1", content="h"),
        cache_key(rubric="content", tier_models=["q", "x"], prompt_version="1", content="h"),
        cache_key(rubric="content", tier_models=["d", "q"], prompt_version="1", content="h"),
        cache_key(rubric="content", tier_models=["q", "d"], prompt_version="2", content="h"),
        cache_key(rubric="content", tier_models=["q", "d"], prompt_version="1", content="i"),
    ]
    assert key not in variants and len(set(variants)) == len(variants)
    # No ambiguity from joining: ["a,b"] differs from ["a", "b"].
    assert cache_key(rubric="c", tier_models=["a,b"], prompt_version="1", content="h") != (
        cache_key(rubric="c", tier_models=["a", "b"], prompt_version="1", content="h")
    )


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
    reason = admission(usage, LIMITS, scope="acme/widgets")
    if expected is None:
        assert reason is None
    else:
        assert reason is not None and expected in reason


def test_admission_without_budgets_and_zero_throttle() -> None:
    open_limits = Limits(throttle_per_hour=5, daily_call_budget=None, daily_token_budget=None)
    assert admission(Usage(4, 10**9, 10**12), open_limits, scope="s") is None
    closed = Limits(throttle_per_hour=0, daily_call_budget=None, daily_token_budget=None)
    reason = admission(Usage(0, 0, 0), closed, scope="s")
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


def test_throttle_scope_namespaced() -> None:
    assert throttle_scope("acme/widgets") == "judge:judgments:acme/widgets"

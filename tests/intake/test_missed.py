"""Which deliveries count as missed: GitHub's log entries in, events to redeliver out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.intake.missed import (
    LoggedAttempt,
    Missed,
    lookback,
    parse_attempt,
    redelivered_since,
    select_missed,
    undelivered_guids,
)

NOW = datetime(2026, 5, 12, 12, 0, tzinfo=UTC)
SINCE = NOW - timedelta(hours=24)


def attempt(
    guid: str,
    code: int,
    hours_ago: float,
    *,
    ident: int | None = None,
    redelivery: bool = False,
    event: str = "push",
) -> LoggedAttempt:
    return LoggedAttempt(
        id=ident if ident is not None else int(1000 - hours_ago * 10),
        guid=guid,
        delivered_at=NOW - timedelta(hours=hours_ago),
        status_code=code,
        event=event,
        action=None,
        redelivery=redelivery,
    )


def raw(**changes: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": 42,
        "guid": "58474f00-b361-11eb-836d-0e4f3503ccbe",
        "delivered_at": "2021-05-12T20:33:44Z",
        "redelivery": False,
        "duration": 0.03,
        "status": "failed to connect",
        "status_code": 502,
        "event": "issues",
        "action": "opened",
        "installation_id": 123,
        "repository_id": 123,
    }
    entry.update(changes)
    return entry


def test_parse_attempt_reads_githubs_example() -> None:
    """The fields the decision needs come from GitHub's documented example entry."""
    assert parse_attempt(raw()) == LoggedAttempt(
        id=42,
        guid="58474f00-b361-11eb-836d-0e4f3503ccbe",
        delivered_at=datetime(2021, 5, 12, 20, 33, 44, tzinfo=UTC),
        status_code=502,
        event="issues",
        action="opened",
        redelivery=False,
    )
    parsed = parse_attempt(raw(action=None, redelivery=True))
    assert parsed is not None
    assert parsed.action is None
    assert parsed.redelivery


@pytest.mark.parametrize(
    "item",
    [
        None,
        [],
        "entry",
        raw(id="42"),
        raw(id=True),
        raw(guid=""),
        raw(guid=None),
        raw(status_code=None),
        raw(status_code=False),
        raw(event=None),
        raw(action=3),
        raw(delivered_at=None),
        raw(delivered_at="yesterday"),
        raw(delivered_at="2021-05-12T20:33:44"),  # no time zone: cannot be compared
    ],
)
def test_parse_attempt_skips_entries_it_cannot_read(item: object) -> None:
    assert parse_attempt(item) is None


@pytest.mark.parametrize(
    ("hours", "retention_days", "expected"),
    [
        (24, 30, timedelta(hours=24)),
        (72, 0, timedelta(hours=72)),  # retention 0 keeps everything
        (72, 1, timedelta(days=1)),  # a pruned delivery must not look missed
        (0.5, 1, timedelta(minutes=30)),
    ],
)
def test_lookback(hours: float, retention_days: float, expected: timedelta) -> None:
    assert lookback(hours, retention_days) == expected


CASES: list[tuple[str, list[LoggedAttempt], set[str], list[str]]] = [
    ("nothing logged", [], set(), []),
    ("delivered first time", [attempt("a", 202, 1)], set(), []),
    ("200 duplicate counts as delivered", [attempt("a", 200, 1)], set(), []),
    ("failed to connect", [attempt("a", 0, 1)], set(), ["a"]),
    ("5xx answer", [attempt("a", 503, 2)], set(), ["a"]),
    ("redirect is no delivery", [attempt("a", 302, 2)], set(), ["a"]),
    ("stored although GitHub gave up", [attempt("a", 0, 1)], {"a"}, []),
    (
        "a later redelivery got through",
        [attempt("a", 0, 3), attempt("a", 202, 1, redelivery=True)],
        set(),
        [],
    ),
    (
        "every redelivery failed too",
        [attempt("a", 0, 3), attempt("a", 502, 1, redelivery=True)],
        set(),
        ["a"],
    ),
    ("older than the window", [attempt("a", 0, 25)], set(), []),
    (
        "first attempt outside, a failed redelivery inside",
        [attempt("a", 0, 30), attempt("a", 0, 2, redelivery=True)],
        set(),
        ["a"],
    ),
    (
        "delivered before the window, failed redelivery inside",
        [attempt("a", 202, 30), attempt("a", 0, 2, redelivery=True)],
        set(),
        [],
    ),
    (
        "oldest event first, whatever the log order",
        [attempt("new", 0, 1), attempt("mid", 0, 5), attempt("old", 0, 9)],
        set(),
        ["old", "mid", "new"],
    ),
    (
        "only the unknown ones",
        [attempt("a", 0, 1), attempt("b", 0, 2), attempt("c", 202, 3)],
        {"b"},
        ["a"],
    ),
]


@pytest.mark.parametrize(
    ("attempts", "known", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_select_missed(attempts: list[LoggedAttempt], known: set[str], expected: list[str]) -> None:
    selected = select_missed(attempts, known, SINCE, limit=100)
    assert [m.guid for m in selected] == expected


def test_select_missed_names_the_events_original_attempt() -> None:
    """Redelivering the first attempt sends the event as GitHub first sent it."""
    attempts = [
        attempt("a", 0, 1, ident=30, redelivery=True, event="pull_request"),
        attempt("a", 0, 5, ident=10, event="pull_request"),
        attempt("a", 0, 3, ident=20, redelivery=True, event="pull_request"),
    ]
    assert select_missed(attempts, set(), SINCE, limit=5) == [
        Missed("a", 10, "pull_request", None, NOW - timedelta(hours=5))
    ]


def test_select_missed_keeps_the_oldest_within_the_limit() -> None:
    attempts = [attempt(f"g{i}", 0, i) for i in range(1, 8)]
    assert [m.guid for m in select_missed(attempts, set(), SINCE, limit=3)] == ["g7", "g6", "g5"]
    assert select_missed(attempts, set(), SINCE, limit=0) == []


def test_same_time_orders_by_guid() -> None:
    attempts = [attempt("b", 0, 1, ident=1), attempt("a", 0, 1, ident=2)]
    assert undelivered_guids(attempts, SINCE) == ["a", "b"]


@pytest.mark.parametrize(
    ("attempts", "expected"),
    [
        ([attempt("a", 202, 1)], []),  # GitHub's own first delivery: nobody claimed it
        ([attempt("a", 0, 3), attempt("a", 202, 1, redelivery=True)], ["a"]),
        ([attempt("a", 502, 1, redelivery=True)], []),
        ([attempt("a", 202, 30, redelivery=True)], []),
        (
            [attempt("b", 202, 1, redelivery=True), attempt("a", 200, 2, redelivery=True)],
            ["a", "b"],
        ),
    ],
)
def test_redelivered_since(attempts: list[LoggedAttempt], expected: list[str]) -> None:
    assert redelivered_since(attempts, SINCE) == expected

"""Loop prevention's decisions, table by table (bot/merging/breaker.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from bot.judge.records import JudgedFile, fingerprint
from bot.merging.breaker import (
    MAX_SIGHTINGS,
    BreakerPolicy,
    BreakerState,
    Hold,
    HoldReason,
    Trip,
    after_judgment,
    automatic_hold,
)
from bot.merging.breaker_messages import hold_output, trip_comment, trip_line

NOW = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)
POLICY = BreakerPolicy(non_approve_retries=3, doom_loop_retries=2, cooldown=timedelta(minutes=2))


def outcomes(
    steps: list[tuple[str, str | None, str]], policy: BreakerPolicy = POLICY
) -> tuple[BreakerState, list[Trip | None]]:
    state = BreakerState()
    trips: list[Trip | None] = []
    for verdict, content, sha in steps:
        state, trip = after_judgment(state, verdict, content, sha, NOW, policy)
        trips.append(trip)
    return state, trips


@pytest.mark.parametrize(
    ("steps", "expected_trips", "tripped"),
    [
        # Different content each time: the non-approve breaker trips on the third.
        (
            [("reject", "a", "1"), ("improve", "b", "2"), ("escalate", "c", "3")],
            [None, None, Trip.NON_APPROVE],
            Trip.NON_APPROVE,
        ),
        # The same content back with the same verdict: the doom loop trips first.
        ([("reject", "a", "1"), ("reject", "a", "2")], [None, Trip.DOOM_LOOP], Trip.DOOM_LOOP),
        # Same content, another verdict: not a doom loop.
        ([("reject", "a", "1"), ("improve", "a", "2")], [None, None], None),
        # An accept in between forgets the count.
        (
            [
                ("reject", "a", "1"),
                ("improve", "b", "2"),
                ("accept", "c", "3"),
                ("reject", "a", "4"),
            ],
            [None, None, None, None],
            None,
        ),
        # Neutral outcomes and a person's decision (no content) count for nothing.
        (
            [("reject", "a", "1"), ("skipped", "b", "2"), ("undetermined", "c", "3")],
            [None, None, None],
            None,
        ),
        ([("reject", None, "1"), ("reject", None, "2"), ("reject", None, "3")], [None] * 3, None),
        # The same sha counts once (a retried delivery, a pull request taking over a push).
        ([("reject", "a", "1"), ("reject", "a", "1"), ("improve", "b", "1")], [None] * 3, None),
        # Once tripped, further outcomes trip nothing new.
        (
            [("reject", "a", "1"), ("reject", "a", "2"), ("reject", "a", "3")],
            [None, Trip.DOOM_LOOP, None],
            Trip.DOOM_LOOP,
        ),
    ],
)
def test_after_judgment(
    steps: list[tuple[str, str | None, str]],
    expected_trips: list[Trip | None],
    tripped: Trip | None,
) -> None:
    state, trips = outcomes(steps)
    assert trips == expected_trips
    assert state.tripped is tripped


def test_zero_thresholds_never_trip() -> None:
    never = BreakerPolicy(non_approve_retries=0, doom_loop_retries=0, cooldown=timedelta())
    state, trips = outcomes([("reject", "a", str(n)) for n in range(10)], never)
    assert trips == [None] * 10
    assert state.non_accepts == 10 and state.trips == 0


def test_trips_are_counted_across_resets_by_accept() -> None:
    state, _ = outcomes([("reject", "a", "1"), ("reject", "a", "2")])
    assert state.trips == 1
    state, _ = after_judgment(state, "accept", "b", "3", NOW, POLICY)
    assert state == BreakerState(trips=1)


def test_sightings_are_bounded() -> None:
    many = BreakerPolicy(non_approve_retries=0, doom_loop_retries=0, cooldown=timedelta())
    state, _ = outcomes([("reject", f"c{n}", str(n)) for n in range(MAX_SIGHTINGS + 10)], many)
    assert len(state.sightings) == MAX_SIGHTINGS
    assert f"c{MAX_SIGHTINGS + 9}:reject" in state.sightings
    assert "c0:reject" not in state.sightings


REJECTED_A = BreakerState(
    non_accepts=1, sightings={"a:reject": 1}, last_non_accept_at=NOW, counted_sha="1"
)


@pytest.mark.parametrize(
    ("state", "now", "policy", "content", "sha", "expected"),
    [
        (None, NOW, POLICY, "a", "2", None),
        (BreakerState(), NOW, POLICY, "a", "2", None),
        (
            REJECTED_A.model_copy(update={"tripped": Trip.NON_APPROVE}),
            NOW,
            POLICY,
            "b",
            "2",
            Hold(HoldReason.TRIPPED, trip=Trip.NON_APPROVE),
        ),
        # The sha counted last is never held (its retry, or a takeover).
        (REJECTED_A.model_copy(update={"tripped": Trip.DOOM_LOOP}), NOW, POLICY, "a", "1", None),
        # Same content within the cooldown: held until it ends.
        (
            REJECTED_A,
            NOW + timedelta(seconds=30),
            POLICY,
            "a",
            "2",
            Hold(HoldReason.COOLDOWN, until=NOW + timedelta(minutes=2)),
        ),
        (REJECTED_A, NOW + timedelta(minutes=2), POLICY, "a", "2", None),
        # New content is judged at once.
        (REJECTED_A, NOW, POLICY, "b", "2", None),
        (
            REJECTED_A,
            NOW + timedelta(days=1),
            BreakerPolicy(3, 2, timedelta(), requeue_on_non_approve=False),
            "b",
            "2",
            Hold(HoldReason.NO_REQUEUE),
        ),
    ],
)
def test_automatic_hold(
    state: BreakerState | None,
    now: datetime,
    policy: BreakerPolicy,
    content: str,
    sha: str,
    expected: Hold | None,
) -> None:
    assert automatic_hold(state, now, policy, content=content, sha=sha) == expected


def test_fingerprint_is_the_content_not_the_order() -> None:
    one = JudgedFile(path="a.md", content="x")
    two = JudgedFile(path="b.md", content="y")
    assert fingerprint([one, two]) == fingerprint([two, one])
    assert fingerprint([one]) != fingerprint([JudgedFile(path="a.md", content="z")])
    assert fingerprint([]) is None


@pytest.mark.parametrize(
    ("hold", "title", "phrase"),
    [
        (Hold(HoldReason.TRIPPED, trip=Trip.DOOM_LOOP), "doom-loop circuit breaker", "came back 2"),
        (Hold(HoldReason.TRIPPED, trip=Trip.NON_APPROVE), "non-approve", "3 consecutive"),
        (Hold(HoldReason.NO_REQUEUE), "waiting for /judge rerun", "only when a person asks"),
        (Hold(HoldReason.COOLDOWN, until=NOW), "cooling down", "2026-01-01 12:00:00 UTC"),
    ],
)
def test_hold_output_is_neutral_and_says_why(hold: Hold, title: str, phrase: str) -> None:
    output = hold_output(hold, POLICY)
    assert output.conclusion == "neutral"
    assert title in output.title
    assert phrase in output.summary


def test_cooldown_under_a_minute_is_said_in_seconds() -> None:
    short = BreakerPolicy(3, 2, timedelta(seconds=45))
    assert "45 s ago" in hold_output(Hold(HoldReason.COOLDOWN, until=NOW), short).summary
    assert "2 min 0 s ago" in hold_output(Hold(HoldReason.COOLDOWN, until=NOW), POLICY).summary


def test_trip_comment_names_the_label_and_the_reset() -> None:
    text = trip_comment(Trip.NON_APPROVE, POLICY)
    assert text.startswith("**[Needs-Human]**")
    assert "`judge:needs-human`" in text and "/judge rerun" in text
    assert trip_line(Trip.DOOM_LOOP, POLICY) in trip_comment(Trip.DOOM_LOOP, POLICY)

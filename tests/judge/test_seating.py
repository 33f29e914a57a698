"""Four-eyes seating: which model judges at each tier, decided without any call."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from bot.judge.engine.seating import JudgePanel, Seat, seat_panel
from bot.judge.records import Tier


class _UnusedProvider:
    """Seating is pure: it never calls the provider."""

    kind = "openai"
    base_url = "http://unused.invalid/v1"

    async def complete(self, **kwargs: Any) -> Any:
        raise AssertionError("seat_panel must not call providers")


def _seat(model: str, family: str) -> Seat:
    return Seat(model=model, family=family, provider=_UnusedProvider(), timeout=1, max_chars=1000)


@pytest.fixture
def panel() -> Iterator[JudgePanel]:
    seats = {
        Tier.QUICK: _seat("q", "openai"),
        Tier.DEEP: _seat("d", "moonshot"),
        Tier.TIEBREAKER: _seat("t", "meta"),
    }
    alternates = [_seat("a1", "moonshot"), _seat("a2", "google"), _seat("a3", "anthropic")]
    yield JudgePanel(tiers=seats, alternates={tier: alternates for tier in seats})


@pytest.mark.parametrize(
    ("authors", "allow_shared", "expected"),
    [
        ([], False, {"quick": "q", "deep": "d", "tiebreaker": "t"}),
        (["openai"], False, {"quick": "a2", "deep": "d", "tiebreaker": "t"}),
        (["openai"], True, {"quick": "a1", "deep": "d", "tiebreaker": "t"}),
        (["openai", "google"], False, {"quick": "a3", "deep": "d", "tiebreaker": "t"}),
        (["openai", "meta"], False, {"quick": "a2", "deep": "d", "tiebreaker": "a3"}),
        (["openai", "meta", "moonshot"], False, {"quick": "a2", "deep": "a3", "tiebreaker": None}),
        (["anthropic"], False, {"quick": "q", "deep": "d", "tiebreaker": "t"}),
        (["OpenAI"], False, {"quick": "a2", "deep": "d", "tiebreaker": "t"}),
    ],
)
def test_seat_panel(
    panel: JudgePanel, authors: list[str], allow_shared: bool, expected: dict[str, str | None]
) -> None:
    seating = seat_panel(panel, authors, allow_shared_family=allow_shared)
    got = {tier.value: (s.seat.model if s.seat else None) for tier, s in seating.items()}
    assert got == expected
    for seated in seating.values():
        if seated.seat is None:
            assert seated.reason and "four-eyes" in seated.reason
        elif seated.substituted_for:
            assert seated.seat.family.lower() not in {a.lower() for a in authors}

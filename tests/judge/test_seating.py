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


def _limited(model: str, family: str, *, timeout: float, max_chars: int) -> Seat:
    return Seat(
        model=model,
        family=family,
        provider=_UnusedProvider(),
        timeout=timeout,
        max_chars=max_chars,
    )


QUICK_SEAT = _limited("q", "openai", timeout=1, max_chars=4000)
DEEP_SEAT = _limited("d", "moonshot", timeout=2, max_chars=32000)
TIE_SEAT = _limited("t", "meta", timeout=3, max_chars=24000)


def test_a_seat_left_by_authorship_takes_another_tiers_alternate_at_its_own_limits() -> None:
    """Only the tiebreaker lists an alternate; deep's family wrote the change, so deep
    takes it, reading deep's 32,000 characters in deep's time, not the tiebreaker's."""
    google = _limited("g", "google", timeout=3, max_chars=24000)
    panel = JudgePanel(
        tiers={Tier.QUICK: QUICK_SEAT, Tier.DEEP: DEEP_SEAT, Tier.TIEBREAKER: TIE_SEAT},
        alternates={Tier.TIEBREAKER: [google]},
    )
    seating = seat_panel(panel, ["moonshot"], allow_shared_family=False)
    deep = seating[Tier.DEEP]
    assert deep.seat is not None and deep.substituted_for == "moonshot"
    assert (deep.seat.model, deep.seat.max_chars, deep.seat.timeout) == ("g", 32000, 2)


@pytest.mark.parametrize(
    ("allow_shared", "expected"),
    [
        (False, {"quick": "q", "deep": None, "tiebreaker": None}),
        # shared families allowed: the quick tier's model sits at both later tiers
        (True, {"quick": "q", "deep": "q", "tiebreaker": "q"}),
    ],
)
def test_configured_models_of_other_tiers_stand_in_only_where_families_may_share(
    allow_shared: bool, expected: dict[str, str | None]
) -> None:
    panel = JudgePanel(
        tiers={Tier.QUICK: QUICK_SEAT, Tier.DEEP: DEEP_SEAT, Tier.TIEBREAKER: TIE_SEAT}
    )
    seating = seat_panel(panel, ["moonshot", "meta"], allow_shared_family=allow_shared)
    got = {tier.value: (s.seat.model if s.seat else None) for tier, s in seating.items()}
    assert got == expected
    if allow_shared:
        deep, tiebreaker = seating[Tier.DEEP].seat, seating[Tier.TIEBREAKER].seat
        assert deep is not None and deep.max_chars == 32000
        assert tiebreaker is not None and tiebreaker.max_chars == 24000
    else:
        reason = seating[Tier.DEEP].reason
        assert reason and "four-eyes" in reason and "no other configured model" in reason
    # pure: the same panel and authors seat the same judges (the cache keys on it)
    assert seating == seat_panel(panel, ["meta", "moonshot"], allow_shared_family=allow_shared)


def test_a_tiers_own_alternates_come_before_borrowed_models() -> None:
    own = _limited("own", "google", timeout=2, max_chars=30000)
    borrowed = _limited("borrowed", "mistral", timeout=1, max_chars=4000)
    panel = JudgePanel(
        tiers={Tier.QUICK: QUICK_SEAT, Tier.DEEP: DEEP_SEAT},
        alternates={Tier.QUICK: [borrowed], Tier.DEEP: [own]},
    )
    seating = seat_panel(panel, ["moonshot"], allow_shared_family=False)
    deep = seating[Tier.DEEP].seat
    assert deep is not None and (deep.model, deep.max_chars) == ("own", 30000)

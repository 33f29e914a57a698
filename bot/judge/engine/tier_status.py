"""What a person needs to know about each judge tier: is it configured, and does its
model answer. Pages render `TierStatus`; the provider self-check fills in availability.

`statuses_from_settings` is the settings' half (pure); a `TierBoard` holds the latest
full picture, which the self-check replaces as a whole so a page never sees half an update.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from bot.judge.settings import TIER_ORDER, JudgeSettings

__all__ = ["TierBoard", "TierStatus", "statuses_from_settings"]


@dataclass(frozen=True)
class TierStatus:
    tier: str
    model: str | None
    provider: str | None
    host: str | None
    # None until the self-check has run, or when it could not tell (bot/judge/engine/self_check.py).
    available: bool | None = None
    problem: str | None = None
    # The settings a person sets to make this tier work (names only, never values).
    settings: tuple[str, ...] = ()

    @property
    def configured(self) -> bool:
        return self.model is not None and self.host is not None

    def checked(self, *, available: bool | None, problem: str | None = None) -> TierStatus:
        """This status after a self-check: `available` None when the check could not tell
        (the provider has no model list), with `problem` saying why."""
        return replace(self, available=available, problem=problem)


def statuses_from_settings(settings: JudgeSettings) -> list[TierStatus]:
    """One status per tier in protocol order, unchecked, with what is missing named."""
    seats = settings.tiers()
    statuses: list[TierStatus] = []
    for tier in TIER_ORDER:
        seat = seats.get(tier)
        prefix = f"JUDGE_{tier.value.upper()}"
        if seat is not None:
            statuses.append(
                TierStatus(tier.value, seat.model, seat.provider, seat.host, settings=())
            )
            continue
        model = getattr(settings, f"{tier.value}_model")
        missing = (
            (f"{prefix}_MODEL",)
            if not model
            else ("JUDGE_LLM_BASE_URL", f"{prefix}_BASE_URL", "JUDGE_LLM_API_KEY")
        )
        statuses.append(
            TierStatus(
                tier.value,
                model or None,
                None,
                None,
                problem="not configured" if not model else "no endpoint for this model",
                settings=missing,
            )
        )
    return statuses


class TierBoard:
    """The latest statuses, shared by the self-check (writer) and the pages (readers)."""

    def __init__(self, initial: Sequence[TierStatus]) -> None:
        self._statuses = tuple(initial)

    def current(self) -> tuple[TierStatus, ...]:
        return self._statuses

    def replace_all(self, statuses: Sequence[TierStatus]) -> None:
        self._statuses = tuple(statuses)

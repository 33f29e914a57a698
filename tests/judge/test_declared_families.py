"""Declared families are recognised by name in authorship trailers (four-eyes), and the
configuration names them: tier families, alternates' families, pattern families."""

from __future__ import annotations

import os

import pytest

from bot.judge.authorship import detect_authoring_families
from bot.judge.engine.seating import build_panel, seat_panel
from bot.judge.records import Tier
from bot.judge.settings import JudgeSettings


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


NAMES = {"acme": "acme", "mystery-7b": "unknown:mystery-7b"}


@pytest.mark.parametrize(
    ("trailer", "families"),
    [
        ("Agent-Model: acme-large", ["acme"]),
        ("Agent-Model: ACME-Large", ["acme"]),
        ("Generated-by: acme/large-v2", ["acme"]),
        ("Model: acme2", ["acme"]),  # a digit is a version, not another word
        ("Co-authored-by: Acme Bot <bot@acme.example>", ["acme"]),
        ("Agent-Model: acmefoo", []),  # a letter makes another word
        ("Agent-Model: superacme", []),
        ("Agent-Model: proxy/Mystery-7B", ["unknown:mystery-7b"]),
        ("Agent-Model: mystery-7", []),
        ("Agent-Model: acme-gpt-wrapper", ["acme", "openai"]),  # both count
        ("acme-large wrote this", []),  # prose is not a trailer
        ("Reviewed-by: acme", []),  # not an authorship trailer
    ],
)
def test_declared_names_are_tokens_in_trailers(trailer: str, families: list[str]) -> None:
    message = f"Add the thing\n\n{trailer}"
    assert detect_authoring_families([message], family_names=NAMES) == families


def test_without_declared_names_an_unknown_family_goes_unnoticed() -> None:
    """The defect: only the built-in patterns were tried."""
    assert detect_authoring_families(["x\n\nAgent-Model: acme-large"]) == []


def test_one_letter_names_are_not_matched() -> None:
    assert detect_authoring_families(["x\n\nAgent: x-bot"], family_names={"x": "x"}) == []


def test_settings_name_every_seated_and_declared_family() -> None:
    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="acme-large",
        quick_family="Acme",
        deep_model="proxy/Mystery-7B",
        tiebreaker_model="gpt-5",
        alternate_models=["gemini-2.5-flash"],
        authorship_patterns={"house-llm": "InHouse"},
    )
    assert settings.family_names() == {
        "acme": "acme",
        "google": "google",
        "inhouse": "inhouse",
        "mystery-7b": "unknown:mystery-7b",
        "openai": "openai",
    }
    assert JudgeSettings().family_names() == {}


async def test_a_tier_declared_by_family_does_not_judge_its_familys_work() -> None:
    """Seen end to end through the seating: `Agent-Model: acme-large` replaces the quick
    tier declared JUDGE_QUICK_FAMILY=acme by the alternate."""
    import httpx

    settings = JudgeSettings(
        llm_base_url="http://x/v1",
        quick_model="house-model",
        quick_family="acme",
        alternate_models=["gpt-5-mini"],
    )
    authoring = detect_authoring_families(
        ["Fix\n\nAgent-Model: acme-large"],
        settings.authorship_patterns,
        family_names=settings.family_names(),
    )
    assert authoring == ["acme"]
    async with httpx.AsyncClient() as client:
        panel = build_panel(settings, client)
    seating = seat_panel(panel, authoring, allow_shared_family=False)
    seat = seating[Tier.QUICK].seat
    assert seat is not None and seat.model == "gpt-5-mini"
    assert seating[Tier.QUICK].substituted_for == "acme"

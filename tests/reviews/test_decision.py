"""Review mode's decisions (bot/reviews/decision.py)."""

from __future__ import annotations

import pytest

from bot.reviews.decision import (
    MAX_IMPROVEMENTS,
    improvements_of,
    review_body,
    review_enabled,
    review_event,
)
from tests.support.verdict_builders import make_record as record

SHA = "a" * 40


@pytest.mark.parametrize(
    ("verdict", "event"),
    [
        ("accept", "APPROVE"),
        ("improve", "REQUEST_CHANGES"),
        ("reject", "REQUEST_CHANGES"),
        ("escalate", "COMMENT"),
        ("skipped", None),
        ("undetermined", None),
        ("", None),
    ],
)
def test_review_event(verdict: str, event: str | None) -> None:
    assert review_event(verdict) == event


@pytest.mark.parametrize(
    ("repository", "default", "enabled"),
    [(None, False, False), (None, True, True), (True, False, True), (False, True, False)],
)
def test_repository_setting_wins(repository: bool | None, default: bool, enabled: bool) -> None:
    assert review_enabled(repository, default) is enabled


def test_improvements_are_kept_in_order_once() -> None:
    records = [
        record(improvements=["Cite sources", " ", "Shorter intro"]),
        record(improvements=["Cite sources", "Add a summary"]),
    ]
    assert improvements_of(records) == ["Cite sources", "Shorter intro", "Add a summary"]


def test_body_lists_improvements_only_when_changes_are_requested() -> None:
    items = [f"item {n}" for n in range(MAX_IMPROVEMENTS + 3)]
    body = review_body("reject", SHA, items, run_url="https://example.test/run")
    assert body.startswith("judge-bot: **reject** at `aaaaaaa`.")
    assert "- item 0" in body and f"- item {MAX_IMPROVEMENTS}" not in body
    assert "3 more items left out" in body
    assert "Details: https://example.test/run" in body
    assert "Improvements" not in review_body("accept", SHA, items)
    assert "decided by @lead" in review_body("accept", SHA, [], decided_by="lead")
    assert "a person decides" in review_body("escalate", SHA, [])


def test_untrusted_improvements_cannot_break_out_of_their_bullet() -> None:
    body = review_body("improve", SHA, ["# heading\n<script>x</script> @someone"])
    line = next(line for line in body.splitlines() if line.startswith("- "))
    assert "\n" not in line and "<script>" not in body

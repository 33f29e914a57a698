"""Review mode's decisions (bot/reviews/decision.py)."""

from __future__ import annotations

from typing import Any

import pytest

from bot.reviews.decision import (
    MAX_IMPROVEMENTS,
    dismissal_message,
    improvements_of,
    replaces_earlier,
    review_body,
    review_enabled,
    review_event,
    reviews_to_dismiss,
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


@pytest.mark.parametrize(
    ("event", "replaces"),
    [("APPROVE", True), ("REQUEST_CHANGES", True), ("COMMENT", False)],
)
def test_only_a_verdict_replaces_the_earlier_review(event: Any, replaces: bool) -> None:
    assert replaces_earlier(event) is replaces


@pytest.mark.parametrize(
    ("reviews", "ours", "newest", "dismissed"),
    [
        ([], [], 9, []),
        ([(1, "APPROVED"), (9, "APPROVED")], [1, 9], 9, [1]),
        ([(1, "CHANGES_REQUESTED"), (9, "APPROVED")], [1], 9, [1]),
        # A COMMENTED or already DISMISSED review cannot be dismissed (GitHub: 422).
        ([(1, "COMMENTED"), (2, "DISMISSED"), (9, "APPROVED")], [1, 2], 9, []),
        # A person's review (an id the App never submitted) is never touched.
        ([(5, "APPROVED"), (9, "CHANGES_REQUESTED")], [], 9, []),
        ([(5, "APPROVED"), (6, "CHANGES_REQUESTED"), (9, "APPROVED")], [6], 9, [6]),
        # An id stored but no longer listed (deleted pending review) is skipped.
        ([(9, "APPROVED")], [3], 9, []),
        # Submitted at once: the later review (the larger id) stands, whichever call asks.
        ([(9, "APPROVED"), (10, "CHANGES_REQUESTED")], [9, 10], 9, []),
        ([(9, "APPROVED"), (10, "CHANGES_REQUESTED")], [9, 10], 10, [9]),
    ],
)
def test_reviews_to_dismiss(
    reviews: list[tuple[int, str]], ours: list[int], newest: int, dismissed: list[int]
) -> None:
    assert reviews_to_dismiss(reviews, ours, newest) == dismissed


def test_dismissal_message_names_the_newer_verdict() -> None:
    assert (
        dismissal_message("accept", SHA)
        == "Replaced by judge-bot's newer verdict accept at aaaaaaa."
    )

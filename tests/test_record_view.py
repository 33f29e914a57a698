"""How a record's rounds and scores are shown (bot.record_view)."""

from __future__ import annotations

from bot.judge.records import Tier, Verdict
from bot.record_view import (
    abbreviate,
    dimensions_of,
    format_score,
    round_verdict_cell,
    rounds_of,
    scores_glance,
)
from tests.support.verdict_builders import make_record, make_round


def test_rounds_are_not_duplicated_when_the_last_is_also_listed() -> None:
    deep = make_round(round=2, judge_tier=Tier.DEEP, verdict=Verdict.ACCEPT)
    record = make_record(previous_rounds=[make_round(), deep])
    assert [v.round for v in rounds_of(record)] == [1, 2]


def test_scores_at_a_glance() -> None:
    assert scores_glance({"semantic": 4, "pragmatic": 3.5, "syntactic": 5}) == "S4 P3.5 X5"
    assert abbreviate("made_up") == "Ma"
    assert [format_score(v) for v in (None, 4.0, 3.25, 3.10)] == ["-", "4", "3.25", "3.1"]


def test_dimensions_in_first_seen_order_and_failed_rounds() -> None:
    record = make_record(
        previous_rounds=[
            make_round(),
            make_round(round=2, verdict=None, scores={}, average=None, error="timeout"),
        ]
    )
    views = rounds_of(record)
    assert dimensions_of(views)[:1] == [next(iter(views[0].scores))]
    failed = next(v for v in views if v.verdict is None)
    assert round_verdict_cell(failed) == "failed: timeout"

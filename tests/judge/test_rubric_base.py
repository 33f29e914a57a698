"""What every rubric shares (`bot/judge/rubrics/base.py`): the phase A/B GO/NO-GO label and
the answer a rubric parses a reply into."""

from __future__ import annotations

import pytest

from bot.judge.rubrics.base import RubricAnswer, scores_go_no_go
from bot.judge.rubrics.content import ContentRubric
from tests.support.rubric_helpers import DIMS


@pytest.mark.parametrize(
    ("scores", "expected"),
    [((3, 3, 3), "GO"), ((5, 5, 3), "GO"), ((2, 5, 5), "NO-GO"), ((5, 5, 1), "NO-GO")],
)
def test_go_no_go_is_phase_ab_rule(scores: tuple[int, int, int], expected: str) -> None:
    """GO when all >= 3, independent of the phase C average rule."""
    as_dict = dict(zip(DIMS, scores, strict=True))
    assert scores_go_no_go(as_dict) == expected
    rubric = ContentRubric()
    assert rubric.go_no_go(rubric.parse(as_dict)) == expected


def test_go_no_go_without_scores_is_undetermined() -> None:
    assert scores_go_no_go({}) == "UNDETERMINED"


def test_rubric_answer_is_plain_data() -> None:
    answer = RubricAnswer({"a": 1}, 1.0, "r", [], None)
    assert answer.extra == {}

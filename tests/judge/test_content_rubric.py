"""The content rubric (`bot/judge/rubrics/content.py`): every score combination and boundary,
decided from the scores and never from the model's label."""

from __future__ import annotations

import itertools

import pytest

from bot.judge.records import Verdict
from bot.judge.rubrics.content import ContentRubric, ContentThresholds, content_verdict
from tests.support.rubric_helpers import DIMS


def content_oracle(s: int, p: int, x: int) -> str:
    """Independent reading of seed 000's table, in integer arithmetic."""
    scores = (s, p, x)
    if min(scores) < 2:
        return "reject"
    # average >= 3.5  <=>  2 * sum >= 7 * n
    if min(scores) >= 3 and 2 * sum(scores) >= 7 * 3:
        return "accept"
    return "improve"


ALL_COMBOS = list(itertools.product(range(1, 6), repeat=3))


def test_all_125_combinations_are_covered() -> None:
    """The table below really is every combination."""
    assert len(ALL_COMBOS) == 125
    assert {content_oracle(*c) for c in ALL_COMBOS} == {"accept", "improve", "reject"}


@pytest.mark.parametrize("combo", ALL_COMBOS, ids=lambda c: "-".join(map(str, c)))
def test_content_verdict_matches_oracle(combo: tuple[int, int, int]) -> None:
    """decide() agrees with the independent oracle for every score combination."""
    rubric = ContentRubric()
    answer = rubric.parse({"scores": dict(zip(DIMS, combo, strict=True))})
    assert rubric.decide(answer).value == content_oracle(*combo)


@pytest.mark.parametrize(
    ("scores", "expected"),
    [
        ((3, 3, 4), Verdict.IMPROVE),  # average 3.33
        ((3, 4, 4), Verdict.ACCEPT),  # average 3.67
        ((4, 4, 3), Verdict.ACCEPT),
        ((3, 3, 5), Verdict.ACCEPT),  # 11/3 = 3.67
        ((3, 3, 3), Verdict.IMPROVE),  # all >= 3 but average 3.0
        ((2, 5, 5), Verdict.IMPROVE),  # one < 3 but all >= 2
        ((1, 5, 5), Verdict.REJECT),  # any 1
        ((5, 5, 1), Verdict.REJECT),
        ((2, 2, 2), Verdict.IMPROVE),
        ((5, 5, 5), Verdict.ACCEPT),
    ],
)
def test_content_named_boundaries(scores: tuple[int, int, int], expected: Verdict) -> None:
    """The boundaries the seed and the brief name explicitly."""
    assert content_verdict(dict(zip(DIMS, scores, strict=True))) is expected


def test_content_average_exactly_at_threshold_accepts() -> None:
    """An average equal to the threshold accepts: compared exactly, not after rounding."""
    # 4 dimensions summing to 14 average exactly 3.5
    assert content_verdict({"a": 3, "b": 4, "c": 3, "d": 4}) is Verdict.ACCEPT
    assert content_verdict({"a": 3, "b": 3, "c": 3, "d": 4}) is Verdict.IMPROVE
    # a threshold that is not a binary fraction is still compared exactly
    t = ContentThresholds(accept_average=3.4)
    assert content_verdict({"a": 3, "b": 4, "c": 3, "d": 3, "e": 4}, t) is Verdict.ACCEPT


def test_model_label_is_recorded_but_never_decides() -> None:
    """A model saying accept over scores that say reject is rejected."""
    rubric = ContentRubric()
    answer = rubric.parse(
        {"verdict": "accept", "scores": {"semantic": 1, "pragmatic": 5, "syntactic": 5}}
    )
    assert answer.model_verdict == "accept"
    assert rubric.decide(answer) is Verdict.REJECT


def test_content_thresholds_are_configurable_and_validated() -> None:
    """Custom thresholds change decisions; inconsistent ones are refused."""
    strict = ContentRubric(ContentThresholds(accept_min=4, accept_average=4.0))
    answer = strict.parse({"semantic": 3, "pragmatic": 5, "syntactic": 5})
    assert strict.decide(answer) is Verdict.IMPROVE
    with pytest.raises(ValueError):
        ContentThresholds(reject_below=4, accept_min=3)
    with pytest.raises(ValueError):
        ContentThresholds(accept_average=6)


def test_content_verdict_refuses_empty_scores() -> None:
    with pytest.raises(ValueError):
        content_verdict({})


def test_content_average_recorded_rounded() -> None:
    answer = ContentRubric().parse({"semantic": 3, "pragmatic": 3, "syntactic": 4})
    assert answer.average == 3.33

"""How one call's budget is shared between diffs, files and CI excerpts, by rubric."""

from __future__ import annotations

import pytest

from bot.judge.engine.context_budget import KEEP_ORDER, Piece, allot, share
from bot.judge.records import RubricName


@pytest.mark.parametrize(
    ("sizes", "budget", "expected"),
    [
        ([], 10, []),
        ([3, 100], 50, [3, 47]),
        ([100, 100], 50, [25, 25]),
        ([5, 5], 100, [5, 5]),
        ([5, 5], -3, [0, 0]),
    ],
)
def test_share_is_smallest_first_and_even(
    sizes: list[int], budget: int, expected: list[int]
) -> None:
    assert share(sizes, budget) == expected


PIECES = [Piece("ci", "tests", 300), Piece("diff", "a.py", 400), Piece("file", "a.py", 800)]


@pytest.mark.parametrize(
    ("rubric", "budget", "expected"),
    [
        # code: diffs first, then files; CI excerpts get what is left
        (RubricName.CODE, 2000, [300, 400, 800]),
        (RubricName.CODE, 1400, [100, 400, 800]),
        (RubricName.CODE, 1000, [0, 400, 500]),
        (RubricName.CODE, 300, [0, 200, 0]),
        (RubricName.COMPLETION, 1000, [0, 400, 500]),
        # prose: the whole text first, then diffs
        (RubricName.CONTENT, 1000, [0, 100, 800]),
        (RubricName.RESEARCH, 700, [0, 0, 600]),
    ],
)
def test_kinds_are_trimmed_in_the_stated_order(
    rubric: RubricName, budget: int, expected: list[int]
) -> None:
    assert allot(PIECES, budget, fixed=100, rubric=rubric) == expected


def test_fixed_parts_larger_than_the_budget_leave_nothing_to_share() -> None:
    assert allot(PIECES, 50, fixed=100, rubric=RubricName.CODE) == [0, 0, 0]


def test_every_rubric_has_an_order_of_every_kind() -> None:
    for rubric in RubricName:
        assert sorted(KEEP_ORDER[rubric]) == ["ci", "diff", "file"]
        assert KEEP_ORDER[rubric][-1] == "ci", "CI excerpts are always trimmed first"

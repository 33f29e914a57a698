"""Whether a judge reads every judged file in full: the fact an accept needs."""

from __future__ import annotations

import pytest

from bot.judge.engine.prompts import (
    TASK_TEXT_LIMIT,
    Shown,
    compose_messages,
    reads_whole,
    sends_every_file,
)
from bot.judge.engine.review_context import FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics import get_rubric

CONTENT = get_rubric(RubricName.CONTENT)
CODE = get_rubric(RubricName.CODE)
TASK = TaskSpec(task_id="t", description="Write it")


@pytest.mark.parametrize(
    ("shown", "whole"),
    [
        ([], True),
        ([Shown("file", "a.md", 10, 10), Shown("file", "b.md", 5, 5)], True),
        ([Shown("file", "a.md", 10, 10), Shown("file", "b.md", 5, 4)], False),
        # a capped task text, a cut diff or CI excerpt is not what is judged
        ([Shown("task", "(task description)", 9000, 8000), Shown("file", "a.md", 3, 3)], True),
        ([Shown("diff", "a.md", 900, 10), Shown("ci", "tests", 700, 40)], True),
    ],
)
def test_sends_every_file(shown: list[Shown], whole: bool) -> None:
    assert sends_every_file(shown) is whole


@pytest.mark.parametrize(("size", "whole"), [(3000, True), (3999, True), (6000, False)])
def test_reads_whole_is_what_the_round_would_record(size: int, whole: bool) -> None:
    files = [JudgedFile(path="n.md", content="x" * size)]
    assert reads_whole(CONTENT, TASK, files, Tier.QUICK, max_chars=4000) is whole
    prompt = compose_messages(CONTENT, TASK, files, Tier.QUICK, nonce="n" * 16, max_chars=4000)
    assert sends_every_file(prompt.shown) is whole


def test_a_long_task_text_does_not_make_the_view_partial() -> None:
    task = TaskSpec(task_id="t", description="d" * (TASK_TEXT_LIMIT + 10))
    files = [JudgedFile(path="n.md", content="short")]
    assert reads_whole(CONTENT, task, files, Tier.QUICK, max_chars=4000)


def test_a_removed_file_needs_no_reading() -> None:
    files = [JudgedFile(path="gone.md", content="x" * 50_000, status="removed")]
    live = [f for f in files if not f.removed]
    assert reads_whole(CONTENT, TASK, live, Tier.QUICK, max_chars=4000)


def test_the_budget_is_shared_with_diffs_in_the_rubrics_order() -> None:
    """Code keeps diffs first, so a diff can leave the full file short of the budget."""
    files = [JudgedFile(path="a.py", content="x" * 3000, status="modified")]
    context = ReviewContext(diffs=[FileDiff(path="a.py", diff="+" * 2000)])
    assert not reads_whole(CODE, TASK, files, Tier.QUICK, max_chars=4000, context=context)
    assert reads_whole(CODE, TASK, files, Tier.QUICK, max_chars=6000, context=context)

"""bot/judging/judge_requests.py `fitted_window_budget`: requests planned with the deciding
judges' contexts, so that every window is read whole. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from bot.judge.engine.context_fit import (
    TierFit,
    fitted_budget,
    prompt_room,
    schema_chars,
)
from bot.judge.engine.prompts import Prompt, compose_messages, reads_whole
from bot.judge.engine.review_context import ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.judge_requests import (
    MIN_WINDOW_CHARS,
    JudgeInputs,
    TierRoom,
    WindowBudget,
    fitted_window_budget,
    judge_requests,
    window_budget,
)
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from tests.judging.test_judge_requests import CI, earlier_records, target
from tests.judging.test_windows import prose

BASE = "http://127.0.0.1:8080/v1"


def settings(**fields: Any) -> JudgeSettings:
    values: dict[str, Any] = {
        "llm_base_url": BASE,
        "quick_model": "qwen2.5:0.5b",
        "deep_model": "llama3.2:1b",
    }
    return JudgeSettings(**{**values, **fields})


def test_unknown_contexts_plan_as_before() -> None:
    judge_settings = settings(tiebreaker_model="gemma3:1b", tiebreaker_max_chars=40000)
    budget = fitted_window_budget(judge_settings, {Tier.QUICK: None, Tier.DEEP: None})
    assert not budget.fitted
    assert budget.chars_for(RubricName.CONTENT, TaskSpec(task_id="t"), ReviewContext()) == (
        window_budget(judge_settings)
    )


@pytest.mark.parametrize(
    ("fields", "tiers"),
    [
        ({}, (Tier.DEEP,)),
        ({"tiebreaker_model": "gemma3:1b"}, (Tier.DEEP, Tier.TIEBREAKER)),
        ({"deep_model": None}, (Tier.QUICK,)),  # quick decides alone
    ],
)
def test_the_deciding_tiers(fields: dict[str, Any], tiers: tuple[Tier, ...]) -> None:
    budget = fitted_window_budget(settings(**fields), {})
    assert tuple(room.tier for room in budget.rooms) == tiers


def test_no_judge_configured_plans_with_quicks_setting() -> None:
    judge_settings = JudgeSettings(quick_max_chars=5000)
    assert fitted_window_budget(judge_settings, {}) == WindowBudget((TierRoom(Tier.QUICK, 5000),))


def test_a_tiny_context_never_plans_tiny_windows() -> None:
    budget = fitted_window_budget(settings(), {Tier.DEEP: 1024})
    task = TaskSpec(task_id="t", description="x")
    assert budget.chars_for(RubricName.CONTENT, task, ReviewContext()) == MIN_WINDOW_CHARS


def test_the_tiebreaker_plans_room_for_the_rounds_before_it() -> None:
    deep = fitted_window_budget(settings(), {Tier.DEEP: 8192})
    tiebreaker = WindowBudget((TierRoom(Tier.TIEBREAKER, 32000, deep.rooms[0].prompt_room),))
    task = TaskSpec(task_id="t")
    context = ReviewContext()
    assert tiebreaker.chars_for(RubricName.CONTENT, task, context) < deep.chars_for(
        RubricName.CONTENT, task, context
    )


def _engine_budget(judge_settings: JudgeSettings, tokens: int, request: Any, tier: Tier) -> int:
    """The budget the engine gives `tier` for `request` (JudgeEngine._budgets)."""
    seat = judge_settings.tiers()[tier]
    rubric = get_rubric(request.rubric)

    def compose(chars: int) -> Prompt:
        return compose_messages(
            rubric,
            request.task,
            request.files,
            tier,
            nonce="0" * 32,
            max_chars=chars,
            context=request.context,
        )

    return fitted_budget(
        compose,
        room=prompt_room(TierFit(tokens, "setting"), seat.max_output_tokens),
        max_chars=seat.max_chars,
        extra=schema_chars(rubric.response_schema()),
    )


@pytest.mark.parametrize("tokens", [4096, 8192, 32768])
@pytest.mark.parametrize("rubric", [RubricName.CONTENT, RubricName.CODE])
def test_every_planned_request_is_read_whole_by_the_deep_judge(
    tokens: int, rubric: RubricName
) -> None:
    """With CI, earlier verdicts, diffs, several files and one too long for any request."""
    judge_settings = settings()
    path = "docs/long.md" if rubric is RubricName.CONTENT else "src/long.py"
    small = "docs/a.md" if rubric is RubricName.CONTENT else "src/a.py"
    files = [
        JudgedFile(path=path, content=prose(60000)),
        JudgedFile(path=small, content=prose(1200)),
    ]
    repo = RepoConfig(rubrics={"src/**": RubricName.CODE, "docs/**": RubricName.CONTENT})
    inputs = JudgeInputs(
        files=files,
        commits=(),
        directives=("Keep the tone plain.", "A pull request body. " * 40),
        sensitive=frozenset(),
        ci=CI,
        earlier=earlier_records(),
    )
    budget = fitted_window_budget(judge_settings, {Tier.DEEP: tokens})
    requests = judge_requests(target(), repo, inputs, ResearchRules(), window_chars=budget)
    assert len(requests) > 2
    for request in requests:
        chars = _engine_budget(judge_settings, tokens, request, Tier.DEEP)
        assert reads_whole(
            get_rubric(rubric),
            request.task,
            request.files,
            Tier.DEEP,
            max_chars=chars,
            context=request.context,
        ), [f.path for f in request.files]


def test_a_target_helper_is_a_target() -> None:
    assert isinstance(target(), Target)

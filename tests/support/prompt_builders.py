"""Prompt-building shorthands the tests use; production calls `compose_messages` and `share`."""

from __future__ import annotations

from collections.abc import Sequence

from bot.judge.engine.context_budget import share
from bot.judge.engine.prompts import compose_messages
from bot.judge.engine.review_context import ReviewContext
from bot.judge.records import JudgedFile, RoundRecord, TaskSpec, Tier, Truncation
from bot.judge.rubrics import Rubric


def _allocate(sizes: Sequence[int], budget: int) -> list[int]:
    """Characters kept per file: smallest first, each at most an even share of what is left."""
    return share(sizes, budget)


def build_messages(
    rubric: Rubric,
    task: TaskSpec,
    files: Sequence[JudgedFile],
    tier: Tier,
    *,
    nonce: str,
    max_chars: int,
    previous_rounds: Sequence[RoundRecord] = (),
    context: ReviewContext | None = None,
) -> tuple[list[dict[str, str]], list[Truncation]]:
    """`compose_messages`, answering only its messages and truncations."""
    prompt = compose_messages(
        rubric,
        task,
        files,
        tier,
        nonce=nonce,
        max_chars=max_chars,
        previous_rounds=previous_rounds,
        context=context,
    )
    return prompt.messages, prompt.truncation

"""bot/judge/engine/context_fit.py: the characters a judge reads at a known context. Pure."""

from __future__ import annotations

import pytest

from bot.judge.engine.context_fit import (
    CHARS_PER_TOKEN,
    SHRINK_MARGIN,
    TEMPLATE_TOKENS,
    TierFit,
    after_overflow,
    answer_reserve,
    answer_tokens,
    fitted_budget,
    prompt_chars,
    prompt_room,
)
from bot.judge.engine.prompts import Prompt, Shown, compose_messages
from bot.judge.engine.review_context import CiResult, EarlierVerdict, ReviewContext
from bot.judge.providers.server_facts import REFUSAL
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics import get_rubric


@pytest.mark.parametrize(
    ("context", "limit", "reserve"),
    [
        (2048, 1024, 256),  # an eighth of a small context, never under 256
        (1024, 1024, 256),
        (4096, 1024, 512),
        (8192, 1024, 1024),  # the tier's own limit once the context allows it
        (131072, 1024, 1024),
        (8192, 200, 200),
    ],
)
def test_answer_reserve(context: int, limit: int, reserve: int) -> None:
    assert answer_reserve(context, limit) == reserve


def test_prompt_room() -> None:
    assert prompt_room(TierFit(None, "unknown"), 1024) is None
    assert prompt_room(TierFit(8192, "setting"), 1024) == int(
        (8192 - 1024 - TEMPLATE_TOKENS) * CHARS_PER_TOKEN
    )
    assert prompt_room(TierFit(300, "setting"), 1024) == 0


def _prompt(chars: int, shown: tuple[Shown, ...] = ()) -> Prompt:
    return Prompt([{"role": "user", "content": "x" * chars}], [], list(shown))


def test_fitted_budget_without_a_context_is_the_setting() -> None:
    def never(budget: int) -> Prompt:
        raise AssertionError("nothing to measure without a context")

    assert fitted_budget(never, room=None, max_chars=4000, extra=500) == 4000


def test_fitted_budget_fits_and_never_exceeds_the_setting() -> None:
    def compose(budget: int) -> Prompt:
        return _prompt(3000 + budget)

    # The least prompt holds one character of budget: counted as overhead, to be safe.
    assert fitted_budget(compose, room=5000, max_chars=4000, extra=500) == 1499
    assert fitted_budget(compose, room=50000, max_chars=4000, extra=500) == 4000
    assert fitted_budget(compose, room=3400, max_chars=4000, extra=500) == 0


def test_fitted_budget_counts_what_the_budget_spends_off_its_top() -> None:
    """Earlier verdicts and CI lines come out of the budget: they are no overhead."""
    fixed = (Shown("earlier", "earlier verdicts", 700, 700), Shown("ci", "tests", 99, 99))

    def compose(budget: int) -> Prompt:
        return _prompt(3000 + 800 + max(0, budget - 800), fixed)

    budget = fitted_budget(compose, room=6000, max_chars=9000, extra=0)
    assert budget == 3000
    assert prompt_chars(compose(budget)) == 6000


def test_fitted_budget_mends_an_estimate_that_was_short() -> None:
    # A cut note appears once a file is cut: 40 characters the first estimate missed.
    def compose(budget: int) -> Prompt:
        return _prompt(1000 + budget + (40 if budget < 4000 else 0))

    budget = fitted_budget(compose, room=3000, max_chars=4000, extra=0)
    assert prompt_chars(compose(budget)) <= 3000
    assert budget == 1959


def test_fitted_budget_shrinks_by_what_dense_files_weigh() -> None:
    # Files weighing three characters a character (dense text, `weighted_chars`): taking
    # off as many characters as the prompt is over would leave nothing.
    def compose(budget: int) -> Prompt:
        return _prompt(1000 + 3 * budget if budget > 1 else 1000)

    budget = fitted_budget(compose, room=3000, max_chars=4000, extra=0)
    assert budget == 666 and prompt_chars(compose(budget)) <= 3000


def test_fitted_budget_gives_up_when_it_cannot_fit() -> None:
    def compose(budget: int) -> Prompt:
        return _prompt(3100 + budget)

    assert fitted_budget(compose, room=3000, max_chars=4000, extra=0) == 0


def test_fitted_budget_stops_after_three_mends() -> None:
    # Whatever the budget, the prompt stays 100 over: the fourth estimate stands, unmeasured
    # (a server that counts the same refuses it, and the round fits to what it said).
    def compose(budget: int) -> Prompt:
        return _prompt(3100 if budget > 1 else 1000)

    assert fitted_budget(compose, room=3000, max_chars=4000, extra=0) == 1726


def test_a_real_prompt_fits_its_room() -> None:
    rubric = get_rubric(RubricName.CONTENT)
    task = TaskSpec(task_id="t", description="Weekly report " * 40, directives=["Be plain."])
    files = [JudgedFile(path=f"docs/{n}.md", content="word " * 3000) for n in range(3)]
    context = ReviewContext(
        ci=[CiResult(name="tests", state="failure", required=True, excerpt="E boom\n" * 90)],
        earlier=[EarlierVerdict(head_sha="e" * 40, decision="improve", reasoning="thin")],
    )

    def compose(budget: int) -> Prompt:
        return compose_messages(
            rubric, task, files, Tier.DEEP, nonce="n" * 32, max_chars=budget, context=context
        )

    for room in (9000, 14000, 30000):
        budget = fitted_budget(compose, room=room, max_chars=32000, extra=800)
        assert prompt_chars(compose(budget)) + 800 <= room
        assert prompt_chars(compose(budget + 200)) + 800 > room - 200


def test_answer_tokens() -> None:
    assert answer_tokens(TierFit(None, "unknown"), 1024, 10**6) == 1024
    # what the context leaves after the prompt, counted as the fit counts it
    used = 7000 // 3.5 + TEMPLATE_TOKENS
    assert answer_tokens(TierFit(2600, "setting"), 1024, 7000) == 2600 - used
    assert answer_tokens(TierFit(8192, "setting"), 1024, 7000) == 1024
    # never under a tenth: a miscount still asks for an answer
    assert answer_tokens(TierFit(2048, "setting"), 1024, 7000) == 102


def test_after_overflow_learns_the_context_and_the_count() -> None:
    fit = TierFit(None, "unknown")
    learned = after_overflow(
        fit, context_tokens=2048, prompt_tokens=3000, sent_chars=9000, budget=4000
    )
    assert learned == TierFit(2048, REFUSAL, 9000 / 3000 * SHRINK_MARGIN)
    # a count that shows fewer tokens than assumed keeps the assumption
    kept = after_overflow(
        TierFit(4096, "llama.cpp /props"),
        context_tokens=4096,
        prompt_tokens=1000,
        sent_chars=9000,
        budget=4000,
    )
    assert kept == TierFit(4096, REFUSAL, CHARS_PER_TOKEN)


@pytest.mark.parametrize(
    ("fit", "context", "prompt", "expected"),
    [
        # No numbers at all: half of what was too much.
        (TierFit(None, "unknown"), None, None, TierFit(None, "unknown", cap=2000)),
        # The context without the prompt's count: believed, and half the budget too.
        (TierFit(None, "unknown"), 4096, None, TierFit(4096, REFUSAL, cap=2000)),
        # The prompt's count, the context known before: a truer chars-per-token.
        (
            TierFit(4096, "setting"),
            None,
            4000,
            TierFit(4096, "setting", 10000 / 4000 * SHRINK_MARGIN),
        ),
        # A context under any a judge runs in is a misread number: not believed.
        (
            TierFit(8192, "setting"),
            100,
            None,
            TierFit(8192, "setting", cap=2000),
        ),
    ],
    ids=["nothing-said", "context-only", "count-only", "too-small-context"],
)
def test_after_overflow_without_all_numbers(
    fit: TierFit, context: int | None, prompt: int | None, expected: TierFit
) -> None:
    learned = after_overflow(
        fit, context_tokens=context, prompt_tokens=prompt, sent_chars=10000, budget=4000
    )
    assert learned == expected

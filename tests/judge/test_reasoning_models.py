"""Reasoning models: their thinking (in the content between `<think>` tags, or in a
`reasoning_content` field) never decides, even when it drafts JSON; the answer after it
does. Parsing is table-tested; the OpenAI provider against the fake server."""

from __future__ import annotations

import json

import httpx
import pytest

from bot.judge.providers.http import EmptyAnswer
from bot.judge.providers.openai_chat import OpenAIChatProvider
from bot.judge.rubrics import ContentRubric
from bot.judge.rubrics.parsing import ParseError, answer_text, extract_json_object, parse_answer
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.provider_helpers import MESSAGES

FINAL: dict[str, object] = {
    "verdict": "accept",
    "scores": {"semantic": 5, "pragmatic": 4, "syntactic": 5},
}
DRAFT: dict[str, object] = {
    "verdict": "reject",
    "scores": {"semantic": 1, "pragmatic": 1, "syntactic": 1},
}
F, D = json.dumps(FINAL), json.dumps(DRAFT)
FENCED_DRAFT = f"```json\n{D}\n```"

# reply -> the object that decides
DECIDES: list[tuple[str, str, dict[str, object]]] = [
    ("draft-in-thinking", f"<think>first try: {D}</think>\n{F}", FINAL),
    ("fenced-draft-in-thinking", f"<think>\n{FENCED_DRAFT}\nno, better:\n</think>{F}", FINAL),
    ("thinking-tag-variants", f"<thinking>{D}</thinking><reasoning>{D}</reasoning>{F}", FINAL),
    ("tags-any-case", f"<THINK>{D}</Think>{F}", FINAL),
    ("opening-tag-in-template", f"I should reject... {D}\n</think>\n\n{F}", FINAL),
    ("answer-then-think-again-then-answer", f"{D}<think>that was wrong</think>{F}", FINAL),
    ("trailing-thinking-after-answer", f"{F}<think>maybe {D}?</think>", FINAL),
    ("prose-after-last-thinking", f"<think>{D}</think>{F}<think>ok</think>Thanks!", FINAL),
    ("nested-thinking", f"<think>a <think>{D}</think> b {D}</think>{F}", FINAL),
    ("cut-off-thinking-after-answer", f"{F}\n<think>second thoughts {D}", FINAL),
    ("fenced-answer-after-thinking", f"<think>{D}</think>Verdict:\n```json\n{F}\n```", FINAL),
    ("no-thinking-unchanged", F, FINAL),
]


@pytest.mark.parametrize(
    ("reply", "expected"), [(r, e) for _, r, e in DECIDES], ids=[i for i, _, _ in DECIDES]
)
def test_the_answer_after_the_thinking_decides(reply: str, expected: dict[str, object]) -> None:
    assert extract_json_object(reply) == expected
    assert parse_answer(reply, ContentRubric()).scores == expected["scores"]


@pytest.mark.parametrize(
    "reply",
    [
        f"<think>only thinking {D}</think>",
        f"<think>cut off by the token limit {D}",
        f"draft {D} </think>   ",
        "<think></think>",
    ],
    ids=["closed", "unterminated", "orphan-close", "empty"],
)
def test_a_reply_that_is_all_thinking_has_no_answer(reply: str) -> None:
    with pytest.raises(ParseError, match="all thinking"):
        extract_json_object(reply)


def test_two_answers_outside_one_stretch_stay_ambiguous() -> None:
    """Thinking removal picks a stretch; inside it the usual ambiguity rule holds."""
    with pytest.raises(ParseError, match="ambiguous"):
        extract_json_object(f"<think>x</think>{D} or maybe {F}")


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("plain", "plain"),
        ("<think>a</think> b ", "b"),
        ("x<think>a</think>y", "y"),
        ("{x}<think>a</think>y", "{x}"),
        ("<think>a", ""),
        ("</think>", ""),
    ],
)
def test_answer_text(text: str, answer: str) -> None:
    assert answer_text(text) == answer


def test_a_whole_json_reply_mentioning_think_tags_is_kept() -> None:
    """The whole reply is tried as JSON first, so tags quoted inside it are left alone."""
    reply = json.dumps({**FINAL, "reasoning": "the file has <think> tags"})
    assert extract_json_object(reply)["reasoning"] == "the file has <think> tags"


async def test_reasoning_content_is_never_the_answer(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("r1", Reply.reasoning(f"draft: {D}", F))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    completion = await provider.complete(model="r1", messages=MESSAGES, time_limit=5)
    assert json.loads(completion.text) == FINAL


async def test_thinking_that_used_up_the_tokens_says_so(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient
) -> None:
    fake_llm.script("r1", Reply.reasoning(f"still drafting {D}", ""))
    provider = OpenAIChatProvider(http, fake_llm.base_url, "test-key")
    with pytest.raises(EmptyAnswer, match=r"reasoning but no answer.*\(512\)"):
        await provider.complete(model="r1", messages=MESSAGES, time_limit=5, max_tokens=512)
    fake_llm.script("r1", Reply.empty())
    with pytest.raises(EmptyAnswer, match="empty answer"):
        await provider.complete(model="r1", messages=MESSAGES, time_limit=5)

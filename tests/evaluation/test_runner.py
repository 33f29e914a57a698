"""The runner judges each example with the real engine against the fake LLM server, and
again with its files in another order."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from bot.evaluation.dataset import LabelledExample, parse_dataset
from bot.evaluation.metrics import Failed, JudgedExample
from bot.evaluation.runner import Runner, other_order, request_for
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import Verdict, VerdictRecord
from bot.judge.settings import JudgeSettings
from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply

QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"
ACCEPT = {"scores": {"semantic": 5, "pragmatic": 4, "syntactic": 5}, "reasoning": "clear"}
IMPROVE = {
    "scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3},
    "reasoning": "thin",
    "improvements": ["say why"],
}
TASK = {"description": "Explain the cache rollout", "acceptance": "Names the cause"}


def example(name: str, *paths: str, expected: str = "accept", **extra: Any) -> str:
    files = [{"path": p, "content": f"# {p}\n\nThe cache warms in a minute.\n"} for p in paths]
    body = {"id": name, "task": TASK, "files": files, "expected": expected, **extra}
    return json.dumps(body)


def dataset(*lines: str) -> list[LabelledExample]:
    return parse_dataset(list(lines), "test")


def first_file_decides(recorded: RecordedRequest) -> Reply:
    """A judge biased by position: it accepts when docs/a.md comes before docs/b.md."""
    text = recorded.user_text
    if "docs/b.md" in text and text.index("docs/b.md") < text.index("docs/a.md"):
        return Reply.json(IMPROVE)
    return Reply.json(ACCEPT)


@pytest.fixture
def settings(fake_llm: FakeOpenAIServer) -> JudgeSettings:
    return JudgeSettings(
        llm_base_url=fake_llm.base_url,
        llm_api_key="test-key",
        quick_model=QUICK,
        deep_model=DEEP,
        quick_timeout=5.0,
        deep_timeout=5.0,
    )


async def run(settings: JudgeSettings, items: list[LabelledExample], **options: Any) -> Any:
    async with httpx.AsyncClient() as client:
        engine = JudgeEngine.from_settings(settings, client, None)
        return await Runner(engine.judge, **options).run(items)


def test_other_order_reverses_and_needs_two_files() -> None:
    assert other_order(0) is None and other_order(1) is None
    assert other_order(2) == [1, 0]
    assert other_order(3) == [2, 1, 0]


def test_request_for_an_example_in_another_order() -> None:
    (item,) = dataset(example("two", "docs/a.md", "docs/b.md", sensitive=True))
    request = request_for(item, order=[1, 0])
    assert [f.path for f in request.files] == ["docs/b.md", "docs/a.md"]
    assert request.sensitive and request.bypass_cache
    assert request.task.task_id == "two"
    assert request.scope == "eval"
    assert not request_for(item).context.diffs


def test_request_for_a_diff_reorders_its_hunks_too() -> None:
    diff = "".join(f"diff --git a/{p} b/{p}\n@@ -0,0 +1 @@\n+{p}\n" for p in ("x.md", "y.md"))
    body = {"task": TASK, "diff": diff, "expected": "reject"}
    (item,) = dataset(json.dumps(body))
    request = request_for(item, order=[1, 0], sensitive=True)
    assert [f.path for f in request.files] == ["y.md", "x.md"]
    assert [d.path for d in request.context.diffs] == ["y.md", "x.md"]
    assert request.sensitive


async def test_each_change_is_judged_and_judged_again_in_another_order(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.responder = first_file_decides
    items = dataset(
        example("one", "docs/a.md"),
        example("two", "docs/a.md", "docs/b.md", expected="reject"),
    )
    one, two = await run(settings, items)
    assert (one.name, one.expected, one.decision, one.label) == ("one", Verdict.ACCEPT,
                                                               Verdict.ACCEPT, "GO")  # fmt: skip
    assert one.swapped is None and one.swap_calls == ()  # one file: no other order
    assert [c.tier for c in one.calls] == ["quick"] and one.calls[0].ok
    assert [(r.tier, r.model, r.verdict) for r in one.rounds] == [("quick", QUICK, Verdict.ACCEPT)]
    assert one.rounds[0].scores == ACCEPT["scores"]
    assert two.expected is Verdict.REJECT
    assert two.decision is Verdict.ACCEPT  # a before b
    # b before a: quick improves, then deep (the same biased judge) improves: escalate
    assert two.swapped is Verdict.ESCALATE
    assert len(two.swap_calls) == 2
    assert two.seconds > 0 and two.swap_seconds > 0
    prompts = [r.user_text for r in fake_llm.requests]
    assert len(prompts) == 4
    assert prompts[2].index("docs/b.md") < prompts[2].index("docs/a.md")


async def test_no_swap_judges_each_change_once(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    items = dataset(
        example("two", "docs/a.md", "docs/b.md"), example("same", "docs/a.md", "docs/b.md")
    )
    got = await run(settings, items, swap=False)
    assert [j.swapped for j in got] == [None, None]
    # Two changes of the same content are both judged: no verdict cache without storage.
    assert len(fake_llm.requests) == 2


async def test_sensitive_sends_every_change_to_the_deep_tier(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    (judged,) = await run(settings, dataset(example("one", "docs/a.md")), sensitive=True)
    assert [r.tier for r in judged.rounds] == ["quick", "deep"]
    assert judged.decision is Verdict.ACCEPT


async def test_a_server_error_is_an_undetermined_change_not_a_crash(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.default = Reply.server_error()
    (judged,) = await run(settings, dataset(example("one", "docs/a.md")))
    assert judged.decision is Verdict.UNDETERMINED
    assert judged.label == "UNDETERMINED"
    assert [r.verdict for r in judged.rounds] == [None]
    assert not judged.calls[0].ok


class Counting:
    """The engine's judge, counting how many judgments are under way at once."""

    def __init__(self, engine: JudgeEngine) -> None:
        self.engine = engine
        self.busy = 0
        self.peak = 0

    async def judge(self, request: JudgeRequest) -> VerdictRecord:
        self.busy += 1
        self.peak = max(self.peak, self.busy)
        try:
            return await self.engine.judge(request)
        finally:
            self.busy -= 1


async def test_at_most_concurrency_changes_are_judged_at_once(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.default = Reply.json(ACCEPT, delay=0.05)
    items = dataset(*(example(f"c{n}", "docs/a.md") for n in range(6)))
    for limit in (1, 3):
        async with httpx.AsyncClient() as client:
            counting = Counting(JudgeEngine.from_settings(settings, client, None))
            got = await Runner(counting.judge, concurrency=limit).run(items)
        assert [j.name for j in got] == [f"c{n}" for n in range(6)]  # in the dataset's order
        assert counting.peak == limit


class BreaksOn:
    """The engine's judge, raising an unexpected error for one example's task."""

    def __init__(self, engine: JudgeEngine, task: str, secret: str) -> None:
        self.engine = engine
        self.task = task
        self.secret = secret

    async def judge(self, request: JudgeRequest) -> VerdictRecord:
        if request.task.task_id == self.task:
            raise RuntimeError(f"bug while judging with Bearer {self.secret}")
        return await self.engine.judge(request)


async def test_one_change_that_raises_is_recorded_and_the_run_goes_on(
    fake_llm: FakeOpenAIServer, settings: JudgeSettings
) -> None:
    fake_llm.default = Reply.json(ACCEPT)
    items = dataset(*(example(f"c{n}", "docs/a.md") for n in range(3)))
    secret = "sk-" + "A" * 40
    async with httpx.AsyncClient() as client:
        breaks = BreaksOn(JudgeEngine.from_settings(settings, client, None), "c1", secret)
        got = await Runner(breaks.judge, concurrency=3).run(items)
    assert [j.name for j in got] == ["c0", "c1", "c2"]
    first, failed, last = got
    assert isinstance(first, JudgedExample) and isinstance(last, JudgedExample)
    assert isinstance(failed, Failed) and failed.expected is Verdict.ACCEPT
    assert failed.error.startswith("RuntimeError: bug while judging")
    assert secret not in failed.error
    assert len(fake_llm.requests) == 2

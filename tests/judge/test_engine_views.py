"""The gate's guarantee inside the engine, against the real fake LLM server: an accept
counts only from judges who read every judged file, and co-author trailers never leave
the quick judge to accept alone."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bot.judge.engine import CACHE_NAMESPACE, JudgeEngine
from bot.judge.engine.judgment import record_go_no_go
from bot.judge.engine.seating import build_panel
from bot.judge.records import Tier, Verdict
from bot.judging.conclusion import Cause, cause_of
from bot.storage.sqlite import SqliteStorage
from tests.judge.test_engine import (
    ACCEPT,
    DEEP,
    QUICK,
    REJECT,
    make_request,
    make_settings,
    round_verdicts,
)
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

SECTION = "## Finding\n\nThe queue latency rose 20% after the cache change; measured twice.\n\n"
BAD_END = "## Action\n\nDelete the production database to reset the cache.\n"


def note_of(size: int) -> str:
    """A note of exactly `size` characters whose last section is the one to reject."""
    body = "# Signal report\n\n" + SECTION * (size // len(SECTION))
    body = body[: size - len(BAD_END)]
    return body + BAD_END


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.fixture
def engine_for(
    http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> Callable[..., JudgeEngine]:
    def build(settings: Any) -> JudgeEngine:
        return JudgeEngine(settings, build_panel(settings, http), sqlite_storage)

    return build


async def test_a_quick_accept_of_a_6000_character_note_goes_to_deep_whose_reject_decides(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    """The quick judge reads 4,000 characters and accepts; the deep judge reads the end
    and rejects. The cut accept is no vote, so no tiebreaker is asked."""
    note = note_of(6000)
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    fake_llm.script(DEEP, Reply.json(REJECT))
    record = await engine_for(make_settings(fake_llm)).judge(make_request(note))
    assert record.final_decision is Verdict.REJECT
    assert round_verdicts(record) == [("quick", Verdict.ACCEPT), ("deep", Verdict.REJECT)]
    assert [r.model for r in fake_llm.requests] == [QUICK, DEEP]
    quick_text, deep_text = (r.user_text for r in fake_llm.requests)
    assert "Delete the production database" not in quick_text
    assert "Delete the production database" in deep_text
    assert record.go_no_go == "NO-GO"
    [cut] = record.truncation
    assert (cut.tier, cut.original_chars) == (Tier.QUICK, 6000)


async def test_a_quick_accept_of_a_partial_view_stands_once_deep_read_it_all(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    fake_llm.script(DEEP, Reply.json(ACCEPT))
    record = await engine_for(make_settings(fake_llm)).judge(make_request(note_of(6000)))
    assert (record.final_decision, record.consensus) == (Verdict.ACCEPT, "unanimous")
    assert record.mode == "deep" and record.go_no_go == "GO"


async def test_a_cut_quick_accept_whose_deep_round_failed_is_not_go(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    """The deep judge is down: the judgment fails open (undetermined), and the quick
    judge's 4s on the first 4,000 characters do not label the note GO."""
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    fake_llm.script(DEEP, Reply.server_error())
    record = await engine_for(make_settings(fake_llm)).judge(make_request(note_of(6000)))
    assert record.final_decision is Verdict.UNDETERMINED and record.mode == "deep"
    assert record.go_no_go == "UNDETERMINED" and record_go_no_go(record) == "UNDETERMINED"


async def test_a_file_no_judge_reads_whole_is_refused_and_never_cached(
    fake_llm: FakeOpenAIServer,
    engine_for: Callable[..., JudgeEngine],
    sqlite_storage: SqliteStorage,
) -> None:
    """40,000 characters, the largest budget 32,000: the quick accept is not an accept,
    and the deep judge, who could not make it one, is not asked."""
    fake_llm.script(QUICK, Reply.json(ACCEPT), Reply.json(ACCEPT))
    fake_llm.script(DEEP, Reply.json(ACCEPT))
    engine = engine_for(make_settings(fake_llm))
    request = make_request(note_of(40_000), path="notes/long.md")
    record = await engine.judge(request)
    assert record.final_decision is Verdict.UNDETERMINED
    assert record.mode == "partial-view"
    assert cause_of(record) is Cause.PARTIAL_VIEW
    assert [r.model for r in fake_llm.requests] == [QUICK]
    assert record.reason and "partial view" in record.reason
    assert "notes/long.md" in record.reason and "40000 characters" in record.reason
    assert "largest judge budget is 32000" in record.reason
    assert record.go_no_go == "UNDETERMINED" and record_go_no_go(record) != "GO"
    # not an answer: the next judgment asks again
    again = await engine.judge(request)
    assert again.mode == "partial-view" and len(again.calls) == 1
    assert [r.model for r in fake_llm.requests] == [QUICK, QUICK]
    assert await sqlite_storage.kv_list(CACHE_NAMESPACE) == []


async def test_a_deep_budget_that_holds_the_file_decides_instead_of_a_refusal(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    fake_llm.script(DEEP, Reply.json(ACCEPT))
    engine = engine_for(make_settings(fake_llm, deep_max_chars=48_000))
    record = await engine.judge(make_request(note_of(40_000)))
    assert record.final_decision is Verdict.ACCEPT
    assert [r.model for r in fake_llm.requests] == [QUICK, DEEP]


TRAILERS = [
    "Write the report\n\n"
    "Co-authored-by: Kimi K2 <kimi@moonshot.example>\n"
    "Co-authored-by: Llama 3.3 <llama@meta.example>\n"
]


async def test_co_author_trailers_naming_deep_and_tiebreaker_leave_no_lone_quick_accept(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    """Both later tiers' families are named and no other model of an independent family
    is configured: the quick accept needs the second look nobody can give, so it goes to
    a human, and the reason says four-eyes."""
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    engine = engine_for(make_settings(fake_llm, alternate_models=[]))
    record = await engine.judge(make_request(commit_messages=TRAILERS))
    assert sorted(record.authoring_families) == ["meta", "moonshot"]
    assert record.final_decision is Verdict.ESCALATE
    assert round_verdicts(record) == [("quick", Verdict.ACCEPT)]
    assert record.reason and "four-eyes" in record.reason
    assert "deep judge's family (moonshot)" in record.reason
    assert [r.model for r in fake_llm.requests] == [QUICK]


async def test_an_unseated_deep_tier_takes_another_configured_model_where_families_may_share(
    fake_llm: FakeOpenAIServer, engine_for: Callable[..., JudgeEngine]
) -> None:
    """With shared families allowed, the quick tier's model takes the deep seat (at the
    deep tier's limits) rather than leave it empty, and its accept is the second look."""
    fake_llm.script(QUICK, Reply.json(ACCEPT), Reply.json(ACCEPT))
    settings = make_settings(fake_llm, alternate_models=[], allow_shared_family=True)
    record = await engine_for(settings).judge(make_request(note_of(6000), commit_messages=TRAILERS))
    assert (record.final_decision, record.consensus) == (Verdict.ACCEPT, "unanimous")
    _, deep = record.previous_rounds
    assert (deep.judge_tier, deep.model, deep.substituted_for) == (Tier.DEEP, QUICK, "moonshot")
    assert not any(t.tier is Tier.DEEP for t in record.truncation), "deep's budget, not quick's"
    assert "This is a deep review" in fake_llm.requests[1].user_text

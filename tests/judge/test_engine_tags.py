"""Tags reach the stored record: the engine tags every record it returns, from the judges'
words and low scores, with the repository's own phrases on top of the built-in ones."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from bot.judge.tagging import TagTerms
from bot.judging.config_file import RepoConfigError, parse_repo_config
from bot.storage.sqlite import SqliteStorage
from tests.judge.test_engine_context import DEEP, GOOD, QUICK, WEAK, engine, request
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


async def test_judges_words_and_low_scores_become_stored_tags(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> None:
    weak = {**WEAK, "summary": "greet is a stub and lacks tests; it also uses left pad"}
    fake_llm.script(QUICK, Reply.json(weak))
    fake_llm.script(DEEP, Reply.json(weak))
    terms = TagTerms.model_validate({"problem:left-pad": ["left pad"]})
    record = await engine(fake_llm, http, sqlite_storage).judge(request(tag_terms=terms))
    assert {"problem:stub", "problem:missing-tests", "problem:left-pad"} <= set(record.tags)
    assert "dimension:correctness" in record.tags  # scored 0.5 on the code rubric's 0-1 scale
    assert record.tags == sorted(set(record.tags))
    (stored,) = await sqlite_storage.list_verdicts()
    assert stored.record["tags"] == record.tags


async def test_without_the_repositorys_terms_only_built_in_tags(
    fake_llm: FakeOpenAIServer, http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> None:
    fake_llm.script(QUICK, Reply.json({**GOOD, "summary": "uses left pad, otherwise fine"}))
    record = await engine(fake_llm, http, sqlite_storage).judge(request())
    assert "problem:left-pad" not in record.tags
    assert not any(tag.startswith("dimension:") for tag in record.tags)


def test_a_repositorys_tags_are_read_from_its_config_file() -> None:
    config = parse_repo_config("rubrics: {}\ntags:\n  problem:left-pad: [left pad, leftpad]\n")
    assert config.tags.root == {"problem:left-pad": ("left pad", "leftpad")}


def test_a_bad_tag_name_is_reported_on_its_line() -> None:
    with pytest.raises(RepoConfigError) as raised:
        parse_repo_config("tags:\n  ok:tag: [a]\n  Bad-Name: [b]\n")
    assert raised.value.line == 3
    assert "Bad-Name" in str(raised.value)


async def test_the_mechanical_checks_run_off_the_event_loop(
    fake_llm: FakeOpenAIServer,
    http: httpx.AsyncClient,
    sqlite_storage: SqliteStorage,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """They read every line of every judged file; on the loop, a large change would stall
    every other webhook and judgment of the App while they ran."""
    import threading

    from bot.judge.checks.mechanical import run_mechanical_checks as real

    checked_on: list[threading.Thread] = []

    def recording(*args: Any, **kwargs: Any) -> Any:
        checked_on.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr("bot.judge.engine.run_mechanical_checks", recording)
    fake_llm.script(QUICK, Reply.json(GOOD))
    await engine(fake_llm, http, sqlite_storage).judge(request())
    assert checked_on and threading.main_thread() not in checked_on

"""`observe_record` (bot/record_metrics.py): each shape of verdict record the engine writes
moves exactly its own series on the app's registry, and no other.

The records come from the real engine (bot/judge/engine/__init__.py) against the fake LLM server
and SQLite, so a change in how the engine marks a cache hit, a refusal or a failed call
shows here rather than as a silently wrong dashboard."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.rounds import AttemptError, attempt_outcome, attempt_refusal
from bot.judge.engine.seating import build_panel
from bot.judge.providers import (
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.records import JudgedFile, TaskSpec, Tier, Verdict, VerdictRecord
from bot.judge.rubrics.parsing import ParseError
from bot.judge.settings import JudgeSettings, Mode
from bot.metrics import Metrics
from bot.record_metrics import call_outcome, mode_label, observe_record
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.verdict_builders import HEAD, make_record, make_unjudged

QUICK, DEEP, TIE = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b"
DOC = "# Signal report\n\nLatency rose 20% after the cache change; roll the TTL back.\n"

# The judgment series observe_record may touch; the test compares all of them at once.
JUDGMENT_FAMILIES = frozenset(
    {
        "judge_verdicts",
        "judge_verdict_cache_hits",
        "judge_refusals",
        "judge_model_calls",
        "judge_model_attempts",
        "judge_model_call_seconds",
        "judge_model_tokens",
    }
)
Series = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def answer(s: int, p: int, x: int) -> Reply:
    return Reply.json(
        {
            "scores": {"semantic": s, "pragmatic": p, "syntactic": x},
            "verdict": "accept",
            "reasoning": f"scored {s}/{p}/{x}",
            "improvements": [] if min(s, p, x) >= 4 else ["tighten the argument"],
        }
    )


ACCEPT, IMPROVE, REJECT = (4, 4, 5), (3, 3, 3), (1, 3, 3)


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


Build = Callable[..., JudgeEngine]


@pytest.fixture
def engine(
    client: httpx.AsyncClient, fake_llm: FakeOpenAIServer, sqlite_storage: SqliteStorage
) -> Build:
    def build(**overrides: Any) -> JudgeEngine:
        values: dict[str, Any] = {
            "llm_base_url": fake_llm.base_url,
            "llm_api_key": "test-key",
            "quick_model": QUICK,
            "deep_model": DEEP,
            "tiebreaker_model": TIE,
            "quick_timeout": 5.0,
            "deep_timeout": 5.0,
            "tiebreaker_timeout": 5.0,
        }
        values.update(overrides)
        settings = JudgeSettings(_env_file=None, **values)
        return JudgeEngine(settings, build_panel(settings, client), sqlite_storage)

    return build


def request(content: str = DOC, **overrides: Any) -> JudgeRequest:
    values: dict[str, Any] = {
        "task": TaskSpec(task_id="issue-42", description="Write the weekly signal report"),
        "files": [JudgedFile(path="research/signal.md", content=content)],
        "scope": "acme/widgets",
        "repository": "acme/widgets",
        "head_sha": "a" * 40,
    }
    values.update(overrides)
    return JudgeRequest(**values)


def observed(record: VerdictRecord, mode: str | None = "advisory") -> Metrics:
    metrics = Metrics()
    observe_record(metrics, record, mode)
    return metrics


def judgment_series(metrics: Metrics) -> Series:
    """Every judgment sample that moved, histogram buckets left out (their counts show)."""
    moved: Series = {}
    for family in metrics.registry.collect():
        if family.name not in JUDGMENT_FAMILIES:
            continue
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket")) or sample.value == 0:
                continue
            moved[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return moved


def verdict(decision: str, go_no_go: str, mode: str = "advisory") -> Series:
    labels = (("decision", decision), ("go_no_go", go_no_go), ("mode", mode))
    return {("judge_verdicts_total", labels): 1.0}


def calls_of(record: VerdictRecord, *outcomes: str) -> Series:
    """The series a record's calls move, each call's outcome given by the test."""
    assert len(outcomes) == len(record.calls)
    series: Series = {}

    def add(name: str, labels: tuple[tuple[str, str], ...], value: float) -> None:
        if value:
            series[(name, labels)] = series.get((name, labels), 0.0) + value

    for call, outcome in zip(record.calls, outcomes, strict=True):
        tier = (("tier", call.tier.value),)
        add("judge_model_calls_total", (("outcome", outcome), *tier), 1)
        if call.attempts:
            add("judge_model_attempts_total", tier, call.attempts)
            add("judge_model_call_seconds_count", tier, 1)
            add("judge_model_call_seconds_sum", tier, call.latency_ms / 1000.0)
        add("judge_model_tokens_total", (("kind", "input"), *tier), call.prompt_tokens or 0)
        add("judge_model_tokens_total", (("kind", "output"), *tier), call.completion_tokens or 0)
    return series


def assert_moved(metrics: Metrics, expected: Series) -> None:
    assert judgment_series(metrics) == pytest.approx(expected)


# ---- records the engine writes ----------------------------------------------------------


async def test_accept_on_quick(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    fake_llm.script(QUICK, answer(*ACCEPT))
    record = await engine().judge(request())
    metrics = observed(record, "advisory")
    assert_moved(metrics, verdict("accept", "GO") | calls_of(record, "ok"))
    # The samples an operator queries, read back by name.
    sample = metrics.registry.get_sample_value
    assert sample("judge_model_calls_total", {"tier": "quick", "outcome": "ok"}) == 1
    assert sample("judge_model_attempts_total", {"tier": "quick"}) == 1
    (call,) = record.calls
    assert call.prompt_tokens and call.completion_tokens
    assert call.prompt_tokens != call.completion_tokens  # input and output told apart
    assert sample("judge_model_tokens_total", {"tier": "quick", "kind": "input"}) == (
        call.prompt_tokens
    )
    assert sample("judge_model_tokens_total", {"tier": "quick", "kind": "output"}) == (
        call.completion_tokens
    )
    assert sample("judge_verdict_cache_hits_total") == 0
    assert sample("judge_model_calls_total", {"tier": "deep", "outcome": "ok"}) is None


async def test_improve_then_deep_in_blocking_mode(
    fake_llm: FakeOpenAIServer, engine: Build
) -> None:
    fake_llm.script(QUICK, answer(*IMPROVE))
    fake_llm.script(DEEP, answer(*ACCEPT))
    record = await engine().judge(request())
    assert [c.tier for c in record.calls] == [Tier.QUICK, Tier.DEEP]
    metrics = observed(record, Mode.BLOCKING)
    assert_moved(metrics, verdict("accept", "GO", "blocking") | calls_of(record, "ok", "ok"))


async def test_tiebreaker_decides_a_split(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    fake_llm.script(QUICK, answer(*REJECT))
    fake_llm.script(DEEP, answer(*ACCEPT))
    fake_llm.script(TIE, answer(*REJECT))
    record = await engine().judge(request())
    assert [c.tier for c in record.calls] == [Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER]
    metrics = observed(record)
    assert_moved(metrics, verdict("reject", "NO-GO") | calls_of(record, "ok", "ok", "ok"))
    sample = metrics.registry.get_sample_value
    assert sample("judge_model_call_seconds_count", {"tier": "tiebreaker"}) == 1


@pytest.mark.parametrize(
    ("replies", "outcome", "attempts"),
    [
        ((Reply.server_error(),), "http_error", 1),
        ((Reply.rate_limited(),), "rate_limited", 1),
        ((Reply.slow(10), Reply.slow(10)), "timeout", 2),
        ((Reply.garbage(), Reply.garbage()), "unparseable", 2),
    ],
    ids=["500", "429", "timeout", "unparseable"],
)
async def test_outage_is_undetermined_with_failed_calls(
    fake_llm: FakeOpenAIServer,
    engine: Build,
    replies: tuple[Reply, ...],
    outcome: str,
    attempts: int,
) -> None:
    fake_llm.script(QUICK, *replies)
    record = await engine(quick_timeout=0.2).judge(request())
    (call,) = record.calls
    assert call.attempts == attempts and call.error
    metrics = observed(record)
    assert_moved(metrics, verdict("undetermined", "UNDETERMINED") | calls_of(record, outcome))
    assert metrics.registry.get_sample_value("judge_refusals_total", {"reason": "budget"}) is None


async def test_cache_hit_counts_the_hit_and_no_call(
    fake_llm: FakeOpenAIServer, engine: Build
) -> None:
    fake_llm.script(QUICK, answer(*IMPROVE))
    fake_llm.script(DEEP, answer(*ACCEPT))
    judge = engine()
    await judge.judge(request())
    # Another task id, the same content: the same question.
    task = TaskSpec(task_id="issue-43", description="Write the weekly signal report")
    hit = await judge.judge(request(task=task))
    assert hit.calls == [] and hit.round == 2
    metrics = observed(hit, "blocking")
    assert_moved(
        metrics,
        verdict("accept", "GO", "blocking") | {("judge_verdict_cache_hits_total", ()): 1.0},
    )


async def test_budget_refusal(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    """The day's budget runs out in the middle of one judgment (its deep call is refused
    before a request) and refuses the next outright."""
    fake_llm.script(QUICK, answer(*IMPROVE))
    judge = engine(daily_call_budget=1)
    midway = await judge.judge(request())
    refused = await judge.judge(request("another\n"))

    metrics = observed(midway)
    assert_moved(
        metrics, verdict("undetermined", "GO") | calls_of(midway, "ok", "budget")
    )  # quick answered 3/3/3: its scores still label the change
    assert (
        metrics.registry.get_sample_value(
            "judge_model_calls_total", {"tier": "deep", "outcome": "budget"}
        )
        == 1
    )
    assert metrics.registry.get_sample_value("judge_model_attempts_total", {"tier": "deep"}) is None

    metrics = observed(refused)
    assert_moved(
        metrics,
        verdict("undetermined", "UNDETERMINED")
        | {("judge_refusals_total", (("reason", "budget"),)): 1.0},
    )


async def test_throttle_refusal(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    record = await engine(throttle_per_hour=0).judge(request())
    assert record.mode == "throttled"
    metrics = observed(record, None)
    assert_moved(
        metrics,
        verdict("undetermined", "UNDETERMINED", "none")
        | {("judge_refusals_total", (("reason", "throttle"),)): 1.0},
    )
    assert fake_llm.requests == []


async def test_four_eyes_refusal(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    """The quick judge's family wrote the change and no alternate is configured."""
    record = await engine().judge(request(commit_messages=["x\n\nAgent-Model: gpt-5"]))
    assert record.mode == "four-eyes"
    metrics = observed(record)
    assert_moved(
        metrics,
        verdict("undetermined", "UNDETERMINED")
        | {("judge_refusals_total", (("reason", "four-eyes"),)): 1.0},
    )


async def test_no_model_configured(sqlite_storage: SqliteStorage) -> None:
    settings = JudgeSettings(_env_file=None)
    record = await JudgeEngine(settings, None, sqlite_storage).judge(request())
    metrics = observed(record)
    assert_moved(
        metrics,
        verdict("undetermined", "UNDETERMINED")
        | {("judge_refusals_total", (("reason", "unconfigured"),)): 1.0},
    )


async def test_mechanical_reject_is_a_verdict_not_a_refusal(sqlite_storage: SqliteStorage) -> None:
    settings = JudgeSettings(_env_file=None)
    record = await JudgeEngine(settings, None, sqlite_storage).judge(
        request("# Notes\n\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> main\n")
    )
    assert (record.mode, record.final_decision) == ("mechanical", Verdict.REJECT)
    assert_moved(observed(record), verdict("reject", "NO-GO"))


async def test_counts_add_up_over_judgments(fake_llm: FakeOpenAIServer, engine: Build) -> None:
    fake_llm.default = answer(*ACCEPT)
    judge = engine()
    metrics = Metrics()
    for n in range(3):
        observe_record(metrics, await judge.judge(request(f"doc {n}\n")), "advisory")
    sample = metrics.registry.get_sample_value
    labels = {"decision": "accept", "mode": "advisory", "go_no_go": "GO"}
    assert sample("judge_verdicts_total", labels) == 3
    assert sample("judge_model_calls_total", {"tier": "quick", "outcome": "ok"}) == 3
    assert sample("judge_model_call_seconds_count", {"tier": "quick"}) == 3


# ---- the pure parts, as tables ------------------------------------------------------------


def _http(status: int) -> ProviderHTTPError:
    return ProviderHTTPError("x", provider="openai", model="m", status=status, detail="")


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (TimeoutError(), "timeout"),
        (ProviderTimeout("x", provider="openai", model="m"), "timeout"),
        (_http(500), "http_error"),
        (_http(401), "http_error"),
        (
            ProviderRateLimited(
                "x", provider="openai", model="m", status=429, detail="", retry_after=20
            ),
            "rate_limited",
        ),
        (
            ProviderTransportError("x", provider="openai", model="m", cause="ConnectError"),
            "transport_error",
        ),
        (MalformedResponse("x", provider="openai", model="m"), "malformed"),
        (EmptyAnswer("x", provider="openai", model="m"), "empty"),
        (ParseError("no verdict object"), "unparseable"),
        (
            ProviderCommandError("x", provider="claude", model="m", exit_code=1, detail=""),
            "error",
        ),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, BaseException) else str(v),
)
def test_every_message_rounds_writes_has_its_outcome(error: AttemptError, outcome: str) -> None:
    """Read from the messages bot/judge/engine/rounds.py really writes, so a reworded message
    cannot quietly turn into `error`."""
    assert call_outcome(attempt_outcome(error, timeout=45).error) == outcome


@pytest.mark.parametrize(
    ("remaining", "calls_left", "outcome"),
    [(0.0, None, "deadline"), (30.0, 0, "budget")],
)
def test_refused_attempts_have_their_outcome(
    remaining: float, calls_left: int | None, outcome: str
) -> None:
    refused = attempt_refusal(remaining=remaining, calls_left=calls_left)
    assert refused is not None
    assert call_outcome(refused.error) == outcome


@pytest.mark.parametrize(
    ("error", "outcome"),
    [(None, "ok"), ("something new", "error"), ("HTTP 4290 from x", "http_error")],
)
def test_call_outcome_table(error: str | None, outcome: str) -> None:
    assert call_outcome(error) == outcome


@pytest.mark.parametrize(
    ("mode", "label"),
    [
        ("advisory", "advisory"),
        (Mode.BLOCKING, "blocking"),
        (None, "none"),
        ("octo/hello", "other"),  # never a caller's free text as a label
    ],
)
def test_mode_label(mode: str | None, label: str) -> None:
    assert mode_label(mode) == label


def test_builder_records_too() -> None:
    """Records read back from storage (the test builders' shapes): a deep accept after a
    quick improve with no calls listed is a cache hit; a round-0 record whose mode is no
    refusal is not counted as one."""
    sample = observed(make_record()).registry.get_sample_value
    assert sample("judge_verdict_cache_hits_total") == 1
    assert (
        sample("judge_verdicts_total", {"decision": "accept", "mode": "advisory", "go_no_go": "GO"})
        == 1
    )
    metrics = observed(make_unjudged(mode="human"))
    assert_moved(metrics, verdict("undetermined", "UNDETERMINED"))


def test_nothing_names_the_repository_sha_or_task() -> None:
    record = make_record(repository="octo/secret-project", task_id="octo/secret-project#7")
    text = observed(record, "blocking").render().decode()
    assert "judge_verdicts_total{" in text
    for unbounded in ("secret-project", HEAD, "#7"):
        assert unbounded not in text

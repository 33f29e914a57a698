"""The research rubric through the judge engine: real fake LLM server on loopback, real
SQLite storage. Research shortfalls reject without a call; a sound report is judged."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.seating import build_panel
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Verdict
from bot.judge.rubrics.research_settings import ResearchOverrides, ResearchRules
from bot.judge.settings import JudgeSettings
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply

QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"

REPORT = """\
# Does the cache cut latency?

Confidence: 80%

## Claim 1: The cache halves p99 latency
Evidence:
- [Benchmark](https://bench.example.org/run/7)
- [Vendor note](https://vendor.com/notes/cache)
### Counter-evidence
- [Field report](https://ops.example.net/incident)
"""

THIN = "# Notes\n\nThe cache is faster, everyone says so.\n"


def research_answer(*scores: int, unsupported: list[str] | None = None) -> dict[str, Any]:
    return {
        "scores": dict(zip(("support", "sourcing", "balance", "calibration"), scores, strict=True)),
        "verdict": "accept",
        "reasoning": "read the sources as presented",
        "unsupported_claims": unsupported or [],
        "improvements": [],
    }


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.fixture
def engine_for(
    http: httpx.AsyncClient, sqlite_storage: SqliteStorage
) -> Callable[[FakeOpenAIServer], JudgeEngine]:
    def build(fake: FakeOpenAIServer) -> JudgeEngine:
        settings = JudgeSettings(
            llm_base_url=fake.base_url,
            llm_api_key="test-key",
            quick_model=QUICK,
            deep_model=DEEP,
            quick_timeout=2.0,
            deep_timeout=2.0,
        )
        return JudgeEngine(settings, build_panel(settings, http), sqlite_storage)

    return build


def request(
    content: str = REPORT,
    *,
    path: str = "research/cache.md",
    rubric: RubricName = RubricName.RESEARCH,
    **overrides: Any,
) -> JudgeRequest:
    values: dict[str, Any] = {
        "task": TaskSpec(task_id="issue-12", description="Research the cache's effect"),
        "files": [JudgedFile(path=path, content=content)],
        "rubric": rubric,
        "scope": "acme/widgets",
        "repository": "acme/widgets",
        "head_sha": "b" * 40,
    }
    values.update(overrides)
    return JudgeRequest(**values)


async def test_a_report_without_claims_is_rejected_without_a_call(
    fake_llm: FakeOpenAIServer,
    engine_for: Callable[[FakeOpenAIServer], JudgeEngine],
    sqlite_storage: SqliteStorage,
) -> None:
    record = await engine_for(fake_llm).judge(request(THIN))
    assert record.final_decision is Verdict.REJECT and record.mode == "mechanical"
    assert record.go_no_go == "NO-GO" and record.rubric is RubricName.RESEARCH
    assert record.reason == "mechanical hard failure: research-claims, research-confidence"
    assert fake_llm.requests == []
    stored = await sqlite_storage.list_verdicts(repository="acme/widgets")
    assert [s.verdict for s in stored] == ["reject"]


async def test_a_sound_report_is_judged_against_the_research_rubric(
    fake_llm: FakeOpenAIServer, engine_for: Callable[[FakeOpenAIServer], JudgeEngine]
) -> None:
    fake_llm.script(QUICK, Reply.json(research_answer(4, 4, 4, 5)))
    record = await engine_for(fake_llm).judge(request())
    assert record.final_decision is Verdict.ACCEPT and record.go_no_go == "GO"
    assert record.mechanical_findings == []
    assert record.prompt_version.endswith("+research/1")
    (call,) = fake_llm.requests
    fmt = call.response_format
    assert fmt is not None
    assert "unsupported_claims" in fmt["json_schema"]["schema"]["properties"]
    assert "cannot open the links" in call.system


async def test_an_unsupported_claim_keeps_a_report_from_accept(
    fake_llm: FakeOpenAIServer, engine_for: Callable[[FakeOpenAIServer], JudgeEngine]
) -> None:
    claim = ["'halves p99' rests on one vendor note"]
    fake_llm.script(QUICK, Reply.json(research_answer(4, 4, 4, 4, unsupported=claim)))
    fake_llm.script(DEEP, Reply.json(research_answer(4, 4, 4, 4, unsupported=claim)))
    record = await engine_for(fake_llm).judge(request())
    # each round is improve; improve twice is the protocol's escalate (a human looks)
    assert [r.verdict for r in record.previous_rounds] == [Verdict.IMPROVE, Verdict.IMPROVE]
    assert record.final_decision is Verdict.ESCALATE
    assert record.previous_rounds[-1].extra["unsupported_claims"] == claim
    assert record.improvements == [f"support or remove the claim: {claim[0]}"]


async def test_soft_shortfalls_are_recorded_and_the_judges_still_run(
    fake_llm: FakeOpenAIServer, engine_for: Callable[[FakeOpenAIServer], JudgeEngine]
) -> None:
    """One thin claim in ten is within the default ratio: shown, not a reject."""
    claims = "".join(
        REPORT.split("\n", 3)[3].replace("Claim 1", f"Claim {n}") + "\n" for n in range(1, 10)
    )
    thin = "## Claim 10: Warm starts are faster\n- https://bench.example.org/warm\n"
    content = "Confidence: 75%\n\n" + claims + thin
    fake_llm.script(QUICK, Reply.json(research_answer(4, 4, 4, 4)))
    record = await engine_for(fake_llm).judge(request(content))
    assert record.final_decision is Verdict.ACCEPT
    assert {(f.kind, f.severity) for f in record.mechanical_findings} == {
        ("research-evidence", "soft"),
        ("research-domains", "soft"),
        ("research-counter-evidence", "soft"),
    }


async def test_the_repositorys_rules_decide_and_apply_before_the_cache(
    fake_llm: FakeOpenAIServer, engine_for: Callable[[FakeOpenAIServer], JudgeEngine]
) -> None:
    """Relaxed rules let a bare file reach the judges; the same content under stricter
    rules is rejected although an accept for it is cached."""
    relaxed = ResearchOverrides(min_claims=0, min_confidence=0, min_verifiable_ratio=0).applied_to(
        ResearchRules()
    )
    fake_llm.script(QUICK, Reply.json(research_answer(4, 4, 4, 4)))
    engine = engine_for(fake_llm)
    first = await engine.judge(request(THIN, research=relaxed))
    assert first.final_decision is Verdict.ACCEPT and first.mechanical_findings == []
    strict = await engine.judge(request(THIN))
    assert strict.final_decision is Verdict.REJECT and strict.mode == "mechanical"
    assert len(fake_llm.requests) == 1


@pytest.mark.parametrize(
    ("path", "rubric"),
    [
        ("research/cache.md", RubricName.CONTENT),
        ("research/data.csv", RubricName.RESEARCH),
    ],
)
async def test_research_checks_only_read_markdown_judged_as_research(
    fake_llm: FakeOpenAIServer,
    engine_for: Callable[[FakeOpenAIServer], JudgeEngine],
    path: str,
    rubric: RubricName,
) -> None:
    fake_llm.default = Reply.json(
        {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 4}}
        if rubric is RubricName.CONTENT
        else research_answer(4, 4, 4, 4)
    )
    record = await engine_for(fake_llm).judge(request(THIN, path=path, rubric=rubric))
    assert record.mechanical_findings == []
    assert record.final_decision is Verdict.ACCEPT


async def test_removed_and_binary_files_are_not_read_as_reports(
    fake_llm: FakeOpenAIServer, engine_for: Callable[[FakeOpenAIServer], JudgeEngine]
) -> None:
    fake_llm.default = Reply.json(research_answer(4, 4, 4, 4))
    files = [
        JudgedFile(path="research/cache.md", content=REPORT),
        JudgedFile(path="research/old.md", content="", status="removed"),
        JudgedFile(path="research/blob.md", content="\x00\x01Claim: x"),
    ]
    record = await engine_for(fake_llm).judge(request(files=files))
    assert record.mechanical_findings == []
    assert record.final_decision is Verdict.ACCEPT

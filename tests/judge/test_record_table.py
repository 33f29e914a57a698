"""A record as terminal text (bot.judge.record_table)."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.judge.record_table import render_table
from bot.judge.records import (
    CallStats,
    Finding,
    RoundRecord,
    RubricName,
    Tier,
    Verdict,
    VerdictRecord,
)

DEEP = "kimi-k2.5"


def test_render_table() -> None:
    record = VerdictRecord(
        task_id="issue-7",
        model=DEEP,
        mode="deep",
        verdict=Verdict.IMPROVE,
        scores={"semantic": 3, "pragmatic": 2, "syntactic": 4},
        average=3.0,
        reasoning="pragmatic gaps",
        improvements=["say who acts"],
        timestamp=datetime(2026, 2, 17, tzinfo=UTC),
        round=2,
        judge_tier=Tier.DEEP,
        previous_rounds=[
            RoundRecord(
                round=1,
                judge_tier=Tier.QUICK,
                model="gemini-2.5-flash",
                family="google",
                error="timeout",
                substituted_for="openai",
            ),
            RoundRecord(
                round=2,
                judge_tier=Tier.DEEP,
                model=DEEP,
                family="moonshot",
                verdict=Verdict.IMPROVE,
                scores={"semantic": 3, "pragmatic": 2, "syntactic": 4},
                average=3.0,
            ),
        ],
        rubric=RubricName.CONTENT,
        prompt_version="judge/1+content/1",
        files=["docs/a.md"],
        mechanical_findings=[
            Finding(
                source="mechanical",
                kind="broken-link",
                severity="soft",
                path="docs/a.md",
                line=3,
                message="link to missing.md",
            )
        ],
        calls=[CallStats(tier=Tier.DEEP, model=DEEP, provider="openai", latency_ms=1.0)],
        final_decision=Verdict.IMPROVE,
        go_no_go="NO-GO",
        authoring_families=["openai"],
    )
    table = render_table(record)
    lines = table.splitlines()
    assert lines[0].startswith("task issue-7")
    header = next(line for line in lines if line.startswith("#"))
    assert header.split() == [
        "#",
        "tier",
        "model",
        "semantic",
        "pragmatic",
        "syntactic",
        "avg",
        "verdict",
    ]
    assert any(
        "gemini-2.5-flash (for openai)" in line and "failed: timeout" in line for line in lines
    )
    assert any(line.split()[:2] == ["2", "deep"] and line.endswith("improve") for line in lines)
    assert "verdict: IMPROVE (NO-GO)" in table
    assert "  - say who acts" in table
    assert "[soft] broken-link docs/a.md:3: link to missing.md" in table
    assert "authored by families: openai" in table
    assert "from the verdict cache" not in table


def test_the_label_is_shown_only_when_it_adds_something() -> None:
    base = VerdictRecord(
        task_id="t",
        model="",
        mode="quick",
        verdict=Verdict.UNDETERMINED,
        scores={},
        average=None,
        reasoning="",
        timestamp=datetime(2026, 2, 17, tzinfo=UTC),
        round=0,
        rubric=RubricName.CONTENT,
        prompt_version="judge/1+content/1",
        files=["docs/a.md"],
        final_decision=Verdict.UNDETERMINED,
        go_no_go="UNDETERMINED",
    )
    text = render_table(base)
    assert "verdict: UNDETERMINED" in text
    assert "UNDETERMINED (UNDETERMINED)" not in text
    escalated = base.model_copy(update={"final_decision": Verdict.ESCALATE, "go_no_go": "GO"})
    assert "verdict: ESCALATE (GO)" in render_table(escalated)

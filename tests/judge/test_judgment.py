"""The engine's decisions without a model, and how a decision becomes a record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.judge.judgment import (
    NOT_CONFIGURED_NOTE,
    Settled,
    admission_refused,
    cacheable,
    escalate_injection,
    four_eyes_refusal,
    pre_push_label,
    protocol_mode,
    refuse_before_models,
    settled_record,
    verdict_record,
    with_unseated_reason,
)
from bot.judge.protocol import Decision, RoundResult
from bot.judge.records import Finding, RoundRecord, RubricName, Tier, Verdict
from bot.judge.seating import Seat, Seating


def finding(kind: str, severity: str = "hard", source: str = "mechanical") -> Finding:
    return Finding(source=source, kind=kind, severity=severity, path="a.md", message="m")


HARD = [finding("secret"), finding("empty_file"), finding("secret"), finding("long", "soft")]
SOFT = [finding("long", "soft")]


@pytest.mark.parametrize(
    ("mechanical", "configured", "expected"),
    [
        (
            HARD,
            True,
            Settled(
                Decision(Verdict.REJECT, reason="mechanical hard failure: empty_file, secret"),
                "mechanical",
            ),
        ),
        # a hard failure rejects even where no model could have looked
        (
            HARD,
            False,
            Settled(
                Decision(Verdict.REJECT, reason="mechanical hard failure: empty_file, secret"),
                "mechanical",
            ),
        ),
        (
            SOFT,
            False,
            Settled(
                Decision(Verdict.UNDETERMINED, reason="model tiers were not run"),
                "unconfigured",
                note=NOT_CONFIGURED_NOTE,
            ),
        ),
        (
            [],
            False,
            Settled(
                Decision(Verdict.UNDETERMINED, reason="model tiers were not run"),
                "unconfigured",
                note=NOT_CONFIGURED_NOTE,
            ),
        ),
        (SOFT, True, None),
        ([], True, None),
    ],
    ids=["hard", "hard-unconfigured", "soft-unconfigured", "clean-unconfigured", "soft", "clean"],
)
def test_refuse_before_models(
    mechanical: list[Finding], configured: bool, expected: Settled | None
) -> None:
    assert refuse_before_models(mechanical, configured=configured) == expected


class _Provider:
    kind = "openai"
    base_url = "http://unused.invalid/v1"

    async def complete(self, **kwargs: Any) -> Any:
        raise AssertionError("never called")


SEAT = Seat(model="m", family="openai", provider=_Provider(), timeout=1, max_chars=100)
EMPTY = Seating(None, substituted_for="openai", reason="four-eyes: no quick judge")


@pytest.mark.parametrize(
    ("seating", "expected"),
    [
        ({Tier.QUICK: Seating(SEAT)}, None),
        ({Tier.QUICK: Seating(SEAT), Tier.DEEP: EMPTY}, None),
        ({Tier.QUICK: Seating(SEAT, substituted_for="google")}, None),
        (
            {Tier.QUICK: EMPTY, Tier.DEEP: Seating(SEAT)},
            Settled(
                Decision(Verdict.UNDETERMINED, reason="four-eyes: no quick judge"), "four-eyes"
            ),
        ),
        # no quick tier configured at all is the protocol's to decide, not four-eyes
        ({Tier.DEEP: Seating(SEAT)}, None),
    ],
    ids=["seated", "deep-unseated", "substituted", "quick-unseated", "no-quick"],
)
def test_four_eyes_refusal(seating: dict[Tier, Seating], expected: Settled | None) -> None:
    assert four_eyes_refusal(seating) == expected


@pytest.mark.parametrize(
    ("reason", "mode"),
    [
        ("throttled: 5 judgments in the last hour for scope 'a' (limit 5/hour)", "throttled"),
        ("daily budget exhausted: 10 model calls today (budget 10)", "budget"),
        ("daily budget exhausted: 900 tokens today (budget 800)", "budget"),
    ],
)
def test_admission_refused(reason: str, mode: str) -> None:
    assert admission_refused(reason) == Settled(Decision(Verdict.UNDETERMINED, reason=reason), mode)


INJECTED = [
    finding("role_override", "soft", "injection"),
    finding("fake_verdict", "soft", "injection"),
]


@pytest.mark.parametrize("verdict", list(Verdict))
@pytest.mark.parametrize("injection", [[], INJECTED], ids=["clean", "injected"])
def test_escalate_injection(verdict: Verdict, injection: list[Finding]) -> None:
    decision = Decision(verdict, consensus="unanimous", reason="r")
    got = escalate_injection(decision, injection)
    if injection and verdict is Verdict.ACCEPT:
        assert got == Decision(
            Verdict.ESCALATE,
            reason="the content holds instructions aimed at the judge (fake_verdict, "
            "role_override); a human must confirm the accept",
        )
    else:
        assert got == decision


UNSEATED_DEEP = Seating(None, substituted_for="moonshot", reason="four-eyes: deep")


@pytest.mark.parametrize(
    ("results", "sensitive", "seating", "reason"),
    [
        # quick improve would have gone to deep, which is unseated
        ([RoundResult(Tier.QUICK, Verdict.IMPROVE)], False, UNSEATED_DEEP, "four-eyes: deep"),
        # a sensitive accept needs deep: the protocol's reason, then the four-eyes cause
        (
            [RoundResult(Tier.QUICK, Verdict.ACCEPT)],
            True,
            UNSEATED_DEEP,
            "no deep; four-eyes: deep",
        ),
        # a plain accept never needed deep
        ([RoundResult(Tier.QUICK, Verdict.ACCEPT)], False, UNSEATED_DEEP, "no deep"),
        # deep is seated: nothing to add
        ([RoundResult(Tier.QUICK, Verdict.IMPROVE)], False, Seating(SEAT), "no deep"),
    ],
)
def test_with_unseated_reason(
    results: list[RoundResult], sensitive: bool, seating: Seating, reason: str
) -> None:
    protocol_reason = None if reason == "four-eyes: deep" else "no deep"
    decision = Decision(Verdict.ESCALATE, reason=protocol_reason)
    panel = {Tier.QUICK: Seating(SEAT), Tier.DEEP: seating}
    got = with_unseated_reason(decision, results, sensitive, panel)
    assert got == Decision(Verdict.ESCALATE, reason=reason)


@pytest.mark.parametrize(
    ("scores", "verdict", "label"),
    [
        ({"semantic": 3, "pragmatic": 3, "syntactic": 3}, Verdict.IMPROVE, "GO"),
        ({"semantic": 2, "pragmatic": 4, "syntactic": 4}, Verdict.IMPROVE, "NO-GO"),
        ({"semantic": 4, "pragmatic": 4, "syntactic": 5}, Verdict.ACCEPT, "GO"),
        ({"semantic": 1, "pragmatic": 1, "syntactic": 1}, Verdict.REJECT, "NO-GO"),
        ({"semantic": 3, "pragmatic": 3, "syntactic": 3}, Verdict.ESCALATE, "UNDETERMINED"),
        ({}, Verdict.UNDETERMINED, "UNDETERMINED"),
    ],
)
def test_pre_push_label_follows_phase_a_b(
    scores: dict[str, float], verdict: Verdict, label: str
) -> None:
    """GO = every content score >= 3 (seed 000), whatever the average; doubt never blocks."""
    last = RoundRecord(round=1, judge_tier=Tier.QUICK, model="m", family="f", scores=scores)
    assert pre_push_label(RubricName.CONTENT, verdict, last) == label


BASE: dict[str, Any] = {
    "task_id": "t-1",
    "timestamp": datetime(2025, 1, 2, tzinfo=UTC),
    "rubric": RubricName.CONTENT,
    "prompt_version": "p+content/1",
}
QUICK_IMPROVE = RoundRecord(
    round=1,
    judge_tier=Tier.QUICK,
    model="q",
    family="openai",
    verdict=Verdict.IMPROVE,
    scores={"semantic": 3, "pragmatic": 3, "syntactic": 3},
    average=3.0,
    reasoning="thin",
    improvements=["more"],
)
DEEP_ACCEPT = RoundRecord(
    round=2,
    judge_tier=Tier.DEEP,
    model="d",
    family="moonshot",
    verdict=Verdict.ACCEPT,
    scores={"semantic": 4, "pragmatic": 4, "syntactic": 4},
    average=4.0,
    reasoning="fine",
)


def test_verdict_record_headlines_the_last_round() -> None:
    rounds = [QUICK_IMPROVE, DEEP_ACCEPT]
    record = verdict_record(
        BASE, Decision(Verdict.ACCEPT), mode=protocol_mode(rounds), rounds=rounds
    )
    assert (record.model, record.mode, record.round, record.judge_tier) == (
        "d",
        "deep",
        2,
        Tier.DEEP,
    )
    assert record.verdict is Verdict.ACCEPT and record.final_decision is Verdict.ACCEPT
    assert record.reasoning == "fine" and record.average == 4.0
    assert record.previous_rounds == rounds and record.go_no_go == "GO"
    assert not record.models_not_run
    assert cacheable(record)


def test_settled_record_has_no_rounds() -> None:
    settled = refuse_before_models([], configured=False)
    assert settled is not None
    record = settled_record(BASE, settled)
    assert (record.model, record.mode, record.round, record.judge_tier) == (
        "",
        "unconfigured",
        0,
        None,
    )
    assert record.verdict is Verdict.UNDETERMINED and record.reasoning == "model tiers were not run"
    assert record.models_not_run and record.models_not_run_note == NOT_CONFIGURED_NOTE
    assert record.go_no_go == "UNDETERMINED"
    assert not cacheable(record)


def test_a_failed_round_is_undetermined_and_not_cached() -> None:
    failed = RoundRecord(round=1, judge_tier=Tier.QUICK, model="q", family="f", error="timeout")
    record = verdict_record(
        BASE,
        Decision(Verdict.UNDETERMINED, reason="the quick round failed; failing open"),
        mode=protocol_mode([failed]),
        rounds=[failed],
    )
    assert record.verdict is Verdict.UNDETERMINED and record.mode == "quick"
    assert not cacheable(record)


def test_protocol_mode_without_rounds() -> None:
    assert protocol_mode([]) == "none"

"""The engine's decisions without a model, and how a decision becomes a record."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from bot.judge.engine.judgment import (
    NOT_CONFIGURED_NOTE,
    Settled,
    admission_refused,
    cacheable,
    escalate_injection,
    four_eyes_refusal,
    go_no_go,
    protocol_mode,
    record_go_no_go,
    refuse_before_models,
    settled_record,
    verdict_record,
    with_partial_view_reason,
    with_unseated_reason,
)
from bot.judge.engine.seating import Seat, Seating
from bot.judge.engine.tiers import PARTIAL_VIEW, Decision
from bot.judge.records import (
    ContextPiece,
    Finding,
    JudgedFile,
    RoundRecord,
    RubricName,
    Tier,
    Verdict,
    deciding_round,
)


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
    ("decision", "seating", "reason"),
    [
        # quick improve stood because deep was missing, and deep is unseated
        (Decision(Verdict.IMPROVE, missing=Tier.DEEP), UNSEATED_DEEP, "four-eyes: deep"),
        # the protocol's reason, then the four-eyes cause
        (
            Decision(Verdict.ESCALATE, reason="no deep", missing=Tier.DEEP),
            UNSEATED_DEEP,
            "no deep; four-eyes: deep",
        ),
        # nothing was missing
        (Decision(Verdict.ESCALATE, reason="no deep"), UNSEATED_DEEP, "no deep"),
        # deep is seated: nothing to add
        (Decision(Verdict.ESCALATE, reason="no deep", missing=Tier.DEEP), Seating(SEAT), "no deep"),
        # the missing tier was never configured
        (
            Decision(Verdict.ESCALATE, reason="no tb", missing=Tier.TIEBREAKER),
            UNSEATED_DEEP,
            "no tb",
        ),
    ],
)
def test_with_unseated_reason(decision: Decision, seating: Seating, reason: str) -> None:
    panel = {Tier.QUICK: Seating(SEAT), Tier.DEEP: seating}
    got = with_unseated_reason(decision, panel)
    assert got == Decision(
        decision.verdict, consensus=decision.consensus, reason=reason, missing=decision.missing
    )


def scored(tier: Tier, verdict: Verdict, scores: dict[str, float], **extra: Any) -> RoundRecord:
    """A round that answered: its rubric's verdict and scores (and rubric extras)."""
    number = {Tier.QUICK: 1, Tier.DEEP: 2, Tier.TIEBREAKER: 3}[tier]
    return RoundRecord(
        round=number,
        judge_tier=tier,
        model=tier.value,
        family=tier.value,
        verdict=verdict,
        scores=scores,
        extra=extra,
    )


def kls(s: int, p: int, x: int) -> dict[str, float]:
    return {"semantic": s, "pragmatic": p, "syntactic": x}


def code(c: float, s: float = 0.8, q: float = 0.8, m: float = 0.8) -> dict[str, float]:
    return {"correctness": c, "scope_adherence": s, "code_quality": q, "completeness": m}


def failed(tier: Tier) -> RoundRecord:
    number = {Tier.QUICK: 1, Tier.DEEP: 2, Tier.TIEBREAKER: 3}[tier]
    return RoundRecord(round=number, judge_tier=tier, model="m", family="f", error="timeout")


Q, D, T = Tier.QUICK, Tier.DEEP, Tier.TIEBREAKER
ACC, IMP, REJ, ESC, UND = (
    Verdict.ACCEPT,
    Verdict.IMPROVE,
    Verdict.REJECT,
    Verdict.ESCALATE,
    Verdict.UNDETERMINED,
)
CONTENT, CODE, COMPLETION = RubricName.CONTENT, RubricName.CODE, RubricName.COMPLETION
PASSED = {"pass": True, "missing_items": [], "questions_for_user": [], "forward_progress": True}
MISSING = {**PASSED, "missing_items": ["tests"]}
QUESTIONS = {**PASSED, "pass": False, "questions_for_user": ["which API?"]}
NO_PROGRESS = {**PASSED, "pass": False, "forward_progress": False}


@pytest.mark.parametrize(
    ("rubric", "final", "rounds", "override", "label"),
    [
        # content: the deciding judgment's scores, whatever the protocol concluded
        (CONTENT, ACC, [scored(Q, ACC, kls(4, 4, 5))], None, "GO"),
        (CONTENT, IMP, [scored(Q, IMP, kls(3, 3, 3))], None, "GO"),  # improve, all >= 3
        (CONTENT, IMP, [scored(Q, IMP, kls(2, 4, 4))], None, "NO-GO"),
        (CONTENT, REJ, [scored(Q, REJ, kls(1, 3, 3)), scored(D, REJ, kls(1, 1, 1))], None, "NO-GO"),
        # both improve, every score below 3: escalate must still block (the bug)
        (CONTENT, ESC, [scored(Q, IMP, kls(2, 2, 2)), scored(D, IMP, kls(2, 2, 2))], None, "NO-GO"),
        (CONTENT, ESC, [scored(Q, IMP, kls(3, 3, 3)), scored(D, IMP, kls(3, 3, 4))], None, "GO"),
        # an accept escalated for injection (or sensitivity) keeps its scores' label
        (CONTENT, ESC, [scored(Q, ACC, kls(4, 4, 5))], None, "GO"),
        # a split without a tiebreaker: the deep judge spoke last
        (CONTENT, ESC, [scored(Q, REJ, kls(1, 3, 3)), scored(D, ACC, kls(4, 4, 4))], None, "GO"),
        (
            CONTENT,
            ESC,
            [
                scored(Q, ACC, kls(4, 4, 4)),
                scored(D, REJ, kls(1, 2, 2)),
                scored(T, IMP, kls(2, 3, 3)),
            ],
            None,
            "NO-GO",
        ),
        # a later round failed: the last round with scores decides
        (CONTENT, UND, [scored(Q, IMP, kls(2, 3, 3)), failed(D)], None, "NO-GO"),
        (CONTENT, UND, [scored(Q, ACC, kls(4, 4, 4)), failed(D)], None, "GO"),
        (
            CONTENT,
            UND,
            [scored(Q, REJ, kls(1, 3, 3)), scored(D, ACC, kls(4, 4, 4)), failed(T)],
            None,
            "GO",
        ),
        # nobody answered: undetermined; a mechanical hard failure rejects with no rounds
        (CONTENT, UND, [failed(Q)], None, "UNDETERMINED"),
        (CONTENT, UND, [], None, "UNDETERMINED"),
        (CONTENT, REJ, [], None, "NO-GO"),
        # a human's word is the label; a cancelled override is the judges' again
        (CONTENT, ACC, [scored(Q, REJ, kls(1, 1, 1))], True, "GO"),
        (CONTENT, REJ, [scored(Q, ACC, kls(5, 5, 5))], True, "NO-GO"),
        (
            CONTENT,
            ESC,
            [scored(Q, IMP, kls(2, 2, 2)), scored(D, IMP, kls(2, 2, 2))],
            False,
            "NO-GO",
        ),
        # code: 0.7 is the bar; a judge that lacks confidence is undetermined
        (CODE, ACC, [scored(Q, ACC, code(0.8))], None, "GO"),
        (CODE, IMP, [scored(Q, IMP, code(0.8), issues=[{"severity": "major"}])], None, "GO"),
        (CODE, IMP, [scored(Q, IMP, code(0.6))], None, "NO-GO"),
        (CODE, ESC, [scored(Q, IMP, code(0.6)), scored(D, IMP, code(0.5))], None, "NO-GO"),
        (CODE, ESC, [scored(Q, ESC, code(0.9), confidence="low")], None, "UNDETERMINED"),
        (CODE, ESC, [scored(Q, ESC, code(0.2), confidence="low")], None, "UNDETERMINED"),
        (CODE, REJ, [scored(Q, REJ, code(0.2)), scored(D, REJ, code(0.3))], None, "NO-GO"),
        (CODE, UND, [failed(Q)], None, "UNDETERMINED"),
        # completion has no scores: its answer's pass (and nothing missing) is GO
        (COMPLETION, ACC, [scored(Q, ACC, {}, **PASSED)], None, "GO"),
        (COMPLETION, IMP, [scored(Q, IMP, {}, **MISSING)], None, "NO-GO"),
        (COMPLETION, ESC, [scored(Q, ESC, {}, **QUESTIONS)], None, "NO-GO"),
        (COMPLETION, REJ, [scored(Q, REJ, {}, **NO_PROGRESS)], None, "NO-GO"),
        (COMPLETION, UND, [failed(Q)], None, "UNDETERMINED"),
    ],
)
def test_go_no_go_table(
    rubric: RubricName,
    final: Verdict,
    rounds: list[RoundRecord],
    override: bool | None,
    label: str,
) -> None:
    """Seed 000: NO-GO when any score of the deciding judgment is below the bar."""
    assert go_no_go(rubric, final, rounds, human_override=override) == label
    if rubric is not COMPLETION:
        # for scored rubrics "the last round that answered" is the last one with scores
        assert deciding_round(rounds) == next((r for r in reversed(rounds) if r.scores), None)


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


def test_an_escalate_scored_below_3_is_no_go_in_the_record() -> None:
    """Two judges scoring every dimension 2 escalate; the record says NO-GO, and a label
    written under the old rule (UNDETERMINED) is not what `record_go_no_go` reads."""
    rounds = [scored(Q, IMP, kls(2, 2, 2)), scored(D, IMP, kls(2, 2, 2))]
    record = verdict_record(
        BASE, Decision(Verdict.ESCALATE), mode=protocol_mode(rounds), rounds=rounds
    )
    assert record.final_decision is Verdict.ESCALATE and record.go_no_go == "NO-GO"
    stale = record.model_copy(update={"go_no_go": "UNDETERMINED"})
    assert record_go_no_go(stale) == "NO-GO"


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


QUICK_ACCEPT = scored(Q, ACC, kls(4, 4, 5))
REFUSED = Decision(Verdict.UNDETERMINED, reason="partial view: r", mode=PARTIAL_VIEW)


def test_a_partial_view_refusal_is_no_go_nor_go_and_not_an_answer() -> None:
    """The quick judge scored 4s on what it saw; nobody read the rest. The record is
    the refusal's (mode partial-view), never GO, and never cached."""
    rounds = [QUICK_ACCEPT]
    record = verdict_record(BASE, REFUSED, mode=protocol_mode(rounds, REFUSED), rounds=rounds)
    assert record.mode == "partial-view" and record.final_decision is Verdict.UNDETERMINED
    assert record.go_no_go == "UNDETERMINED" and record_go_no_go(record) == "UNDETERMINED"
    assert record.reason == "partial view: r"
    assert not cacheable(record)
    # a person's word still decides the label
    overridden = record.model_copy(update={"final_decision": ACC, "human_override": True})
    assert record_go_no_go(overridden) == "GO"
    # an accepted record is still labelled by its scores
    assert protocol_mode(rounds, Decision(ACC)) == "quick"


@pytest.mark.parametrize("final", [UND, ESC])
def test_go_no_go_reads_the_mode(final: Verdict) -> None:
    assert go_no_go(CONTENT, UND, [QUICK_ACCEPT], mode=PARTIAL_VIEW) == "UNDETERMINED"
    assert go_no_go(CONTENT, final, [QUICK_ACCEPT], mode="quick") == "GO"
    assert go_no_go(CONTENT, REJ, [QUICK_ACCEPT], mode=PARTIAL_VIEW) == "NO-GO"


def test_with_partial_view_reason_names_the_longest_file_and_the_largest_budget() -> None:
    files = [
        JudgedFile(path="a.md", content="x" * 100),
        JudgedFile(path="gone.md", content="y" * 90_000, status="removed"),
        JudgedFile(path="b.md", content="z" * 40_000),
    ]
    budgets = {Tier.QUICK: 4000, Tier.DEEP: 32000, Tier.TIEBREAKER: 16000}
    got = with_partial_view_reason(REFUSED, files, budgets)
    assert got.reason == (
        "partial view: r; the longest file, b.md, has 40000 characters and the largest "
        "judge budget is 32000 (deep, shared with diffs and CI excerpts)"
    )
    assert got.mode == PARTIAL_VIEW and got.verdict is UND
    other = Decision(UND, reason="the quick round failed; failing open")
    assert with_partial_view_reason(other, files, budgets) == other


CUT_FOR_QUICK = [
    ContextPiece(kind="task", name="(task description)", chars=9000, sent={Q: 8000}),
    ContextPiece(kind="file", name="n.md", chars=6000, sent={Q: 4000, D: 6000}),
]


@pytest.mark.parametrize(
    ("final", "rounds", "label"),
    [
        # quick read 4,000 of 6,000 characters and scored 4s; deep then failed
        (UND, [QUICK_ACCEPT, failed(D)], "UNDETERMINED"),
        # quick's low scores on what it read still block
        (UND, [scored(Q, IMP, kls(2, 3, 3)), failed(D)], "NO-GO"),
        # deep read everything: its scores decide
        (ACC, [scored(Q, IMP, kls(3, 3, 3)), scored(D, ACC, kls(4, 4, 4))], "GO"),
    ],
)
def test_a_go_needs_a_deciding_judge_that_read_every_file(
    final: Verdict, rounds: list[RoundRecord], label: str
) -> None:
    assert go_no_go(CONTENT, final, rounds, context=CUT_FOR_QUICK) == label
    # a capped task text alone is not a cut view
    assert go_no_go(CONTENT, final, rounds, context=CUT_FOR_QUICK[:1]) == go_no_go(
        CONTENT, final, rounds
    )

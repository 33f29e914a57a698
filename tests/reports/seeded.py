"""A small verdict log with known overrides, and builders for records of every shape.

`SEEDED` is the log the KPI tests store on both backends; the expected figures are worked
out by hand in the tests, from the comments here.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.judge.records import CallStats, GoNoGo, RoundRecord, Tier, Verdict, VerdictRecord
from bot.storage.base import Storage, StoredVerdict
from tests.support.verdict_builders import make_record

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
QUICK = ("opencode/gpt-5-nano", "openai")
DEEP = ("opencode/kimi-k2.5-free", "kimi")
SCORES = {
    Verdict.ACCEPT: {"semantic": 4.0, "pragmatic": 4.0, "syntactic": 5.0},
    Verdict.IMPROVE: {"semantic": 3.0, "pragmatic": 2.0, "syntactic": 4.0},
    Verdict.REJECT: {"semantic": 1.0, "pragmatic": 2.0, "syntactic": 3.0},
}


def sha(number: int) -> str:
    """A head sha whose short form tells the changes apart."""
    return f"{number:02x}" * 20


Step = tuple[Tier, tuple[str, str], Verdict | None]


def rounds_of(steps: Sequence[Step]) -> list[RoundRecord]:
    return [
        RoundRecord(
            round=n,
            judge_tier=tier,
            model=model,
            family=family,
            verdict=verdict,
            scores={} if verdict is None else SCORES[verdict],
            average=None if verdict is None else 3.5,
            error="timeout" if verdict is None else None,
        )
        for n, (tier, (model, family), verdict) in enumerate(steps, start=1)
    ]


def call(
    tier: Tier, model: tuple[str, str], ms: float, tokens: int, attempts: int = 1, ok: bool = True
) -> CallStats:
    return CallStats(
        tier=tier,
        model=model[0],
        provider="openai",
        latency_ms=ms,
        prompt_tokens=tokens - tokens // 4,
        completion_tokens=tokens // 4,
        attempts=attempts,
        error=None if ok else "timeout",
    )


def judgment(
    repository: str | None,
    number: int,
    decision: Verdict,
    label: GoNoGo,
    steps: Sequence[Step],
    calls: Sequence[CallStats],
    at: datetime,
    **extra: Any,
) -> VerdictRecord:
    rounds = rounds_of(steps)
    last = rounds[-1] if rounds else None
    fields: dict[str, Any] = {
        "task_id": f"{repository or 'local'}#{number}",
        "repository": repository,
        "head_sha": sha(number),
        "final_decision": decision,
        "go_no_go": label,
        "previous_rounds": rounds,
        "calls": list(calls),
        "timestamp": at,
        "round": len(rounds),
        "judge_tier": None if last is None else last.judge_tier,
        "model": "" if last is None else last.model,
        "mode": "unconfigured" if last is None else last.judge_tier.value,
        "verdict": decision if last is None else (last.verdict or Verdict.UNDETERMINED),
        "scores": {} if last is None else last.scores,
        "average": None if last is None else last.average,
    }
    fields.update(extra)
    return make_record(**fields)


def human(judged: VerdictRecord, verdict: Verdict | None, by: str, at: datetime) -> VerdictRecord:
    """An override (accept or reject) or, with None, its cancel."""
    decided = verdict or judged.final_decision
    return judged.model_copy(
        update={
            "final_decision": decided,
            "verdict": decided,
            "human_override": verdict is not None,
            "decided_by": by,
            "timestamp": at,
            "reason": f"human override by {by}",
        }
    )


def day(n: float) -> datetime:
    return NOW - timedelta(days=n)


A, B = "octo/docs", "octo/api"
_A3 = judgment(A, 3, Verdict.REJECT, "NO-GO", [(Tier.QUICK, QUICK, Verdict.REJECT)],
               [call(Tier.QUICK, QUICK, 1500, 800)], day(11))  # fmt: skip
_A5 = judgment(A, 5, Verdict.ACCEPT, "GO", [(Tier.QUICK, QUICK, Verdict.ACCEPT)],
               [call(Tier.QUICK, QUICK, 2500, 600)], day(9))  # fmt: skip
_B2 = judgment(B, 2, Verdict.ESCALATE, "NO-GO",
               [(Tier.QUICK, QUICK, Verdict.IMPROVE), (Tier.DEEP, DEEP, Verdict.REJECT)],
               [call(Tier.QUICK, QUICK, 1000, 400), call(Tier.DEEP, DEEP, 9000, 2000)],
               day(1.5))  # fmt: skip

SEEDED: list[VerdictRecord] = [
    # a1: quick accepts, GO. The oldest judgment: 13.5 days back, so 14 days covered.
    judgment(A, 1, Verdict.ACCEPT, "GO", [(Tier.QUICK, QUICK, Verdict.ACCEPT)],
             [call(Tier.QUICK, QUICK, 2000, 1000)], day(13.5)),
    # a2: quick improve, deep accept: two tiers that disagree; GO.
    judgment(A, 2, Verdict.ACCEPT, "GO",
             [(Tier.QUICK, QUICK, Verdict.IMPROVE), (Tier.DEEP, DEEP, Verdict.ACCEPT)],
             [call(Tier.QUICK, QUICK, 1000, 500), call(Tier.DEEP, DEEP, 3000, 1500)], day(12)),
    _A3,  # reject, NO-GO; alice overrides to accept below: a false positive
    human(_A3, Verdict.ACCEPT, "alice", day(10.9)),
    # a4: quick improve, deep improve: two tiers that agree; NO-GO, nobody overrides.
    judgment(A, 4, Verdict.IMPROVE, "NO-GO",
             [(Tier.QUICK, QUICK, Verdict.IMPROVE), (Tier.DEEP, DEEP, Verdict.IMPROVE)],
             [call(Tier.QUICK, QUICK, 1200, 500), call(Tier.DEEP, DEEP, 4800, 1500)], day(10)),
    _A5,  # accept, GO; bob overrides to reject below: a false negative
    human(_A5, Verdict.REJECT, "bob", day(8.9)),
    # a6: the quick call failed twice: UNDETERMINED, 0 of 2 attempts succeeded.
    judgment(A, 6, Verdict.UNDETERMINED, "UNDETERMINED", [(Tier.QUICK, QUICK, None)],
             [call(Tier.QUICK, QUICK, 45000, 0, attempts=2, ok=False)], day(8),
             reason="the quick round failed; failing open"),
    # b1: quick accepts after one retry (1 success in 2 attempts); GO.
    judgment(B, 1, Verdict.ACCEPT, "GO", [(Tier.QUICK, QUICK, Verdict.ACCEPT)],
             [call(Tier.QUICK, QUICK, 3000, 700, attempts=2)], day(2)),
    _B2,  # escalate, NO-GO; carol overrides to accept, then cancels: no standing decision
    human(_B2, Verdict.ACCEPT, "carol", day(1.4)),
    human(_B2, None, "carol", day(1.3)),
    # b3: a verdict-cache hit: rounds as cached, no call this time; GO.
    judgment(B, 3, Verdict.ACCEPT, "GO", [(Tier.QUICK, QUICK, Verdict.ACCEPT)], [], day(0.5)),
    # outside a 14-day window
    judgment(A, 9, Verdict.REJECT, "NO-GO", [(Tier.QUICK, QUICK, Verdict.REJECT)],
             [call(Tier.QUICK, QUICK, 1000, 100)], day(20)),
]  # fmt: skip


async def store_all(storage: Storage, records: Sequence[VerdictRecord]) -> None:
    for record in records:
        await storage.append_verdict(
            task_id=record.task_id,
            repository=record.repository,
            head_sha=record.head_sha,
            verdict=record.final_decision.value,
            created_at=record.timestamp,
            record=record.model_dump(mode="json"),
        )


def stored_of(records: Sequence[VerdictRecord]) -> list[StoredVerdict]:
    """The records as storage would list them, without a database."""
    return [
        StoredVerdict(
            seq=n,
            task_id=r.task_id,
            repository=r.repository,
            head_sha=r.head_sha,
            verdict=r.final_decision.value,
            created_at=r.timestamp,
            record=r.model_dump(mode="json"),
        )
        for n, r in enumerate(records, start=1)
    ]

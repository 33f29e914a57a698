"""A stored verdict record reduced to what the reports read. Pure.

Calibration reads every record of a two-week window, so records are not validated as
whole `VerdictRecord`s (their reasoning, findings and hashes are not needed here); the
few fields used are read directly and a record missing one, or holding a value of the
wrong kind, is counted as unreadable instead of stopping the report.

Two kinds of record share the log. A judgment is what the judges (or the checks without
a model) decided. A human decision is written by `/judge override` (`decided_by` set):
`human_override` true for accept or reject, false for a cancel, which gives the
judges' verdict back. Both carry the change they are about: repository, head sha, task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from bot.judge.authorship import family_of_model
from bot.judge.records import GoNoGo, Verdict
from bot.storage.base import StoredVerdict

LABELS: tuple[GoNoGo, ...] = ("GO", "NO-GO", "UNDETERMINED")
LOCAL = "(local)"
"""The scope of records without a repository: the CLI and the pre-push hook."""

_VERDICTS = {v.value: v for v in Verdict}
ChangeKey = tuple[str, str, str]
"""(repository lower-cased or "", head sha or "", task id): one judged change."""


@dataclass(frozen=True)
class Window:
    """The days a report covers: records at or after `since`, up to `until` (now)."""

    since: datetime
    until: datetime
    days: int


@dataclass(frozen=True, slots=True)
class RoundFact:
    tier: str
    model: str
    family: str
    verdict: Verdict | None
    """None when the round's call or parse failed."""


@dataclass(frozen=True, slots=True)
class CallFact:
    """One provider call after its retries: `attempts` requests, the last one usable
    when `ok`."""

    tier: str
    model: str
    latency_ms: float
    tokens: int
    attempts: int
    ok: bool


@dataclass(frozen=True, slots=True)
class HumanFact:
    verdict: Verdict | None
    """What the person decided; None for a cancel (the judges' verdict applies again)."""
    by: str


@dataclass(frozen=True, slots=True)
class RecordFact:
    seq: int
    change: ChangeKey
    repository: str | None
    at: datetime
    decision: Verdict
    label: GoNoGo
    rounds: tuple[RoundFact, ...]
    calls: tuple[CallFact, ...]
    human: HumanFact | None
    """Set on a person's record (an override or its cancel), None on a judgment."""

    @property
    def scope(self) -> str:
        return self.repository or LOCAL

    def deciding_round(self) -> RoundFact | None:
        """The last round that answered: the one the GO/NO-GO label was read from."""
        return next((r for r in reversed(self.rounds) if r.verdict is not None), None)


def fact_of(stored: StoredVerdict) -> RecordFact | None:
    """The facts of one stored record, or None when it lacks what the reports need."""
    try:
        return _read(stored)
    except (KeyError, TypeError, ValueError, AttributeError):
        return None


def _read(stored: StoredVerdict) -> RecordFact:
    record = stored.record
    label = record["go_no_go"]
    if label not in LABELS:
        raise ValueError(f"unknown label {label!r}")
    decided_by = record.get("decided_by")
    human = None
    if decided_by is not None:
        overridden = record.get("human_override") is True
        human = HumanFact(_VERDICTS[record["final_decision"]] if overridden else None, decided_by)
    return RecordFact(
        seq=stored.seq,
        change=((stored.repository or "").lower(), stored.head_sha or "", stored.task_id),
        repository=stored.repository,
        at=stored.created_at,
        decision=_VERDICTS[record["final_decision"]],
        label=cast(GoNoGo, label),
        rounds=_rounds(record),
        calls=tuple(_call(c) for c in record.get("calls") or ()),
        human=human,
    )


def _rounds(record: Mapping[str, Any]) -> tuple[RoundFact, ...]:
    """Every round in order; as `bot.record_view.rounds_of`, the top-level fields are the
    last round unless `previous_rounds` lists it already."""
    rounds = [_round(r) for r in sorted(record.get("previous_rounds") or (), key=_number)]
    listed = {_number(r) for r in record.get("previous_rounds") or ()}
    number = int(record.get("round") or 0)
    tier = record.get("judge_tier")
    if number >= 1 and tier is not None and number not in listed:
        model = str(record.get("model") or "")
        rounds.append(RoundFact(str(tier), model, family_of_model(model), _verdict(record)))
    return tuple(rounds)


def _number(raw: Mapping[str, Any]) -> int:
    return int(raw["round"])


def _round(raw: Mapping[str, Any]) -> RoundFact:
    model = str(raw["model"])
    return RoundFact(
        tier=str(raw["judge_tier"]),
        model=model,
        family=str(raw.get("family") or family_of_model(model)),
        verdict=_verdict(raw),
    )


def _verdict(raw: Mapping[str, Any]) -> Verdict | None:
    value = raw.get("verdict")
    return None if value is None else _VERDICTS[value]


def _call(raw: Mapping[str, Any]) -> CallFact:
    tokens = int(raw.get("prompt_tokens") or 0) + int(raw.get("completion_tokens") or 0)
    attempts = raw.get("attempts")
    return CallFact(
        tier=str(raw["tier"]),
        model=str(raw["model"]),
        latency_ms=float(raw["latency_ms"]),
        tokens=tokens,
        attempts=1 if attempts is None else int(attempts),
        ok=raw.get("error") is None,
    )


def facts_of(stored: Sequence[StoredVerdict]) -> tuple[list[RecordFact], int]:
    """The readable records, oldest first, and how many could not be read."""
    facts = [fact_of(s) for s in stored]
    readable = [f for f in facts if f is not None]
    return readable, len(facts) - len(readable)


def in_repository(stored: Sequence[StoredVerdict], repository: str | None) -> list[StoredVerdict]:
    """Records of one repository (its name compared without case); all when None."""
    if repository is None:
        return list(stored)
    wanted = repository.lower()
    return [s for s in stored if (s.repository or "").lower() == wanted]


def human_decisions(facts: Sequence[RecordFact]) -> dict[ChangeKey, HumanFact]:
    """Each change's standing human decision: the latest person's record about it, unless
    that record is a cancel. Records are oldest first (the log's order)."""
    latest: dict[ChangeKey, HumanFact] = {}
    for fact in facts:
        if fact.human is not None:
            latest[fact.change] = fact.human
    return {key: human for key, human in latest.items() if human.verdict is not None}

"""A verdict record reduced to what the reports read. Pure.

Calibration reads every record of a two-week window, so the reports read the compact
facts storage keeps beside each record (`Storage.list_verdict_facts`,
`bot.storage.verdict_facts`), never whole `VerdictRecord`s. A record missing one of
the fields used, or holding a value of the wrong kind or an unknown verdict, is counted
as unreadable instead of stopping the report.

Two kinds of record share the log. A judgment is what the judges (or the checks without
a model) decided. A human decision is written by `/judge override` (`decided_by` set):
`human_override` true for accept or reject, false for a cancel, which gives the
judges' verdict back. Both carry the change they are about: repository, head sha, task.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any, NamedTuple, Protocol, TypeVar

from bot.judge.authorship import family_of_model
from bot.judge.records import GoNoGo, Verdict
from bot.storage.base import VerdictFacts

LABELS: tuple[GoNoGo, ...] = ("GO", "NO-GO", "UNDETERMINED")
LOCAL = "(local)"
"""The scope of records without a repository: the CLI and the pre-push hook."""

_VERDICTS = {v.value: v for v in Verdict}
ChangeKey = tuple[str, str, str]
"""(repository lower-cased or "", head sha or "", task id): one judged change."""


@dataclass(frozen=True)
class ReportWindow:
    """The days a report covers: records at or after `since`, up to `until` (now)."""

    since: datetime
    until: datetime
    days: int


class RoundFact(NamedTuple):
    """A tuple: judgments are grouped by their rounds (`bot.reports.shapes`), and a
    tuple hashes fast."""

    tier: str
    model: str
    family: str
    verdict: Verdict | None
    """None when the round's call or parse failed."""


class CallFact(NamedTuple):
    """One provider call after its retries: `attempts` requests, the last one usable
    when `ok`. A tuple in the stored call's own order: a window holds many."""

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


class RecordFact(NamedTuple):
    """One record's facts (a tuple: a window holds a hundred thousand)."""

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
    tags: tuple[str, ...] = ()

    @property
    def scope(self) -> str:
        return self.repository or LOCAL

    @property
    def task_id(self) -> str:
        return self.change[2]

    @property
    def head_sha(self) -> str | None:
        return self.change[1] or None


class _Rounds:
    """Decoded rounds by their stored text. A window repeats a handful of shapes (which
    tiers ran, which models, what they said) thousands of times."""

    limit = 4096

    def __init__(self) -> None:
        self._known: dict[str, tuple[RoundFact, ...] | None] = {}

    def __call__(self, text: str) -> tuple[RoundFact, ...] | None:
        if text in self._known:
            return self._known[text]
        if len(self._known) >= self.limit:
            self._known.clear()
        decoded = self._known[text] = _decode_rounds(text)
        return decoded


def _decode_rounds(text: str) -> tuple[RoundFact, ...] | None:
    rounds = []
    try:
        for tier, model, family, verdict in json.loads(text):
            decided = None if verdict is None else _VERDICTS.get(verdict)
            if verdict is not None and decided is None:
                return None
            rounds.append(RoundFact(tier, model, family or family_of_model(model), decided))
    except (ValueError, TypeError):  # a row edited by hand: unreadable, not fatal
        return None
    return tuple(rounds)


def _decode_calls(text: str) -> list[Any] | None:
    try:
        calls = json.loads(text)
    except ValueError:
        return None
    return calls if isinstance(calls, list) else None


_rounds_of = _Rounds()
_new_call: Callable[[Iterable[Any]], CallFact] = partial(tuple.__new__, CallFact)


def fact_of_row(
    row: VerdictFacts, calls: Sequence[Sequence[Any]] | None = None
) -> RecordFact | None:
    """The facts of one stored row, or None when the record lacked what reports need.
    `calls`: the row's calls already decoded (`facts_of_rows` decodes a window's at once)."""
    decision = _VERDICTS.get(row.decision or "")
    if not row.readable or decision is None or row.label not in LABELS:
        return None
    rounds = _rounds_of(row.rounds)
    if rounds is None:
        return None
    human = None
    if row.decided_by is not None:
        human = HumanFact(decision if row.overridden else None, row.decided_by)
    if calls is None:
        calls = _decode_calls(row.calls)
    if not isinstance(calls, list):
        return None
    return RecordFact(
        row.seq,
        ((row.repository or "").lower(), row.head_sha or "", row.task_id),
        row.repository,
        row.created_at,
        decision,
        row.label,
        rounds,
        tuple(map(_new_call, calls)) if calls else (),
        human,
        row.tags,
    )


def facts_of_rows(rows: Iterable[VerdictFacts]) -> tuple[list[RecordFact], int]:
    """The readable rows' facts, in the rows' order (oldest first), and how many rows
    could not be read."""
    listed = list(rows)
    # One decode for the window: json.loads costs more per call than per byte. A row
    # edited by hand that breaks it sends every row to its own decode.
    calls: list[Any] = _decode_calls(f"[{','.join([row.calls for row in listed])}]") or []
    if len(calls) != len(listed):
        calls = [None] * len(listed)
    facts = []
    unreadable = 0
    for row, row_calls in zip(listed, calls, strict=True):
        fact = fact_of_row(row, row_calls)
        if fact is None:
            unreadable += 1
        else:
            facts.append(fact)
    return facts, unreadable


class InRepository(Protocol):
    """A record, its facts or a facts row: anything that names its repository."""

    @property
    def repository(self) -> str | None: ...


R = TypeVar("R", bound=InRepository)


def in_repository(items: Sequence[R], repository: str | None) -> list[R]:
    """Records (or their facts) of one repository, its name compared without case; all
    when None."""
    if repository is None:
        return list(items)
    wanted = repository.lower()
    return [s for s in items if (s.repository or "").lower() == wanted]


def human_decisions(facts: Sequence[RecordFact]) -> dict[ChangeKey, HumanFact]:
    """Each change's standing human decision: the latest person's record about it, unless
    that record is a cancel. Records are oldest first (the log's order)."""
    latest: dict[ChangeKey, HumanFact] = {}
    for fact in facts:
        if fact.human is not None:
            latest[fact.change] = fact.human
    return {key: human for key, human in latest.items() if human.verdict is not None}

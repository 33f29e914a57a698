"""One round of the protocol: when to ask the judge again, and what the round records.

A round asks one seated judge, at most `ATTEMPTS_PER_ROUND` times. The engine does
the calling; the rules it follows are here, as pure functions of what happened:

    before an attempt   wall-clock budget spent ─────────────► give up
                        daily model-call budget spent ───────► give up
    the call failed     our own per-tier time limit ─────────► retry
                        HTTP status (4xx/5xx, 429 too) ───────► give up
                        provider timeout, transport error,
                          malformed envelope, empty answer ──► retry
                        any other ProviderError ─────────────► give up
    the answer          unparseable ─────────────────────────► retry

A status answer will not change on an immediate retry (a 429 wants a pause longer than
the budget allows), and an unknown provider failure gives no reason to think a retry
would help; the other failures are the transient kind a second attempt often clears.
Whatever the last attempt ended with is the round's error, and a round without an
answer fails open (the protocol turns it into an undetermined verdict, never a reject).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bot.judge.engine.cost import UsageScopes
from bot.judge.engine.prompts import Shown, sends_every_file
from bot.judge.engine.seating import Seat, Seating
from bot.judge.engine.tiers import RoundResult
from bot.judge.providers import (
    Completion,
    EmptyAnswer,
    MalformedResponse,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.records import CallStats, ContextPiece, RoundRecord, Tier, Truncation
from bot.judge.rubrics import Rubric, RubricAnswer
from bot.judge.rubrics.parsing import ParseError

ATTEMPTS_PER_ROUND = 2

AttemptError = TimeoutError | ProviderError | ParseError
"""What an attempt can end with instead of an answer: the engine's own time limit, a
provider failure, or a reply the rubric's parser refused."""


@dataclass(frozen=True)
class AskAgain:
    """Ask again if the round has an attempt left; `error` stands if it has none."""

    error: str
    warn: bool = False
    """Whether the failure is logged (provider failures are; our own timeout and an
    unparseable answer are recorded in the round only)."""


@dataclass(frozen=True)
class GiveUp:
    """End the round now with `error`."""

    error: str
    warn: bool = False


def attempt_refusal(*, remaining: float, calls_left: int | None) -> GiveUp | None:
    """Whether another attempt may start: seconds left of the wall-clock budget, and
    model calls left today (None: no daily budget)."""
    if remaining <= 0:
        return GiveUp("wall-clock budget exhausted")
    if calls_left is not None and calls_left <= 0:
        return GiveUp("daily model-call budget exhausted")
    return None


def attempt_outcome(error: AttemptError, *, timeout: float) -> AskAgain | GiveUp:
    """What to do after an attempt that ended with `error` (its time limit was
    `timeout` seconds), and the message the round records."""
    if isinstance(error, TimeoutError):
        return AskAgain(f"timeout after {timeout:g}s")
    if isinstance(error, ParseError):
        return AskAgain(f"unparseable answer: {error}")
    if isinstance(error, ProviderHTTPError):
        return GiveUp(f"HTTP {error.status} from {error.provider}", warn=True)
    if isinstance(error, ProviderTimeout):
        return AskAgain("timeout", warn=True)
    if isinstance(error, ProviderTransportError):
        return AskAgain(f"transport error ({error.cause})", warn=True)
    if isinstance(error, EmptyAnswer):
        return AskAgain("empty answer", warn=True)
    if isinstance(error, MalformedResponse):
        return AskAgain("malformed response envelope", warn=True)
    return GiveUp(f"provider error ({type(error).__name__})", warn=True)


@dataclass
class Tally:
    """What a round's attempts cost and came to."""

    attempts: int = 0
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None
    answer: RubricAnswer | None = None
    truncated: list[Truncation] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)

    def add_completion(self, completion: Completion) -> None:
        self.latency_ms += completion.latency_ms
        self.prompt_tokens += completion.prompt_tokens
        self.completion_tokens += completion.completion_tokens

    def call_stats(self, tier: Tier, seat: Seat) -> CallStats:
        return CallStats(
            tier=tier,
            model=seat.model,
            provider=getattr(seat.provider, "kind", "unknown"),
            latency_ms=self.latency_ms,
            prompt_tokens=self.prompt_tokens,
            completion_tokens=self.completion_tokens,
            attempts=self.attempts,
            error=self.error,
        )


def round_record(
    number: int, tier: Tier, seated: Seating, rubric: Rubric, tally: Tally
) -> RoundRecord:
    """The round as the verdict record keeps it; the verdict comes from the rubric's
    reading of the scores, the model's own label is kept beside it."""
    seat = seated.seat
    assert seat is not None
    common: dict[str, Any] = {
        "round": number,
        "judge_tier": tier,
        "model": seat.model,
        "family": seat.family,
        "substituted_for": seated.substituted_for,
    }
    answer = tally.answer
    if answer is None:
        return RoundRecord(**common, error=tally.error or "no answer")
    return RoundRecord(
        **common,
        verdict=rubric.decide(answer),
        model_verdict=answer.model_verdict,
        scores=dict(answer.scores),
        average=answer.average,
        reasoning=answer.reasoning,
        improvements=list(answer.improvements),
        extra=dict(answer.extra),
    )


@dataclass
class JudgmentLog:
    """What the rounds of one judgment have added up to so far (the engine's mutable
    state while the protocol runs): rounds, calls, cuts, and every piece of the prompt
    with what each tier was sent of it."""

    scopes: UsageScopes
    """Where this judgment's model calls and tokens are counted."""
    rounds: list[RoundRecord] = field(default_factory=list)
    results: list[RoundResult] = field(default_factory=list)
    calls: list[CallStats] = field(default_factory=list)
    truncation: list[Truncation] = field(default_factory=list)
    calls_left: int | None = None
    shown: dict[tuple[str, str], ContextPiece] = field(default_factory=dict)

    def add(self, record: RoundRecord, stats: CallStats, tally: Tally) -> None:
        self.rounds.append(record)
        whole = sends_every_file(tally.shown)
        self.results.append(RoundResult(record.judge_tier, record.verdict, whole=whole))
        self.calls.append(stats)
        for item in tally.truncated:
            if item not in self.truncation:
                self.truncation.append(item)
        for piece in tally.shown:
            self._saw(record.judge_tier, piece)

    def _saw(self, tier: Tier, piece: Shown) -> None:
        key = (piece.kind, piece.name)
        known = self.shown.get(key)
        sent = {**(known.sent if known else {}), tier: piece.sent}
        self.shown[key] = ContextPiece(
            kind=piece.kind,
            name=piece.name,
            chars=piece.chars,
            sent=sent,
            trimmed=any(amount < piece.chars for amount in sent.values()),
        )

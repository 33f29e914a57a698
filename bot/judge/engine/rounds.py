"""One round of the protocol: when to ask the judge again, what it is told, and what the
round records.

A round asks one seated judge, at most `ATTEMPTS_PER_ROUND` times. The engine does
the calling; the rules it follows are here, as pure functions of what happened:

    before an attempt   wall-clock budget spent ─────────────► give up
                        daily model-call budget spent ───────► give up
                        the context holds no file ───────────► give up
    the call failed     our own per-tier time limit ─────────► retry, asked to be brief
                        provider timeout ────────────────────► retry, asked to be brief
                        prompt past the model's context ─────► retry, the prompt
                          (the server says so)                  fitted to what it said
    the answer          read from a cut prompt (the server ──► retry, the prompt fitted
                          read fewer tokens than it holds)      to the least it holds
                        HTTP 400, 413 or 422 (after format ───► give up, unanswered: the
                          negotiation: a content filter,         prompt (the change's own
                          an invalid prompt)                     text) was refused
                        other HTTP status (401, 403, 404, ────► give up, the server's
                          429, 5xx)                              message kept (an outage)
                        transport error, malformed envelope ─► retry as it was
                        empty answer ────────────────────────► retry, told it was empty
                        any other ProviderError ─────────────► give up
    the answer          cut at the output-token limit ───────► retry, told to answer
                          (finish_reason length)                shorter
                        unparseable ─────────────────────────► retry, its parse error
                                                               fed back

Judges are called at temperature 0, where the same request gets the same answer: a
retry is only worth its latency if something changes. What goes wrong on the model's
side (an empty, cut-off or unreadable answer, or one too slow to finish) is retried with
a note saying so (`retry_note`, appended to the prompt by `with_retry_note`; the parse
error, which may quote the model, is fenced as data under the call's nonce). What goes
wrong on the way (a reset connection, a garbled envelope) is retried as it was, since
the network, not the model, is what changes. A status answer will not change on an
immediate retry (a 429 wants a pause longer than the budget allows), and an unknown
provider failure gives no reason to think a retry would help. Refusals a provider can
work around (a response format, a sampling parameter) are negotiated inside its call
(bot/judge/providers/openai_chat.py) and are not attempts.

A prompt the server refused as longer than its model's context is fitted again to what
the server said (bot/judge/engine/context_fit.py `after_overflow`) and sent once more;
the round records what the judge was sent either way.

A cut-off answer is never read: a truncated object can still hold a complete `scores`
object, but the judge had not finished (its reasoning, its improvements, perhaps a
change of mind), so the round fails with "cut-off answer: ..." rather than deciding on
half an answer. Whatever the last attempt ended with is the round's error, and a round
without an answer fails open (the protocol turns it into an undetermined verdict, never
a reject).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.judge.checks.injection import wrap_file
from bot.judge.engine.context_fit import TierFit
from bot.judge.engine.cost import UsageScopes
from bot.judge.engine.prompts import Shown, sends_every_file
from bot.judge.engine.seating import Seat, Seating
from bot.judge.engine.tiers import RoundResult
from bot.judge.providers import (
    Completion,
    ContextOverflow,
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
CUT_OFF = "cut-off answer"
"""How a round's error starts when the judge's answer was cut at the output-token limit."""
UNPARSEABLE = "unparseable answer"
EMPTY = "empty answer"
CONTEXT = "context overflow"
"""How a round's error starts when the prompt did not fit the model's context (the
change's own texts can be why)."""
REFUSED = "refused prompt"
"""How a round's error starts when the server refused the request as bad after the
provider negotiated what it could (a content filter, an invalid prompt, an overflow in
words overflow.py does not know): the change's own texts can be why."""
REFUSING_STATUSES = frozenset({400, 413, 422})
UNANSWERED = (UNPARSEABLE, EMPTY, CUT_OFF, CONTEXT, REFUSED)
"""How a round's error starts when the judge was reached but gave no usable answer (its
input can be why: no outage; bot/judging/conclusion.py reads these)."""
BUDGET_CUT = "daily model-call budget exhausted"
_FED_BACK_LIMIT = 300


class CutOffAnswer(Exception):
    """The server stopped the answer at the output-token limit (`limit` tokens)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"answer cut at the output-token limit ({limit} tokens)")
        self.limit = limit


class NoRoomForFiles(Exception):
    """The model's context cannot hold the prompt with any of the change in it."""

    def __init__(self, tokens: int, source: str, needed: int) -> None:
        super().__init__(
            f"the prompt without the change takes about {needed} characters, more than "
            f"the model's context of {tokens} tokens ({source}) leaves for it"
        )


class PromptCut(Exception):
    """The server said it read fewer tokens than the prompt holds at the least: it cut the
    prompt to its context without an error (Ollama does), so the judge read part of it."""

    def __init__(self, read: int, least: int) -> None:
        super().__init__(
            f"the server read {read} prompt tokens of at least {least}: it cut the prompt"
        )


AttemptError = TimeoutError | ProviderError | ParseError | CutOffAnswer | NoRoomForFiles | PromptCut
"""What an attempt can end with instead of an answer: the engine's own time limit, a
provider failure, an answer cut at the output-token limit, a reply the rubric's parser
refused, or a context too small to send anything."""


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
        return GiveUp(BUDGET_CUT)
    return None


def attempt_outcome(
    error: AttemptError, *, timeout: float, before: str | None = None
) -> AskAgain | GiveUp:
    """What to do after an attempt that ended with `error` (its time limit was
    `timeout` seconds), and the message the round records; `before`, the error the
    attempt before ended with, stays first when a context too small follows a server's
    refusal (its words say most)."""
    if isinstance(error, TimeoutError):
        return AskAgain(f"timeout after {timeout:g}s")
    if isinstance(error, CutOffAnswer):
        return AskAgain(f"{CUT_OFF}: {error}", warn=True)
    if isinstance(error, ParseError):
        return AskAgain(f"{UNPARSEABLE}: {error}")
    if isinstance(error, PromptCut):
        return AskAgain(f"{CONTEXT}: {error}", warn=True)
    if isinstance(error, NoRoomForFiles):
        if before is not None and before.startswith(CONTEXT):
            return GiveUp(f"{before}; {error}", warn=True)
        return GiveUp(f"{CONTEXT}: {error}", warn=True)
    if isinstance(error, ProviderHTTPError):
        return _status_outcome(error)
    if isinstance(error, ProviderTimeout):
        return AskAgain("timeout", warn=True)
    if isinstance(error, ProviderTransportError):
        return AskAgain(f"transport error ({error.cause})", warn=True)
    if isinstance(error, EmptyAnswer):
        return AskAgain(EMPTY, warn=True)
    if isinstance(error, MalformedResponse):
        return AskAgain("malformed response envelope", warn=True)
    return GiveUp(f"provider error ({type(error).__name__})", warn=True)


def _status_outcome(error: ProviderHTTPError) -> AskAgain | GiveUp:
    """An error answer: an overflow is asked again fitted; a refusal of the request is
    unanswered; any other status (401, 403, 404, 429, 5xx) an outage."""
    said = f": {error.server_message}" if error.server_message else ""
    if isinstance(error, ContextOverflow):
        return AskAgain(f"{CONTEXT}: HTTP {error.status} from {error.provider}{said}", warn=True)
    if error.status in REFUSING_STATUSES:
        # The same prompt is refused again; the author's text may be why, so never an
        # outage (which blocking mode may let pass).
        return GiveUp(f"{REFUSED}: HTTP {error.status} from {error.provider}{said}", warn=True)
    return GiveUp(f"HTTP {error.status} from {error.provider}{said}", warn=True)


_NEVER_SENT = frozenset({"ConnectError", "UnicodeEncodeError", "InvalidURL", "UnsupportedProtocol"})
"""Transport failures before a request left this process or reached a server."""


def billed(error: AttemptError) -> bool:
    """Whether a failed call counts against the day's budgets as if answered: a server
    that timed out, failed (5xx) or answered garbled may have read the whole prompt and
    written an answer, and a hosted API bills that. Only failures the server never
    processed are free: a refused connection, a request refused as such (4xx, an
    overflow and a 429 too), a CLI that said it failed; the engine's own refusals
    (no room for files) never made a call."""
    if isinstance(error, TimeoutError | ProviderTimeout | MalformedResponse | EmptyAnswer):
        return True
    if isinstance(error, ProviderHTTPError):
        return error.status >= 500
    if isinstance(error, ProviderTransportError):
        return error.cause not in _NEVER_SENT
    return False


@dataclass(frozen=True)
class RetryNote:
    """What the next attempt is told about the last one: `text` in our words, and
    `quoted`, words of the model's (a parse error names what it wrote), fenced as data."""

    text: str
    quoted: str = ""


_BRIEF = (
    "the JSON object only, the reasoning in at most two sentences, at most three "
    "improvements of one sentence each"
)


def retry_note(error: AttemptError) -> RetryNote | None:
    """What to tell the judge when asking again after `error`, so that the retry is not
    the same request at temperature 0; None for failures on the way (transport, a
    garbled envelope), which a retry as it was may clear, for a prompt past the
    context (the retry is a shorter prompt, and the judge saw nothing of the first), and
    for failures not retried."""
    if isinstance(error, CutOffAnswer):
        return RetryNote(
            f"Your previous reply was cut off at the output-token limit ({error.limit} "
            f"tokens) before its JSON object was complete. Reply again, shorter: {_BRIEF}."
        )
    if isinstance(error, TimeoutError | ProviderTimeout):
        return RetryNote(f"Your previous reply took longer than allowed. Reply briefly: {_BRIEF}.")
    if isinstance(error, EmptyAnswer):
        return RetryNote(
            "Your previous reply was empty. Reply with the JSON object only, matching the "
            "schema in the system message."
        )
    if isinstance(error, ParseError):
        return RetryNote(
            "Your previous reply could not be read as the verdict object; why is quoted "
            "below. Reply again with the JSON object only (no prose, no Markdown fence), "
            "matching the schema in the system message.",
            quoted=str(error)[:_FED_BACK_LIMIT],
        )
    return None


def with_retry_note(
    messages: Sequence[Mapping[str, str]], note: RetryNote | None, nonce: str
) -> list[dict[str, str]]:
    """The messages with `note` at the end of the last user message (some servers refuse
    two user turns in a row), its quoted part fenced under this call's nonce."""
    out = [dict(m) for m in messages]
    if note is None:
        return out
    text = note.text
    if note.quoted:
        text += "\n" + wrap_file("(why the previous reply was refused)", note.quoted, nonce)
    for message in reversed(out):
        if message.get("role") == "user":
            message["content"] = message.get("content", "") + "\n\n" + text
            return out
    return [*out, {"role": "user", "content": text}]


@dataclass
class Tally:
    """What a round's attempts cost and came to."""

    attempts: int = 0
    spent: int = 0
    """Calls that count against the day's budgets: those the provider answered (with the
    tokens it reports) and the failures it may still bill (`billed`)."""
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated_tokens: int = 0
    """Tokens the billed failures may have cost (no usage came back): their prompts
    counted at the fit's characters per token, and their answers' limits."""
    error: str | None = None
    answer: RubricAnswer | None = None
    truncated: list[Truncation] = field(default_factory=list)
    shown: list[Shown] = field(default_factory=list)

    def add_completion(self, completion: Completion) -> None:
        self.spent += 1
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
        extra=answer.extras.as_record(),
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
    fits: dict[Tier, TierFit] = field(default_factory=dict)
    """What is known of each tier's context (an overflow teaches the next attempt)."""
    spent: int = 0
    """Calls counted against the day's budgets, over all rounds (`Tally.spent`)."""

    def add(self, record: RoundRecord, stats: CallStats, tally: Tally) -> None:
        self.spent += tally.spent
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

"""The round's retry rule and preconditions, table-tested over every failure kind."""

from __future__ import annotations

from typing import Any

import pytest

from bot.judge.engine.rounds import (
    AskAgain,
    AttemptError,
    GiveUp,
    NoRoomForFiles,
    PromptCut,
    Tally,
    attempt_outcome,
    attempt_refusal,
    round_record,
)
from bot.judge.engine.seating import Seat, Seating
from bot.judge.providers import (
    ContextOverflow,
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.providers import http as provider_http
from bot.judge.providers.overflow import Overflow
from bot.judge.records import CallStats, Tier, Verdict
from bot.judge.rubrics import RubricAnswer, get_rubric
from bot.judge.rubrics.parsing import ParseError

WHO = {"provider": "openai", "model": "m"}


class _CustomFailure(ProviderError):
    """A provider's own failure type, unknown to the engine."""


# error (with a 2.5 s time limit) -> the outcome, with the message records and logs show
OUTCOMES: list[tuple[str, AttemptError, AskAgain | GiveUp]] = [
    ("own-time-limit", TimeoutError(), AskAgain("timeout after 2.5s")),
    ("unparseable", ParseError("no JSON object"), AskAgain("unparseable answer: no JSON object")),
    (
        "http-500",
        ProviderHTTPError("x", **WHO, status=500, detail="boom"),
        GiveUp("HTTP 500 from openai", warn=True),
    ),
    (
        # the request itself refused (the author's text can be why): unanswered, not an outage
        "http-400",
        ProviderHTTPError("x", provider="anthropic", model="m", status=400, detail=""),
        GiveUp("refused prompt: HTTP 400 from anthropic", warn=True),
    ),
    (
        "azure-content-filter",
        ProviderHTTPError(
            "x",
            **WHO,
            status=400,
            detail="",
            server_message="The response was filtered due to the prompt triggering Azure "
            "OpenAI's content management policy.",
        ),
        GiveUp(
            "refused prompt: HTTP 400 from openai: The response was filtered due to the "
            "prompt triggering Azure OpenAI's content management policy.",
            warn=True,
        ),
    ),
    (
        "http-413",
        ProviderHTTPError("x", **WHO, status=413, detail=""),
        GiveUp("refused prompt: HTTP 413 from openai", warn=True),
    ),
    (
        "http-422",
        ProviderHTTPError("x", **WHO, status=422, detail="", server_message="bad input"),
        GiveUp("refused prompt: HTTP 422 from openai: bad input", warn=True),
    ),
    (
        "http-401",
        ProviderHTTPError("x", **WHO, status=401, detail=""),
        GiveUp("HTTP 401 from openai", warn=True),
    ),
    (
        "http-403",
        ProviderHTTPError("x", **WHO, status=403, detail=""),
        GiveUp("HTTP 403 from openai", warn=True),
    ),
    (
        "http-404",
        ProviderHTTPError("x", **WHO, status=404, detail=""),
        GiveUp("HTTP 404 from openai", warn=True),
    ),
    (
        "http-503",
        ProviderHTTPError("x", **WHO, status=503, detail=""),
        GiveUp("HTTP 503 from openai", warn=True),
    ),
    (
        "rate-limited",
        ProviderRateLimited("x", **WHO, status=429, detail="", retry_after=30.0),
        GiveUp("HTTP 429 from openai", warn=True),
    ),
    (
        # the prompt is fitted again to what the server said, and sent once more
        "context-overflow",
        ContextOverflow(
            "x",
            **WHO,
            status=400,
            detail="",
            overflow=Overflow(9315, 8192),
            server_message="request (9315 tokens) exceeds the available context size",
        ),
        AskAgain(
            "context overflow: HTTP 400 from openai: request (9315 tokens) exceeds the "
            "available context size",
            warn=True,
        ),
    ),
    (
        "no-room-for-files",
        NoRoomForFiles(300, "llama.cpp /props", 4250),
        GiveUp(
            "context overflow: the prompt without the change takes about 4250 characters, "
            "more than the model's context of 300 tokens (llama.cpp /props) leaves for it",
            warn=True,
        ),
    ),
    (
        # the server read less than the prompt holds: asked again, fitted to that
        "prompt-cut",
        PromptCut(2051, 5200),
        AskAgain(
            "context overflow: the server read 2051 prompt tokens of at least 5200: it cut "
            "the prompt",
            warn=True,
        ),
    ),
    ("provider-timeout", ProviderTimeout("x", **WHO), AskAgain("timeout", warn=True)),
    (
        "transport",
        ProviderTransportError("x", **WHO, cause="ConnectError"),
        AskAgain("transport error (ConnectError)", warn=True),
    ),
    ("empty", EmptyAnswer("x", **WHO), AskAgain("empty answer", warn=True)),
    (
        "malformed",
        MalformedResponse("x", **WHO),
        AskAgain("malformed response envelope", warn=True),
    ),
    (
        # a CLI that said it failed (not logged in, out of turns): asking again at once
        # would get the same answer
        "cli-command-failed",
        ProviderCommandError("x", **WHO, exit_code=1, detail="not logged in"),
        GiveUp("provider error (ProviderCommandError)", warn=True),
    ),
    (
        "base-provider-error",
        ProviderError("x", **WHO),
        GiveUp("provider error (ProviderError)", warn=True),
    ),
    (
        "unknown-subclass",
        _CustomFailure("x", **WHO),
        GiveUp("provider error (_CustomFailure)", warn=True),
    ),
]


@pytest.mark.parametrize(
    ("error", "expected"), [(e, o) for _, e, o in OUTCOMES], ids=[i for i, _, _ in OUTCOMES]
)
def test_attempt_outcome(error: AttemptError, expected: AskAgain | GiveUp) -> None:
    assert attempt_outcome(error, timeout=2.5) == expected


def test_no_room_after_a_refusal_keeps_the_servers_words_first() -> None:
    refused = "context overflow: HTTP 400 from openai: request (1497 tokens) exceeds it"
    no_room = NoRoomForFiles(300, "the server's refusal", 4250)
    assert attempt_outcome(no_room, timeout=1, before=refused) == GiveUp(
        f"{refused}; {no_room}", warn=True
    )
    # anything else before it is not the story
    assert attempt_outcome(no_room, timeout=1, before="timeout") == GiveUp(
        f"context overflow: {no_room}", warn=True
    )


def test_time_limit_is_written_compactly() -> None:
    assert attempt_outcome(TimeoutError(), timeout=2.0) == AskAgain("timeout after 2s")
    assert attempt_outcome(TimeoutError(), timeout=0.25) == AskAgain("timeout after 0.25s")


def _subclasses(cls: type[ProviderError]) -> set[type[ProviderError]]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub, *_subclasses(sub)}
    return out


def test_every_provider_failure_has_a_row() -> None:
    """A new ProviderError subclass must be placed in the table deliberately, not fall
    through to give-up by accident."""
    defined = {
        cls for cls in _subclasses(ProviderError) if cls.__module__ == provider_http.__name__
    } | {ProviderError}
    tabled = {type(error) for _, error, _ in OUTCOMES}
    assert defined <= tabled


@pytest.mark.parametrize(
    ("remaining", "calls_left", "expected"),
    [
        (10.0, None, None),
        (10.0, 1, None),
        (0.001, 5, None),
        (0.0, None, GiveUp("wall-clock budget exhausted")),
        (-3.0, 1, GiveUp("wall-clock budget exhausted")),
        # the wall clock is checked first: both spent reads as the wall clock
        (0.0, 0, GiveUp("wall-clock budget exhausted")),
        (10.0, 0, GiveUp("daily model-call budget exhausted")),
        (10.0, -1, GiveUp("daily model-call budget exhausted")),
    ],
)
def test_attempt_refusal(remaining: float, calls_left: int | None, expected: GiveUp | None) -> None:
    assert attempt_refusal(remaining=remaining, calls_left=calls_left) == expected


class _Provider:
    kind = "openai"
    base_url = "http://unused.invalid/v1"

    async def complete(self, **kwargs: Any) -> Any:
        raise AssertionError("rounds.py never calls providers")


SEAT = Seat(model="m", family="openai", provider=_Provider(), timeout=2.0, max_chars=1000)
ACCEPTING = RubricAnswer(
    scores={"semantic": 4, "pragmatic": 4, "syntactic": 5},
    average=4.33,
    reasoning="clear",
    improvements=[],
    model_verdict="reject",
)


def test_round_record_of_an_answer_decides_from_the_scores() -> None:
    tally = Tally(attempts=2, answer=ACCEPTING)
    seated = Seating(SEAT, substituted_for="moonshot")
    record = round_record(2, Tier.DEEP, seated, get_rubric("content"), tally)
    assert record.round == 2 and record.judge_tier is Tier.DEEP
    assert record.verdict is Verdict.ACCEPT and record.model_verdict == "reject"
    assert record.substituted_for == "moonshot" and record.error is None


@pytest.mark.parametrize(("error", "recorded"), [("timeout", "timeout"), (None, "no answer")])
def test_round_record_without_an_answer_fails_open(error: str | None, recorded: str) -> None:
    record = round_record(1, Tier.QUICK, Seating(SEAT), get_rubric("content"), Tally(error=error))
    assert record.verdict is None and record.error == recorded


def test_tally_call_stats() -> None:
    tally = Tally(attempts=2, latency_ms=12.5, prompt_tokens=7, completion_tokens=3)
    assert tally.call_stats(Tier.QUICK, SEAT) == CallStats(
        tier=Tier.QUICK,
        model="m",
        provider="openai",
        latency_ms=12.5,
        prompt_tokens=7,
        completion_tokens=3,
        attempts=2,
        error=None,
    )

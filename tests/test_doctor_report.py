"""The doctor's report model (bot/judge/doctor/report.py), as tables: what each failure
means, what a seat's row and JSON say, when the report is ok and what the command exits
with; and the server's board before and after its first probe."""

from __future__ import annotations

import errno
import json
from dataclasses import replace
from datetime import UTC, datetime

import httpx
import pytest

from bot.judge.doctor.background import (
    NOT_CONFIGURED,
    NOT_MEASURED,
    OFF,
    ProbeBoard,
    waiting_note,
)
from bot.judge.doctor.probe import format_used
from bot.judge.doctor.report import (
    ALTERNATE,
    PROBE_COLUMNS,
    ContextSize,
    DoctorReport,
    ProbeFailure,
    ProbeOutcome,
    SeatProbe,
    cut_off,
    failure_of,
    row_of,
)
from bot.judge.providers import (
    EmptyAnswer,
    MalformedResponse,
    OutputMode,
    ProviderCommandError,
    ProviderError,
    ProviderHTTPError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.rubrics.parsing import ParseError

WHO = {"provider": "openai", "model": "m"}
AT = datetime(2026, 11, 28, 15, 0, tzinfo=UTC)


def http_error(status: int, said: str) -> ProviderHTTPError:
    return ProviderHTTPError(
        f"openai answered HTTP {status} for model m",
        status=status,
        detail="",
        server_message=said,
        **WHO,
    )


def refused_connection() -> ProviderTransportError:
    """A transport error chained as the provider raises it: httpx's over the OS error."""
    try:
        try:
            raise ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused")
        except ConnectionRefusedError as exc:
            raise httpx.ConnectError("All connection attempts failed") from exc
    except httpx.ConnectError as exc:
        error = ProviderTransportError(
            "openai transport error for model m: ConnectError", cause="ConnectError", **WHO
        )
        error.__cause__ = exc
        return error


@pytest.mark.parametrize(
    ("error", "outcome", "message", "status"),
    [
        (
            TimeoutError(),
            ProbeOutcome.TIMED_OUT,
            "no answer within 45 s (JUDGE_QUICK_TIMEOUT)",
            None,
        ),
        (
            ProviderTimeout("openai call to model m timed out after 45s", **WHO),
            ProbeOutcome.TIMED_OUT,
            "no answer within 45 s (JUDGE_QUICK_TIMEOUT)",
            None,
        ),
        (
            http_error(
                500, "request (9315 tokens) exceeds the available context size (8192 tokens)"
            ),
            ProbeOutcome.REFUSED,
            "HTTP 500 from openai: request (9315 tokens) exceeds the available context size "
            "(8192 tokens)",
            500,
        ),
        (http_error(404, ""), ProbeOutcome.REFUSED, "HTTP 404 from openai", 404),
        (
            ProviderRateLimited(
                "429", status=429, detail="", retry_after=20, server_message="slow down", **WHO
            ),
            ProbeOutcome.REFUSED,
            "HTTP 429 from openai: slow down",
            429,
        ),
        (refused_connection(), ProbeOutcome.UNREACHABLE, "connection refused", None),
        (
            ProviderTransportError(
                "openai transport error for model m: RemoteProtocolError",
                cause="RemoteProtocolError",
                **WHO,
            ),
            ProbeOutcome.UNREACHABLE,
            "openai transport error for model m: RemoteProtocolError",
            None,
        ),
        (
            ProviderTransportError(
                "claude-cli could not start 'claude' for model m: FileNotFoundError",
                cause="FileNotFoundError",
                provider="claude-cli",
                model="m",
            ),
            ProbeOutcome.UNREACHABLE,
            "claude-cli could not start 'claude' for model m: FileNotFoundError",
            None,
        ),
        (
            ProviderCommandError(
                "claude-cli reported an error for model m (is_error)",
                exit_code=None,
                detail="Not logged in",
                **WHO,
            ),
            ProbeOutcome.COMMAND_FAILED,
            "claude-cli reported an error for model m (is_error): Not logged in",
            None,
        ),
        (
            ProviderCommandError(
                "claude-cli exited with status 1 for model m", exit_code=1, detail="", **WHO
            ),
            ProbeOutcome.COMMAND_FAILED,
            "claude-cli exited with status 1 for model m",
            None,
        ),
        (
            EmptyAnswer("openai model m returned an empty answer", **WHO),
            ProbeOutcome.UNUSABLE,
            "openai model m returned an empty answer",
            None,
        ),
        (
            MalformedResponse("openai answered non-JSON for model m", **WHO),
            ProbeOutcome.UNUSABLE,
            "openai answered non-JSON for model m",
            None,
        ),
        (
            ParseError("no JSON object found"),
            ProbeOutcome.UNUSABLE,
            "unparseable answer: no JSON object found",
            None,
        ),
        (ProviderError("odd", **WHO), ProbeOutcome.REFUSED, "provider error (ProviderError)", None),
    ],
)
def test_what_each_failure_means(
    error: BaseException, outcome: ProbeOutcome, message: str, status: int | None
) -> None:
    failure = failure_of(error, tier="quick", time_limit=45.0)
    assert (failure.outcome, failure.message, failure.status) == (outcome, message, status)


def test_the_servers_message_travels_on_its_own_and_credentials_in_a_parse_error_do_not() -> None:
    said = "model 'x' not found"
    assert failure_of(http_error(400, said), tier="deep", time_limit=1).server_message == said
    leaked = failure_of(ParseError("saw ghp_" + "a" * 36 + " in reply"), tier="deep", time_limit=1)
    assert "ghp_" + "a" * 36 not in leaked.message


def test_anything_else_is_not_a_probe_failure() -> None:
    with pytest.raises(TypeError, match="not a probe failure: ValueError"):
        failure_of(ValueError("bug"), tier="quick", time_limit=1)


def test_a_cut_off_answer_names_the_setting_to_raise() -> None:
    assert cut_off(1024, tier="deep") == ProbeFailure(
        ProbeOutcome.UNUSABLE,
        "answer cut at the output-token limit (1024 tokens): raise JUDGE_DEEP_MAX_OUTPUT_TOKENS",
    )


@pytest.mark.parametrize(
    ("outcome", "reachable", "ok"),
    [
        (ProbeOutcome.ANSWERED, True, True),
        (ProbeOutcome.UNUSABLE, True, False),
        (ProbeOutcome.REFUSED, False, False),
        (ProbeOutcome.TIMED_OUT, False, False),
        (ProbeOutcome.UNREACHABLE, False, False),
        (ProbeOutcome.COMMAND_FAILED, False, False),
    ],
)
def test_reachable_means_the_model_answered_and_ok_means_a_judgment(
    outcome: ProbeOutcome, reachable: bool, ok: bool
) -> None:
    probe = seat(outcome=outcome)
    assert (probe.reachable, probe.ok) == (reachable, ok)
    assert (probe.as_json()["reachable"], probe.as_json()["ok"]) == (reachable, ok)


def seat(**changes: object) -> SeatProbe:
    base = SeatProbe(
        seat="quick",
        model="qwen2.5-0.5b",
        provider="openai",
        host="127.0.0.1:8080",
        outcome=ProbeOutcome.ANSWERED,
        response_format="json_object",
        context=ContextSize(2048, "llama.cpp /props"),
        latency_ms=1234.56,
        prompt_tokens=600,
        completion_tokens=80,
        max_output_tokens=1024,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "fmt", "context"),
    [
        ({}, "json_object", "2048 (llama.cpp /props)"),
        ({"format_fixed": True}, "json_object (set)", "2048 (llama.cpp /props)"),
        ({"response_format": None, "format_fixed": True}, "-", "2048 (llama.cpp /props)"),
        ({"context": ContextSize(None, "unknown", "/props: HTTP 404")}, "json_object", "unknown"),
    ],
)
def test_a_row_says_the_format_and_the_context_in_words(
    changes: dict[str, object], fmt: str, context: str
) -> None:
    row = row_of(seat(**changes))
    assert len(row) == len(PROBE_COLUMNS)
    assert row == (
        "quick",
        "qwen2.5-0.5b",
        "openai",
        "127.0.0.1:8080",
        "answered",
        fmt,
        context,
        "1235 ms",
        "",
    )


def test_a_failure_keeps_the_format_that_answered_and_the_servers_message() -> None:
    failed = seat().with_failure(
        ProbeFailure(ProbeOutcome.REFUSED, "HTTP 500 from openai: boom", 500, "boom")
    )
    assert (failed.outcome, failed.status, failed.server_message) == (
        ProbeOutcome.REFUSED,
        500,
        "boom",
    )
    assert failed.as_json() == {
        "seat": "quick",
        "alternate": False,
        "model": "qwen2.5-0.5b",
        "provider": "openai",
        "host": "127.0.0.1:8080",
        "outcome": "refused",
        "reachable": False,
        "ok": False,
        "message": "HTTP 500 from openai: boom",
        "status": 500,
        "server_message": "boom",
        "response_format": "json_object",
        "response_format_fixed": False,
        "context_tokens": 2048,
        "context_source": "llama.cpp /props",
        "context_detail": "",
        "latency_ms": 1234.6,
        "prompt_tokens": 600,
        "completion_tokens": 80,
        "max_output_tokens": 1024,
    }
    assert seat(seat=ALTERNATE).as_json()["alternate"] is True


@pytest.mark.parametrize(
    ("outcomes", "ok", "code"),
    [
        ((), False, 1),
        ((ProbeOutcome.ANSWERED,), True, 0),
        ((ProbeOutcome.ANSWERED, ProbeOutcome.ANSWERED), True, 0),
        ((ProbeOutcome.ANSWERED, ProbeOutcome.UNUSABLE), False, 1),
        ((ProbeOutcome.UNREACHABLE, ProbeOutcome.ANSWERED), False, 1),
    ],
)
def test_the_report_is_ok_only_when_every_seat_answered_a_judgment(
    outcomes: tuple[ProbeOutcome, ...], ok: bool, code: int
) -> None:
    report = DoctorReport(AT, tuple(seat(outcome=o) for o in outcomes))
    assert (report.ok, report.exit_code, report.as_json()["ok"]) == (ok, code, ok)


def test_the_summary_names_who_did_not_answer() -> None:
    good = DoctorReport(AT, (seat(), seat(seat="deep", model="llama3.2")))
    assert good.summary() == "all 2 judges answered a judgment"
    bad = DoctorReport(
        AT, (seat(), seat(seat="deep", model="llama3.2", outcome=ProbeOutcome.REFUSED))
    )
    assert bad.summary() == "1 of 2 judges did not answer a judgment: deep llama3.2 (refused)"


def test_the_text_is_an_aligned_table_with_the_time_the_warnings_and_the_summary() -> None:
    report = DoctorReport(
        AT,
        (
            seat(),
            seat(seat="deep", model="m2", outcome=ProbeOutcome.TIMED_OUT, message="no answer"),
        ),
        warnings=("the quick and deep judges are one model",),
    )
    lines = report.render_text().splitlines()
    assert lines[0].split() == list(PROBE_COLUMNS)
    assert lines[1].index("qwen2.5-0.5b") == lines[0].index("model") == lines[2].index("m2")
    assert lines[2].endswith("no answer")
    assert lines[3:] == [
        "",
        "measured at 2026-11-28 15:00:00 UTC",
        "warning: the quick and deep judges are one model",
        "1 of 2 judges did not answer a judgment: deep m2 (timed out)",
    ]
    document = report.as_json()
    assert json.loads(json.dumps(document)) == document
    assert document["measured_at"] == "2026-11-28T15:00:00+00:00"
    assert document["warnings"] == ["the quick and deep judges are one model"]
    assert [t["seat"] for t in document["tiers"]] == ["quick", "deep"]


@pytest.mark.parametrize(
    ("provider", "fixed", "remembered", "name"),
    [
        ("openai", None, OutputMode.JSON_SCHEMA, "json_schema"),
        ("openai", None, OutputMode.JSON_OBJECT, "json_object"),
        ("openai", None, OutputMode.INSTRUCTIONS, "prompt"),
        ("openai", OutputMode.JSON_OBJECT, OutputMode.JSON_SCHEMA, "json_object"),
        ("anthropic", None, OutputMode.JSON_SCHEMA, "prompt"),
        ("anthropic", OutputMode.JSON_OBJECT, OutputMode.JSON_SCHEMA, "prompt"),
        ("claude-cli", None, OutputMode.JSON_SCHEMA, "json_schema"),
        ("opencode-cli", None, OutputMode.JSON_SCHEMA, "prompt"),
    ],
)
def test_the_format_used_is_the_providers_one_way_the_setting_or_what_was_negotiated(
    provider: str, fixed: OutputMode | None, remembered: OutputMode, name: str
) -> None:
    assert format_used(provider, fixed, remembered) == name


@pytest.mark.parametrize(
    ("configured", "interval", "note"),
    [
        (False, 3600.0, NOT_CONFIGURED),
        (False, 0.0, NOT_CONFIGURED),
        (True, 3600.0, NOT_MEASURED),
        (True, 0.0, OFF),
    ],
)
def test_the_board_says_why_it_has_nothing_yet(
    configured: bool, interval: float, note: str
) -> None:
    assert waiting_note(configured=configured, interval=interval) == note
    board = ProbeBoard(note)
    assert board.current() is None
    assert board.detail() == {
        "measured_at": None,
        "ok": None,
        "tiers": [],
        "warnings": [],
        "note": note,
    }


def test_the_board_shows_the_latest_report_whole() -> None:
    board = ProbeBoard(NOT_MEASURED)
    report = DoctorReport(AT, (seat(),))
    board.replace(report)
    assert board.current() is report
    assert board.detail() == {**report.as_json(), "note": ""}

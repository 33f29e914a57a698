"""What a probe found, as plain data: no I/O here, so every rule is a table in the tests.

One `SeatProbe` per seat probed (each configured tier, then each alternate model), and a
`DoctorReport` holding them with the time they were measured. A call ends in one
`ProbeOutcome`:

    answered         the model answered and its answer parsed as a judgment   ok
    unusable answer  it answered, but cut off at the output-token limit, empty,
                     not the protocol's envelope, or not a judgment            reachable
    refused          the server answered 4xx/5xx (its own message kept)
    timed out        no answer within the tier's timeout
    unreachable      no connection (refused, DNS, TLS, a command not found)
    command failed   a CLI provider ran and said it failed (not logged in, quota)

`reachable` means the model answered at all; an HTTP error is the server talking, not the
model, so it is not (its message says why). The report is ok, and `judge-bot doctor`
exits 0, only when every seat answered a judgment: a tier that answers nothing usable
fails open on every change just as one that cannot be reached.

Texts carry hosts, models, status codes and the server's message as the providers
excerpt it (scrubbed of keys and anything credential-shaped), never a key or a full URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from bot.judge.engine.self_check import connection_cause
from bot.judge.providers import (
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeout,
    ProviderTransportError,
)
from bot.judge.providers.http import excerpt
from bot.judge.rubrics.parsing import ParseError
from bot.judge.settings import is_local

ALTERNATE = "alternate"
"""The seat name of an alternate model (it stands in for any tier)."""
EXIT_OK = 0
EXIT_FAILING = 1


class ProbeOutcome(StrEnum):
    ANSWERED = "answered"
    UNUSABLE = "unusable answer"
    REFUSED = "refused"
    TIMED_OUT = "timed out"
    UNREACHABLE = "unreachable"
    COMMAND_FAILED = "command failed"


_REACHED = frozenset({ProbeOutcome.ANSWERED, ProbeOutcome.UNUSABLE})


@dataclass(frozen=True)
class ContextSize:
    """A model's context in tokens, where that figure came from, and how it was read
    (None: nobody said)."""

    tokens: int | None
    source: str = "unknown"
    detail: str = ""

    def describe(self) -> str:
        return "unknown" if self.tokens is None else f"{self.tokens} ({self.source})"


@dataclass(frozen=True)
class ProbeFailure:
    """Why a probe got no judgment."""

    outcome: ProbeOutcome
    message: str
    status: int | None = None
    server_message: str = ""


@dataclass(frozen=True)
class SeatProbe:
    seat: str
    """`quick`, `deep`, `tiebreaker`, or `alternate`."""
    model: str
    provider: str
    host: str
    outcome: ProbeOutcome
    message: str = ""
    """Why it did not answer a judgment ("" when it did)."""
    status: int | None = None
    server_message: str = ""
    response_format: str | None = None
    """How the answer was asked for when it came: `json_schema`, `json_object` or
    `prompt` (None: no answer)."""
    format_fixed: bool = False
    """The format was set (`JUDGE_<TIER>_RESPONSE_FORMAT`), not negotiated."""
    context: ContextSize = field(default_factory=lambda: ContextSize(None))
    latency_ms: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    max_output_tokens: int = 0

    @property
    def reachable(self) -> bool:
        return self.outcome in _REACHED

    @property
    def ok(self) -> bool:
        return self.outcome is ProbeOutcome.ANSWERED

    def with_failure(self, failure: ProbeFailure) -> SeatProbe:
        return replace(
            self,
            outcome=failure.outcome,
            message=failure.message,
            status=failure.status,
            server_message=failure.server_message,
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "seat": self.seat,
            "alternate": self.seat == ALTERNATE,
            "model": self.model,
            "provider": self.provider,
            "host": self.host,
            "outcome": self.outcome.value,
            "reachable": self.reachable,
            "ok": self.ok,
            "message": self.message,
            "status": self.status,
            "server_message": self.server_message,
            "response_format": self.response_format,
            "response_format_fixed": self.format_fixed,
            "context_tokens": self.context.tokens,
            "context_source": self.context.source,
            "context_detail": self.context.detail,
            "latency_ms": round(self.latency_ms, 1),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "max_output_tokens": self.max_output_tokens,
        }


PROBE_COLUMNS = (
    "seat",
    "model",
    "provider",
    "host",
    "result",
    "format",
    "context",
    "latency",
    "why",
)


def row_of(probe: SeatProbe) -> tuple[str, ...]:
    """The probe as the table shows it: a dash for what is not known."""
    fmt = probe.response_format or "-"
    if probe.response_format and probe.format_fixed:
        fmt += " (set)"
    return (
        probe.seat,
        probe.model,
        probe.provider,
        probe.host,
        probe.outcome.value,
        fmt,
        probe.context.describe(),
        f"{probe.latency_ms:.0f} ms",
        probe.message,
    )


@dataclass(frozen=True)
class DoctorReport:
    measured_at: datetime
    probes: tuple[SeatProbe, ...]
    warnings: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return bool(self.probes) and all(p.ok for p in self.probes)

    @property
    def exit_code(self) -> int:
        return EXIT_OK if self.ok else EXIT_FAILING

    def rows(self) -> list[tuple[str, ...]]:
        return [row_of(p) for p in self.probes]

    def summary(self) -> str:
        failing = [p for p in self.probes if not p.ok]
        if not failing:
            return f"all {len(self.probes)} judges answered a judgment"
        names = ", ".join(f"{p.seat} {p.model} ({p.outcome.value})" for p in failing)
        return f"{len(failing)} of {len(self.probes)} judges did not answer a judgment: {names}"

    def as_json(self) -> dict[str, Any]:
        return {
            "measured_at": self.measured_at.isoformat(),
            "ok": self.ok,
            "tiers": [p.as_json() for p in self.probes],
            "warnings": list(self.warnings),
        }

    def render_text(self) -> str:
        """The human table, then when it was measured, the warnings and the summary."""
        lines = _aligned([PROBE_COLUMNS, *self.rows()])
        lines.append("")
        lines.append(f"measured at {self.measured_at.strftime('%Y-%m-%d %H:%M:%S %Z').strip()}")
        lines += [f"warning: {w}" for w in self.warnings]
        lines.append(self.summary())
        return "\n".join(lines) + "\n"


def _aligned(rows: Sequence[Sequence[str]]) -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


# -- why a call gave no judgment ------------------------------------------------------------


def failure_of(error: BaseException, *, tier: str, time_limit: float) -> ProbeFailure:
    """What a probe's call ending in `error` means; `tier` is the tier whose limits it ran
    under (`quick` for alternates), `time_limit` its timeout in seconds."""
    setting = f"JUDGE_{tier.upper()}"
    if isinstance(error, TimeoutError | ProviderTimeout):
        return ProbeFailure(
            ProbeOutcome.TIMED_OUT, f"no answer within {time_limit:g} s ({setting}_TIMEOUT)"
        )
    if isinstance(error, ProviderHTTPError):
        said = f": {error.server_message}" if error.server_message else ""
        return ProbeFailure(
            ProbeOutcome.REFUSED,
            f"HTTP {error.status} from {error.provider}{said}",
            status=error.status,
            server_message=error.server_message,
        )
    if isinstance(error, ProviderTransportError):
        return ProbeFailure(ProbeOutcome.UNREACHABLE, _transport_cause(error))
    if isinstance(error, ProviderCommandError):
        detail = f": {excerpt(error.detail)}" if error.detail else ""
        return ProbeFailure(ProbeOutcome.COMMAND_FAILED, f"{error}{detail}")
    if isinstance(error, EmptyAnswer | MalformedResponse):
        return ProbeFailure(ProbeOutcome.UNUSABLE, str(error))
    if isinstance(error, ParseError):
        return ProbeFailure(ProbeOutcome.UNUSABLE, f"unparseable answer: {excerpt(str(error))}")
    if isinstance(error, ProviderError):
        return ProbeFailure(ProbeOutcome.REFUSED, f"provider error ({type(error).__name__})")
    raise TypeError(f"not a probe failure: {type(error).__name__}")


def _transport_cause(error: ProviderTransportError) -> str:
    """The connection's failure in words (`connection refused`, a DNS or TLS reason) when
    the chained errors say it; else, and for a CLI that could not start (its command and
    the error's name), the provider's own text."""
    if is_local(error.provider):
        return str(error)
    cause = connection_cause(error)
    return str(error) if cause == type(error).__name__ else cause


def cut_off(limit: int, *, tier: str) -> ProbeFailure:
    """An answer stopped at the output-token limit: not an answer (the engine agrees)."""
    return ProbeFailure(
        ProbeOutcome.UNUSABLE,
        f"answer cut at the output-token limit ({limit} tokens): raise "
        f"JUDGE_{tier.upper()}_MAX_OUTPUT_TOKENS",
    )

"""The probe's edge: one tiny judgment per seat, through the engine's own code.

The seats are the engine's (`seating.build_panel`: one provider per endpoint, sharing one
`StructuredOutputMemory`), the prompt is the engine's (`prompts.compose_messages` with the
content rubric, a two-line file and a one-line task), and the call is made as the engine
makes it: the tier's timeout around it, its output-token limit, temperature and response
format setting, the rubric's bounded schema. So what the probe finds is what a judgment would
meet, the format negotiation included: an OpenAI-compatible server that refuses
`json_schema` is asked for `json_object`, then for a plain prompt, and the format that
answered is read back from the memory (`format_used`). A provider that asks one way only
says so in its `ProviderSpec.answer_mode` (Anthropic's Messages and opencode take the
schema in the prompt; claude's CLI takes `--json-schema`). A CLI seat is probed
with the same tiny call, run as the engine runs it (bot/judge/providers/agent_cli.py).

Each configured tier is probed, then each alternate model that is not already a tier's
(under the first tier's limits, as a stand-in there would run), one after another so
that a local server's latency is its own and not a queue's. One call each, no retry: the
engine's retry is for a model that stumbled once, and the doctor reports the first try.
Nothing here raises for a provider's failure: it becomes the seat's `ProbeOutcome`.

The context size is asked of the endpoint before the call
(`server_facts.discover_context_tokens`: the tier's setting, llama.cpp's `/props`, the
model list's metadata, Ollama's model info).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import httpx

from bot.judge.checks.injection import new_nonce
from bot.judge.doctor.report import (
    ALTERNATE,
    ContextSize,
    DoctorReport,
    ProbeOutcome,
    SeatProbe,
    cut_off,
    failure_of,
)
from bot.judge.engine.prompts import compose_messages
from bot.judge.engine.seating import Seat, build_panel, shared_models
from bot.judge.providers import (
    OUTPUT_MODES,
    PROVIDERS,
    Completion,
    OutputMode,
    ProviderError,
    StructuredOutputMemory,
)
from bot.judge.providers.server_facts import discover_context_tokens
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.parsing import ParseError, parse_answer
from bot.judge.settings import Endpoint, JudgeSettings

PROBE_TASK = TaskSpec(
    task_id="judge-bot-doctor",
    description="Write a short status note saying that the service is up.",
    acceptance="One short paragraph that says the service is up.",
)
PROBE_FILE = JudgedFile(
    path="doctor/status.md", content="# Status\n\nThe service is up and answers requests.\n"
)
FORMAT_NAMES: dict[OutputMode, str] = {mode: name for name, mode in OUTPUT_MODES.items()}


def _one_way(provider: str) -> OutputMode | None:
    """The one way `provider` asks for the answer; None when it may choose (an unknown
    name too: it has nothing to say)."""
    spec = PROVIDERS.get(provider)
    return spec.answer_mode if spec is not None else None


def format_used(provider: str, fixed: OutputMode | None, remembered: OutputMode) -> str:
    """How `provider` asked for the answer that came: one way only, the tier's setting, or
    what the negotiation settled on for this endpoint and model."""
    only = _one_way(provider)
    if only is not None:
        return FORMAT_NAMES[only]
    return FORMAT_NAMES[fixed if fixed is not None else remembered]


def _fixed_by_setting(provider: str, fixed: OutputMode | None) -> bool:
    """Whether the tier's setting fixed the format: only a provider that may choose
    reads it."""
    spec = PROVIDERS.get(provider)
    return fixed is not None and spec is not None and spec.answer_mode is None


@dataclass(frozen=True)
class Sitting:
    """One seat to probe: its name in the report, the tier whose limits it runs under,
    its configuration and the engine's seat built from it."""

    name: str
    tier: Tier
    endpoint: Endpoint
    seat: Seat


def sittings(
    settings: JudgeSettings, client: httpx.AsyncClient, memory: StructuredOutputMemory
) -> list[Sitting]:
    """Every configured tier, then every alternate model no tier already is."""
    panel = build_panel(settings, client, memory=memory)
    endpoints = settings.tiers()
    out = [
        Sitting(tier.value, tier, endpoint, panel.tiers[tier])
        for tier, endpoint in endpoints.items()
    ]
    if not endpoints:
        return out
    first = next(iter(endpoints))
    seen = {(e.provider, e.base_url, e.model) for e in endpoints.values()}
    for endpoint, seat in zip(settings.alternates(first), panel.alternates[first], strict=True):
        key = (endpoint.provider, endpoint.base_url, endpoint.model)
        if key not in seen:
            seen.add(key)
            out.append(Sitting(ALTERNATE, first, endpoint, seat))
    return out


async def context_of(client: httpx.AsyncClient, endpoint: Endpoint) -> ContextSize:
    facts = await discover_context_tokens(client, endpoint)
    return ContextSize(facts.tokens, facts.source, facts.detail)


async def _call(sitting: Sitting, nonce: str) -> Completion:
    seat, rubric = sitting.seat, get_rubric(RubricName.CONTENT)
    prompt = compose_messages(
        rubric, PROBE_TASK, [PROBE_FILE], sitting.tier, nonce=nonce, max_chars=seat.max_chars
    )
    async with asyncio.timeout(seat.timeout):
        return await seat.provider.complete(
            model=seat.model,
            messages=prompt.messages,
            time_limit=seat.timeout,
            response_schema=rubric.response_schema(),
            schema_name=rubric.name.value,
            max_tokens=seat.max_output_tokens,
            output_mode=seat.output_mode,
            temperature=seat.temperature,
        )


async def probe_seat(
    sitting: Sitting,
    client: httpx.AsyncClient,
    memory: StructuredOutputMemory,
    *,
    nonce: Callable[[], str] = new_nonce,
) -> SeatProbe:
    """Probe one seat; never raises for the provider's failures."""
    endpoint, seat = sitting.endpoint, sitting.seat
    probe = SeatProbe(
        seat=sitting.name,
        model=endpoint.model,
        provider=endpoint.provider,
        host=endpoint.host,
        outcome=ProbeOutcome.ANSWERED,
        format_fixed=_fixed_by_setting(endpoint.provider, seat.output_mode),
        context=await context_of(client, endpoint),
        max_output_tokens=seat.max_output_tokens,
    )
    tier = sitting.tier.value
    started = time.perf_counter()
    try:
        completion = await _call(sitting, nonce())
    except (TimeoutError, ProviderError) as exc:
        elapsed = (time.perf_counter() - started) * 1000.0
        failure = failure_of(exc, tier=tier, time_limit=seat.timeout)
        return replace(probe, latency_ms=elapsed).with_failure(failure)
    probe = replace(
        probe,
        latency_ms=(time.perf_counter() - started) * 1000.0,
        prompt_tokens=completion.prompt_tokens,
        completion_tokens=completion.completion_tokens,
        response_format=format_used(
            endpoint.provider, seat.output_mode, memory.get(seat.provider.base_url, seat.model)
        ),
    )
    if completion.cut_off:
        return probe.with_failure(cut_off(seat.max_output_tokens, tier=tier))
    try:
        parse_answer(completion.text, get_rubric(RubricName.CONTENT))
    except ParseError as exc:
        return probe.with_failure(failure_of(exc, tier=tier, time_limit=seat.timeout))
    return probe


def _utcnow() -> datetime:
    return datetime.now(UTC)


async def probe_settings(
    settings: JudgeSettings,
    client: httpx.AsyncClient,
    *,
    memory: StructuredOutputMemory | None = None,
    clock: Callable[[], datetime] = _utcnow,
    nonce: Callable[[], str] = new_nonce,
) -> DoctorReport:
    """Probe every seat of `settings` in turn. `memory` carries what each endpoint accepted
    from one probe to the next (the server keeps one for its life, as its engine does)."""
    memory = memory if memory is not None else StructuredOutputMemory()
    seats = sittings(settings, client, memory)
    probes = [await probe_seat(s, client, memory, nonce=nonce) for s in seats]
    tiers = {s.tier: s.seat for s in seats if s.name != ALTERNATE}
    warnings = tuple(shared.describe() for shared in shared_models(tiers))
    return DoctorReport(clock(), tuple(probes), warnings)

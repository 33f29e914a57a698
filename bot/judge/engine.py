"""The judge engine: one change in, one `VerdictRecord` out (and appended to storage).

    mechanical checks ── hard failure ───────────────► REJECT (no model call)
        (files, and a credential in the task texts: nothing with a credential is sent)
    no LLM configured ───────────────────────────────► UNDETERMINED (models not run)
    four-eyes seating (authoring family replaced by an alternate; no quick judge left
        -> UNDETERMINED; a later tier left empty counts as not available)
    verdict cache (storage kv "verdict-cache") ── hit ► the cached decision, no call
    throttle / daily budget ── over ─────────────────► UNDETERMINED with the reason
    tiered protocol (protocol.next_step) with per-tier timeouts, one retry per round
        on empty/unparseable/timeout/transport, a wall-clock budget, a fresh nonce
        per call, fail-open on failures
    injection findings (files and task texts) turn an ACCEPT into ESCALATE

`judge` never raises for provider problems (any `ProviderError`, and any reply the
parser refuses): they become failed rounds and an undetermined verdict. Storage errors
do propagate (the caller owns storage).

Four-eyes and the protocol: a tier left without an independent judge is treated like
an unconfigured one, so the protocol's partial-panel rules apply (a split without a
tiebreaker escalates; without deep, quick's verdict stands and a sensitive accept
escalates). The record's reason then also names the four-eyes cause. No call is
wasted on this: when the quick judge is seated its answer can still decide (a reject
or improve stands without deep), and when it is not, nothing runs at all.

Decisions are pure functions (`seat_panel`, `protocol.next_step`, `cost.admission`);
this module does the I/O around them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import httpx

from bot.judge import cost
from bot.judge.authorship import detect_authoring_families
from bot.judge.config import TIER_ORDER, Endpoint, JudgeConfig
from bot.judge.injection import detect_injection, detect_task_injection, new_nonce
from bot.judge.mechanical import check_task, has_hard_failure, run_mechanical_checks
from bot.judge.parsing import ParseError, parse_answer
from bot.judge.prompts import PROMPT_VERSION, build_messages
from bot.judge.protocol import Decision, RoundResult, RunTier, next_step
from bot.judge.providers import (
    EmptyAnswer,
    LLMProvider,
    MalformedResponse,
    ProviderError,
    ProviderHTTPError,
    ProviderTimeout,
    ProviderTransportError,
    StructuredOutputMemory,
    make_provider,
)
from bot.judge.records import (
    CallStats,
    Finding,
    GoNoGo,
    JudgedFile,
    RoundRecord,
    RubricName,
    TaskSpec,
    Tier,
    Truncation,
    Verdict,
    VerdictRecord,
    content_sha256,
    go_no_go_of,
)
from bot.judge.rubrics import Rubric, get_rubric
from bot.judge.rubrics import go_no_go as content_go_no_go
from bot.judge.secret_patterns import redact
from bot.storage.base import Storage

logger = logging.getLogger(__name__)

ATTEMPTS_PER_ROUND = 2
NOT_CONFIGURED_NOTE = (
    "no LLM judge is configured (set JUDGE_LLM_BASE_URL or JUDGE_LLM_API_KEY and "
    "JUDGE_QUICK_MODEL); only the mechanical checks ran"
)


@dataclass(frozen=True)
class JudgeRequest:
    task: TaskSpec
    files: Sequence[JudgedFile]
    rubric: RubricName = RubricName.CONTENT
    sensitive: bool = False
    commit_messages: Sequence[str] = ()
    repository: str | None = None
    head_sha: str | None = None
    scope: str = "default"
    bypass_cache: bool = False
    known_paths: frozenset[str] = frozenset()
    """Other paths that exist in the repository (for the broken-link check)."""


@dataclass(frozen=True)
class Seat:
    """A model that can sit at a tier: its family, endpoint and limits."""

    model: str
    family: str
    provider: LLMProvider
    timeout: float
    max_chars: int


@dataclass(frozen=True)
class JudgePanel:
    tiers: Mapping[Tier, Seat]
    alternates: Mapping[Tier, Sequence[Seat]] = field(default_factory=dict)


@dataclass(frozen=True)
class Seating:
    """Who judges at one tier for this change (None: nobody independent is left)."""

    seat: Seat | None
    substituted_for: str | None = None
    reason: str | None = None


def seat_panel(
    panel: JudgePanel, authoring: Sequence[str], *, allow_shared_family: bool
) -> dict[Tier, Seating]:
    """Four-eyes: no tier whose family authored the change judges it.

    A replaced tier takes the first alternate (configured for that tier) whose family
    neither authored the change nor, unless shared families are allowed, already sits
    at another tier. Pure: the same panel and authors give the same seating.
    """
    authored = {family.lower() for family in authoring}
    kept = {tier: seat for tier, seat in panel.tiers.items() if seat.family.lower() not in authored}
    used = {seat.family.lower() for seat in kept.values()}
    out: dict[Tier, Seating] = {}
    for tier in TIER_ORDER:
        configured = panel.tiers.get(tier)
        if configured is None:
            continue
        if tier in kept:
            out[tier] = Seating(configured)
            continue
        replaced = configured.family.lower()
        for alternate in panel.alternates.get(tier, ()):
            family = alternate.family.lower()
            if family in authored or (not allow_shared_family and family in used):
                continue
            used.add(family)
            out[tier] = Seating(alternate, substituted_for=replaced)
            break
        else:
            out[tier] = Seating(
                None,
                substituted_for=replaced,
                reason=f"four-eyes: the {tier.value} judge's family ({replaced}) authored the "
                "change and no configured alternate of an independent family is available",
            )
    return out


def build_panel(
    config: JudgeConfig, client: httpx.AsyncClient, *, memory: StructuredOutputMemory | None = None
) -> JudgePanel:
    """Seats for every configured tier and alternate; one provider per endpoint."""
    memory = memory if memory is not None else StructuredOutputMemory()
    providers: dict[tuple[str, str, str], LLMProvider] = {}

    def seat(endpoint: Endpoint) -> Seat:
        key = endpoint.endpoint_key()
        if key not in providers:
            providers[key] = make_provider(
                endpoint.provider, client, endpoint.base_url, key[2], memory=memory
            )
        return Seat(
            model=endpoint.model,
            family=endpoint.family,
            provider=providers[key],
            timeout=endpoint.timeout,
            max_chars=endpoint.max_chars,
        )

    tiers = {tier: seat(endpoint) for tier, endpoint in config.tiers().items()}
    alternates = {tier: [seat(e) for e in config.alternates(tier)] for tier in tiers}
    return JudgePanel(tiers=tiers, alternates=alternates)


def pre_push_label(rubric: RubricName, verdict: Verdict, last: RoundRecord | None) -> GoNoGo:
    """Seed 000 phase A/B: for content, GO means every score >= 3, so an `improve` whose
    scores all reach 3 (average under 3.5) still passes a blocking pre-push hook. Escalate
    and undetermined never block; other rubrics follow their verdict."""
    if (
        rubric is RubricName.CONTENT
        and verdict in (Verdict.ACCEPT, Verdict.IMPROVE)
        and last is not None
        and last.scores
    ):
        return content_go_no_go(last.scores)
    return go_no_go_of(verdict)


async def append_record(storage: Storage, record: VerdictRecord) -> None:
    """Add a record to the audit log, indexed by task, repository, sha and decision."""
    await storage.append_verdict(
        task_id=record.task_id,
        repository=record.repository,
        head_sha=record.head_sha,
        verdict=record.final_decision.value,
        created_at=record.timestamp,
        record=record.model_dump(mode="json"),
    )


def _utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass
class _Run:
    """Mutable state of one judgment while the protocol runs."""

    rounds: list[RoundRecord] = field(default_factory=list)
    results: list[RoundResult] = field(default_factory=list)
    calls: list[CallStats] = field(default_factory=list)
    truncation: list[Truncation] = field(default_factory=list)
    calls_left: int | None = None


class JudgeEngine:
    def __init__(
        self,
        config: JudgeConfig,
        panel: JudgePanel | None,
        storage: Storage | None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.config = config
        self.panel = panel if panel is not None and panel.tiers else None
        self.storage = storage
        self._clock = clock
        self._monotonic = monotonic
        self._nonce = nonce
        self._admission = asyncio.Lock()

    @classmethod
    def from_config(
        cls, config: JudgeConfig, client: httpx.AsyncClient, storage: Storage | None
    ) -> JudgeEngine:
        return cls(config, build_panel(config, client), storage)

    # -- public ----------------------------------------------------------------
    async def judge(self, request: JudgeRequest) -> VerdictRecord:
        record = await self._judge(request)
        if self.storage is not None:
            await append_record(self.storage, record)
        return record

    # -- the pipeline ------------------------------------------------------------
    async def _judge(self, request: JudgeRequest) -> VerdictRecord:
        now = self._clock()
        rubric = get_rubric(request.rubric)
        live = [f for f in request.files if not f.removed]
        mechanical = check_task(request.task) + run_mechanical_checks(
            request.files, known_paths=request.known_paths or None
        )
        injection = detect_task_injection(request.task) + detect_injection(live)
        authoring = detect_authoring_families(
            request.commit_messages, self.config.authorship_patterns
        )
        base = self._base_fields(request, rubric, now, mechanical, injection, authoring)

        if has_hard_failure(mechanical):
            kinds = sorted({f.kind for f in mechanical if f.severity == "hard"})
            return self._finish(
                base,
                Decision(Verdict.REJECT, reason="mechanical hard failure: " + ", ".join(kinds)),
                mode="mechanical",
            )
        if self.panel is None:
            return self._finish(
                base,
                Decision(Verdict.UNDETERMINED, reason="model tiers were not run"),
                mode="unconfigured",
                models_not_run_note=NOT_CONFIGURED_NOTE,
            )

        seating = seat_panel(
            self.panel, authoring, allow_shared_family=self.config.allow_shared_family
        )
        first = seating.get(Tier.QUICK)
        if first is not None and first.seat is None:
            # Nobody independent can even start: refuse before counting against budgets.
            return self._finish(
                base, Decision(Verdict.UNDETERMINED, reason=first.reason), mode="four-eyes"
            )
        key = cost.cache_key(
            rubric=rubric.name.value,
            seats={tier.value: _seat_key(s.seat) for tier, s in seating.items()},
            prompt_version=f"{PROMPT_VERSION}+{rubric.prompt_version}",
            content=cost.content_hash(request.task, request.files, sensitive=request.sensitive),
            max_output_tokens=self.config.max_output_tokens,
        )
        if self.storage is not None and not request.bypass_cache:
            cached = await self.storage.kv_get(cost.CACHE_NAMESPACE, key)
            if cached is not None:
                hit = self._from_cache(cached, base)
                if hit is not None:
                    return hit

        run = _Run()
        limits = cost.Limits(
            throttle_per_hour=self.config.throttle_per_hour,
            daily_call_budget=self.config.daily_call_budget,
            daily_token_budget=self.config.daily_token_budget,
        )
        # Read-decide-record as one step, so concurrent judgments in this process cannot
        # all slip under the hourly throttle together.
        async with self._admission:
            usage = await self._usage(request.scope, now)
            refused = cost.admission(usage, limits, scope=request.scope)
            if refused is None and self.storage is not None:
                await self.storage.record_usage(cost.throttle_scope(request.scope), now)
        if refused is not None:
            mode = "throttled" if refused.startswith("throttled") else "budget"
            return self._finish(base, Decision(Verdict.UNDETERMINED, reason=refused), mode=mode)
        run.calls_left = cost.calls_left_today(usage, limits)

        decision = await self._protocol(request, rubric, seating, run)
        if injection and decision.verdict is Verdict.ACCEPT:
            decision = Decision(
                Verdict.ESCALATE,
                reason="the content holds instructions aimed at the judge ("
                + ", ".join(sorted({f.kind for f in injection}))
                + "); a human must confirm the accept",
            )
        record = self._finish(
            base,
            decision,
            mode=run.rounds[-1].judge_tier.value if run.rounds else "none",
            run=run,
        )
        if self.storage is not None and self._cacheable(record):
            await self.storage.kv_put(
                cost.CACHE_NAMESPACE, key, {"record": record.model_dump(mode="json")}
            )
        return record

    async def _protocol(
        self, request: JudgeRequest, rubric: Rubric, seating: Mapping[Tier, Seating], run: _Run
    ) -> Decision:
        deadline = self._monotonic() + self.config.wall_clock_budget
        available = frozenset(tier for tier, s in seating.items() if s.seat is not None)
        while True:
            step = next_step(run.results, sensitive=request.sensitive, available=available)
            if isinstance(step, Decision):
                return _with_unseated_reason(step, run.results, request.sensitive, seating)
            assert isinstance(step, RunTier)
            seated = seating[step.tier]
            round_record = await self._round(
                request, rubric, step.tier, seated, run, deadline=deadline
            )
            run.rounds.append(round_record)
            run.results.append(RoundResult(step.tier, round_record.verdict))

    async def _round(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        tier: Tier,
        seated: Seating,
        run: _Run,
        *,
        deadline: float,
    ) -> RoundRecord:
        seat = seated.seat
        assert seat is not None
        live = [f for f in request.files if not f.removed]
        provider_kind = getattr(seat.provider, "kind", "unknown")
        attempts = 0
        latency = 0.0
        prompt_tokens = 0
        completion_tokens = 0
        error: str | None = None
        answer = None
        truncated: list[Truncation] = []
        while attempts < ATTEMPTS_PER_ROUND:
            remaining = deadline - self._monotonic()
            if remaining <= 0:
                error = "wall-clock budget exhausted"
                break
            if run.calls_left is not None and run.calls_left <= 0:
                error = "daily model-call budget exhausted"
                break
            messages, truncated = build_messages(
                rubric,
                request.task,
                live,
                tier,
                nonce=self._nonce(),
                max_chars=seat.max_chars,
                previous_rounds=tuple(run.rounds),
            )
            attempts += 1
            if run.calls_left is not None:
                run.calls_left -= 1
            timeout = min(seat.timeout, remaining)
            started = self._monotonic()
            try:
                async with asyncio.timeout(timeout):
                    completion = await seat.provider.complete(
                        model=seat.model,
                        messages=messages,
                        time_limit=timeout,
                        response_schema=rubric.response_schema(),
                        schema_name=rubric.name.value,
                        max_tokens=self.config.max_output_tokens,
                    )
            except TimeoutError:
                latency += (self._monotonic() - started) * 1000.0
                error = f"timeout after {timeout:g}s"
                continue
            except ProviderHTTPError as exc:
                latency += (self._monotonic() - started) * 1000.0
                # A status answer will not change on an immediate retry (429 wants a
                # pause longer than the budget allows); the round fails open.
                error = f"HTTP {exc.status} from {exc.provider}"
                logger.warning("judge %s tier model %s: %s", tier.value, seat.model, error)
                break
            except (ProviderTimeout, ProviderTransportError, EmptyAnswer, MalformedResponse) as exc:
                latency += (self._monotonic() - started) * 1000.0
                error = _describe(exc)
                logger.warning("judge %s tier model %s: %s", tier.value, seat.model, error)
                continue
            except ProviderError as exc:
                # Another provider's own failure: nothing says a retry would help.
                latency += (self._monotonic() - started) * 1000.0
                error = _describe(exc)
                logger.warning("judge %s tier model %s: %s", tier.value, seat.model, error)
                break
            latency += completion.latency_ms
            prompt_tokens += completion.prompt_tokens
            completion_tokens += completion.completion_tokens
            try:
                answer = parse_answer(completion.text, rubric)
            except ParseError as exc:
                error = f"unparseable answer: {exc}"
                continue
            error = None
            break

        await self._count_usage(attempts, prompt_tokens + completion_tokens)
        for item in truncated:
            if item not in run.truncation:
                run.truncation.append(item)
        run.calls.append(
            CallStats(
                tier=tier,
                model=seat.model,
                provider=provider_kind,
                latency_ms=latency,
                prompt_tokens=prompt_tokens,
                completion_tokens=completion_tokens,
                attempts=attempts,
                error=error,
            )
        )
        common: dict[str, Any] = {
            "round": len(run.rounds) + 1,
            "judge_tier": tier,
            "model": seat.model,
            "family": seat.family,
            "substituted_for": seated.substituted_for,
        }
        if answer is None:
            return RoundRecord(**common, error=error or "no answer")
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

    # -- storage-backed counters -------------------------------------------------
    async def _usage(self, scope: str, now: datetime) -> cost.Usage:
        if self.storage is None:
            return cost.Usage(judgments_last_hour=0, calls_today=0, tokens_today=0)
        day = cost.day_window_start(now)
        return cost.Usage(
            judgments_last_hour=await self.storage.usage_since(
                cost.throttle_scope(scope), cost.hour_window_start(now)
            ),
            calls_today=await self.storage.usage_since(cost.DAILY_CALLS_SCOPE, day),
            tokens_today=await self.storage.usage_since(cost.DAILY_TOKENS_SCOPE, day),
        )

    async def _count_usage(self, calls: int, tokens: int) -> None:
        if self.storage is None or calls == 0:
            return
        now = self._clock()
        await self.storage.record_usage(cost.DAILY_CALLS_SCOPE, now, calls)
        if tokens:
            await self.storage.record_usage(cost.DAILY_TOKENS_SCOPE, now, tokens)

    # -- record building ---------------------------------------------------------
    def _base_fields(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        now: datetime,
        mechanical: list[Finding],
        injection: list[Finding],
        authoring: list[str],
    ) -> dict[str, Any]:
        return {
            "task_id": request.task.task_id,
            "timestamp": now,
            "rubric": rubric.name,
            "prompt_version": f"{PROMPT_VERSION}+{rubric.prompt_version}",
            "repository": request.repository,
            "head_sha": request.head_sha,
            # redacted: a description with a credential is rejected, but still recorded
            "description": redact(request.task.description),
            "files": [f.path for f in request.files],
            "content_hashes": {f.path: content_sha256(f.content) for f in request.files},
            "mechanical_findings": mechanical,
            "injection_findings": injection,
            "authoring_families": authoring,
        }

    def _finish(
        self,
        base: Mapping[str, Any],
        decision: Decision,
        *,
        mode: str,
        run: _Run | None = None,
        models_not_run_note: str | None = None,
    ) -> VerdictRecord:
        run = run or _Run()
        last = run.rounds[-1] if run.rounds else None
        fields: dict[str, Any] = dict(base)
        fields.update(
            model=last.model if last else "",
            mode=mode,
            verdict=(last.verdict or Verdict.UNDETERMINED) if last else decision.verdict,
            scores=dict(last.scores) if last else {},
            average=last.average if last else None,
            reasoning=last.reasoning if last else (decision.reason or ""),
            improvements=list(last.improvements) if last else [],
            round=len(run.rounds),
            judge_tier=last.judge_tier if last else None,
            previous_rounds=list(run.rounds),
            consensus=decision.consensus,
            truncation=list(run.truncation),
            calls=list(run.calls),
            final_decision=decision.verdict,
            go_no_go=pre_push_label(base["rubric"], decision.verdict, last),
            reason=decision.reason,
            models_not_run=models_not_run_note is not None,
            models_not_run_note=models_not_run_note,
        )
        return VerdictRecord(**fields)

    @staticmethod
    def _cacheable(record: VerdictRecord) -> bool:
        # Failures and refusals are not answers about the content: ask again next time.
        return record.final_decision is not Verdict.UNDETERMINED and bool(record.previous_rounds)

    @staticmethod
    def _from_cache(cached: Mapping[str, Any], base: Mapping[str, Any]) -> VerdictRecord | None:
        stored = cached.get("record")
        if not isinstance(stored, dict):
            return None
        try:
            previous = VerdictRecord.model_validate(stored)
        except ValueError:
            logger.warning("ignoring an unreadable verdict-cache entry")
            return None
        # Same content and panel, so the same decision; this judgment made no call.
        return previous.model_copy(update={**base, "calls": []})


def _seat_key(seat: Seat | None) -> cost.SeatKey | None:
    if seat is None:
        return None
    return cost.SeatKey(
        model=seat.model,
        provider=getattr(seat.provider, "kind", "unknown"),
        base_url=getattr(seat.provider, "base_url", ""),
        max_chars=seat.max_chars,
    )


def _with_unseated_reason(
    decision: Decision,
    results: Sequence[RoundResult],
    sensitive: bool,
    seating: Mapping[Tier, Seating],
) -> Decision:
    """Add the four-eyes cause when a full panel would have run a tier that is unseated
    (the protocol's own reason only says the tier is not available)."""
    # Availability only turns steps into decisions, so a history the reduced panel
    # produced is one the full panel would have produced too.
    step = next_step(results, sensitive=sensitive, available=frozenset(seating))
    if not isinstance(step, RunTier):
        return decision
    why = seating[step.tier].reason
    if not why:
        return decision
    reason = f"{decision.reason}; {why}" if decision.reason else why
    return Decision(decision.verdict, consensus=decision.consensus, reason=reason)


def _describe(exc: ProviderError) -> str:
    if isinstance(exc, ProviderTimeout):
        return "timeout"
    if isinstance(exc, EmptyAnswer):
        return "empty answer"
    if isinstance(exc, MalformedResponse):
        return "malformed response envelope"
    if isinstance(exc, ProviderTransportError):
        return f"transport error ({exc.cause})"
    return f"provider error ({type(exc).__name__})"

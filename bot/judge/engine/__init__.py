"""The judge engine: one change in, one `VerdictRecord` out (and appended to storage).

    mechanical checks ── hard failure ───────────────► REJECT (no model call)
        (files, and a credential in the task texts: nothing with a credential is sent;
        the research rubric adds its claim and source counts, `request.research`)
    no LLM configured ───────────────────────────────► UNDETERMINED (models not run)
    four-eyes seating (authoring family replaced by another configured model; no
        quick judge left -> UNDETERMINED; a later tier left empty is not available,
        and an empty deep tier leaves no lone quick accept)
    each tier's context (a setting, or its server: seat.context) and the characters
        it reads of this change fitted to it (context_fit.fitted_budget)
    verdict cache (storage kv "verdict-cache") ── hit ► the cached decision, no call
    throttle / daily budget ── over ─────────────────► UNDETERMINED with the reason
        (calls a provider answered count, and failures it may still bill: a
        timeout, a 5xx, a garbled answer; a judgment that spent no call is taken
        off the throttle again)
    tiered protocol (tiers.next_step) with per-tier timeouts, one retry per round
        on empty/cut-off/malformed/unparseable/timeout/transport/context overflow
        (the prompt fitted again to what the server said), told what went wrong
        (rounds.py has the table), a wall-clock budget, a fresh nonce per call,
        fail-open on failures; an accept counts only from judges sent every file
        whole, and one nobody could read whole is refused (UNDETERMINED, mode
        "partial-view", never cached)
    injection findings (files and task texts) turn an ACCEPT into ESCALATE

`judge` never raises for provider problems (any `ProviderError`, and any reply the
parser refuses): they become failed rounds and an undetermined verdict. Storage errors
do propagate (the caller owns storage).

Four-eyes and the protocol: a tier left without an independent judge (no other
configured model fits) is not available, so the protocol's partial-panel rules apply
(a split without a tiebreaker escalates; without deep, quick's reject or improve
stands). Authorship must not make the decision more lenient, so unlike a deep tier
never configured, an unseated one leaves no lone quick accept: it escalates, as a
sensitive accept without deep does. The record's reason then also names the
four-eyes cause. No call is wasted on this: when the quick judge is seated its answer
can still decide (a reject or improve stands without deep), and when it is not,
nothing runs at all.

Whole views: before the protocol runs, the engine works out which configured tiers
would be sent every judged file in full (`prompts.reads_whole`, with the seated
judge's budget, or the configured one for an unseated tier), and each round records
whether its judge was (`RoundResult.whole`); the protocol decides from those.

Decisions are pure functions: who sits where (`seating.seat_panel`), what the rounds
add up to (`tiers.next_step`), whether to ask again after a failed call
(`rounds.attempt_outcome`), whether to admit the judgment (`cost.admission`) and what
settles it without a model (`judgment`). This module does the I/O around them: it reads
its store (`EngineStore`, passed in), calls the providers, and writes the cache and the
audit log.

The room:

    tiers           the tiered protocol as a pure state machine
    rounds          one round: when to ask the judge again, what it is told, what it records
    seating         who judges: the configured panel, and the four-eyes seating of a change
    judgment        the engine's own decisions about a judgment, and the record made of one
    prompts         the chat messages of one judge call
    context_budget  one call's characters shared between files, diffs and CI excerpts (pure)
    review_context  what a reviewer sees besides the files: the diff, CI results, earlier
                    verdicts
    context_fit     how many characters of the change a judge reads when its model's
                    context is known (pure)
    cost            the verdict-cache key and admission (pure)
    tier_status     each tier as people need to know it: configured, and answering
    self_check      is each tier's model still served under its name
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Protocol

import httpx

from bot.credentials import redact
from bot.judge.authorship import detect_authoring_families
from bot.judge.checks.injection import detect_injection, detect_task_injection, new_nonce
from bot.judge.checks.mechanical import check_task, run_mechanical_checks
from bot.judge.engine import cost
from bot.judge.engine.context_fit import (
    TierFit,
    after_overflow,
    answer_tokens,
    cut_prompt,
    fitted_budget,
    prompt_chars,
    prompt_room,
    schema_chars,
)
from bot.judge.engine.judgment import (
    Settled,
    admission_refused,
    cacheable,
    escalate_injection,
    four_eyes_refusal,
    protocol_mode,
    record_go_no_go,
    refuse_before_models,
    settled_record,
    verdict_record,
    with_partial_view_reason,
    with_unseated_reason,
)
from bot.judge.engine.prompts import PROMPT_VERSION, Prompt, compose_messages, reads_whole
from bot.judge.engine.review_context import ReviewContext
from bot.judge.engine.rounds import (
    ATTEMPTS_PER_ROUND,
    AttemptError,
    CutOffAnswer,
    GiveUp,
    JudgmentLog,
    NoRoomForFiles,
    PromptCut,
    RetryNote,
    Tally,
    attempt_outcome,
    attempt_refusal,
    billed,
    retry_note,
    round_record,
    with_retry_note,
)
from bot.judge.engine.seating import (
    JudgePanel,
    Seat,
    Seating,
    build_panel,
    seat_panel,
    shared_model_note,
    shared_models,
)
from bot.judge.engine.tiers import PROTOCOL_VERSION, Decision, RunTier, next_step
from bot.judge.providers import ContextOverflow, ProviderError
from bot.judge.providers.server_facts import UNKNOWN
from bot.judge.records import (
    Finding,
    JudgedFile,
    RoundRecord,
    RubricName,
    TaskSpec,
    Tier,
    VerdictRecord,
    content_sha256,
)
from bot.judge.rubrics import Rubric, get_rubric
from bot.judge.rubrics.parsing import ParseError, parse_answer
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judge.tagging import TagTerms, tags_for

logger = logging.getLogger(__name__)

# The verdict cache (keys: `cost.cache_key`); only this module reads or writes it.
CACHE_NAMESPACE = "verdict-cache"
# Fences the prompts composed to measure a budget (never sent); as long as a real nonce.
_PROBE_NONCE = "0" * 32


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
    """The repository the hourly throttle counts, within `installation` (the App: its full
    name; the CLI and the pre-push hook: a directory or remote)."""
    installation: int | None = None
    """The GitHub App installation whose daily budgets this judgment spends; None for the
    CLI and the pre-push hook, which share one local budget (`cost.usage_scopes`)."""
    bypass_cache: bool = False
    known_paths: frozenset[str] = frozenset()
    """Other paths that exist in the repository (for the broken-link check)."""
    research: ResearchRules = field(default_factory=ResearchRules)
    """The research rubric's thresholds (JUDGE_RESEARCH_* with the repository's overrides
    applied); read only when `rubric` is research."""
    context: ReviewContext = field(default_factory=ReviewContext)
    """What a reviewer sees besides the files: diffs, CI results, earlier verdicts."""
    tag_terms: TagTerms | None = None
    """The repository's `tags:` (docs/tagging.md); None tags with the built-in thesaurus."""


class EngineStore(Protocol):
    """What the engine keeps between judgments: the audit log, the verdict cache and the
    usage counters. `bot.storage.base.Storage` is one; the engine imports no storage."""

    async def append_verdict(
        self,
        *,
        task_id: str,
        repository: str | None,
        head_sha: str | None,
        verdict: str,
        created_at: datetime,
        record: dict[str, Any],
    ) -> int: ...

    async def kv_get(self, namespace: str, key: str) -> dict[str, Any] | None: ...

    async def kv_put(self, namespace: str, key: str, value: dict[str, Any]) -> None: ...

    async def record_usage(self, scope: str, at: datetime, amount: int = 1) -> None: ...

    async def usage_since(self, scope: str, since: datetime) -> int: ...


async def append_record(storage: EngineStore, record: VerdictRecord) -> None:
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


@dataclass(frozen=True)
class _Inspection:
    """What is known about a change before any model sees it."""

    mechanical: list[Finding]
    injection: list[Finding]
    authoring: list[str]


class JudgeEngine:
    def __init__(
        self,
        settings: JudgeSettings,
        panel: JudgePanel | None,
        storage: EngineStore | None,
        *,
        clock: Callable[[], datetime] = _utcnow,
        monotonic: Callable[[], float] = time.monotonic,
        nonce: Callable[[], str] = new_nonce,
    ) -> None:
        self.settings = settings
        self.panel = panel if panel is not None and panel.tiers else None
        self.storage = storage
        self._clock = clock
        self._monotonic = monotonic
        self._nonce = nonce
        self._admission = asyncio.Lock()
        if self.panel is not None:
            for shared in shared_models(self.panel.tiers):
                logger.warning("judge panel: %s", shared.describe())

    @classmethod
    def from_settings(
        cls, settings: JudgeSettings, client: httpx.AsyncClient, storage: EngineStore | None
    ) -> JudgeEngine:
        return cls(settings, build_panel(settings, client), storage)

    # -- public ----------------------------------------------------------------
    async def judge(self, request: JudgeRequest) -> VerdictRecord:
        record = await self._judge(request)
        # Here, not inside the pipeline, so every exit (refusals, cache hits) is tagged alike.
        record = record.model_copy(update={"tags": list(tags_for(record, request.tag_terms))})
        if self.storage is not None:
            await append_record(self.storage, record)
        return record

    async def tier_contexts(self) -> dict[Tier, int | None]:
        """Each configured tier's context in tokens as far as it is known (a setting, or
        its server; None: unknown), for planning requests each judge reads whole."""
        if self.panel is None:
            return {}
        out: dict[Tier, int | None] = {}
        for tier, seat in self.panel.tiers.items():
            facts = await seat.context.facts() if seat.context is not None else None
            out[tier] = facts.tokens if facts is not None else None
        return out

    # -- the pipeline ------------------------------------------------------------
    async def _judge(self, request: JudgeRequest) -> VerdictRecord:
        now = self._clock()
        rubric = get_rubric(request.rubric)
        # Off the event loop: the checks read every line of up to hundreds of files of up to
        # a million characters each, linear but seconds of CPU that would stall every other
        # installation's webhooks and judgments on the App.
        seen = await asyncio.to_thread(self._inspect, request)
        base = self._base_fields(request, rubric, now, seen)
        settled = refuse_before_models(seen.mechanical, configured=self.panel is not None)
        if settled is not None:
            return settled_record(base, settled)
        assert self.panel is not None
        seating = seat_panel(
            self.panel, seen.authoring, allow_shared_family=self.settings.allow_shared_family
        )
        settled = four_eyes_refusal(seating)
        if settled is not None:
            return settled_record(base, settled)
        fits = await self._fits(seating)
        budgets = self._budgets(request, rubric, seating, fits)
        key = self._cache_key(request, rubric, seating, budgets)
        hit = await self._cached(request, key, base)
        if hit is not None:
            return hit
        scopes = cost.usage_scopes(request.installation, request.scope)
        refused, calls_left = await self._admit(scopes, now)
        if refused is not None:
            return settled_record(base, refused)
        run = JudgmentLog(scopes=scopes, calls_left=calls_left, fits=fits)
        decision = await self._protocol(request, rubric, seating, run, budgets)
        if run.spent == 0 and self.storage is not None:
            # No call reached a provider's bill: nothing spent the throttle guards.
            await self.storage.record_usage(scopes.judgments, now, -1)
        record = verdict_record(
            base,
            escalate_injection(decision, seen.injection),
            mode=protocol_mode(run.rounds, decision),
            rounds=run.rounds,
            calls=run.calls,
            truncation=run.truncation,
            context=list(run.shown.values()),
        )
        if self.storage is not None and cacheable(record):
            await _save_cached(self.storage, key, record)
        return record

    def _inspect(self, request: JudgeRequest) -> _Inspection:
        live = [f for f in request.files if not f.removed]
        # CI output can quote what the change's own tests print: it is scanned as well.
        live += [
            JudgedFile(path=f"<ci {c.name}>", content=c.excerpt)
            for c in request.context.ci
            if c.excerpt
        ]
        return _Inspection(
            mechanical=check_task(request.task)
            + run_mechanical_checks(
                request.files,
                known_paths=request.known_paths or None,
                research=request.research if request.rubric is RubricName.RESEARCH else None,
            ),
            injection=detect_task_injection(request.task) + detect_injection(live),
            authoring=detect_authoring_families(
                request.commit_messages,
                self.settings.authorship_patterns,
                family_names=self.settings.family_names(),
            ),
        )

    def _cache_key(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        seating: Mapping[Tier, Seating],
        budgets: Mapping[Tier, int],
    ) -> str:
        return cost.cache_key(
            rubric=rubric.name.value,
            # What a seat reads is its budget fitted to its context.
            seats={tier.value: _seat_key(s.seat, budgets[tier]) for tier, s in seating.items()},
            # The protocol's version too: an entry the old rules decided (a quick accept
            # of a partial view) must not answer for the new ones.
            prompt_version=f"{PROMPT_VERSION}+{rubric.prompt_version}+{PROTOCOL_VERSION}",
            content=cost.content_hash(
                request.task, request.files, sensitive=request.sensitive, context=request.context
            ),
            max_output_tokens=self.settings.max_output_tokens,
        )

    async def _cached(
        self, request: JudgeRequest, key: str, base: Mapping[str, Any]
    ) -> VerdictRecord | None:
        if self.storage is None or request.bypass_cache:
            return None
        previous = await _load_cached(self.storage, key)
        return None if previous is None else _cache_hit(previous, base)

    async def _admit(
        self, scopes: cost.UsageScopes, now: datetime
    ) -> tuple[Settled | None, int | None]:
        """The repository's throttle and the installation's budgets, and (when admitted)
        the installation's model calls left today."""
        limits = cost.Limits(
            throttle_per_hour=self.settings.throttle_per_hour,
            daily_call_budget=self.settings.daily_call_budget,
            daily_token_budget=self.settings.daily_token_budget,
        )
        # Read-decide-record as one step, so concurrent judgments on this engine (every
        # judgment of one repository in this process) cannot all slip under the hourly
        # throttle together.
        async with self._admission:
            usage = await self._usage(scopes, now)
            refused = cost.admission(usage, limits, scopes)
            if refused is None and self.storage is not None:
                await self.storage.record_usage(scopes.judgments, now)
        if refused is not None:
            return admission_refused(refused), None
        return None, cost.calls_left_today(usage, limits)

    async def _protocol(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        seating: Mapping[Tier, Seating],
        run: JudgmentLog,
        budgets: Mapping[Tier, int],
    ) -> Decision:
        deadline = self._monotonic() + self.settings.wall_clock_budget
        available = frozenset(tier for tier, s in seating.items() if s.seat is not None)
        unseated = frozenset(seating) - available
        live = [f for f in request.files if not f.removed]
        whole = frozenset(
            tier
            for tier, chars in budgets.items()
            if chars > 0
            and reads_whole(
                rubric, request.task, live, tier, max_chars=chars, context=request.context
            )
        )
        while True:
            step = next_step(
                run.results,
                sensitive=request.sensitive,
                available=available,
                whole=whole,
                unseated=unseated,
            )
            if isinstance(step, Decision):
                decision = with_unseated_reason(step, seating)
                decision = with_partial_view_reason(
                    decision, request.files, budgets, _context_words(run.fits)
                )
                return _with_shared_model_reason(decision, seating, run)
            assert isinstance(step, RunTier)
            await self._round(request, rubric, step.tier, seating[step.tier], run, deadline)

    async def _fits(self, seating: Mapping[Tier, Seating]) -> dict[Tier, TierFit]:
        """What is known of each configured tier's context: its seated judge's, or for a
        tier four-eyes left empty, its configured one's."""
        assert self.panel is not None
        fits: dict[Tier, TierFit] = {}
        for tier, seated in seating.items():
            probe = (seated.seat or self.panel.tiers[tier]).context
            facts = await probe.facts() if probe is not None else None
            fits[tier] = TierFit(facts.tokens, facts.source) if facts else TierFit(None, UNKNOWN)
        return fits

    def _budgets(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        seating: Mapping[Tier, Seating],
        fits: Mapping[Tier, TierFit],
    ) -> dict[Tier, int]:
        """Characters each configured tier reads for this change: its seated judge's
        budget fitted to its context, or for a tier four-eyes left empty, its configured
        one's (whether that judge could have read everything decides the cause of a
        refusal). The first attempt's, before earlier rounds or a retry's note."""
        assert self.panel is not None
        extra = schema_chars(rubric.response_schema())
        budgets: dict[Tier, int] = {}
        for tier, seated in seating.items():
            seat = seated.seat or self.panel.tiers[tier]
            budgets[tier] = fitted_budget(
                _composer(request, rubric, tier, nonce=_PROBE_NONCE),
                room=prompt_room(fits[tier], seat.max_output_tokens),
                max_chars=seat.max_chars,
                extra=extra,
            )
        return budgets

    async def _round(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        tier: Tier,
        seated: Seating,
        run: JudgmentLog,
        deadline: float,
    ) -> None:
        """Ask the seated judge until it answers or `rounds` says to stop; record the round."""
        seat = seated.seat
        assert seat is not None
        tally = Tally()
        note: RetryNote | None = None
        while tally.attempts < ATTEMPTS_PER_ROUND:
            remaining = deadline - self._monotonic()
            refused = attempt_refusal(remaining=remaining, calls_left=run.calls_left)
            if refused is not None:
                tally.error = refused.error
                break
            time_limit = min(seat.timeout, remaining)
            failure = await self._attempt(request, rubric, tier, seat, run, time_limit, tally, note)
            if failure is None:
                tally.error = None
                break
            outcome = attempt_outcome(failure, timeout=time_limit, before=tally.error)
            note = retry_note(failure)
            tally.error = outcome.error
            if outcome.warn:
                logger.warning("judge %s tier model %s: %s", tier.value, seat.model, outcome.error)
            if isinstance(outcome, GiveUp):
                break
        await self._count_usage(
            run.scopes,
            tally.spent,
            tally.prompt_tokens + tally.completion_tokens + tally.estimated_tokens,
        )
        record = round_record(len(run.rounds) + 1, tier, seated, rubric, tally)
        run.add(record, tally.call_stats(tier, seat), tally)

    async def _attempt(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        tier: Tier,
        seat: Seat,
        run: JudgmentLog,
        time_limit: float,
        tally: Tally,
        note: RetryNote | None = None,
    ) -> AttemptError | None:
        """One call (a fresh nonce, counted against the day's calls, told what went wrong
        with the previous attempt when `note` says) and the parse of its answer, added to
        `tally`; the failure, if any."""
        nonce = self._nonce()
        fitted = self._fitted_prompt(request, rubric, tier, seat, run, nonce, note)
        if isinstance(fitted, NoRoomForFiles):
            return fitted
        prompt, budget, sent = fitted
        messages = with_retry_note(prompt.messages, note, nonce)
        tally.truncated, tally.shown = prompt.truncation, prompt.shown
        tally.attempts += 1
        fit = run.fits[tier]
        limit = answer_tokens(fit, seat.max_output_tokens, sent)
        started = self._monotonic()
        try:
            async with asyncio.timeout(time_limit):
                completion = await seat.provider.complete(
                    model=seat.model,
                    messages=messages,
                    time_limit=time_limit,
                    response_schema=rubric.response_schema(),
                    schema_name=rubric.name.value,
                    max_tokens=limit,
                    output_mode=seat.output_mode,
                    temperature=seat.temperature,
                )
        except ContextOverflow as exc:
            tally.latency_ms += (self._monotonic() - started) * 1000.0
            said = exc.overflow
            run.fits[tier] = after_overflow(
                fit,
                context_tokens=said.context_tokens,
                prompt_tokens=said.prompt_tokens,
                sent_chars=sent,
                budget=budget,
            )
            if said.context_tokens is not None and seat.context is not None:
                seat.context.learn(said.context_tokens)
            return exc
        except (TimeoutError, ProviderError) as exc:
            tally.latency_ms += (self._monotonic() - started) * 1000.0
            if billed(exc):
                tally.spent += 1
                tally.estimated_tokens += math.ceil(sent / fit.chars_per_token) + limit
                if run.calls_left is not None:
                    run.calls_left -= 1
            return exc
        if run.calls_left is not None:
            run.calls_left -= 1
        tally.add_completion(completion)
        least = cut_prompt(messages, nonce, completion.prompt_tokens)
        if fit.tokens is not None and least is not None:
            # Whatever it answered, the judge read part of the prompt: never a whole read.
            run.fits[tier] = after_overflow(
                fit, context_tokens=None, prompt_tokens=least, sent_chars=sent, budget=budget
            )
            return PromptCut(completion.prompt_tokens, least)
        if completion.cut_off:
            # Half an answer can hold whole scores; it is still not the judge's answer.
            return CutOffAnswer(limit)
        try:
            tally.answer = parse_answer(completion.text, rubric)
        except ParseError as exc:
            return exc
        return None

    def _fitted_prompt(
        self,
        request: JudgeRequest,
        rubric: Rubric,
        tier: Tier,
        seat: Seat,
        run: JudgmentLog,
        nonce: str,
        note: RetryNote | None,
    ) -> tuple[Prompt, int, int] | NoRoomForFiles:
        """The prompt fitted to the seat's context as far as it is known (its file
        budget, and the characters it sends with the schema a provider may add), or why
        none fits."""
        fit = run.fits[tier]
        compose = _composer(request, rubric, tier, nonce=nonce, previous_rounds=tuple(run.rounds))
        noted = with_retry_note([{"role": "user", "content": ""}], note, nonce)
        extra = schema_chars(rubric.response_schema()) + len(noted[-1]["content"])
        max_chars = seat.max_chars if fit.cap is None else min(seat.max_chars, fit.cap)
        room = prompt_room(fit, seat.max_output_tokens)
        budget = fitted_budget(compose, room=room, max_chars=max_chars, extra=extra)
        if budget < 1:
            assert fit.tokens is not None  # only a known context leaves no room
            return NoRoomForFiles(fit.tokens, fit.source, prompt_chars(compose(1)) + extra)
        prompt = compose(budget)
        return prompt, budget, prompt_chars(prompt) + extra

    # -- storage-backed counters -------------------------------------------------
    async def _usage(self, scopes: cost.UsageScopes, now: datetime) -> cost.Usage:
        if self.storage is None:
            return cost.Usage(judgments_last_hour=0, calls_today=0, tokens_today=0)
        day = cost.day_window_start(now)
        return cost.Usage(
            judgments_last_hour=await self.storage.usage_since(
                scopes.judgments, cost.hour_window_start(now)
            ),
            calls_today=await self.storage.usage_since(scopes.calls, day),
            tokens_today=await self.storage.usage_since(scopes.tokens, day),
        )

    async def _count_usage(self, scopes: cost.UsageScopes, calls: int, tokens: int) -> None:
        if self.storage is None or calls == 0:
            return
        now = self._clock()
        await self.storage.record_usage(scopes.calls, now, calls)
        if tokens:
            await self.storage.record_usage(scopes.tokens, now, tokens)

    # -- record building ---------------------------------------------------------
    @staticmethod
    def _base_fields(
        request: JudgeRequest, rubric: Rubric, now: datetime, seen: _Inspection
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
            "mechanical_findings": seen.mechanical,
            "injection_findings": seen.injection,
            "authoring_families": seen.authoring,
        }


def _cached_from_row(row: Mapping[str, Any]) -> VerdictRecord | None:
    """None for an entry of another shape, or one the schema no longer reads: a miss."""
    stored = row.get("record")
    if not isinstance(stored, dict):
        return None
    try:
        return VerdictRecord.model_validate(stored)
    except ValueError:
        logger.warning("ignoring an unreadable verdict-cache entry")
        return None


def _cached_to_row(record: VerdictRecord) -> dict[str, Any]:
    return {"record": record.model_dump(mode="json")}


async def _load_cached(storage: EngineStore, key: str) -> VerdictRecord | None:
    row = await storage.kv_get(CACHE_NAMESPACE, key)
    return None if row is None else _cached_from_row(row)


async def _save_cached(storage: EngineStore, key: str, record: VerdictRecord) -> None:
    await storage.kv_put(CACHE_NAMESPACE, key, _cached_to_row(record))


def _cache_hit(previous: VerdictRecord, base: Mapping[str, Any]) -> VerdictRecord:
    # Same content and panel, so the same decision; this judgment made no call. The
    # label is worked out again: the entry may predate the current GO/NO-GO rule.
    hit = previous.model_copy(update={**base, "calls": []})
    return hit.model_copy(update={"go_no_go": record_go_no_go(hit)})


def _with_shared_model_reason(
    decision: Decision, seating: Mapping[Tier, Seating], run: JudgmentLog
) -> Decision:
    """The decision, its reason naming tiers that judged this change as one model."""
    note = shared_model_note(seating, [r.judge_tier for r in run.rounds])
    if note is None:
        return decision
    return replace(decision, reason=f"{decision.reason}; {note}" if decision.reason else note)


def _composer(
    request: JudgeRequest,
    rubric: Rubric,
    tier: Tier,
    *,
    nonce: str,
    previous_rounds: Sequence[RoundRecord] = (),
) -> Callable[[int], Prompt]:
    """The request's prompt for `tier` as a function of its file budget, for
    `context_fit.fitted_budget` to measure (and the attempt to send)."""
    live = [f for f in request.files if not f.removed]

    def compose(chars: int) -> Prompt:
        return compose_messages(
            rubric,
            request.task,
            live,
            tier,
            nonce=nonce,
            max_chars=chars,
            previous_rounds=previous_rounds,
            context=request.context,
        )

    return compose


def _context_words(fits: Mapping[Tier, TierFit]) -> dict[Tier, str]:
    return {
        tier: f"its model's context of {fit.tokens} tokens ({fit.source})"
        for tier, fit in fits.items()
        if fit.tokens is not None
    }


def _seat_key(seat: Seat | None, max_chars: int) -> cost.SeatKey | None:
    if seat is None:
        return None
    return cost.SeatKey(
        model=seat.model,
        provider=getattr(seat.provider, "kind", "unknown"),
        base_url=getattr(seat.provider, "base_url", ""),
        max_chars=max_chars,
        max_output_tokens=seat.max_output_tokens,
    )

"""Judging a dataset: each labelled change through the engine `judge-bot judge` uses, and
again with its files in another order for swap consistency.

The engine is passed in as a `Panel` (the CLI builds it with `JudgeEngine.from_settings`
and no storage): an evaluation's judgments are not appended to the verdict log, where
calibration would count them as the App's, and they neither read nor fill the verdict
cache, so the second order is really judged again. Without storage the engine keeps no
hourly throttle or daily budget either: a dataset of two hundred changes is never
refused half-way.

A provider's failure is the engine's to turn into an undetermined record; anything else a
judgment raises (a bug, an example the engine cannot take) is that example's `Failed`
outcome, and the other examples are judged all the same: one change must not lose a run
of two hundred.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Sequence

from bot.evaluation.dataset import LabelledExample
from bot.evaluation.metrics import Failed, JudgedExample, RoundOutcome
from bot.gfm import one_line
from bot.judge.engine import JudgeRequest
from bot.judge.records import CallStats, Verdict, VerdictRecord
from bot.judge.rubrics.research_settings import ResearchRules
from bot.record_view import rounds_of
from bot.reports.facts import CallFact

Panel = Callable[[JudgeRequest], Awaitable[VerdictRecord]]
SCOPE = "eval"
ERROR_LIMIT = 300

logger = logging.getLogger(__name__)


def other_order(count: int) -> list[int] | None:
    """Positions of `count` files in another order (reversed: for two files, swapped; the
    first file goes last, where a judge biased by position reads it differently). None
    when there is no other order."""
    if count < 2:
        return None
    return list(reversed(range(count)))


def request_for(
    item: LabelledExample,
    *,
    order: Sequence[int] | None = None,
    sensitive: bool = False,
    research: ResearchRules | None = None,
) -> JudgeRequest:
    """The engine's request for an example, its files (and their diffs) in `order`."""
    example = item.example
    files = example.judged_files()
    context = example.context()
    if order is not None:
        files = [files[i] for i in order]
        if context.diffs:
            context = context.model_copy(update={"diffs": [context.diffs[i] for i in order]})
    return JudgeRequest(
        task=example.task_spec(item.name),
        files=files,
        rubric=example.rubric,
        sensitive=sensitive or example.sensitive,
        scope=SCOPE,
        bypass_cache=True,
        research=research or ResearchRules(),
        context=context,
    )


def call_fact(stats: CallStats) -> CallFact:
    tokens = (stats.prompt_tokens or 0) + (stats.completion_tokens or 0)
    return CallFact(
        stats.tier.value,
        stats.model,
        stats.latency_ms,
        tokens,
        stats.attempts,
        stats.error is None,
    )


def rounds_outcome(record: VerdictRecord) -> tuple[RoundOutcome, ...]:
    return tuple(
        RoundOutcome(tier=r.tier.value, model=r.model, verdict=r.verdict, scores=dict(r.scores))
        for r in rounds_of(record)
    )


def judged_from(
    item: LabelledExample,
    record: VerdictRecord,
    seconds: float,
    swapped: tuple[VerdictRecord, float] | None,
) -> JudgedExample:
    example = item.example
    return JudgedExample(
        name=item.name,
        expected=Verdict(example.expected),
        decision=record.final_decision,
        label=record.go_no_go,
        rounds=rounds_outcome(record),
        calls=tuple(call_fact(c) for c in record.calls),
        seconds=seconds,
        expected_scores=dict(example.scores),
        swapped=None if swapped is None else swapped[0].final_decision,
        swap_calls=() if swapped is None else tuple(call_fact(c) for c in swapped[0].calls),
        swap_seconds=0.0 if swapped is None else swapped[1],
    )


class Runner:
    """Judges examples with `judge`, at most `concurrency` at a time."""

    def __init__(
        self,
        judge: Panel,
        *,
        swap: bool = True,
        sensitive: bool = False,
        concurrency: int = 1,
        research: ResearchRules | None = None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._judge = judge
        self._swap = swap
        self._sensitive = sensitive
        self._gate = asyncio.Semaphore(max(concurrency, 1))
        self._research = research
        self._monotonic = monotonic

    async def run(self, items: Sequence[LabelledExample]) -> list[JudgedExample | Failed]:
        """Every example's outcome, in the dataset's order."""
        return list(await asyncio.gather(*(self._guarded(item) for item in items)))

    async def _guarded(self, item: LabelledExample) -> JudgedExample | Failed:
        try:
            return await self._one(item)
        except Exception as exc:  # noqa: BLE001 - one example, recorded; the run goes on
            error = one_line(f"{type(exc).__name__}: {exc}", ERROR_LIMIT)
            logger.warning("eval: %s could not be judged: %s", item.name, error)
            return Failed(name=item.name, expected=Verdict(item.example.expected), error=error)

    async def _timed(
        self, item: LabelledExample, order: Sequence[int] | None
    ) -> tuple[VerdictRecord, float]:
        request = request_for(item, order=order, sensitive=self._sensitive, research=self._research)
        started = self._monotonic()
        record = await self._judge(request)
        return record, self._monotonic() - started

    async def _one(self, item: LabelledExample) -> JudgedExample:
        async with self._gate:
            record, seconds = await self._timed(item, None)
            order = other_order(len(item.example.judged_files())) if self._swap else None
            swapped = None if order is None else await self._timed(item, order)
        return judged_from(item, record, seconds, swapped)

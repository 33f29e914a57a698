"""One change judged as `judge-bot judge` and the pre-push hook send it: one request, or,
when its files are longer than the deciding judges read whole at their models' contexts,
the parts they do read whole (`plan_request`, the App's windows and batches), every one
of which must accept (`run_outcome`, the rule the App's check run combines its records
by). Nothing is cut without a word: each part's record says what its judges were sent.

The plan uses each tier's context as far as it is known before the first call (a setting,
or what the server says: llama.cpp's `/props`, `/v1/models`, Ollama's `/api/show`). A
server that says nothing of it beforehand (llama-cpp-python) states it when it refuses a
prompt as too long, and the engine learns it; when the change then ended judged only in
part (`partial-view`), it is planned again with what was learned and judged once more, in
the parts that fit. The first attempt's records stay in storage, as every judgment's do.

Parts are judged one at a time against a model served on this machine (a local server
computes one request at a time, and each request's timeout runs while it waits), and up
to `REQUESTS_AT_ONCE` at once elsewhere, as the App does.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from bot.cli.terminal import Say
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.judgment import record_go_no_go
from bot.judge.records import GoNoGo, Tier, Verdict, VerdictRecord
from bot.judging.conclusion import Cause, run_outcome
from bot.judging.flow import REQUESTS_AT_ONCE
from bot.judging.judge_requests import (
    PlannedPart,
    WindowBudget,
    fitted_window_budget,
    plan_request,
)
from bot.judging.repo_config import DEFAULT_MAX_FILES as MAX_FILES
from bot.judging.windows import Part


@dataclass(frozen=True)
class JudgedPart:
    """One request of the change and its record."""

    part: Part
    record: VerdictRecord

    def describe(self) -> str:
        """What the part holds: `docs/a.md lines 1-120 (window 1 of 4)`, or its files."""
        window = self.part.window
        if window is None:
            return ", ".join(f.path for f in self.part.files)
        return (
            f"{window.path} lines {window.first}-{window.last} "
            f"(window {window.number} of {window.count})"
        )

    def as_json(self, number: int) -> dict[str, object]:
        window = self.part.window
        return {
            "part": number,
            "files": [f.path for f in self.part.files],
            "window": None
            if window is None
            else {
                "path": window.path,
                "first_line": window.first,
                "last_line": window.last,
                "number": window.number,
                "count": window.count,
                "cut_inside_a_line": window.partial,
            },
            "record": self.record.model_dump(mode="json"),
        }


@dataclass(frozen=True)
class JudgedChange:
    """The change's parts, in order, and what they add up to."""

    parts: tuple[JudgedPart, ...]
    verdict: Verdict
    cause: Cause
    """Why the verdict is undetermined, when it is (`bot.judging.conclusion`)."""
    plan: str = ""
    """Why the change was judged in several parts; empty for one."""
    replanned: str = ""
    """Why it was judged a second time; empty when it was not."""

    @property
    def records(self) -> list[VerdictRecord]:
        return [judged.record for judged in self.parts]

    @property
    def go_no_go(self) -> GoNoGo:
        """NO-GO when any part is (the hook blocks on any), else UNDETERMINED when any
        part is, else GO."""
        labels = {record_go_no_go(record) for record in self.records}
        for label in ("NO-GO", "UNDETERMINED"):
            if label in labels:
                return label
        return "GO"

    def to_json(self) -> str:
        """The one JSON line `judge-bot judge --json` prints: a one-part change's record as
        it is; several parts' records with the verdict of the change (docs/judging.md)."""
        if len(self.parts) == 1:
            return self.parts[0].record.to_jsonl()
        first = self.parts[0].record
        shape = {
            "task_id": first.task_id,
            "final_decision": self.verdict.value,
            "go_no_go": self.go_no_go,
            "cause": self.cause.value if self.verdict is Verdict.UNDETERMINED else None,
            "judged_in_parts": len(self.parts),
            "plan": self.plan,
            "replanned": self.replanned or None,
            "parts": [judged.as_json(n) for n, judged in enumerate(self.parts, start=1)],
        }
        return json.dumps(shape, separators=(",", ":"), ensure_ascii=False)


def requests_at_once(local: bool) -> int:
    return 1 if local else REQUESTS_AT_ONCE


async def judge_change(
    engine: JudgeEngine, request: JudgeRequest, *, at_once: int, say: Say
) -> JudgedChange:
    """Judge `request` in the parts its deciding judges read whole (module docstring);
    `say` hears, before the judges are asked, why there are several."""
    if not engine.settings.llm_configured:
        # Only the mechanical checks judge: nothing reads in windows.
        whole = Part(tuple(request.files), tuple(request.context.diffs))
        return combine([JudgedPart(whole, await engine.judge(request))])
    contexts = await engine.tier_contexts()
    budget = fitted_window_budget(engine.settings, contexts)
    planned = plan_request(request, budget)
    plan = plan_line(request, planned, budget, contexts)
    if plan:
        say(plan)
    change = combine(await _judge_parts(engine, planned, at_once), plan)
    if change.cause is not Cause.PARTIAL_VIEW:
        return change
    learned = await engine.tier_contexts()
    budget = fitted_window_budget(engine.settings, learned)
    again = plan_request(request, budget)
    if len(again) <= len(planned):
        return change
    replanned = replanned_line(contexts, learned, len(planned))
    say(replanned)
    plan = plan_line(request, again, budget, learned)
    say(plan)
    return combine(await _judge_parts(engine, again, at_once), plan, replanned)


async def _judge_parts(
    engine: JudgeEngine, planned: Sequence[PlannedPart], at_once: int
) -> list[JudgedPart]:
    slots = asyncio.Semaphore(at_once)

    async def judged(one: PlannedPart) -> JudgedPart:
        async with slots:
            return JudgedPart(one.part, await engine.judge(one.request))

    return list(await asyncio.gather(*(judged(one) for one in planned)))


def combine(parts: Sequence[JudgedPart], plan: str = "", replanned: str = "") -> JudgedChange:
    verdict, cause = run_outcome([judged.record for judged in parts])
    return JudgedChange(tuple(parts), verdict, cause, plan, replanned)


def plan_line(
    request: JudgeRequest,
    planned: Sequence[PlannedPart],
    budget: WindowBudget,
    contexts: Mapping[Tier, int | None],
) -> str:
    """Why the change is judged in several parts; empty when it is one."""
    if len(planned) == 1:
        return ""
    sizes = {f.path: len(f.content) for f in request.files}
    windows: dict[str, int] = {}
    batches = [one.part for one in planned if one.part.window is None]
    for one in planned:
        if one.part.window is not None:
            windows[one.part.window.path] = one.part.window.count
    what = [f"{path} ({sizes[path]:,} characters) in {n} windows" for path, n in windows.items()]
    if batches:
        files = sum(len(part.files) for part in batches)
        what.append(f"{files} files in {len(batches)} requests (at most {MAX_FILES} files each)")
    return (
        f"judged in {len(planned)} parts, each of which must accept: {'; '.join(what)}; "
        + _reader(request, budget, contexts)
    )


def _reader(
    request: JudgeRequest, budget: WindowBudget, contexts: Mapping[Tier, int | None]
) -> str:
    """The deciding judge that reads the most at once, and what bounds it."""
    read = {
        room: WindowBudget((room,)).chars_for(request.rubric, request.task, request.context)
        for room in budget.rooms
    }
    room = max(read, key=read.__getitem__)
    tokens = contexts.get(room.tier)
    if room.prompt_room is not None and tokens is not None:
        bound = f"what its model's context of {tokens:,} tokens leaves"
    else:
        bound = f"JUDGE_{room.tier.value.upper()}_MAX_CHARS"
    return f"the {room.tier.value} judge reads at most {read[room]:,} characters at once ({bound})"


def replanned_line(
    before: Mapping[Tier, int | None], learned: Mapping[Tier, int | None], parts: int
) -> str:
    """Why the change is judged a second time."""
    stated = ", ".join(
        f"{tier.value} {tokens:,} tokens"
        for tier, tokens in learned.items()
        if tokens is not None and tokens != before.get(tier)
    )
    noun = "record is" if parts == 1 else "records are"
    return (
        f"a judge's server refused a prompt as longer than its model's context and stated "
        f"that context ({stated}): the change is judged again in the parts that fit; the "
        f"first attempt's {noun} stored too"
    )

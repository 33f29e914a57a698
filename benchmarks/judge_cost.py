"""What judging costs: model calls, tokens, cache hits, and the engine's own overhead.

A mixed workload runs through the real engine against the fake OpenAI-protocol server
on loopback, with SQLite storage in a temporary directory:

- most changes are good (the quick judge accepts: one call),
- some are bad (quick asks for improvements or rejects, deep confirms: two calls),
- some repeat content judged before (the verdict cache answers: no call).

Printed: model calls per judged change (overall, and for first-time content), tokens
sent, cache hit rate, and the engine's overhead per judgment excluding model latency
(time in `judge()` minus time inside the provider calls; median and p95), with and
without storage; then the same workload again with the review context the App sends
(each change's diff, two CI results with excerpts, an earlier verdict's findings), to
show the tokens a judgment costs before and after it. Targets: 0 calls for repeated
content; <= 1.3 calls per change when 80% pass quick; overhead under 5 ms.

    .venv/bin/python benchmarks/judge_cost.py [--changes N] [--good 0.8] [--repeat 0.25]
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.engine.review_context import CiResult, EarlierVerdict, FileDiff, ReviewContext
from bot.judge.engine.seating import JudgePanel, Seat, build_panel
from bot.judge.providers import Completion, LLMProvider
from bot.judge.records import JudgedFile, TaskSpec
from bot.judge.settings import JudgeSettings
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply

QUICK, DEEP, TIE = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b"
GOOD = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5}, "reasoning": "clear"}
IMPROVE = {
    "scores": {"semantic": 3, "pragmatic": 2, "syntactic": 3},
    "reasoning": "gaps",
    "improvements": ["state the action"],
}
BAD = {"scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3}, "reasoning": "wrong"}


def respond(request: RecordedRequest) -> Reply:
    """Good content passes quick; bad content gets improve/reject and deep rejects."""
    bad = "QUALITY-BAD" in request.user_text
    if not bad:
        return Reply.json(GOOD)
    if request.model == QUICK:
        return Reply.json(IMPROVE if "variant-a" in request.user_text else BAD)
    return Reply.json(BAD)


class TimedProvider:
    """Wraps a provider and adds up the time spent inside its calls."""

    def __init__(self, inner: LLMProvider) -> None:
        self.inner = inner
        self.kind = inner.kind
        self.base_url = inner.base_url
        self.seconds = 0.0

    async def complete(self, **kwargs: Any) -> Completion:
        started = time.perf_counter()
        try:
            return await self.inner.complete(**kwargs)
        finally:
            self.seconds += time.perf_counter() - started


def timed_panel(panel: JudgePanel) -> tuple[JudgePanel, list[TimedProvider]]:
    wrappers: dict[int, TimedProvider] = {}

    def wrap(seat: Seat) -> Seat:
        key = id(seat.provider)
        if key not in wrappers:
            wrappers[key] = TimedProvider(seat.provider)
        return Seat(
            model=seat.model,
            family=seat.family,
            provider=wrappers[key],
            timeout=seat.timeout,
            max_chars=seat.max_chars,
        )

    tiers = {tier: wrap(seat) for tier, seat in panel.tiers.items()}
    alternates: Mapping[Any, Sequence[Seat]] = {
        tier: [wrap(s) for s in seats] for tier, seats in panel.alternates.items()
    }
    return JudgePanel(tiers=tiers, alternates=alternates), list(wrappers.values())


@dataclass
class Workload:
    requests: list[JudgeRequest]
    repeats: int
    good_new: int
    bad_new: int


def make_workload(changes: int, good: float, repeat: float, seed: int) -> Workload:
    rng = random.Random(seed)
    fresh: list[JudgeRequest] = []
    requests: list[JudgeRequest] = []
    repeats = good_new = bad_new = 0
    for n in range(changes):
        if fresh and rng.random() < repeat:
            requests.append(rng.choice(fresh))
            repeats += 1
            continue
        is_good = rng.random() < good
        good_new += is_good
        bad_new += not is_good
        marker = "QUALITY-GOOD" if is_good else "QUALITY-BAD"
        variant = rng.choice(["variant-a", "variant-b"])
        body = (
            f"# Report {n}\n\n{marker} {variant}\n\n"
            + "Latency rose after the cache change; roll back the TTL and re-measure. " * 20
        )
        request = JudgeRequest(
            task=TaskSpec(
                task_id=f"task-{n}",
                description="Weekly report",
                acceptance="Names the cause and an action",
            ),
            files=[JudgedFile(path=f"research/report-{n}.md", content=body)],
            scope=f"bench/{n % 4}",
        )
        fresh.append(request)
        requests.append(request)
    return Workload(requests, repeats, good_new, bad_new)


def with_context(workload: Workload) -> Workload:
    """The same changes, each with the review context a pull request brings."""
    contexts: dict[int, JudgeRequest] = {}
    requests = []
    for request in workload.requests:
        if id(request) not in contexts:
            [file] = request.files
            first_line = file.content.splitlines()[2]
            diff = f"@@ -1,3 +1,3 @@\n # Report\n \n-{first_line[:40]}\n+{first_line}"
            context = ReviewContext(
                diffs=[FileDiff(path=file.path, diff=diff)],
                ci=[
                    CiResult(
                        name="tests",
                        state="failure",
                        required=True,
                        excerpt="1 failed: test_report_links\nAssertionError: 404 for /run/7",
                    ),
                    CiResult(name="lint", state="success", excerpt="0 problems"),
                ],
                earlier=[
                    EarlierVerdict(
                        head_sha="e" * 40,
                        decision="improve",
                        findings=["name the cause", "give the re-measure date"],
                        reasoning="the action is vague",
                    )
                ],
            )
            contexts[id(request)] = replace(request, context=context)
        requests.append(contexts[id(request)])
    return Workload(requests, workload.repeats, workload.good_new, workload.bad_new)


@dataclass
class Result:
    calls: int
    http_requests: int
    prompt_tokens: int
    completion_tokens: int
    cache_hits: int
    overhead_ms: list[float]


async def run(
    workload: Workload, *, with_storage: bool, fake: FakeOpenAIServer, db_dir: Path
) -> Result:
    settings = JudgeSettings(
        llm_base_url=fake.base_url,
        llm_api_key="test-key",
        quick_model=QUICK,
        deep_model=DEEP,
        tiebreaker_model=TIE,
        throttle_per_hour=1_000_000,
        daily_call_budget=None,
    )
    storage = (
        SqliteStorage(str(db_dir / f"bench-{time.monotonic_ns()}.db")) if with_storage else None
    )
    if storage is not None:
        await storage.open()
    before = len(fake.requests)
    result = Result(0, 0, 0, 0, 0, [])
    try:
        async with httpx.AsyncClient() as client:
            panel, providers = timed_panel(build_panel(settings, client))
            engine = JudgeEngine(settings, panel, storage)
            for request in workload.requests:
                spent_before = sum(p.seconds for p in providers)
                started = time.perf_counter()
                record = await engine.judge(request)
                elapsed = time.perf_counter() - started
                in_models = sum(p.seconds for p in providers) - spent_before
                result.overhead_ms.append((elapsed - in_models) * 1000.0)
                if record.previous_rounds and not record.calls:
                    result.cache_hits += 1
                result.calls += sum(c.attempts for c in record.calls)
                result.prompt_tokens += sum(c.prompt_tokens or 0 for c in record.calls)
                result.completion_tokens += sum(c.completion_tokens or 0 for c in record.calls)
    finally:
        if storage is not None:
            await storage.close()
    result.http_requests = len(fake.requests) - before
    return result


def report(label: str, workload: Workload, result: Result, *, with_storage: bool) -> None:
    changes = len(workload.requests)
    fresh = changes - workload.repeats
    overhead = sorted(result.overhead_ms)
    p95 = overhead[max(0, int(len(overhead) * 0.95) - 1)]
    print(f"== {label}")
    print(
        f"changes judged:              {changes} ({workload.good_new} good, "
        f"{workload.bad_new} bad, {workload.repeats} repeated)"
    )
    print(f"model calls:                 {result.calls} (HTTP requests {result.http_requests})")
    print(f"calls per judged change:     {result.calls / changes:.3f}")
    if with_storage:
        print(f"calls per first-time change: {result.calls / max(1, fresh):.3f}")
        print(
            f"cache hits:                  {result.cache_hits}/{workload.repeats} repeats "
            f"(hit rate {result.cache_hits / changes:.1%} of all judgments)"
        )
    print(
        f"tokens sent / received:      {result.prompt_tokens} / {result.completion_tokens}"
        f" ({result.prompt_tokens / changes:.0f} sent per change)"
    )
    print(
        f"engine overhead (ms):        median {statistics.median(overhead):.3f}, "
        f"p95 {p95:.3f} (excluding model latency)"
    )


async def main_async(args: argparse.Namespace) -> None:
    workload = make_workload(args.changes, args.good, args.repeat, args.seed)
    fake = FakeOpenAIServer(responder=respond)
    await fake.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            with_storage = await run(workload, with_storage=True, fake=fake, db_dir=Path(tmp))
            report(
                "engine + SQLite storage (cache, throttle, audit log)",
                workload,
                with_storage,
                with_storage=True,
            )
            bare = await run(workload, with_storage=False, fake=fake, db_dir=Path(tmp))
            report("engine without storage (no cache)", workload, bare, with_storage=False)
            reviewed = with_context(workload)
            after = await run(reviewed, with_storage=True, fake=fake, db_dir=Path(tmp))
            report(
                "engine + SQLite storage, with the review context (diff, CI, earlier verdict)",
                reviewed,
                after,
                with_storage=True,
            )
            changes = len(workload.requests)
            print(
                "== tokens sent per judgment: "
                f"{with_storage.prompt_tokens / changes:.0f} without the review context, "
                f"{after.prompt_tokens / changes:.0f} with it "
                f"(x{after.prompt_tokens / max(1, with_storage.prompt_tokens):.2f}); "
                f"per model call {with_storage.prompt_tokens / max(1, with_storage.calls):.0f} "
                f"and {after.prompt_tokens / max(1, after.calls):.0f}"
            )
    finally:
        await fake.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument("--good", type=float, default=0.8, help="share that passes quick")
    parser.add_argument("--repeat", type=float, default=0.25, help="share of repeated content")
    parser.add_argument("--seed", type=int, default=7)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()

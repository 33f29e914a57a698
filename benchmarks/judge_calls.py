"""What one change costs in judge requests and model calls, by the size of its file.

One Markdown file of prose (content rubric) per change, at 2k, 6k, 30k and 100k
characters, with the default settings (`RepoConfig()`, `JudgeSettings` with three tiers
of default budgets: quick 4,000 characters, deep and tiebreaker 32,000). The requests
come from `judge_requests` twice: as one request per rubric group (`window_chars=None`,
before windows) and with the window budget the flow passes (`window_budget`). Each
request is judged by the real engine against the fake OpenAI-protocol server on loopback,
where every judge accepts; calls are the provider attempts the records count, checked
against the HTTP requests the server saw. No storage: no cache, no throttle.

Printed per size and way: requests, the characters of file each request sends (a window
after the first starts with one empty line per line before it, for line numbers), model
calls by tier, the final decisions, and how many requests some tier read in part (the
quick tier reads 4,000 characters; the deciding tier must read all). The engine's rule
for a quick accept of a partial view decides whether a 6k file costs one call or two.

    .venv/bin/python benchmarks/judge_calls.py
"""

from __future__ import annotations

import asyncio
import random
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import JudgedFile, VerdictRecord
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.judge_requests import JudgeInputs, judge_requests, window_budget
from bot.judging.repo_config import RepoConfig
from bot.judging.target import Target
from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply

QUICK, DEEP, TIE = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b"
ACCEPT = {"scores": {"semantic": 5, "pragmatic": 5, "syntactic": 5}, "reasoning": "clear"}
SIZES = (2_000, 6_000, 30_000, 100_000)
WORDS: tuple[str, ...] = ("cache", "warms", "within", "a", "minute", "after", "each", "deploy")
WORDS += ("the", "p95", "latency", "returns", "to", "its", "baseline", "so", "we", "keep")
WORDS += ("shorter", "expiry")


def prose(chars: int, seed: int) -> str:
    """Markdown of exactly `chars` characters: headings and wrapped paragraphs."""
    rng = random.Random(seed)
    rows: list[str] = ["# Cache rollout report", ""]
    while sum(len(r) + 1 for r in rows) < chars:
        rows += [f"## Week {len(rows)}", ""]
        for _ in range(rng.randint(3, 6)):
            words = [rng.choice(WORDS) for _ in range(rng.randint(8, 13))]
            rows.append(" ".join(words).capitalize() + ".")
        rows.append("")
    return "\n".join(rows)[:chars]


def accept(_request: RecordedRequest) -> Reply:
    return Reply.json(ACCEPT)


def change(chars: int) -> tuple[Target, JudgeInputs]:
    target = Target(
        repository="octo/bench",
        installation_id=1,
        head_sha="b" * 40,
        default_branch="main",
        task=f"octo/bench#{chars}",
        trigger="pull_request",
        title="Weekly cache report",
    )
    file = JudgedFile(path="docs/report.md", content=prose(chars, seed=chars), added_lines=None)
    inputs = JudgeInputs(files=[file], commits=(), directives=(), sensitive=frozenset())
    return target, inputs


@dataclass
class Cost:
    requests: int
    held: list[int]
    calls: Counter[str]
    http: int
    decisions: Counter[str]
    partial: int


async def judge_all(
    engine: JudgeEngine, requests: list[JudgeRequest], fake: FakeOpenAIServer
) -> Cost:
    before = len(fake.requests)
    records: list[VerdictRecord] = [await engine.judge(request) for request in requests]
    calls: Counter[str] = Counter()
    for record in records:
        for call in record.calls:
            calls[call.tier.value] += call.attempts
    return Cost(
        requests=len(requests),
        held=[len(f.content) for r in requests for f in r.files],
        calls=calls,
        http=len(fake.requests) - before,
        decisions=Counter(r.final_decision.value for r in records),
        partial=sum(1 for r in records if r.truncation),
    )


def line(label: str, cost: Cost) -> str:
    tiers = ", ".join(f"{tier} {cost.calls[tier]}" for tier in ("quick", "deep", "tiebreaker"))
    decisions = ", ".join(f"{n} {d}" for d, n in sorted(cost.decisions.items()))
    held = ", ".join(f"{n:,}" for n in cost.held)
    return (
        f"  {label:<22} requests {cost.requests:>2}   calls {sum(cost.calls.values()):>2} "
        f"({tiers}; HTTP {cost.http})   read in part by a tier: {cost.partial}   "
        f"decisions: {decisions}   file chars sent per request: {held}"
    )


async def main_async() -> None:
    fake = FakeOpenAIServer(responder=accept)
    await fake.start()
    settings = JudgeSettings(
        llm_base_url=fake.base_url,
        llm_api_key="test-key",
        quick_model=QUICK,
        deep_model=DEEP,
        tiebreaker_model=TIE,
        throttle_per_hour=1_000_000,
        daily_call_budget=None,
    )
    budget = window_budget(settings)
    print(
        f"== judge requests and model calls per change, every judge accepting "
        f"(quick reads {settings.quick_max_chars:,} chars, window budget {budget:,})"
    )
    try:
        async with httpx.AsyncClient() as client:
            engine = JudgeEngine.from_settings(settings, client, None)
            for chars in SIZES:
                target, inputs = change(chars)
                print(f"{chars:,}-character Markdown file (content rubric):")
                for label, window in (("one request per group", None), ("windows", budget)):
                    requests = judge_requests(
                        target, RepoConfig(), inputs, ResearchRules(), window_chars=window
                    )
                    print(line(label, await judge_all(engine, requests, fake)))
    finally:
        await fake.close()


def main() -> None:
    asyncio.run(main_async())


if __name__ == "__main__":
    main()

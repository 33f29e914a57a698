"""How long `judge-bot calibrate` takes over a large verdict log on SQLite.

A temporary SQLite database is filled with N records spread over the last 14 days
(default 100,000): ten repositories; mostly quick accepts, some quick improve then deep,
rejects, escalations that reached the tiebreaker, undetermined outages with failed
calls, cache hits without calls, and overrides of about one in forty changes. Then the
command's own path runs, as `judge-bot calibrate --json` does: read the window's facts
(`Storage.list_verdict_facts`, the lean read), turn the rows into facts, compute every
figure, render.

Printed: the time of each step and the total (median of --runs), against the target of
2 s for 100,000 records. Filling the database is not timed.

    .venv/bin/python benchmarks/calibrate.py [--records N] [--runs R]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bot.judge.records import CallStats, RoundRecord, RubricName, Tier, Verdict, VerdictRecord
from bot.reports.calibration_view import calibration_json, render_calibration
from bot.reports.facts import facts_of_rows
from bot.reports.kpis import calibrate
from bot.reports.sources import collector_paused
from bot.reports.thresholds import CalibrationThresholds
from bot.storage.base import VerdictFacts
from bot.storage.sqlite import SqliteStorage

TARGET_SECONDS = 2.0
DAYS = 14
MODELS = {
    Tier.QUICK: ("opencode/gpt-5-nano", "openai"),
    Tier.DEEP: ("opencode/kimi-k2.5-free", "kimi"),
    Tier.TIEBREAKER: ("opencode/gpt-5.1-codex-mini", "codex"),
}
SCORES = {
    Verdict.ACCEPT: {"semantic": 4.0, "pragmatic": 4.0, "syntactic": 5.0},
    Verdict.IMPROVE: {"semantic": 3.0, "pragmatic": 2.0, "syntactic": 4.0},
    Verdict.REJECT: {"semantic": 1.0, "pragmatic": 2.0, "syntactic": 3.0},
}
REASONING = "The document states its claims with sources and gives the reader steps to act on. "


def round_of(number: int, tier: Tier, verdict: Verdict | None) -> RoundRecord:
    model, family = MODELS[tier]
    return RoundRecord(
        round=number,
        judge_tier=tier,
        model=model,
        family=family,
        verdict=verdict,
        model_verdict=None if verdict is None else verdict.value,
        scores={} if verdict is None else SCORES.get(verdict, SCORES[Verdict.IMPROVE]),
        average=None if verdict is None else 3.5,
        reasoning=REASONING * 3 if verdict is not None else "",
        improvements=[] if verdict in (None, Verdict.ACCEPT) else ["add an example"],
        error="timeout" if verdict is None else None,
    )


def call_of(tier: Tier, rng: random.Random, ok: bool) -> CallStats:
    return CallStats(
        tier=tier,
        model=MODELS[tier][0],
        provider="openai",
        latency_ms=rng.uniform(300, 9000),
        prompt_tokens=rng.randint(800, 4000),
        completion_tokens=rng.randint(80, 400),
        attempts=1 if ok else 2,
        error=None if ok else "timeout",
    )


# (weight, final decision, rounds as (tier, verdict))
SHAPES: list[tuple[int, Verdict, list[tuple[Tier, Verdict | None]]]] = [
    (62, Verdict.ACCEPT, [(Tier.QUICK, Verdict.ACCEPT)]),
    (12, Verdict.ACCEPT, [(Tier.QUICK, Verdict.IMPROVE), (Tier.DEEP, Verdict.ACCEPT)]),
    (10, Verdict.IMPROVE, [(Tier.QUICK, Verdict.IMPROVE), (Tier.DEEP, Verdict.IMPROVE)]),
    (5, Verdict.REJECT, [(Tier.QUICK, Verdict.REJECT)]),
    (
        4,
        Verdict.ESCALATE,
        [(Tier.QUICK, Verdict.ACCEPT), (Tier.DEEP, Verdict.REJECT), (Tier.TIEBREAKER, None)],
    ),
    (7, Verdict.UNDETERMINED, [(Tier.QUICK, None)]),
]


def record(index: int, rng: random.Random, now: datetime) -> VerdictRecord:
    _, final, steps = rng.choices(SHAPES, weights=[s[0] for s in SHAPES])[0]
    rounds = [round_of(n, tier, verdict) for n, (tier, verdict) in enumerate(steps, start=1)]
    cached = rng.random() < 0.05 and final is not Verdict.UNDETERMINED
    calls = [] if cached else [call_of(t, rng, v is not None) for t, v in steps]
    last = rounds[-1]
    repository = f"octo/repo-{index % 10}"
    label = "UNDETERMINED" if final is Verdict.UNDETERMINED else "GO"
    if final in (Verdict.IMPROVE, Verdict.REJECT, Verdict.ESCALATE):
        label = "NO-GO"
    return VerdictRecord(
        task_id=f"{repository}#{index}",
        model=last.model,
        mode=last.judge_tier.value,
        verdict=last.verdict or Verdict.UNDETERMINED,
        scores=last.scores,
        average=last.average,
        reasoning=last.reasoning,
        timestamp=now - timedelta(seconds=rng.uniform(0, DAYS * 86400 - 3600)),
        round=len(rounds),
        judge_tier=last.judge_tier,
        previous_rounds=rounds,
        rubric=RubricName.CONTENT,
        prompt_version="judge/1+content/1",
        repository=repository,
        head_sha=f"{index:040x}",
        files=["docs/guide.md"],
        calls=calls,
        final_decision=final,
        go_no_go=label,
    )


def override_of(judged: VerdictRecord, rng: random.Random) -> VerdictRecord:
    verdict = Verdict.ACCEPT if judged.final_decision is not Verdict.ACCEPT else Verdict.REJECT
    return judged.model_copy(
        update={
            "final_decision": verdict,
            "verdict": verdict,
            "human_override": True,
            "decided_by": "maintainer",
            "timestamp": judged.timestamp + timedelta(minutes=rng.uniform(1, 60)),
            "go_no_go": "GO" if verdict is Verdict.ACCEPT else "NO-GO",
        }
    )


async def fill(store: SqliteStorage, count: int, now: datetime) -> None:
    rng = random.Random(7)
    batch: list[VerdictRecord] = []
    for index in range(count):
        judged = record(index, rng, now)
        batch.append(judged)
        if rng.random() < 0.025:
            batch.append(override_of(judged, rng))
        if len(batch) >= 500:
            await asyncio.gather(*(_append(store, r) for r in batch))
            batch = []
    await asyncio.gather(*(_append(store, r) for r in batch))


async def _append(store: SqliteStorage, item: VerdictRecord) -> None:
    await store.append_verdict(
        task_id=item.task_id,
        repository=item.repository,
        head_sha=item.head_sha,
        verdict=item.final_decision.value,
        created_at=item.timestamp,
        record=item.model_dump(mode="json"),
    )


async def read(path: Path, since: datetime) -> list[VerdictFacts]:
    store = SqliteStorage(str(path))
    await store.open()
    try:
        return await store.list_verdict_facts(since=since)
    finally:
        await store.close()


def timed(step: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = step()
    return result, time.perf_counter() - started


def one_run(path: Path, now: datetime, thresholds: CalibrationThresholds) -> dict[str, float]:
    since = now - timedelta(days=DAYS)
    with collector_paused():  # as the command runs
        rows, read_s = timed(lambda: asyncio.run(read(path, since)))
        (facts, unreadable), facts_s = timed(lambda: facts_of_rows(rows))
        rows = []
        report, kpis_s = timed(
            lambda: calibrate(facts, thresholds, now=now, days=DAYS, unreadable=unreadable)
        )
        _, render_s = timed(
            lambda: (calibration_json(report, thresholds), render_calibration(report, 120))
        )
    gc.collect()
    total = read_s + facts_s + kpis_s + render_s
    return {"read": read_s, "facts": facts_s, "kpis": kpis_s, "render": render_s, "total": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    now = datetime.now(UTC)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "judge.db"

        async def build() -> None:
            store = SqliteStorage(str(path))
            await store.open()
            try:
                await fill(store, args.records, now)
            finally:
                await store.close()

        _, fill_s = timed(lambda: asyncio.run(build()))
        print(f"filled {args.records:,} judgments (+ overrides) in {fill_s:.1f} s")
        runs = [one_run(path, now, CalibrationThresholds()) for _ in range(args.runs)]
    for step in ("read", "facts", "kpis", "render", "total"):
        median = statistics.median(r[step] for r in runs)
        print(f"{step:>6}: {median:6.3f} s (median of {args.runs})")
    total = statistics.median(r["total"] for r in runs)
    scaled = TARGET_SECONDS * args.records / 100_000
    verdict = "within" if total <= scaled else "OVER"
    print(f"target: {scaled:.2f} s for {args.records:,} records -> {verdict}")


if __name__ == "__main__":
    main()

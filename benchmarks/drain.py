"""How fast the workers drain a backlog of deliveries some handler subscribes to.

The other half of intake: `benchmarks/intake.py` measures acknowledging deliveries (the
29 KB `pull_request_review` example, which no handler reads, so it is stored done at
intake). Here the same body arrives as an event a (no-op) handler subscribes to, so each
delivery is claimed, dispatched and completed by the workers of one process, as
`python -m bot serve` runs them (4 workers). Finished deliveries from before (the history
kept for the retention period) and the backlog are stored first, then timed from the
workers' start until every delivery is done; the handler counts its calls, so a delivery
processed twice or never fails the run.

    python benchmarks/drain.py [--deliveries 2000] [--workers 4] [--history 10000] [--runs 3]

PostgreSQL is measured too when JUDGE_TEST_POSTGRES_URL is set (a throwaway schema).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
from gidgethub.routing import Router

from bot.intake.dispatch import Dispatcher
from bot.intake.worker import AttemptPolicy, Worker, WorkerPool
from bot.metrics import Metrics
from bot.storage.base import DeliveryStatus, NewDelivery, Storage
from bot.storage.postgres import PostgresStorage, quote_ident
from bot.storage.sqlite import SqliteStorage

ROOT = Path(__file__).resolve().parent.parent

BODY = (ROOT / "tests/fixtures/github/webhooks/pull_request_review/submitted.json").read_bytes()
EVENT = "benchmark_event"


@asynccontextmanager
async def sqlite_store() -> AsyncIterator[Storage]:
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStorage(str(Path(tmp) / "drain.sqlite3"))
        await store.open()
        try:
            yield store
        finally:
            await store.close()


@asynccontextmanager
async def postgres_store(url: str) -> AsyncIterator[Storage]:
    schema = f"judge_bench_{uuid.uuid4().hex}"
    store = PostgresStorage(url, schema=schema)
    await store.open()
    try:
        yield store
    finally:
        await store.close()
        conn = await asyncpg.connect(url)
        try:
            await conn.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")
        finally:
            await conn.close()


async def finished_history(store: Storage, count: int, before: datetime) -> None:
    """`count` small deliveries already done, received before the backlog: the retained
    history every claim must not pay for."""
    received = before - timedelta(hours=1)
    await asyncio.gather(
        *(
            store.record_delivery(NewDelivery(f"h-{n}", "old", None, 1, "o/r", b"{}", received))
            for n in range(count)
        )
    )
    while claimed := await store.claim_deliveries("history", 1000, 60, before):
        await asyncio.gather(
            *(store.complete_delivery(d.delivery_id, "history", before) for d in claimed)
        )


async def drain(store: Storage, count: int, workers: int, history: int) -> float:
    calls: Counter[str] = Counter()
    router = Router()

    @router.register(EVENT)
    async def handled(event: Any, context: Any) -> None:
        calls[event.delivery_id] += 1

    now = datetime.now(UTC)
    await finished_history(store, history, now)
    ids = [str(uuid.uuid4()) for _ in range(count)]
    await asyncio.gather(
        *(
            store.record_delivery(NewDelivery(i, EVENT, "submitted", 1, "o/r", BODY, now))
            for i in ids
        )
    )
    dispatcher = Dispatcher(router, store)
    policy = AttemptPolicy()
    pool = WorkerPool(
        [
            Worker(store, dispatcher, Metrics(), policy=policy, lease_seconds=30, poll_interval=1)
            for _ in range(workers)
        ]
    )
    started = time.perf_counter()
    pool.start()
    try:
        # Polled, as an operator would see it: done means completed in storage.
        done = count + history
        while (await store.count_deliveries())[DeliveryStatus.DONE] < done:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        elapsed = time.perf_counter() - started
    finally:
        await pool.close()
    if set(calls) != set(ids) or set(calls.values()) != {1}:
        raise SystemExit("a delivery was processed twice or never")
    return count / elapsed


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--deliveries", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--history", type=int, default=10_000, help="finished deliveries kept")
    args = parser.parse_args()
    backends = [("sqlite", sqlite_store)]
    url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
    if url:
        backends.append(("postgres", lambda: postgres_store(url)))
    print(
        f"drain {args.deliveries} stored deliveries of {len(BODY):,} B with {args.workers}"
        f" workers (claim, dispatch to a no-op handler, complete), {args.history:,} finished"
        f" ones kept from before, median of {args.runs} runs"
    )
    for name, make in backends:
        rates = []
        for _ in range(args.runs):
            async with make() as store:
                rates.append(await drain(store, args.deliveries, args.workers, args.history))
        print(f"  {name:8} {statistics.median(rates):8,.0f} deliveries/s")
    if not url:
        print("  (JUDGE_TEST_POSTGRES_URL not set: PostgreSQL skipped)")


if __name__ == "__main__":
    asyncio.run(main())

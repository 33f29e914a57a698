"""How many webhook deliveries per second `record_delivery` stores.

It sits on the webhook acknowledgement path, so this is the ceiling on accepted
deliveries per second. Two shapes are measured: one caller awaiting each insert
in turn (latency bound), and many concurrent callers (as under a burst of
webhooks). Each figure is the median of several runs on a fresh database.

    .venv/bin/python benchmarks/storage_insert.py [--count N] [--runs R]

PostgreSQL is measured too when JUDGE_TEST_POSTGRES_URL is set; it uses a
throwaway schema that is dropped afterwards.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import TypeAlias

import asyncpg

from bot.storage.base import NewDelivery, Storage
from bot.storage.postgres import PostgresStorage, quote_ident
from bot.storage.sqlite import SqliteStorage

CONCURRENCY = 32
Cleanup: TypeAlias = Callable[[], Awaitable[None]]
Maker: TypeAlias = Callable[[], Awaitable[tuple[Storage, Cleanup]]]

BODY = b'{"action":"opened","pull_request":{"number":1}}' * 100  # about 5 KB, a typical payload


def deliveries(count: int) -> list[NewDelivery]:
    now = datetime.now(UTC)
    return [
        NewDelivery(
            delivery_id=str(uuid.uuid4()),
            event="pull_request",
            action="opened",
            installation_id=1,
            repository="octo/repo",
            body=BODY,
            received_at=now,
        )
        for _ in range(count)
    ]


async def sequential(store: Storage, items: list[NewDelivery]) -> None:
    for item in items:
        await store.record_delivery(item)


async def concurrent(store: Storage, items: list[NewDelivery]) -> None:
    queue = iter(items)

    async def worker() -> None:
        for item in queue:
            await store.record_delivery(item)

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))


async def measure(
    make: Maker,
    shape: Callable[[Storage, list[NewDelivery]], Awaitable[None]],
    count: int,
    runs: int,
) -> float:
    rates: list[float] = []
    for _ in range(runs):
        store, cleanup = await make()
        items = deliveries(count)
        try:
            started = time.perf_counter()
            await shape(store, items)
            elapsed = time.perf_counter() - started
        finally:
            await store.close()
            await cleanup()
        rates.append(count / elapsed)
    return statistics.median(rates)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=3000, help="inserts per run")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure (median shown)")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        counter = iter(range(1_000_000))

        async def make_sqlite() -> tuple[Storage, Cleanup]:
            store = SqliteStorage(str(Path(tmp) / f"bench-{next(counter)}.db"))
            await store.open()

            async def cleanup() -> None:
                return None

            return store, cleanup

        backends: list[tuple[str, Maker]] = [("sqlite", make_sqlite)]
        url = os.environ.get("JUDGE_TEST_POSTGRES_URL")
        if url:

            async def make_postgres() -> tuple[Storage, Cleanup]:
                schema = f"judge_bench_{uuid.uuid4().hex}"
                store = PostgresStorage(url, schema=schema, max_size=CONCURRENCY)
                await store.open()

                async def cleanup() -> None:
                    conn = await asyncpg.connect(url)
                    try:
                        await conn.execute(f"DROP SCHEMA {quote_ident(schema)} CASCADE")
                    finally:
                        await conn.close()

                return store, cleanup

            backends.append(("postgres", make_postgres))
        else:
            print("JUDGE_TEST_POSTGRES_URL not set: PostgreSQL skipped")

        print(f"record_delivery, {args.count} inserts of {len(BODY)} B, median of {args.runs} runs")
        for name, make in backends:
            for shape_name, shape in (
                ("sequential", sequential),
                (f"{CONCURRENCY} concurrent", concurrent),
            ):
                rate = await measure(make, shape, args.count, args.runs)
                print(f"  {name:8} {shape_name:14} {rate:10.0f} inserts/s")


if __name__ == "__main__":
    asyncio.run(main())

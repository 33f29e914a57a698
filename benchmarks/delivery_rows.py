"""What a delivery's row costs the SQLite store, with GitHub's 29 KB `pull_request_review`
example as the body.

1. CPU (the event loop's thread) per delivery for `record_delivery` in batches of 32
   concurrent callers (one group commit each), and for a claim of one plus its completion,
   as the worker does; with the WAL bytes each writes (checkpoints off meanwhile, so the WAL
   only grows and its growth is what was written).
2. A burst: deliveries recorded in batches of 32 while a worker claims and completes them,
   the checkpoint thread running as in production; the WAL file's largest size during the
   burst and its size once the store has been idle for a checkpoint and written again.

Each figure is the median of several runs on a fresh database.

    .venv/bin/python benchmarks/delivery_rows.py [--count 2000] [--burst 5000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bot.storage import sqlite_connection
from bot.storage.base import NewDelivery
from bot.storage.sqlite import SqliteStorage

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = ROOT / "tests/fixtures/github/webhooks/pull_request_review/submitted.json"
BATCH = 32
NO_CHECKPOINTS = 3600.0


@dataclass(frozen=True, slots=True)
class RowCosts:
    record_cpu_us: float
    record_wal_bytes: float
    claim_complete_cpu_us: float
    claim_complete_wal_bytes: float


@dataclass(frozen=True, slots=True)
class BurstWal:
    peak_bytes: int
    settled_bytes: int
    slowest_batch_ms: float


def new_deliveries(count: int, body: bytes) -> list[NewDelivery]:
    now = datetime.now(UTC)
    return [
        NewDelivery(
            delivery_id=str(uuid.uuid4()),
            event="pull_request_review",
            action="submitted",
            installation_id=1,
            repository="octo/repo",
            body=body,
            received_at=now,
        )
        for _ in range(count)
    ]


def wal_size(path: Path) -> int:
    wal = path.with_name(path.name + "-wal")
    return wal.stat().st_size if wal.exists() else 0


@contextmanager
def checkpoints_every(seconds: float) -> Iterator[None]:
    saved = sqlite_connection.CHECKPOINT_SECONDS
    sqlite_connection.CHECKPOINT_SECONDS = seconds  # type: ignore[misc]
    try:
        yield
    finally:
        sqlite_connection.CHECKPOINT_SECONDS = saved  # type: ignore[misc]


async def record_in_batches(store: SqliteStorage, items: list[NewDelivery]) -> float:
    """Returns the longest a batch took, in seconds."""
    slowest = 0.0
    for start in range(0, len(items), BATCH):
        batch = items[start : start + BATCH]
        started = time.perf_counter()
        stored = await asyncio.gather(*(store.record_delivery(item) for item in batch))
        slowest = max(slowest, time.perf_counter() - started)
        assert all(stored)
    return slowest


async def claim_and_complete(store: SqliteStorage, count: int, now: datetime) -> int:
    done = 0
    while done < count:
        claimed = await store.claim_deliveries("bench", 1, 60, now)
        if not claimed:
            return done
        assert await store.complete_delivery(claimed[0].delivery_id, "bench", now)
        done += 1
    return done


async def row_costs(directory: Path, count: int, body: bytes) -> RowCosts:
    path = directory / f"rows-{uuid.uuid4().hex}.sqlite3"
    items = new_deliveries(count, body)
    with checkpoints_every(NO_CHECKPOINTS):
        store = SqliteStorage(str(path))
        await store.open()
        try:
            wal_before, cpu_before = wal_size(path), time.thread_time()
            await record_in_batches(store, items)
            wal_recorded, cpu_recorded = wal_size(path), time.thread_time()
            later = datetime.now(UTC) + timedelta(seconds=1)
            assert await claim_and_complete(store, count, later) == count
            wal_after, cpu_after = wal_size(path), time.thread_time()
        finally:
            await store.close()
    return RowCosts(
        record_cpu_us=(cpu_recorded - cpu_before) / count * 1e6,
        record_wal_bytes=(wal_recorded - wal_before) / count,
        claim_complete_cpu_us=(cpu_after - cpu_recorded) / count * 1e6,
        claim_complete_wal_bytes=(wal_after - wal_recorded) / count,
    )


async def burst_wal(directory: Path, count: int, body: bytes) -> BurstWal:
    path = directory / f"burst-{uuid.uuid4().hex}.sqlite3"
    items = new_deliveries(count, body)
    peak = 0
    store = SqliteStorage(str(path))
    await store.open()

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, wal_size(path))
            await asyncio.sleep(0.005)

    async def work() -> None:
        later = datetime.now(UTC) + timedelta(seconds=1)
        done = 0
        while done < count:
            done += await claim_and_complete(store, count - done, later)
            await asyncio.sleep(0)

    sampler = asyncio.create_task(sample())
    try:
        slowest, _ = await asyncio.gather(record_in_batches(store, items), work())
        # Idle for a checkpoint, then one write: the WAL restarts on the first write after
        # a checkpoint that copied everything.
        await asyncio.sleep(sqlite_connection.CHECKPOINT_SECONDS * 3)
        await store.kv_put("bench", "after-burst", {"written": True})
        settled = wal_size(path)
    finally:
        sampler.cancel()
        await store.close()
    return BurstWal(peak_bytes=peak, settled_bytes=settled, slowest_batch_ms=slowest * 1000)


def median(values: list[float]) -> float:
    return statistics.median(values)


async def main(count: int, burst: int, runs: int) -> None:
    body = PAYLOAD.read_bytes()
    print(f"body {len(body)} bytes; {runs} runs; medians (min-max)")
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        costs = [await row_costs(directory, count, body) for _ in range(runs)]
        for label, values in (
            ("record_delivery CPU us/delivery", [c.record_cpu_us for c in costs]),
            ("record_delivery WAL bytes/delivery", [c.record_wal_bytes for c in costs]),
            ("claim+complete CPU us/delivery", [c.claim_complete_cpu_us for c in costs]),
            ("claim+complete WAL bytes/delivery", [c.claim_complete_wal_bytes for c in costs]),
        ):
            print(f"{label:38} {median(values):10.1f} ({min(values):.1f}-{max(values):.1f})")
        if burst <= 0:
            return
        bursts = [await burst_wal(directory, burst, body) for _ in range(runs)]
        peaks = [b.peak_bytes / 2**20 for b in bursts]
        settled = [b.settled_bytes / 2**20 for b in bursts]
        slowest = [b.slowest_batch_ms for b in bursts]
        for label, values in (
            (f"burst of {burst}: WAL peak MiB", peaks),
            (f"burst of {burst}: WAL after MiB", settled),
            (f"burst of {burst}: slowest batch ms", slowest),
        ):
            print(f"{label:38} {median(values):10.1f} ({min(values):.1f}-{max(values):.1f})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--burst", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    asyncio.run(main(args.count, args.burst, args.runs))

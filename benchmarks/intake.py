"""Webhook intake benchmark: how fast signed deliveries are verified, stored and acknowledged.

Starts `python -m bot serve` as its own process on loopback with SQLite, then:
  1. throughput: N signed deliveries from C concurrent clients, as fast as they are acked;
  2. latency: deliveries paced at a fixed rate (default 200/s), p50/p99 ack latency;
and finally reads the database to check every delivery was stored exactly once
(redeliveries of already-seen ids are mixed in and must not be stored again).

    python benchmarks/intake.py [--deliveries 5000] [--concurrency 50] [--rate 200] [--seconds 10]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import hmac
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import aiohttp
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

ROOT = Path(__file__).resolve().parent.parent
PAYLOAD = ROOT / "tests" / "fixtures" / "github" / "webhooks" / "push" / "payload.json"
SECRET = "benchmark-secret-value"
# An event no feature handles, so the workers finish each delivery without calling GitHub.
EVENT = "watch"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def private_key_pem() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def headers_for(body: bytes, delivery_id: str) -> dict[str, str]:
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    return {
        "Content-Type": "application/json",
        "X-GitHub-Event": EVENT,
        "X-GitHub-Delivery": delivery_id,
        "X-Hub-Signature-256": f"sha256={signature}",
    }


async def send(
    session: aiohttp.ClientSession, url: str, body: bytes, delivery_id: str
) -> tuple[int, float]:
    started = time.perf_counter()
    async with session.post(url, data=body, headers=headers_for(body, delivery_id)) as response:
        await response.read()
        return response.status, time.perf_counter() - started


async def wait_until_up(base: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(200):
            try:
                async with session.get(base + "/healthz") as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit("server did not start")


async def throughput(
    url: str, body: bytes, total: int, concurrency: int
) -> tuple[float, list[str]]:
    ids = [str(uuid.uuid4()) for _ in range(total)]
    queue: asyncio.Queue[str] = asyncio.Queue()
    for delivery_id in ids:
        queue.put_nowait(delivery_id)
    statuses: list[int] = []
    connector = aiohttp.TCPConnector(limit=concurrency)
    async with aiohttp.ClientSession(connector=connector) as session:

        async def client() -> None:
            while not queue.empty():
                status, _ = await send(session, url, body, queue.get_nowait())
                statuses.append(status)

        started = time.perf_counter()
        await asyncio.gather(*(client() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    if any(status != 202 for status in statuses):
        raise SystemExit(f"unexpected statuses: {sorted(set(statuses))}")
    return total / elapsed, ids


async def paced(
    url: str, body: bytes, rate: float, seconds: float, redeliver: list[str]
) -> tuple[list[float], list[str], int]:
    """Send at a fixed rate; every 20th request repeats an already-stored id."""
    latencies: list[float] = []
    ids: list[str] = []
    duplicates_ok = 0
    count = int(rate * seconds)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=200)) as session:

        async def one(index: int) -> None:
            nonlocal duplicates_ok
            if index % 20 == 19 and redeliver:
                status, latency = await send(session, url, body, redeliver[index % len(redeliver)])
                duplicates_ok += status == 200
            else:
                delivery_id = str(uuid.uuid4())
                ids.append(delivery_id)
                status, latency = await send(session, url, body, delivery_id)
                if status != 202:
                    raise SystemExit(f"unexpected status {status}")
            latencies.append(latency)

        started = time.perf_counter()
        tasks = []
        for index in range(count):
            delay = started + index / rate - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(index)))
        await asyncio.gather(*tasks)
    return latencies, ids, duplicates_ok


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--deliveries", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args()

    body = PAYLOAD.read_bytes()
    with tempfile.TemporaryDirectory() as workdir:
        database = Path(workdir) / "bench.sqlite3"
        port = free_port()
        env = {
            **os.environ,
            "APP_ID": "1",
            "PRIVATE_KEY": private_key_pem(),
            "WEBHOOK_SECRET": SECRET,
            "PORT": str(port),
            "HOST": "127.0.0.1",
            "DATABASE_URL": f"sqlite:///{database}",
            "LOG_LEVEL": "WARNING",
        }
        # The server is a separate process so it does not share this client's event loop.
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any timing
            [sys.executable, "-m", "bot", "serve"], env=env, cwd=workdir
        )
        try:
            base = f"http://127.0.0.1:{port}"
            url = base + "/api/github/webhooks"
            await wait_until_up(base)
            rate, first_ids = await throughput(url, body, args.deliveries, args.concurrency)
            latencies, paced_ids, duplicates_ok = await paced(
                url, body, args.rate, args.seconds, first_ids[:100]
            )
        finally:
            server.terminate()
            server.wait(timeout=30)
        with sqlite3.connect(database) as db:
            stored = [row[0] for row in db.execute("SELECT delivery_id FROM deliveries")]
    expected = set(first_ids) | set(paced_ids)
    exactly_once = len(stored) == len(set(stored)) == len(expected) and set(stored) == expected

    print(f"payload: {len(body)} bytes, event {EVENT!r}, server: python -m bot serve (SQLite)")
    print(f"throughput: {args.deliveries} deliveries, {args.concurrency} concurrent clients:")
    print(f"  accepted {rate:,.0f} deliveries/s")
    print(
        f"latency at {args.rate:.0f} deliveries/s for {args.seconds:.0f} s "
        f"({len(latencies)} requests):"
    )
    print(f"  p50 ack {statistics.median(latencies) * 1000:.2f} ms")
    print(f"  p99 ack {percentile(latencies, 0.99) * 1000:.2f} ms")
    print(f"  redeliveries answered 200 without storing: {duplicates_ok}")
    print(
        f"stored exactly once: {'yes' if exactly_once else 'NO'} "
        f"({len(stored)} rows for {len(expected)} distinct deliveries)"
    )
    if not exactly_once:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())

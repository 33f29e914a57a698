"""Webhook intake fuzz: thousands of hostile signed requests against the real server process.

Starts `python -m bot serve` as its own process on loopback with SQLite (as
`benchmarks/intake.py` does) and sends requests from `tests/support/intake_mutations.py`:
GitHub's example payloads with mutated bodies (wrong types, ids beyond 64 bits, deep
nesting, NaN and 1e400, duplicate keys, invalid UTF-8, NUL, lone surrogates) and headers
(event, delivery id, content type, signature), raw on the wire, from C concurrent clients.
Then it reads the database and checks that every 202 was stored exactly once with the
fields its body carries, and that nothing else was stored.

Prints the requests sent, the count of each status and the 5xx count; exits 1 on any 5xx,
any request without an answer, or any delivery not stored exactly once.

    python benchmarks/intake_fuzz.py [--requests 5000] [--concurrency 20] [--seed 1]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

import aiohttp

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.storage.body_codec import decode_body  # noqa: E402
from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.intake_mutations import (  # noqa: E402
    FuzzRequest,
    Mutator,
    expected_fields,
    send_raw,
)
from tests.support.webhook_helpers import SECRET  # noqa: E402

PATH = "/api/github/webhooks"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def refusal(answer: Any, body: bytes) -> str:
    """The intake's message, or the first line of one aiohttp wrote before the handler ran."""
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        return str(answer["error"])
    return "(aiohttp) " + body.decode("utf-8", "replace").split("\n")[0][:60]


class Tally:
    """What came back: statuses, the 202s by delivery id, and anything that broke a rule."""

    def __init__(self) -> None:
        self.statuses: Counter[int] = Counter()
        self.refusals: Counter[str] = Counter()
        self.accepted: dict[str, FuzzRequest] = {}
        self.problems: list[str] = []

    def add(self, request: FuzzRequest, status: int, answer: Any, body: bytes) -> None:
        self.statuses[status] += 1
        if 400 <= status < 500:
            self.refusals[f"{status} {refusal(answer, body)}"] += 1
        if status >= 500 or status == 0:
            self.problems.append(f"{status} for {request.label}")
        elif status == 202:
            delivery_id = answer["delivery"]
            if delivery_id in self.accepted:
                self.problems.append(f"202 twice for {delivery_id}")
            self.accepted[delivery_id] = request


async def fuzz(port: int, requests: list[FuzzRequest], concurrency: int) -> Tally:
    tally = Tally()
    queue: asyncio.Queue[FuzzRequest] = asyncio.Queue()
    for request in requests:
        queue.put_nowait(request)

    async def client() -> None:
        while not queue.empty():
            request = queue.get_nowait()
            response = await send_raw("127.0.0.1", port, PATH, request)
            tally.add(request, response.status, response.json(), response.body)

    await asyncio.gather(*(client() for _ in range(concurrency)))
    return tally


def check_database(database: Path, tally: Tally) -> int:
    """Problems found in the stored rows; returns the number of rows."""
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "SELECT d.delivery_id, d.event, d.action, d.installation_id, d.repository,"
            " b.body, b.compression FROM deliveries d JOIN delivery_bodies b USING (seq)"
        ).fetchall()
    # The body as the store gives it back (lz4-compressed on disk since migration 7).
    stored = {row[0]: (*row[:5], decode_body(row[5], row[6])) for row in rows}
    if len(stored) != len(rows) or set(stored) != set(tally.accepted):
        tally.problems.append(f"{len(rows)} rows for {len(tally.accepted)} accepted deliveries")
    for delivery_id, request in tally.accepted.items():
        row = stored.get(delivery_id)
        fields = ("delivery_id", "event", "action", "installation_id", "repository", "body")
        expected = {"delivery_id": delivery_id} | expected_fields(request)
        if row is not None and dict(zip(fields, row, strict=True)) != expected:
            tally.problems.append(f"{delivery_id} stored unlike its body: {request.label}")
    return len(rows)


def server_env(port: int, database: Path) -> dict[str, str]:
    return {
        **os.environ,
        "APP_ID": "1",
        "PRIVATE_KEY": new_key_pair().private_pem,
        "WEBHOOK_SECRET": SECRET,
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "DATABASE_URL": f"sqlite:///{database}",
        # Handlers of the fuzzed events fail fast on loopback instead of calling GitHub.
        "GITHUB_API_URL": f"http://127.0.0.1:{free_port()}",
        "JUDGE_RETRY_BASE_SECONDS": "3600",
        "LOG_LEVEL": "CRITICAL",
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=20)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()

    requests = list(Mutator(args.seed).many(args.requests))
    with tempfile.TemporaryDirectory() as workdir:
        database = Path(workdir) / "fuzz.sqlite3"
        port = free_port()
        # The server is a separate process so it does not share this client's event loop.
        server = subprocess.Popen(  # noqa: ASYNC220 - started once, before any request
            [sys.executable, "-m", "bot", "serve"], env=server_env(port, database), cwd=workdir
        )
        try:
            await wait_until_up(f"http://127.0.0.1:{port}")
            started = time.perf_counter()
            tally = await fuzz(port, requests, args.concurrency)
            elapsed = time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=30)
        rows = check_database(database, tally)

    fivexx = sum(count for status, count in tally.statuses.items() if status >= 500)
    print(f"server: python -m bot serve (SQLite), seed {args.seed}, {args.concurrency} clients")
    print(f"requests sent: {len(requests)} in {elapsed:.1f} s")
    print("status counts: " + ", ".join(f"{s}: {n}" for s, n in sorted(tally.statuses.items())))
    print(f"5xx: {fivexx}")
    print(f"no answer: {tally.statuses[0]}")
    print(f"stored: {rows} rows for {len(tally.accepted)} deliveries answered 202")
    print("refusals:")
    for message, count in tally.refusals.most_common():
        print(f"  {count:5d}  {message}")
    for problem in tally.problems[:20]:
        print(f"  problem: {problem}")
    if tally.problems:
        raise SystemExit(1)


if __name__ == "__main__":
    asyncio.run(main())

"""What each step of durable intake costs: the floor under `benchmarks/intake.py`'s ratio.

`benchmarks/intake.py` compares `bot serve` with a bare server that only verifies the
signature. This one asks what any server doing part of the product's work could reach, by
adding steps to that bare server, each stage a process of its own fed by the same client as
there (a burst of signed 29 KB `pull_request_review` deliveries over 32 keep-alive
connections). Every stage verifies the signature first:

* verify: the bare server (gidgethub's signature check, 202);
* append: one `os.write` of the body to a file, inline, unsynced, with nothing decoded:
  a journal that leaves every check of the body to later;
* decode: the whole body decoded into Python objects (`json_body.parse_webhook_body`: orjson,
  depth check), as intake did until it read only what it needs;
* read: what intake does with a body now (`body_fields.webhook_fields`: checked whole by
  simdjson, only the fields intake reads taken out);
* read + append: both: the least a server that answers 400 to a bad body can cost with
  any durable write (a WAL commit at synchronous=NORMAL does not sync either);
* read + store: reading, then the product's own store (`SqliteStorage.record_delivery`:
  group commit of the delivery row and its lz4-compressed body), awaited before the 202 as
  intake does;
* bot serve: the product itself, on SQLite (headers, routing, metrics, the workers).

It prints, for each, the median rate, the server's CPU per delivery, and the rate as a ratio
of the verify stage's in the same run. The figures say how far a design can go on this
machine before any code is written for it.

    python benchmarks/intake_floor.py [--runs 3] [--deliveries 5000] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from aiohttp import web
from intake import (  # the intake benchmark's client and servers
    PAYLOAD,
    Server,
    cpu_seconds,
    make_load,
    private_key_pem,
    serve_bare,
    server_env,
    throughput,
)

THIS_FILE = Path(__file__).resolve()
STAGES = ("verify", "append", "decode", "read", "read + append", "read + store")
PRODUCT = "bot serve"


def serve_stage(stage: str, port: int, workdir: Path) -> None:
    """One stage's server: the bare server, with the steps named by `stage` after it."""
    sys.path.insert(0, str(THIS_FILE.parent.parent))
    from bot.intake.body_fields import webhook_fields
    from bot.intake.json_body import BodyRefused, parse_webhook_body
    from bot.storage.base import NewDelivery
    from bot.storage.sqlite import SqliteStorage

    storage = SqliteStorage(str(workdir / "floor.sqlite3"))
    journal = os.open(workdir / "journal", os.O_WRONLY | os.O_CREAT | os.O_APPEND)

    async def steps(request: web.Request, body: bytes) -> web.Response | None:
        if stage == "append":
            os.write(journal, body)
            return None
        try:
            payload = parse_webhook_body(body) if stage == "decode" else webhook_fields(body)
        except BodyRefused:
            return web.Response(status=400)
        if stage == "read + append":
            os.write(journal, body)
        elif stage == "read + store":
            await storage.record_delivery(
                NewDelivery(
                    delivery_id=request.headers["X-GitHub-Delivery"],
                    event=request.headers["X-GitHub-Event"],
                    action=payload.get("action"),
                    installation_id=(payload.get("installation") or {}).get("id"),
                    repository=(payload.get("repository") or {}).get("full_name"),
                    body=body,
                    received_at=datetime.now(UTC),
                    done=True,
                )
            )
        return None

    async def open_store(app: web.Application) -> None:
        await storage.open()

    async def close_store(app: web.Application) -> None:
        await storage.close()

    def with_store(app: web.Application) -> None:
        app.on_startup.append(open_store)
        app.on_cleanup.append(close_store)

    serve_bare(
        port,
        None if stage == "verify" else steps,
        with_store if stage == "read + store" else None,
    )


@dataclass
class Burst:
    rate: float  # deliveries acknowledged per second
    cpu: float  # the server's CPU seconds per delivery


async def burst(server: Server, body: bytes, deliveries: int, concurrency: int) -> Burst:
    assert server.process is not None
    load = make_load(server.port, body, deliveries, 0)
    await throughput(server.port, load.warm_up, concurrency)
    cpu_before = cpu_seconds(server.process.pid)
    rate = await throughput(server.port, load.burst, concurrency)
    return Burst(rate, (cpu_seconds(server.process.pid) - cpu_before) / deliveries)


async def one_run(args: argparse.Namespace, body: bytes, key: str) -> dict[str, Burst]:
    figures: dict[str, Burst] = {}
    for name in (*STAGES, PRODUCT):
        # One server at a time, each on files of its own, so none takes CPU from another.
        with tempfile.TemporaryDirectory() as workdir:
            env = server_env(f"sqlite:///{workdir}/bench.sqlite3", key)
            if name == PRODUCT:
                argv = [sys.executable, "-m", "bot", "serve"]
            else:
                argv = [sys.executable, str(THIS_FILE), "--stage-server", name, "{port}", workdir]
            async with Server(name, argv, env, Path(workdir)) as server:
                figures[name] = await burst(server, body, args.deliveries, args.concurrency)
    return figures


def report(args: argparse.Namespace, body: bytes, runs: list[dict[str, Burst]]) -> None:
    print(
        f"payload: {len(body):,} bytes; {args.deliveries} deliveries a burst over"
        f" {args.concurrency} connections; medians of {len(runs)} runs"
    )
    for name in (*STAGES, PRODUCT):
        ratios = [run[name].rate / run["verify"].rate for run in runs]
        rate = statistics.median(run[name].rate for run in runs)
        cpu = statistics.median(run[name].cpu for run in runs)
        print(
            f"  {name:16} {rate:7,.0f} deliveries/s  CPU {cpu * 1e6:4.0f} us/delivery"
            f"  ratio to verify {statistics.median(ratios):.2f}x"
            f" (runs: {', '.join(f'{r:.2f}' for r in ratios)})"
        )


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deliveries", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()
    body = PAYLOAD.read_bytes()
    key = private_key_pem()
    started = time.perf_counter()
    runs = [await one_run(args, body, key) for _ in range(args.runs)]
    report(args, body, runs)
    print(f"  ({time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--stage-server":
        serve_stage(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))
    else:
        asyncio.run(main())

"""Webhook intake benchmark: durable intake against a bare server that only checks signatures.

Two servers, each a process of its own on loopback, fed by the same client:

* durable: `python -m bot serve` on a fresh SQLite file (or, with `--postgres`, a fresh
  PostgreSQL database): verify, check, store, commit, 202;
* bare: a minimal aiohttp app that verifies the signature with gidgethub and answers 202,
  nothing else (this file run with `--bare-server PORT`): the ceiling for intake in Python.

Each run starts both afresh and measures, for each:
  1. throughput: signed deliveries from C keep-alive connections, each sending its next one as
     soon as the last is acknowledged;
  2. once the durable server has no delivery left pending or processing (how long after the
     burst began is printed too), latency: deliveries paced at a fixed rate (default 200/s),
     p50/p99 acknowledgement latency; every 20th repeats an already acknowledged id (the
     durable server must answer 200);
  3. the server process's CPU time per delivery during the burst (checkpoint thread included),
     and until the burst's deliveries were all processed (the workers' share included).
It then reads the durable server's database to check every delivery was stored exactly once.
The figures printed are the medians of the runs, with the ratio durable/bare.

The payload is GitHub's 29 KB `pull_request_review` example. The client speaks HTTP/1.1 over
raw asyncio streams with the requests built in advance of timing, so that on a small machine it
spends little of the CPU the servers compete for.

    python benchmarks/intake.py [--runs 3] [--deliveries 5000] [--concurrency 32]
                                [--rate 200] [--seconds 10] [--profile DIR]
                                [--postgres postgresql://postgres@127.0.0.1:5432/test]

The durable server runs without the look for missed deliveries (there is no GitHub here).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import hmac
import logging
import os
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import aiohttp
import asyncpg
from aiohttp import web
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

THIS_FILE = Path(__file__).resolve()
ROOT = THIS_FILE.parent.parent
EVENT = "pull_request_review"
PAYLOAD = ROOT / "tests" / "fixtures" / "github" / "webhooks" / EVENT / "submitted.json"
SECRET = "benchmark-secret-value"
PATH = "/api/github/webhooks"
WARM_UP = 300


# -- the bare server ------------------------------------------------------------------------


# What a server built on the bare one does with a verified body; its answer, if any, is
# sent instead of the 202 (`benchmarks/intake_floor.py` adds intake's steps this way).
AfterVerify = Callable[[web.Request, bytes], Awaitable[web.Response | None]]


def serve_bare(
    port: int,
    after_verify: AfterVerify | None = None,
    prepare: Callable[[web.Application], None] | None = None,
) -> None:
    """Verify the signature as intake does (gidgethub), answer 202; nothing else, unless
    given `after_verify` (and `prepare`, which adds to the app before it runs)."""
    from gidgethub import ValidationFailure
    from gidgethub.sansio import validate_event

    async def webhook(request: web.Request) -> web.Response:
        body = await request.read()
        try:
            validate_event(
                body, signature=request.headers.get("X-Hub-Signature-256", ""), secret=SECRET
            )
        except ValidationFailure:
            return web.Response(status=401)
        if after_verify is not None:
            answer = await after_verify(request, body)
            if answer is not None:  # a Response is a mapping: empty, it is false
                return answer
        return web.json_response({"ok": True}, status=202)

    async def healthz(request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})

    # The same logging level as the durable server's LOG_LEVEL: no access log lines.
    logging.basicConfig(level=logging.WARNING)
    app = web.Application(client_max_size=25 * 1024 * 1024 + 1)
    app.router.add_post(PATH, webhook)
    app.router.add_get("/healthz", healthz)
    if prepare is not None:
        prepare(app)
    web.run_app(app, host="127.0.0.1", port=port, print=None)


# -- servers under test ---------------------------------------------------------------------


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


def server_env(database_url: str, key: str) -> dict[str, str]:
    """The environment `bot serve` runs in here (the bare server ignores it)."""
    return {
        **{k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")},
        "APP_ID": "1",
        "PRIVATE_KEY": key,
        "WEBHOOK_SECRET": SECRET,
        "HOST": "127.0.0.1",
        "DATABASE_URL": database_url,
        "LOG_LEVEL": "WARNING",
        # No GitHub here: the look for missed deliveries would only retry an unreachable
        # api.github.com, signing a JWT each time, in the middle of the measurements.
        "JUDGE_REDELIVER_MISSED": "false",
    }


class Server:
    def __init__(self, name: str, argv: list[str], env: dict[str, str], workdir: Path) -> None:
        self.name = name
        self.port = free_port()
        self.argv = argv
        self.env = {**env, "PORT": str(self.port)}
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    async def __aenter__(self) -> Server:
        argv = [arg.replace("{port}", str(self.port)) for arg in self.argv]
        # A process of its own, so it shares neither this client's event loop nor its GIL.
        self.process = subprocess.Popen(argv, env=self.env, cwd=self.workdir)  # noqa: ASYNC220
        await wait_until_up(f"http://127.0.0.1:{self.port}/healthz")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self.process is not None:
            self.process.terminate()
            await asyncio.to_thread(self.process.wait, 30)


async def wait_until_up(url: str) -> None:
    async with aiohttp.ClientSession() as session:
        for _ in range(400):
            try:
                async with session.get(url) as response:
                    if response.status == 200:
                        return
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.05)
    raise SystemExit(f"server did not start: {url}")


# -- the client -----------------------------------------------------------------------------


def request_bytes(port: int, body: bytes, delivery_id: str) -> bytes:
    signature = hmac.new(SECRET.encode(), body, hashlib.sha256).hexdigest()
    head = (
        f"POST {PATH} HTTP/1.1\r\n"
        f"Host: 127.0.0.1:{port}\r\n"
        "User-Agent: GitHub-Hookshot/benchmark\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"X-GitHub-Event: {EVENT}\r\n"
        f"X-GitHub-Delivery: {delivery_id}\r\n"
        f"X-Hub-Signature-256: sha256={signature}\r\n"
        "\r\n"
    )
    return head.encode() + body


class Connection:
    """One keep-alive HTTP/1.1 connection; one request in flight at a time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def post(self, request: bytes) -> tuple[int, float]:
        started = time.perf_counter()
        self.writer.write(request)
        status = int((await self.reader.readline()).split()[1])
        length = 0
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        await self.reader.readexactly(length)
        return status, time.perf_counter() - started

    def close(self) -> None:
        self.writer.close()


@dataclass
class Sent:
    statuses: dict[str, int]  # delivery id -> status of its first sending
    repeats: list[int]  # statuses of redeliveries
    latencies: list[float]


async def throughput(port: int, requests: list[tuple[str, bytes]], concurrency: int) -> float:
    """Deliveries acknowledged per second; raises unless every one was a 202."""
    connections = [await Connection.open(port) for _ in range(concurrency)]
    pending: Iterator[tuple[str, bytes]] = iter(requests)
    statuses: list[int] = []

    async def client(connection: Connection) -> None:
        for _, request in pending:
            status, _ = await connection.post(request)
            statuses.append(status)

    started = time.perf_counter()
    await asyncio.gather(*(client(connection) for connection in connections))
    elapsed = time.perf_counter() - started
    for connection in connections:
        connection.close()
    if set(statuses) != {202}:
        raise SystemExit(f"unexpected statuses: {sorted(set(statuses))}")
    return len(requests) / elapsed


async def paced(port: int, requests: list[tuple[str, bytes, bool]], rate: float) -> Sent:
    """Send at a fixed rate, each on an idle connection (a new one if none is idle)."""
    idle = [await Connection.open(port) for _ in range(8)]
    sent = Sent({}, [], [])

    async def one(delivery_id: str, request: bytes, repeat: bool) -> None:
        connection = idle.pop() if idle else await Connection.open(port)
        status, latency = await connection.post(request)
        idle.append(connection)
        sent.latencies.append(latency)
        if repeat:
            sent.repeats.append(status)
        else:
            sent.statuses[delivery_id] = status

    started = time.perf_counter()
    tasks = []
    for index, (delivery_id, request, repeat) in enumerate(requests):
        delay = started + index / rate - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(delivery_id, request, repeat)))
    await asyncio.gather(*tasks)
    for connection in idle:
        connection.close()
    return sent


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


# -- one run --------------------------------------------------------------------------------


@dataclass
class Figures:
    rate: float
    p50: float
    p99: float
    cpu: float  # the server's CPU seconds per delivery in the throughput phase
    drained: float  # seconds from the burst's start until no delivery was left to process
    cpu_drained: float  # the server's CPU seconds per delivery from its start until drained
    during: int  # the burst's deliveries already processed when its last was acknowledged


@dataclass
class Load:
    """What one server is sent in one run: a warm-up, the burst, the paced phase."""

    warm_up: list[tuple[str, bytes]]
    burst: list[tuple[str, bytes]]
    paced: list[tuple[str, bytes, bool]]

    @property
    def distinct(self) -> set[str]:
        return {i for i, _ in self.warm_up + self.burst} | {i for i, _, r in self.paced if not r}


def make_load(port: int, body: bytes, deliveries: int, paced_count: int) -> Load:
    def fresh(count: int) -> list[tuple[str, bytes]]:
        ids = [str(uuid.uuid4()) for _ in range(count)]
        return [(i, request_bytes(port, body, i)) for i in ids]

    warm_up, burst = fresh(WARM_UP), fresh(deliveries)
    paced_requests: list[tuple[str, bytes, bool]] = []
    for index, (delivery_id, request) in enumerate(fresh(paced_count)):
        if index % 20 == 19:
            # A redelivery: GitHub keeps the id; the durable server must not store it again.
            old_id, old_request = burst[index % len(burst)]
            paced_requests.append((old_id, old_request, True))
        else:
            paced_requests.append((delivery_id, request, False))
    return Load(warm_up, burst, paced_requests)


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SqliteDatabase:
    """The durable server's SQLite file, read by the benchmark on a connection of its own."""

    def __init__(self, workdir: Path) -> None:
        self.path = workdir / "bench.sqlite3"
        self.url = f"sqlite:///{self.path}"
        self.name = "SQLite"

    async def __aenter__(self) -> SqliteDatabase:
        return self

    async def __aexit__(self, *_: object) -> None:
        return None

    async def rows(self, sql: str) -> list[tuple[object, ...]]:
        with contextlib.closing(sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)) as db:
            return db.execute(sql).fetchall()


class PostgresDatabase:
    """A database of its own for one run, created through `admin_url` and dropped after."""

    def __init__(self, admin_url: str) -> None:
        self.admin_url = admin_url
        self.database = f"judge_bench_{uuid.uuid4().hex[:12]}"
        # The same server and credentials, the fresh database's name in place of the path.
        self.url = admin_url.rsplit("/", 1)[0] + "/" + self.database
        self.name = "PostgreSQL"

    async def __aenter__(self) -> PostgresDatabase:
        admin = await asyncpg.connect(self.admin_url)
        try:
            await admin.execute(f'CREATE DATABASE "{self.database}"')
        finally:
            await admin.close()
        return self

    async def __aexit__(self, *_: object) -> None:
        admin = await asyncpg.connect(self.admin_url)
        try:
            await admin.execute(f'DROP DATABASE IF EXISTS "{self.database}"')
        finally:
            await admin.close()

    async def rows(self, sql: str) -> list[tuple[object, ...]]:
        connection = await asyncpg.connect(self.url)
        try:
            return [tuple(row) for row in await connection.fetch(sql)]
        finally:
            await connection.close()


Database = SqliteDatabase | PostgresDatabase


async def done_count(database: Database | None) -> int:
    if database is None:
        return 0
    [(done,)] = await database.rows("SELECT COUNT(*) FROM deliveries WHERE status = 'done'")
    return int(str(done))


async def until_idle(database: Database | None) -> None:
    """Until no stored delivery is pending or processing (at once for the bare server)."""
    if database is None:
        return
    while True:
        [(open_,)] = await database.rows(
            "SELECT COUNT(*) FROM deliveries WHERE status IN ('pending', 'processing')"
        )
        if not open_:
            return
        await asyncio.sleep(0.05)


async def measure(
    server: Server, load: Load, args: argparse.Namespace, database: Database | None = None
) -> tuple[Figures, Sent]:
    """Throughput of a burst, then, once the server has worked off what the burst left
    it, the ack latency at a steady rate: a burst's backlog is the first figure's cost."""
    assert server.process is not None
    await throughput(server.port, load.warm_up, args.concurrency)
    await until_idle(database)
    done_before = await done_count(database)
    cpu_before = cpu_seconds(server.process.pid)
    started = time.perf_counter()
    rate = await throughput(server.port, load.burst, args.concurrency)
    cpu = (cpu_seconds(server.process.pid) - cpu_before) / len(load.burst)
    during = await done_count(database) - done_before
    await until_idle(database)
    drained = time.perf_counter() - started
    cpu_drained = (cpu_seconds(server.process.pid) - cpu_before) / len(load.burst)
    sent = await paced(server.port, load.paced, args.rate)
    figures = Figures(
        rate,
        statistics.median(sent.latencies),
        percentile(sent.latencies, 0.99),
        cpu,
        drained,
        cpu_drained,
        during,
    )
    return figures, sent


async def stored_ids(database: Database) -> list[str]:
    return [str(row[0]) for row in await database.rows("SELECT delivery_id FROM deliveries")]


async def one_run(args: argparse.Namespace, body: bytes, key: str) -> tuple[Figures, Figures]:
    paced_count = int(args.rate * args.seconds)
    with tempfile.TemporaryDirectory() as workdir:
        database: Database = (
            PostgresDatabase(args.postgres) if args.postgres else SqliteDatabase(Path(workdir))
        )
        env = server_env(database.url, key)
        bare_argv = [sys.executable, str(THIS_FILE), "--bare-server", "{port}"]
        bare = Server("bare", bare_argv, env, Path(workdir))
        durable_argv = [sys.executable, "-m", "bot", "serve"]
        if args.profile is not None:
            # cProfile slows the server down: profile runs' figures are not comparable.
            profile = f"{args.profile}/durable-{uuid.uuid4().hex[:8]}.prof"
            durable_argv[1:1] = ["-m", "cProfile", "-o", profile]
        durable = Server("durable", durable_argv, env, Path(workdir))
        # One server at a time: the other must not take CPU from the one being measured.
        async with bare:
            bare_figures, bare_sent = await measure(
                bare, make_load(bare.port, body, args.deliveries, paced_count), args
            )
        if set(bare_sent.statuses.values()) | set(bare_sent.repeats) != {202}:
            raise SystemExit("the bare server answered something other than 202")
        load = make_load(durable.port, body, args.deliveries, paced_count)
        async with database:
            async with durable:
                durable_figures, sent = await measure(durable, load, args, database)
            check_durable(load, sent, await stored_ids(database))
    return bare_figures, durable_figures


def check_durable(load: Load, sent: Sent, stored: list[str]) -> None:
    if set(sent.statuses.values()) != {202} or set(sent.repeats) != {200}:
        raise SystemExit(
            f"unexpected statuses: new {sorted(set(sent.statuses.values()))}, "
            f"redelivered {sorted(set(sent.repeats))}"
        )
    expected = load.distinct
    if not len(stored) == len(set(stored)) == len(expected) or set(stored) != expected:
        raise SystemExit(
            f"NOT stored exactly once: {len(stored)} rows for {len(expected)} distinct deliveries"
        )


# -- report ---------------------------------------------------------------------------------


def median_of(figures: list[Figures], pick: Callable[[Figures], float]) -> float:
    return statistics.median(pick(f) for f in figures)


def report(args: argparse.Namespace, body: bytes, runs: list[tuple[Figures, Figures]]) -> None:
    bare = [b for b, _ in runs]
    durable = [d for _, d in runs]
    print(
        f"payload: {len(body):,} bytes, event {EVENT!r}; {args.concurrency} connections; "
        f"medians of {len(runs)} runs"
    )
    for name, figures in (
        ("bare (signature only)", bare),
        (f"durable (bot serve, {'PostgreSQL' if args.postgres else 'SQLite'})", durable),
    ):
        print(
            f"  {name:28} {median_of(figures, lambda f: f.rate):7,.0f} deliveries/s   "
            f"at {args.rate:.0f}/s: p50 {median_of(figures, lambda f: f.p50) * 1000:.2f} ms, "
            f"p99 {median_of(figures, lambda f: f.p99) * 1000:.2f} ms; "
            f"server CPU {median_of(figures, lambda f: f.cpu) * 1e6:.0f} us/delivery"
        )
    ratios = [d.rate / b.rate for b, d in runs]
    print(
        f"  ratio durable/bare: {statistics.median(ratios):.2f}x"
        f" (runs: {', '.join(f'{r:.2f}' for r in ratios)})"
    )
    # CPU time is what the server itself spent, whatever else the machine ran meanwhile: on
    # a shared machine (CPU steal) it varies less from run to run than the rate does.
    cpu_ratios = [b.cpu / d.cpu for b, d in runs]
    print(
        f"  CPU per delivery in the burst, bare/durable: {statistics.median(cpu_ratios):.2f}x"
        f" (runs: {', '.join(f'{r:.2f}' for r in cpu_ratios)})"
    )
    print(
        "  durable runs: "
        + "; ".join(
            f"{d.rate:,.0f}/s p50 {d.p50 * 1000:.2f} ms p99 {d.p99 * 1000:.2f} ms" for d in durable
        )
    )
    print(
        f"  durable: the burst's {args.deliveries} deliveries all done"
        f" {median_of(durable, lambda f: f.drained):.1f} s after it began;"
        f" server CPU until then {median_of(durable, lambda f: f.cpu_drained) * 1e6:.0f}"
        f" us/delivery; {median_of(durable, lambda f: f.during):.0f} processed during the burst"
    )
    print("  stored exactly once, redeliveries answered 200: yes")


def absolute_path(text: str) -> str:
    # The servers run in a temporary directory of their own.
    return str(Path(text).resolve())


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--deliveries", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument(
        "--profile",
        metavar="DIR",
        type=absolute_path,
        help="run the durable server under cProfile, its stats saved in DIR",
    )
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="store in PostgreSQL instead of SQLite: a database of each run's own is created"
        " through URL (e.g. postgresql://postgres@127.0.0.1:5432/test) and dropped after",
    )
    args = parser.parse_args()

    body = PAYLOAD.read_bytes()
    key = private_key_pem()
    runs = [await one_run(args, body, key) for _ in range(args.runs)]
    report(args, body, runs)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--bare-server":
        serve_bare(int(sys.argv[2]))
    else:
        asyncio.run(main())

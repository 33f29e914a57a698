"""`python -m bot serve` as a process of its own, killed with SIGKILL mid-delivery and restarted.

The crash scenario, shared by `tests/intake/test_crash_recovery.py` (short lease, in the suite)
and `benchmarks/recovery.py` (default settings):

  1. the server runs against the fake GitHub, which holds the installation-token request back,
     so the delivery's handler is blocked on GitHub (as a slow judgment would be);
  2. a signed `pull_request.labeled` webhook arrives; its handler starts and blocks;
  3. after `hold_seconds` the process is killed with SIGKILL: no clean-up, no release;
  4. a new process starts on the same database; the clock runs from the kill until the
     delivery is done.

The database is read directly (read-only SQLite), as an operator would.

Several processes on one PostgreSQL database (`fresh_postgres_database`, `start_all`) are
the replicas of `tests/merging/test_two_processes.py`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import sqlite3
import sys
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import aiohttp
import asyncpg

from tests.support.fakes.github_server import FakeGitHub
from tests.support.webhook_helpers import SECRET, example, webhook_headers

PAYLOAD_REPO = "Codertocat/Hello-World"  # the repository of GitHub's example payloads
TOKEN_OPERATION = "apps/create-installation-access-token"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def server_env(
    fake: FakeGitHub, private_key: str, database: Path, **settings: str
) -> dict[str, str]:
    """The server's environment: the App on the fake, SQLite at `database`, and `settings`.
    JUDGE_* variables of the calling environment are dropped so defaults mean defaults."""
    inherited = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    return {
        **inherited,
        "APP_ID": str(fake.app_id),
        "PRIVATE_KEY": private_key,
        "WEBHOOK_SECRET": SECRET,
        "HOST": "127.0.0.1",
        "GITHUB_API_URL": fake.base_url,
        "DATABASE_URL": f"sqlite:///{database}",
        "LOG_LEVEL": "WARNING",
        "LOG_FORMAT": "pretty",
        # Off unless a test asks: the providers here are fakes or unreachable on purpose.
        "JUDGE_SELF_CHECK_INTERVAL_SECONDS": "0",
        "JUDGE_PROBE_INTERVAL_SECONDS": "0",
        "JUDGE_KPI_REFRESH_SECONDS": "0",
        "JUDGE_REDELIVER_MISSED": "false",
        **settings,
    }


class ServerProcess:
    """One `python -m bot serve`, its log in `workdir`."""

    def __init__(self, env: dict[str, str], workdir: Path, name: str) -> None:
        self.port = free_port()
        self.env = {**env, "PORT": str(self.port)}
        self.workdir = workdir
        self.log_path = workdir / f"{name}.log"
        self.process: asyncio.subprocess.Process | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        with self.log_path.open("wb") as log:
            # cwd is the work directory, so no .env of the repository is read.
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "bot",
                "serve",
                env=self.env,
                cwd=self.workdir,
                stdout=log,
                stderr=log,
            )
        await self._wait_until_up()

    async def _wait_until_up(self, seconds: float = 30.0) -> None:
        assert self.process is not None
        deadline = time.monotonic() + seconds
        async with aiohttp.ClientSession() as session:
            while time.monotonic() < deadline:
                if self.process.returncode is not None:
                    break
                with contextlib.suppress(aiohttp.ClientError):
                    async with session.get(self.base_url + "/healthz") as response:
                        if response.status == 200:
                            return
                await asyncio.sleep(0.05)
        raise RuntimeError(f"server did not start:\n{self.log_path.read_text()[-3000:]}")

    async def kill(self) -> None:
        """SIGKILL: the process gets no chance to release or finish anything."""
        if self.process is not None and self.process.returncode is None:
            self.process.send_signal(signal.SIGKILL)
            await self.process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            self.process.terminate()
            try:
                async with asyncio.timeout(30):
                    await self.process.wait()
            except TimeoutError:
                await self.kill()


@dataclass(frozen=True)
class DeliveryRow:
    status: str
    attempts: int
    lease_owner: str | None
    lease_expires_at: datetime | None


def _read_delivery(database: Path, delivery_id: str) -> DeliveryRow | None:
    with contextlib.closing(sqlite3.connect(f"file:{database}?mode=ro", uri=True)) as db:
        row = db.execute(
            "SELECT status, attempts, lease_owner, lease_expires_at FROM deliveries"
            " WHERE delivery_id = ?",
            (delivery_id,),
        ).fetchone()
    if row is None:
        return None
    expires = None if row[3] is None else _EPOCH + timedelta(microseconds=row[3])
    return DeliveryRow(row[0], row[1], row[2], expires)


async def read_delivery(database: Path, delivery_id: str) -> DeliveryRow | None:
    return await asyncio.to_thread(_read_delivery, database, delivery_id)


async def deliver(server: ServerProcess, event: str, body: bytes, delivery_id: str) -> int:
    headers = webhook_headers(event, body, delivery_id=delivery_id)
    async with (
        aiohttp.ClientSession() as session,
        session.post(server.base_url + "/api/github/webhooks", data=body, headers=headers) as resp,
    ):
        return resp.status


@dataclass(frozen=True)
class Recovery:
    """What the crash scenario saw."""

    seconds: float  # from the SIGKILL until the delivery was done (restart included)
    lease_left: float  # how much of the delivery's lease was left at the kill
    before_kill: DeliveryRow  # the delivery just before the kill
    done: DeliveryRow
    token_requests: int


async def crash_and_recover(
    fake: FakeGitHub,
    private_key: str,
    workdir: Path,
    *,
    hold_seconds: float,
    settings: dict[str, str] | None = None,
    done_within: float = 120.0,
) -> Recovery:
    """Run the scenario in the module docstring; `settings` are extra environment values."""
    if PAYLOAD_REPO.lower() not in fake.repos:
        fake.add_repo(PAYLOAD_REPO, default_branch="master", installation_id=1)
    database = workdir / "judge.sqlite3"
    env = server_env(fake, private_key, database, **(settings or {}))
    fake.hold(TOKEN_OPERATION)
    first = ServerProcess(env, workdir, "first")
    second = ServerProcess(env, workdir, "second")
    try:
        await first.start()
        body = example("pull_request", "labeled")
        assert await deliver(first, "pull_request", body, "crash-1") == 202
        async with asyncio.timeout(30):
            await fake.held.wait()  # the handler is running, blocked on GitHub
        await asyncio.sleep(hold_seconds)
        before_kill = await read_delivery(database, "crash-1")
        assert before_kill is not None
        await first.kill()
        killed_at = time.monotonic()
        killed_wall = datetime.now(UTC)
        await second.start()
        done = await _until_done(database, "crash-1", done_within)
        seconds = time.monotonic() - killed_at
    finally:
        fake.release()  # the first process's request, still held, may now be answered
        await first.kill()
        await second.stop()
    expires = before_kill.lease_expires_at
    lease_left = 0.0 if expires is None else (expires - killed_wall).total_seconds()
    return Recovery(seconds, lease_left, before_kill, done, fake.count(TOKEN_OPERATION))


async def _until_done(database: Path, delivery_id: str, seconds: float) -> DeliveryRow:
    async with asyncio.timeout(seconds):
        while True:
            row = await read_delivery(database, delivery_id)
            if row is not None and row.status == "done":
                return row
            await asyncio.sleep(0.05)


@contextlib.asynccontextmanager
async def fresh_postgres_database(admin_url: str) -> AsyncIterator[str]:
    """A new, empty PostgreSQL database on the server of `admin_url` (one of its own, so
    server processes, which use the default schema, meet no other test's rows); its URL.
    Dropped afterwards, with any connection a killed process left behind."""
    name = f"judge_proc_{uuid.uuid4().hex[:16]}"
    admin = await asyncpg.connect(admin_url)
    try:
        await admin.execute(f'CREATE DATABASE "{name}"')
        try:
            yield urlunsplit(urlsplit(admin_url)._replace(path=f"/{name}"))
        finally:
            await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    finally:
        await admin.close()


async def start_all(servers: Sequence[ServerProcess]) -> None:
    """Start processes side by side (replicas booting together), each until it is up."""
    await asyncio.gather(*(server.start() for server in servers))


async def stop_all(servers: Sequence[ServerProcess]) -> None:
    await asyncio.gather(*(server.stop() for server in servers))

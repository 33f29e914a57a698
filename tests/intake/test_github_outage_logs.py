"""What an unreachable GitHub costs in log: the App as deployed (its JSON log lines, at INFO),
three pull requests arriving while GitHub's address refuses every connection, each tried
five times. Issue 24 measured 159 KB for three failed deliveries; each failed attempt is now
one line naming host, request and cause.

`pytest tests/intake/test_github_outage_logs.py -s` prints the figures."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp

from bot.github.client import GitHubApp, Timing
from bot.logs import DEFAULT_MESSAGE_KEY, JsonFormatter, SecretScrubber
from bot.settings.features import FeatureSettings
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus, Storage
from tests.support.app_helpers import make_settings, running_app
from tests.support.delivery_helpers import T0, ManualClock
from tests.support.fakes.github_fixtures import APP_ID, KeyPair
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import judge_settings
from tests.support.webhook_helpers import example, webhook_headers

DELIVERIES = 3
TRIES = 5
BYTES_PER_ATTEMPT = 1500  # one JSON line with its context; a traceback alone is 3-6 KB


async def no_wait(seconds: float) -> None:
    """The client's backoff between tries of one request, in virtual time: instant."""


def refused_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class JsonLog:
    """The App's own log handler (secret scrubbing, JSON lines) writing to memory."""

    def __init__(self) -> None:
        self.stream = io.StringIO()
        self.handler = logging.StreamHandler(self.stream)
        self.handler.addFilter(SecretScrubber())
        self.handler.setFormatter(JsonFormatter())
        self.handler.setLevel(logging.INFO)

    def __enter__(self) -> JsonLog:
        root = logging.getLogger()
        self.level = root.level
        root.addHandler(self.handler)
        root.setLevel(logging.INFO)
        return self

    def __exit__(self, *exc: object) -> None:
        root = logging.getLogger()
        root.removeHandler(self.handler)
        root.setLevel(self.level)

    def lines(self) -> Iterator[dict[str, object]]:
        for line in self.stream.getvalue().splitlines():
            yield json.loads(line)


async def settled(storage: Storage, clock: ManualClock) -> None:
    async with asyncio.timeout(60):
        while True:
            counts = await storage.count_deliveries()
            waiting = await storage.list_deliveries(DeliveryStatus.PENDING, limit=1000)
            if counts[DeliveryStatus.PROCESSING] == 0 and all(
                d.next_attempt_at > clock() for d in waiting
            ):
                return
            await asyncio.sleep(0.02)


async def test_log_bytes_per_failed_delivery(
    tmp_path: Path,
    github_keypair: KeyPair,
    github_session: aiohttp.ClientSession,
    fake_llm: FakeOpenAIServer,
) -> None:
    clock = ManualClock(T0)
    github = GitHubApp(
        app_id=str(APP_ID),
        private_key=github_keypair.private_pem,
        session=github_session,
        api_url=f"http://127.0.0.1:{refused_port()}",
        timing=Timing(sleep=no_wait, monotonic=time.monotonic, now=clock),
    )
    settings = make_settings(
        github_keypair.private_pem,
        tmp_path,
        JUDGE_WORKERS=1,
        JUDGE_POLL_INTERVAL=0.01,
        JUDGE_MAX_ATTEMPTS=TRIES,
        JUDGE_RETRY_BASE_SECONDS=2,
    )
    store = storage_from_url(settings.database_url)
    async with running_app(
        settings,
        storage=store,
        github=github,
        judge_settings=judge_settings(fake_llm),
        features=FeatureSettings(),
        clock=clock,
    ) as (client, _):
        with JsonLog() as log:
            for _ in range(DELIVERIES):
                body = example("pull_request", "opened")
                answer = await client.post(
                    settings.webhook_path,
                    data=body,
                    headers=webhook_headers("pull_request", body),
                )
                assert answer.status == 202
            await settled(store, clock)  # the first try, on arrival
            for _ in range(TRIES - 1):
                waiting = await store.list_deliveries(DeliveryStatus.PENDING, limit=1000)
                clock.now = min(d.next_attempt_at for d in waiting)
                await settled(store, clock)
    size = len(log.stream.getvalue().encode())
    lines = list(log.lines())
    tracebacks = sum(1 for line in lines if "exception" in line)
    print(
        f"\n{DELIVERIES} deliveries x {TRIES} tries against a refused GitHub: {size} bytes, "
        f"{len(lines)} lines ({tracebacks} with a traceback); "
        f"{size / DELIVERIES:.0f} bytes a delivery, {size / DELIVERIES / TRIES:.0f} a try"
    )
    assert tracebacks == 0
    assert size <= DELIVERIES * TRIES * BYTES_PER_ATTEMPT
    failures = [line for line in lines if line["level"] == "warning"]
    assert len(failures) == DELIVERIES * TRIES, "one line a failed attempt"
    assert all("POST /app/installations/" in str(line[DEFAULT_MESSAGE_KEY]) for line in failures)

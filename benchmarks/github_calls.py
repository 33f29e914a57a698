"""GitHub API calls per pull-request event, and round trips before the first model call.

Runs the real app against the fake GitHub and the fake LLM (both real HTTP servers on
loopback, from tests/fakes) and judges pull requests of 1, 10 and 100 watched files. The
installation token and the repository config are warmed by one earlier event, as they
are in a running deployment. Prints, per pull request:

  * the GitHub calls the event caused, by operation;
  * the sequential GitHub round trips before the first model call (the longest chain of
    requests each starting after the previous one ended, measured on the bot's side).

    python benchmarks/github_calls.py
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import aiohttp
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.app import create_app  # noqa: E402
from bot.github.client import GitHubApp, RetryPolicy  # noqa: E402
from bot.storage import storage_from_url  # noqa: E402
from bot.storage.base import DeliveryStatus  # noqa: E402
from tests.support.app_helpers import make_settings  # noqa: E402
from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.fakes.llm_server import FakeOpenAIServer, RecordedRequest, Reply  # noqa: E402
from tests.support.flow_helpers import QUICK, judge_config, pull_request_payload  # noqa: E402
from tests.support.webhook_helpers import webhook_headers  # noqa: E402

REPO = "octo/hello"
SIZES = (1, 10, 100)


class TimedLLM(FakeOpenAIServer):
    """The fake LLM, noting when each request arrived."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    async def _read(self, request: web.Request) -> RecordedRequest:
        self.arrivals.append(time.monotonic())
        return await super()._read(request)


def tracing() -> tuple[aiohttp.TraceConfig, list[tuple[float, float, str]]]:
    spans: list[tuple[float, float, str]] = []
    trace = aiohttp.TraceConfig()

    async def start(session: Any, context: SimpleNamespace, params: Any) -> None:
        context.started = time.monotonic()

    async def end(session: Any, context: SimpleNamespace, params: Any) -> None:
        spans.append((context.started, time.monotonic(), f"{params.method} {params.url.path}"))

    trace.on_request_start.append(start)
    trace.on_request_end.append(end)
    return trace, spans


def longest_chain(spans: list[tuple[float, float, str]]) -> int:
    """Longest sequence of requests where each starts after the previous ended."""
    ordered = sorted(spans)
    best = [1] * len(ordered)
    for i, (start, _end, _) in enumerate(ordered):
        for j in range(i):
            if ordered[j][1] <= start:
                best[i] = max(best[i], best[j] + 1)
    return max(best, default=0)


def accept_reply() -> Reply:
    return Reply.json(
        {"semantic": 4, "pragmatic": 4, "syntactic": 5, "reasoning": "fine", "improvements": []}
    )


async def run() -> None:
    key = new_key_pair()
    pem = key.private_pem
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    fake.add_installation(1, "octo")
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.add_commit(REPO, {".github/judge.yml": "limits:\n  max_files: 100\n"}, branch="main")
    llm = TimedLLM()
    llm.default = accept_reply()
    await fake.start()
    await llm.start()
    trace, spans = tracing()
    with tempfile.TemporaryDirectory() as workdir:
        settings = make_settings(pem, Path(workdir))
        store = storage_from_url(settings.database_url)
        async with aiohttp.ClientSession(trace_configs=[trace]) as session:
            github = GitHubApp(
                app_id="12345",
                private_key=pem,
                session=session,
                api_url=fake.base_url,
                graphql_url=fake.graphql_url,
                policy=RetryPolicy(write_interval=0.0),
            )
            app = create_app(settings, storage=store, github=github, judge_config=judge_config(llm))
            client = TestClient(TestServer(app, host="127.0.0.1"))
            await client.start_server()
            try:
                rows = []
                for index, size in enumerate((1, *SIZES)):
                    files = {
                        f"docs/part-{index}-{n}.md": f"# Part {n}\n\nText {index}.\n"
                        for n in range(size)
                    }
                    sha = fake.add_commit(REPO, files, branch=f"topic-{index}")
                    number = fake.add_pull(
                        REPO,
                        None,
                        sha,
                        head_ref=f"topic-{index}",
                        author="agent",
                        title=f"Docs {index}",
                    )
                    calls_before, spans_before = len(fake.calls), len(spans)
                    llm.arrivals.clear()
                    await deliver(
                        client,
                        settings.webhook_path,
                        store,
                        pull_request_payload(fake, "opened", number),
                    )
                    if index == 0:
                        continue  # warm-up: token and config now cached, as in production
                    calls = fake.calls[calls_before:]
                    first_model = min(llm.arrivals) if llm.arrivals else float("inf")
                    before_model = [s for s in spans[spans_before:] if s[1] <= first_model]
                    rows.append(
                        (size, Counter(c.operation_id for c in calls), longest_chain(before_model))
                    )
            finally:
                await client.close()
                await fake.close()
                await llm.close()
    print("GitHub calls per pull_request.opened event (token and config cached):")
    for size, counts, chain in rows:
        total = sum(counts.values())
        kinds = ", ".join(f"{op} {n}" for op, n in sorted(counts.items()))
        print(
            f"  {size:>3} watched files: {total} calls ({kinds}); "
            f"{chain} sequential round trips before the first model call"
        )
    if fake.errors:
        print("fake GitHub validation errors:", *fake.errors, sep="\n  ")
        raise SystemExit(1)


async def deliver(
    client: TestClient[web.Request, web.Application], path: str, store: Any, payload: dict[str, Any]
) -> None:
    body = json.dumps(payload).encode()
    delivery_id = str(uuid.uuid4())
    response = await client.post(
        path, data=body, headers=webhook_headers("pull_request", body, delivery_id=delivery_id)
    )
    assert response.status == 202
    async with asyncio.timeout(120):
        while True:
            stored = await store.get_delivery(delivery_id)
            if stored is not None and stored.status in (DeliveryStatus.DONE, DeliveryStatus.FAILED):
                if stored.status is DeliveryStatus.FAILED:
                    raise SystemExit(f"delivery failed: {stored.last_error}")
                return
            await asyncio.sleep(0.01)


if __name__ == "__main__":
    del QUICK
    asyncio.run(run())

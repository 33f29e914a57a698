"""Does the server stay responsive while it processes the worst inputs it has met?

Runs the real app (SQLite) against the fake GitHub and the fake LLM, all on one event
loop as a deployment's process would be, and for each hostile input polls `GET /healthz`
every 10 ms while the input is processed. A handler that blocks the loop shows up here
as a slow health check. Prints, per input: how the server answered, how long processing
took, and the median and worst `/healthz` latency meanwhile.

    python benchmarks/hostile_inputs.py

The inputs (issue "Hardening"):
  1  an alias bomb in .github/judge.yml (430 bytes, nine levels of nine aliases)
  5  a recursive alias, and 5,000 nested `[`, in .github/judge.yml
  2  a backtracking glob against a file name the author chose; `**/` ten times against a
     40-segment path
  8  a signed body nested 100,000 deep; an installation id of 2^63
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp.test_utils import TestClient, TestServer

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bot.app import create_app  # noqa: E402
from bot.github.client import GitHubApp, RetryPolicy  # noqa: E402
from bot.storage import storage_from_url  # noqa: E402
from bot.storage.base import DeliveryStatus, Storage  # noqa: E402
from tests.support.app_helpers import make_settings  # noqa: E402
from tests.support.fakes.github_fixtures import new_key_pair  # noqa: E402
from tests.support.fakes.github_server import FakeGitHub  # noqa: E402
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply  # noqa: E402
from tests.support.flow_helpers import judge_settings, pull_request_payload  # noqa: E402
from tests.support.webhook_helpers import example, webhook_headers  # noqa: E402

REPO = "octo/hello"
PROCESSING_LIMIT_SECONDS = 120.0


def alias_bomb() -> str:
    lines = ['a0: &a0 ["lol"]']
    for level in range(1, 10):
        lines.append(f"a{level}: &a{level} [" + ", ".join([f"*a{level - 1}"] * 9) + "]")
    return "\n".join(lines) + "\n"


CONFIGS: list[tuple[str, str, dict[str, str]]] = [
    # Warms what a running deployment has warm (the installation token, the fake's GraphQL
    # schema, SQLite's first commit) so the rows below measure only the input.
    ("(warm-up) an ordinary change", "mode: advisory\n", {"docs/a.md": "# A\n"}),
    ("1 alias bomb", alias_bomb(), {"docs/a.md": "# A\n"}),
    ("5 recursive alias", "paths: &a {include: *a}\n", {"docs/a.md": "# A\n"}),
    ("5 5,000 nested [", "x: " + "[" * 5000 + "\n", {"docs/a.md": "# A\n"}),
    (
        "2 backtracking glob",
        "paths:\n  include: ['*a*a*a*a*a*a*a*a*a*a*b']\n",
        {"a" * 60 + ".md": "# A\n"},
    ),
    (
        "2 **/ ten times",
        "paths:\n  include: ['" + "**/" * 10 + "x.md']\n",
        {"/".join(f"d{i}" for i in range(40)) + "/y.md": "# Y\n"},
    ),
]


class Probe:
    """Polls /healthz and keeps each answer's latency."""

    def __init__(self, client: TestClient[Any, Any]) -> None:
        self.client = client
        self.latencies: list[float] = []
        self._stop = asyncio.Event()

    async def run(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            response = await self.client.get("/healthz")
            await response.read()
            self.latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()


async def measured(
    client: TestClient[Any, Any], work: Callable[[], Awaitable[str]]
) -> tuple[str, float, list[float]]:
    probe = Probe(client)
    polling = asyncio.create_task(probe.run())
    started = time.perf_counter()
    outcome = await work()
    elapsed = time.perf_counter() - started
    probe.stop()
    await polling
    return outcome, elapsed, probe.latencies


async def settled(store: Storage, delivery_id: str) -> str:
    async with asyncio.timeout(PROCESSING_LIMIT_SECONDS):
        while True:
            stored = await store.get_delivery(delivery_id)
            if stored is not None and stored.status in (DeliveryStatus.DONE, DeliveryStatus.FAILED):
                return stored.status.value
            await asyncio.sleep(0.02)


async def send(client: TestClient[Any, Any], path: str, event: str, body: bytes) -> tuple[int, str]:
    delivery_id = str(uuid.uuid4())
    response = await client.post(
        path, data=body, headers=webhook_headers(event, body, delivery_id=delivery_id)
    )
    await response.read()
    return response.status, delivery_id


async def run() -> None:
    key = new_key_pair()
    pem = key.private_pem
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    fake.add_installation(1, "octo")
    llm = FakeOpenAIServer()
    llm.default = Reply.json(
        {"semantic": 4, "pragmatic": 4, "syntactic": 5, "reasoning": "ok", "improvements": []}
    )
    await fake.start()
    await llm.start()
    rows: list[tuple[str, str, float, list[float]]] = []
    with tempfile.TemporaryDirectory() as workdir:
        settings = make_settings(pem, Path(workdir))
        store = storage_from_url(settings.database_url)
        async with aiohttp.ClientSession() as session:
            github = GitHubApp(
                app_id="12345",
                private_key=pem,
                session=session,
                api_url=fake.base_url,
                graphql_url=fake.graphql_url,
                policy=RetryPolicy(write_interval=0.0),
            )
            app = create_app(
                settings, storage=store, github=github, judge_settings=judge_settings(llm)
            )
            client = TestClient(TestServer(app, host="127.0.0.1"))
            await client.start_server()
            try:
                for index, (name, config, files) in enumerate(CONFIGS):
                    repo = f"octo/hostile-{index}"
                    fake.add_repo(repo, default_branch="main", installation_id=1)
                    fake.add_commit(repo, {".github/judge.yml": config}, branch="main")
                    sha = fake.add_commit(repo, files, branch="topic")
                    number = fake.add_pull(
                        repo, None, sha, head_ref="topic", author="agent", title="T", body=""
                    )
                    payload = pull_request_payload(fake, "opened", number, repo=repo)
                    body = json.dumps(payload).encode()

                    async def judged(body: bytes = body, repo: str = repo, sha: str = sha) -> str:
                        status, delivery = await send(
                            client, settings.webhook_path, "pull_request", body
                        )
                        state = await settled(store, delivery)
                        runs = [r for r in fake.repo(repo).check_runs.values() if r.head_sha == sha]
                        shown = ", ".join(f"{r.conclusion} '{r.output['title']}'" for r in runs)
                        return f"{status} {state}; run: {shown or 'none'}"

                    rows.append((name, *await measured(client, judged)))
                for name, body in hostile_bodies():

                    async def answered(body: bytes = body) -> str:
                        status, _ = await send(client, settings.webhook_path, "push", body)
                        return f"HTTP {status}"

                    rows.append((name, *await measured(client, answered)))
            finally:
                await client.close()
    await fake.close()
    await llm.close()
    report(rows)


def hostile_bodies() -> list[tuple[str, bytes]]:
    nested = b'{"ref": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    huge_id = json.loads(example("push", "with-new-branch"))
    huge_id["installation"] = {"id": 2**63}
    return [
        ("8 body nested 100,000 deep", nested),
        ("8 installation id 2^63", json.dumps(huge_id).encode()),
    ]


def report(rows: list[tuple[str, str, float, list[float]]]) -> None:
    print("input                         processing   /healthz median / worst   outcome")
    for name, outcome, elapsed, latencies in rows:
        median = statistics.median(latencies) if latencies else float("nan")
        worst = max(latencies) if latencies else float("nan")
        print(f"{name:<29} {elapsed:8.2f} s   {median:7.1f} / {worst:7.1f} ms   {outcome[:110]}")


if __name__ == "__main__":
    asyncio.run(run())

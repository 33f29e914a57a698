"""GitHub API calls per pull-request event, and round trips before the first model call.

Runs the real app against the fake GitHub and the fake LLM (both real HTTP servers on
loopback, from tests/fakes) and judges pull requests of 1, 10 and 100 watched files that
modify files of the base branch, with the review context a reviewer sees: CI on the head
commit (another app's failing required check and a passing one, a commit status) and a
maintainer's review. Each pull request is opened (the quick judge asks for improvements),
then pushed to again (`synchronize`, judged with the earlier verdict in view). The
installation token and the repository config are warmed by one earlier event, as they
are in a running deployment. Prints, per event:

  * the GitHub calls the event caused, by operation;
  * the sequential GitHub round trips before the first model call (the longest chain of
    requests each starting after the previous one ended, measured on the bot's side);
  * which parts of the review context the first model call carried.

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
from tests.support.flow_helpers import QUICK, judge_settings, pull_request_payload  # noqa: E402
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


def improve_reply() -> Reply:
    return Reply.json(
        {
            "semantic": 3,
            "pragmatic": 3,
            "syntactic": 3,
            "reasoning": "thin",
            "improvements": ["cite the benchmark run"],
        }
    )


MARKERS = {
    "diff": "(diff) docs/",
    "CI": "(CI results on this commit)",
    "earlier": "(earlier verdicts on this pull request)",
    "review": "Review by @maintainer",
}


def carried(llm: TimedLLM, first: int) -> str:
    text = llm.requests[first].user_text if len(llm.requests) > first else ""
    return ", ".join(name for name, marker in MARKERS.items() if marker in text) or "nothing"


def add_ci(fake: FakeGitHub, sha: str) -> None:
    fake.add_check_run(
        REPO, sha, "tests", conclusion="failure", title="1 failed", summary="test_part: 2 != 3"
    )
    fake.add_check_run(REPO, sha, "lint", conclusion="success", app_slug="linter", app_id=77)
    fake.add_status(REPO, sha, "docs/links", "success", description="all links resolve")


async def run() -> None:
    key = new_key_pair()
    pem = key.private_pem
    fake = FakeGitHub(app_id=12345, public_key=key.public_key)
    fake.add_installation(1, "octo")
    fake.add_repo(REPO, default_branch="main", installation_id=1)
    fake.add_commit(REPO, {".github/judge.yml": "limits:\n  max_files: 100\n"}, branch="main")
    fake.require_checks(REPO, "main", "tests")
    fake.set_permission(REPO, "maintainer", "write")
    llm = TimedLLM()
    await fake.start()
    await llm.start()
    trace, spans = tracing()
    rows: list[tuple[str, Counter[str], int, str]] = []
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
            quick_only = judge_settings(llm, deep_model=None, tiebreaker_model=None)
            app = create_app(settings, storage=store, github=github, judge_settings=quick_only)
            client = TestClient(TestServer(app, host="127.0.0.1"))
            await client.start_server()

            async def event(label: str, action: str, number: int) -> None:
                calls_before, spans_before, asked = len(fake.calls), len(spans), len(llm.requests)
                llm.arrivals.clear()
                payload = pull_request_payload(fake, action, number)
                await deliver(client, settings.webhook_path, store, payload)
                calls = fake.calls[calls_before:]
                first_model = min(llm.arrivals) if llm.arrivals else float("inf")
                before_model = [s for s in spans[spans_before:] if s[1] <= first_model]
                counts = Counter(c.operation_id for c in calls)
                rows.append((label, counts, longest_chain(before_model), carried(llm, asked)))

            try:
                for index, size in enumerate((1, *SIZES)):
                    paths = [f"docs/part-{index}-{n}.md" for n in range(size)]
                    fake.add_commit(
                        REPO, {p: f"# Part\n\nText {index}.\n" for p in paths}, branch="main"
                    )
                    changed = {p: f"# Part\n\nText {index}, revised.\n" for p in paths}
                    sha = fake.add_commit(REPO, changed, branch=f"topic-{index}")
                    number = fake.add_pull(
                        REPO, None, sha, head_ref=f"topic-{index}", author="agent"
                    )
                    add_ci(fake, sha)
                    fake.add_pull_review(REPO, number, "maintainer", "Cite the benchmark run")
                    llm.default = improve_reply()
                    await event(f"{size:>3} files, opened", "opened", number)
                    if index == 0:
                        rows.clear()  # warm-up: token and config now cached, as in production
                        continue
                    again: dict[str, str | None] = {
                        p: f"# Part\n\nText {index}, cited [run](https://x.org).\n" for p in paths
                    }
                    add_ci(fake, fake.merges.push(REPO, number, again))
                    llm.default = accept_reply()
                    await event(f"{size:>3} files, synchronize", "synchronize", number)
            finally:
                await client.close()
                await fake.close()
                await llm.close()
    print("GitHub calls per pull_request event (token and config cached):")
    for label, counts, chain, context in rows:
        total = sum(counts.values())
        kinds = ", ".join(f"{op} {n}" for op, n in sorted(counts.items()))
        print(
            f"  {label}: {total} calls ({kinds}); {chain} sequential round trips before "
            f"the first model call; the judge saw: {context}"
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

"""End-to-end harness for the merge queue: the real app with the queue's worker, the fake
GitHub and the fake LLM; payload builders for the events the queue listens to.

The app factory may already install the worker (`merge_queue_ctx`); the harness adds one
too, which then starts nothing, so the tests hold either way.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer
from jsonschema import Draft7Validator
from referencing.jsonschema import DRAFT7

from bot.app import SERVICES, create_app
from bot.github.client import GitHubApp
from bot.intake.dispatch import Context
from bot.merging.queue_worker import merge_queue_ctx
from bot.services import ServiceHub
from bot.settings.merge import MergeSettings
from bot.storage import storage_from_url
from bot.storage.base import Delivery, DeliveryStatus, MergeEvent, MergeStatus, Storage
from tests.support.app_helpers import make_settings
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    Harness,
    commit_files,
    judge_settings,
    open_pull,
    pull_request_payload,
    scores,
    validate_payload,
)
from tests.support.flow_helpers import _schemas as webhook_schemas
from tests.support.webhook_helpers import FIXTURES, example

STATUS_FIXTURES = FIXTURES / "webhooks" / "status"

FAST = {
    "merge_on_approve": True,
    "merge_queue_retry_delay_ms": 100,
    "merge_queue_claim_ttl_ms": 2_000,
    "pr_mergeable_precheck_delay_ms": 20,
}


def fast_settings(**overrides: Any) -> MergeSettings:
    return MergeSettings(_env_file=None, **{**FAST, **overrides})


@asynccontextmanager
async def merge_harness(
    tmp_path: Path,
    private_pem: str,
    fake: FakeGitHub,
    github_app: GitHubApp,
    llm: FakeOpenAIServer,
    merge: MergeSettings,
    *,
    storage: Storage | None = None,
) -> AsyncIterator[Harness]:
    """`storage` (unopened) lets several harnesses share one database, as replicas do."""
    settings = make_settings(
        private_pem, tmp_path, JUDGE_RETRY_BASE_SECONDS=0.01, JUDGE_MAX_ATTEMPTS=2
    )
    store = storage if storage is not None else storage_from_url(settings.database_url)
    app = create_app(settings, storage=store, github=github_app, judge_settings=judge_settings(llm))
    hub = app[SERVICES]
    app.cleanup_ctx.append(merge_queue_ctx(store, hub, app_clock))
    client = TestClient(TestServer(app, host="127.0.0.1"))
    await client.start_server()
    try:
        hub.services.merge = merge
        yield Harness(client, app, store, fake, llm, settings.webhook_path)
    finally:
        await client.close()


def app_clock() -> datetime:
    return datetime.now(UTC)


def handler_context(storage: Storage, hub: ServiceHub, event: str, repository: str) -> Context:
    """What the dispatcher hands a handler for a delivery of installation 1 being worked on,
    for tests that run one feature's handler on its own."""
    now = app_clock()
    delivery = Delivery(
        delivery_id=f"direct-{event}",
        event=event,
        action=None,
        installation_id=1,
        repository=repository,
        body=b"{}",
        status=DeliveryStatus.PROCESSING,
        attempts=1,
        received_at=now,
        next_attempt_at=now,
        lease_owner="test",
        lease_expires_at=now,
        last_error=None,
        finished_at=None,
    )
    return Context(delivery, storage, hub, app_clock)


async def wait_for(
    condition: Callable[[], Any], *, within: float = 20.0, what: str = "condition"
) -> None:
    """Until `condition()` is truthy (it may be a coroutine function); the queue works
    in its own task, so tests wait for what it does, never for a fixed time."""
    async with asyncio.timeout(within):
        while True:
            value = condition()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return
            await asyncio.sleep(0.02)


async def entry_status(storage: Storage, number: int, repo: str = REPO) -> MergeStatus | None:
    events = await storage.list_merge_events(repo.lower(), number)
    return events[-1].to_status if events else None


async def events_of(storage: Storage, number: int, repo: str = REPO) -> list[MergeEvent]:
    return await storage.list_merge_events(repo.lower(), number)


async def until_status(
    bot: Harness, number: int, status: MergeStatus, *, within: float = 20.0
) -> None:
    async def reached() -> bool:
        return await entry_status(bot.storage, number) is status

    await wait_for(reached, within=within, what=f"#{number} {status}")


async def accepted_pull(
    bot: Harness, files: dict[str, str | None] | None = None, **pull: Any
) -> tuple[int, str]:
    """A pull request the quick judge accepts; returns its number and head sha."""
    bot.llm.script(QUICK, scores(*ACCEPT))
    branch = pull.pop("branch", "feature")
    sha = commit_files(bot.fake, files or {"docs/notes.md": "# Notes\n\nSourced.\n"}, branch=branch)
    number = open_pull(bot.fake, sha, branch=branch, **pull)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number, sha


def pr_event(fake: FakeGitHub, action: str, number: int, **changes: Any) -> dict[str, Any]:
    """A `pull_request` webhook for the pull request as the fake holds it now."""
    data = pull_request_payload(fake, "opened", number)
    data["action"] = action
    stored = fake.repo(REPO).pulls[number]
    issue = fake.repo(REPO).issues[number]
    pull = data["pull_request"]
    pull["state"] = issue.state
    pull["merged"] = stored.merged
    if issue.state == "closed":
        pull["closed_at"] = "2024-01-01T00:00:00Z"
        pull["merged_at"] = "2024-01-01T00:00:00Z" if stored.merged else None
    for key, value in changes.items():
        data[key] = value
    if action in ("labeled", "unlabeled"):
        data.setdefault("label", pull["labels"][0] if pull["labels"] else None)
    data.pop("before", None)
    data.pop("after", None)
    if action == "synchronize":
        data["before"] = changes.get("before", stored.base_sha)
        data["after"] = stored.head_sha
    validate_payload("pull_request", data)
    return data


def label_event(fake: FakeGitHub, action: str, number: int, name: str) -> dict[str, Any]:
    label = {
        "id": 77,
        "node_id": "LA_77",
        "url": f"https://api.github.com/repos/{REPO}/labels/{name}",
        "name": name,
        "color": "ededed",
        "default": False,
        "description": None,
    }
    return pr_event(fake, action, number, label=label)


def review_event(
    fake: FakeGitHub, number: int, login: str, state: str = "approved"
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("pull_request_review", "submitted"))
    pr = pull_request_payload(fake, "opened", number)
    data["pull_request"] = {
        **data["pull_request"],
        **{
            k: pr["pull_request"][k]
            for k in ("number", "head", "base", "user", "labels", "draft", "title", "body")
        },
    }
    data["repository"] = pr["repository"]
    data["installation"] = pr["installation"]
    data["review"]["state"] = state
    data["review"]["commit_id"] = fake.repo(REPO).pulls[number].head_sha
    data["review"]["user"]["login"] = login
    data["sender"]["login"] = login
    validate_payload("pull_request_review", data)
    return data


def check_suite_completed(fake: FakeGitHub, head_sha: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("check_suite", "completed"))
    pr = pull_request_payload(fake, "opened", next(iter(fake.repo(REPO).pulls)))
    data["repository"] = pr["repository"]
    data["installation"] = pr["installation"]
    data["check_suite"]["head_sha"] = head_sha
    data["check_suite"]["pull_requests"] = []
    validate_payload("check_suite", data)
    return data


def status_event(fake: FakeGitHub, sha: str, state: str = "success") -> dict[str, Any]:
    """A `status` webhook (a commit status set on `sha`), from GitHub's example payload,
    validated against GitHub's schema (tests/fixtures/github/webhooks/status/PROVENANCE.md)."""
    data: dict[str, Any] = json.loads(example("status", "with-installation"))
    pr = pull_request_payload(fake, "opened", next(iter(fake.repo(REPO).pulls)))
    data["repository"] = pr["repository"]
    data["installation"] = pr["installation"]
    data["sha"] = data["commit"]["sha"] = sha
    data["state"] = state
    schema = json.loads((STATUS_FIXTURES / "event.schema.json").read_text())
    registry = webhook_schemas().with_resource(schema["$id"], DRAFT7.create_resource(schema))
    Draft7Validator({"$ref": schema["$id"]}, registry=registry).validate(data)
    return data


async def until_comment(bot: Harness, number: int, fragment: str) -> str:
    """The first comment on the pull request containing `fragment`, once it is there."""
    found: list[str] = []

    def posted() -> bool:
        found[:] = [c for c in bot.comments(number) if fragment in c]
        return bool(found)

    await wait_for(posted, what=f"a comment with {fragment!r}")
    return found[0]


def queue_group(fake: FakeGitHub, number: int, extra: dict[str, str | None] | None = None) -> str:
    """The merge group GitHub's merge queue builds for one pull request: its head merged
    onto the base branch (plus `extra`, what the merge brings besides), on the queue's
    read-only branch. Returns the group's head sha."""
    return queue_chain(fake, [number], extra)


def queue_chain(
    fake: FakeGitHub,
    numbers: list[int],
    extra: dict[str, str | None] | None = None,
    *,
    merge_commits: bool = True,
) -> str:
    """The merge group GitHub's merge queue builds for `numbers`, in queue order: each pull
    request merged onto the one before it (the first onto the base branch), one commit
    each, on the read-only branch named after the newest; `extra` comes with the last.
    `merge_commits=False` writes single-parent commits, as a squash queue does. Returns
    the group's head sha."""
    repo = fake.repo(REPO)
    base = repo.branches[repo.pulls[numbers[0]].base_ref]
    head = base
    for number in numbers:
        pull = repo.pulls[number]
        changes = fake.merges.pull_changes(repo, number)
        if number == numbers[-1]:
            changes.update(extra or {})
        head = fake.add_commit(
            repo,
            changes,
            message=f"Merge pull request #{number} from {repo.owner}/{pull.head_ref}",
            author="web-flow",
            parents=[head, pull.head_sha] if merge_commits else [head],
            branch=f"gh-readonly-queue/{pull.base_ref}/pr-{number}-{base}",
        )
    return head


def merge_group_event(
    fake: FakeGitHub,
    action: str,
    number: int,
    head_sha: str,
    reason: str | None = None,
    *,
    base_sha: str | None = None,
) -> dict[str, Any]:
    """A `merge_group` webhook for a group `queue_group` or `queue_chain` made, `number`
    its newest pull request; `base_sha` defaults to the head's first parent."""
    data: dict[str, Any] = json.loads(example("merge_group", "checks_requested"))
    pr = pull_request_payload(fake, "opened", number)
    pull = fake.repo(REPO).pulls[number]
    base = base_sha or fake.repo(REPO).commits[head_sha].parents[0]
    data["action"] = action
    data["repository"] = pr["repository"]
    data["installation"] = pr["installation"]
    group = data["merge_group"]
    group.update(
        head_sha=head_sha,
        head_ref=f"refs/heads/gh-readonly-queue/{pull.base_ref}/pr-{number}-{base}",
        base_sha=base,
        base_ref=f"refs/heads/{pull.base_ref}",
    )
    group["head_commit"]["id"] = head_sha
    group["head_commit"]["message"] = fake.repo(REPO).commits[head_sha].message
    if reason is not None:
        data["reason"] = reason
    validate_payload("merge_group", data)
    return data

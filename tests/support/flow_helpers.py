"""End-to-end harness: the real app, the fake GitHub and the fake LLM, wired together.

Webhook payloads start from GitHub's own examples and are changed only where the test
needs it (repository, installation, shas, people); every built payload is validated
against the octokit webhook schemas before it is sent.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
from aiohttp import web
from aiohttp.test_utils import TestClient
from referencing import Registry
from referencing.jsonschema import DRAFT7

from bot.github.client import GitHubApp
from bot.judge.settings import JudgeSettings
from bot.settings.features import FeatureSettings
from bot.storage import storage_from_url
from bot.storage.base import DeliveryStatus, Storage
from tests.support.app_helpers import make_settings, running_app
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.webhook_helpers import FIXTURES, example, webhook_headers

REPO = "octo/hello"
QUICK, DEEP, TIEBREAKER = "gpt-4o-mini", "kimi-k2", "llama-3.3-70b"


@cache
def _schemas() -> Registry:
    registry: Registry = Registry()
    for path in (FIXTURES / "webhook-schemas").rglob("*.schema.json"):
        schema = json.loads(path.read_text())
        registry = registry.with_resource(schema["$id"], DRAFT7.create_resource(schema))
    return registry


def validate_payload(event: str, data: dict[str, Any]) -> None:
    action = data.get("action", "event")
    ref = f"{event}${action}"
    validator = jsonschema.Draft7Validator({"$ref": ref}, registry=_schemas())
    validator.validate(data)


def scores(
    s: int, p: int, x: int, reasoning: str = "ok", improvements: list[str] | None = None
) -> Reply:
    return Reply.json(
        {
            "semantic": s,
            "pragmatic": p,
            "syntactic": x,
            "reasoning": reasoning,
            "improvements": improvements or [],
            "verdict": "accept",
        }
    )


ACCEPT = (4, 4, 5)
IMPROVE = (3, 3, 3)
REJECT = (1, 2, 2)


def judge_settings(llm: FakeOpenAIServer, **overrides: Any) -> JudgeSettings:
    values: dict[str, Any] = {
        "llm_base_url": llm.base_url,
        "llm_api_key": llm.api_key,
        "llm_provider": "openai",
        "quick_model": QUICK,
        "deep_model": DEEP,
        "tiebreaker_model": TIEBREAKER,
        "throttle_per_hour": 1000,
    }
    values.update(overrides)
    return JudgeSettings(_env_file=None, **values)


def pull_request_payload(
    fake: FakeGitHub,
    action: str,
    number: int,
    *,
    repo: str = REPO,
    installation_id: int = 1,
    sender: str | None = None,
) -> dict[str, Any]:
    """`sender` (whoever caused the event) defaults to the pull request's author, who
    opens it and pushes to it."""
    data: dict[str, Any] = json.loads(example("pull_request", "opened"))
    stored = fake.repo(repo).pulls[number]
    issue = fake.repo(repo).issues[number]
    owner, name = repo.split("/")
    data["action"] = action
    data["number"] = number
    data["installation"] = {"id": installation_id, "node_id": "MDIzOkluc3RhbGxhdGlvbjE="}
    data["repository"]["full_name"] = repo
    data["repository"]["name"] = name
    data["repository"]["owner"]["login"] = owner
    data["repository"]["default_branch"] = fake.repo(repo).default_branch
    pull = data["pull_request"]
    pull["number"] = number
    pull["head"]["sha"] = stored.head_sha
    pull["head"]["ref"] = stored.head_ref
    pull["base"]["ref"] = stored.base_ref
    pull["base"]["sha"] = stored.base_sha
    pull["draft"] = stored.draft
    pull["title"] = issue.title
    pull["body"] = issue.body
    pull["user"]["login"] = issue.author
    data["sender"]["login"] = sender or issue.author
    pull["labels"] = [
        {**(pull["labels"][0] if pull["labels"] else _label_template()), "name": label}
        for label in issue.labels
    ]
    if action == "synchronize":
        data["before"] = stored.base_sha
        data["after"] = stored.head_sha
    validate_payload("pull_request", data)
    return data


def _label_template() -> dict[str, Any]:
    return {
        "id": 1,
        "node_id": "MDU6TGFiZWwx",
        "url": "https://api.github.com/repos/o/r/labels/x",
        "name": "x",
        "color": "ededed",
        "default": False,
        "description": None,
    }


def push_payload(
    repo: str,
    *,
    before: str,
    after: str,
    commits: list[dict[str, Any]],
    ref: str = "refs/heads/feature",
    default_branch: str = "main",
    installation_id: int = 1,
    sender: str | None = None,
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("push", "with-installation"))
    if sender is not None:
        data["sender"]["login"] = sender
    name = repo.split("/")[1]
    data.update({"ref": ref, "before": before, "after": after, "deleted": False})
    data["installation"] = {"id": installation_id, "node_id": "MDIzOkluc3RhbGxhdGlvbjE="}
    data["repository"]["full_name"] = repo
    data["repository"]["name"] = name
    data["repository"]["default_branch"] = default_branch
    base = json.loads(example("push", "with-new-branch"))["commits"][0]
    built = []
    for commit in commits:
        entry = json.loads(json.dumps(base))
        entry.update(
            {
                "id": commit["id"],
                "tree_id": commit.get("tree_id", commit["id"]),
                "message": commit.get("message", "Update"),
                "added": commit.get("added", []),
                "modified": commit.get("modified", []),
                "removed": commit.get("removed", []),
            }
        )
        entry["author"] = {
            **entry["author"],
            "name": commit.get("author", "octocat"),
            "username": commit.get("author", "octocat"),
        }
        entry["committer"] = {
            **entry["committer"],
            "name": commit.get("author", "octocat"),
            "username": commit.get("author", "octocat"),
        }
        built.append(entry)
    data["commits"] = built
    data["head_commit"] = built[-1] if built else None
    validate_payload("push", data)
    return data


def comment_payload(
    repo: str,
    issue_number: int,
    body: str,
    login: str,
    *,
    on_pull: bool = True,
    user_type: str = "User",
    action: str = "created",
    installation_id: int = 1,
    default_branch: str = "main",
) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(example("issue_comment", "created.with-installation"))
    owner, name = repo.split("/")
    data["action"] = action
    # The example's repository says "master"; the fake's repositories default to "main".
    data["repository"]["default_branch"] = default_branch
    data["installation"] = {"id": installation_id, "node_id": "MDIzOkluc3RhbGxhdGlvbjE="}
    data["repository"]["full_name"] = repo
    data["repository"]["name"] = name
    data["repository"]["owner"]["login"] = owner
    data["issue"]["number"] = issue_number
    if on_pull:
        data["issue"]["pull_request"] = {
            "url": f"https://api.github.com/repos/{repo}/pulls/{issue_number}",
            "html_url": f"https://github.com/{repo}/pull/{issue_number}",
            "diff_url": f"https://github.com/{repo}/pull/{issue_number}.diff",
            "patch_url": f"https://github.com/{repo}/pull/{issue_number}.patch",
        }
    else:
        data["issue"].pop("pull_request", None)
    data["comment"]["body"] = body
    # Written now, as GitHub stamps it (whole seconds, rounded up so it is not before a
    # head judge-bot first saw earlier in this second): overrides act only on a head seen
    # before the comment was written (bot.commands.meant_head).
    written = (datetime.now(UTC) + timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    data["comment"]["created_at"] = data["comment"]["updated_at"] = written
    data["comment"]["user"]["login"] = login
    data["comment"]["user"]["type"] = user_type
    if action == "edited":
        data["changes"] = {"body": {"from": "before"}}
    validate_payload("issue_comment", data)
    return data


def check_run_payload(
    repo: str,
    run_id: int,
    head_sha: str,
    action: str,
    *,
    sender: str = "maintainer",
    identifier: str | None = None,
    pull_number: int | None = None,
    installation_id: int = 1,
) -> dict[str, Any]:
    name = "requested_action" if action == "requested_action" else "rerequested"
    data: dict[str, Any] = json.loads(example("check_run", name))
    owner, repo_name = repo.split("/")
    data["action"] = action
    data["installation"] = {"id": installation_id, "node_id": "MDIzOkluc3RhbGxhdGlvbjE="}
    data["repository"]["full_name"] = repo
    data["repository"]["name"] = repo_name
    data["repository"]["owner"]["login"] = owner
    run = data["check_run"]
    run.update({"id": run_id, "name": "judge", "head_sha": head_sha})
    run["check_suite"]["head_sha"] = head_sha
    if pull_number is not None:
        template = run["pull_requests"][0] if run.get("pull_requests") else None
        if template is not None:
            template = {**template, "number": pull_number}
            template["head"] = {**template["head"], "sha": head_sha}
            run["pull_requests"] = [template]
    else:
        run["pull_requests"] = []
    data["sender"]["login"] = sender
    data["sender"]["type"] = "User"
    if identifier is not None:
        data["requested_action"] = {"identifier": identifier}
    validate_payload("check_run", data)
    return data


@dataclass
class Harness:
    client: TestClient[web.Request, web.Application]
    app: web.Application
    storage: Storage
    fake: FakeGitHub
    llm: FakeOpenAIServer
    webhook_path: str

    async def send(self, event: str, data: dict[str, Any]) -> str:
        """Deliver a signed webhook and wait until the bot has processed it."""
        body = json.dumps(data).encode()
        delivery_id = str(uuid.uuid4())
        response = await self.client.post(
            self.webhook_path,
            data=body,
            headers=webhook_headers(event, body, delivery_id=delivery_id),
        )
        assert response.status == 202, await response.text()
        await self.settled(delivery_id)
        return delivery_id

    async def settled(self, delivery_id: str) -> None:
        async with asyncio.timeout(30):
            while True:
                stored = await self.storage.get_delivery(delivery_id)
                if stored is not None and stored.status in (
                    DeliveryStatus.DONE,
                    DeliveryStatus.FAILED,
                ):
                    assert stored.status is DeliveryStatus.DONE, stored.last_error
                    return
                await asyncio.sleep(0.02)

    def check_runs(self, repo: str = REPO, sha: str | None = None) -> list[Any]:
        runs = list(self.fake.repo(repo).check_runs.values())
        return [r for r in runs if sha is None or r.head_sha == sha]

    def issues(self, repo: str = REPO) -> list[Any]:
        return [i for i in self.fake.repo(repo).issues.values() if not i.is_pull]

    def comments(self, number: int, repo: str = REPO) -> list[str]:
        return [c.body for c in self.fake.repo(repo).comments.values() if c.issue_number == number]


@asynccontextmanager
async def harness(
    tmp_path: Path,
    private_pem: str,
    fake: FakeGitHub,
    github_app: GitHubApp,
    llm: FakeOpenAIServer,
    *,
    features: FeatureSettings | None = None,
    **judge_overrides: Any,
) -> AsyncIterator[Harness]:
    settings = make_settings(
        private_pem, tmp_path, JUDGE_RETRY_BASE_SECONDS=0.01, JUDGE_MAX_ATTEMPTS=2
    )
    store = storage_from_url(settings.database_url)
    async with running_app(
        settings,
        storage=store,
        github=github_app,
        judge_settings=judge_settings(llm, **judge_overrides),
        features=features or FeatureSettings(),
    ) as (client, app):
        yield Harness(client, app, store, fake, llm, settings.webhook_path)


def commit_files(
    fake: FakeGitHub,
    files: dict[str, str | None],
    *,
    branch: str = "feature",
    message: str = "Add notes",
    author: str = "agent",
    repo: str = REPO,
) -> str:
    return fake.add_commit(repo, files, message=message, author=author, branch=branch)


def open_pull(
    fake: FakeGitHub,
    head_sha: str,
    *,
    number: int | None = None,
    author: str = "agent",
    body: str = "Adds research notes",
    draft: bool = False,
    labels: tuple[str, ...] = (),
    branch: str = "feature",
    repo: str = REPO,
) -> int:
    return fake.add_pull(
        repo,
        number,
        head_sha,
        head_ref=branch,
        author=author,
        title="Research notes",
        body=body,
        draft=draft,
        labels=labels,
    )


GOOD_DOC = "# Notes\n\nA clear, sourced explanation of the topic.\n"


async def rejected_pull(
    bot: Harness, *, author: str = "agent", committer: str = "agent"
) -> tuple[int, str]:
    """A pull request whose judges both reject; returns its number and head sha."""
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nthin\n"}, author=committer)
    number = open_pull(bot.fake, sha, author=author)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number, sha


async def click(
    bot: Harness, run_id: int, sha: str, identifier: str, sender: str, number: int | None
) -> None:
    """Someone presses a button of the `judge` check run."""
    await bot.send(
        "check_run",
        check_run_payload(
            REPO,
            run_id,
            sha,
            "requested_action",
            sender=sender,
            identifier=identifier,
            pull_number=number,
        ),
    )

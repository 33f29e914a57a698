"""The App's GitHub client, authenticated with the workflow's token instead of an
installation token: the one seam between the App and the action.

Every call the judging flow, the commands and the disagreement issue make goes through
`GitHubApp.installation_client`, with its retries, rate-limit pauses and write pacing;
here that client carries the token the runner gave the job, whatever installation id a
target names. The App's own JWT is never made: a workflow has no private key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bot.github.client import GITHUB_API_URL, GitHubApp, GitHubClient
from bot.github.gateway import RepoGateway

# The `github-actions` App, which owns every check run a workflow's token creates: its
# earlier `judge` runs are the gate's own, not CI the judges should read. Its id is this on
# github.com; a GitHub Enterprise Server numbers its own (`actions_app_id`).
GITHUB_ACTIONS_APP_ID = "15368"
GITHUB_ACTIONS_SLUG = "github-actions"
# Targets built from a workflow's event carry this installation id: the payload names
# none, and the token alone decides what the calls may do.
WORKFLOW_INSTALLATION = 0


class NoAppIdentity(RuntimeError):
    """Something asked for the App's JWT in a workflow, which has no App key."""


@dataclass
class WorkflowGitHub(GitHubApp):
    token: str = field(default="", repr=False)

    async def installation_client(self, installation_id: int) -> GitHubClient:
        del installation_id  # one token serves the run, whichever target asks

        async def authorization() -> str:
            return "token " + self.token

        return self._client(authorization, self._pacer(WORKFLOW_INSTALLATION), None, None)

    async def _app_authorization(self) -> str:
        raise NoAppIdentity("a workflow's run has no App key to sign a JWT with")


async def actions_app_id(gateway: RepoGateway, api_url: str, head_sha: str) -> str:
    """The `github-actions` App's id on this server: github.com's without a call; on a
    GitHub Enterprise Server, read from the check runs on `head_sha` (this job's own is
    one: every workflow job is a check run of that App), github.com's when none says."""
    if api_url.rstrip("/") == GITHUB_API_URL.rstrip("/") or not head_sha:
        return GITHUB_ACTIONS_APP_ID
    answer = await gateway.client.getitem(
        "/repos/{owner}/{repo}/commits/{ref}/check-runs{?per_page}",
        {"owner": gateway.owner, "repo": gateway.name, "ref": head_sha, "per_page": 100},
    )
    for run in answer.get("check_runs") or []:
        app = run.get("app") or {}
        if app.get("slug") == GITHUB_ACTIONS_SLUG and isinstance(app.get("id"), int):
            return str(app["id"])
    return GITHUB_ACTIONS_APP_ID


async def learn_actions_app(github: GitHubApp, repository: str, head_sha: str) -> None:
    """Set `github.app_id` to the `github-actions` App's id here (`actions_app_id`)."""
    client = await github.installation_client(WORKFLOW_INSTALLATION)
    gateway = RepoGateway(client, repository)
    github.app_id = await actions_app_id(gateway, github.api_url, head_sha)


def event_head(event_name: str, data: Mapping[str, Any]) -> str:
    """The commit a `pull_request`, `push` or `merge_group` event is about ("" for another
    event, or a push that deleted its branch)."""
    if event_name == "pull_request":
        sha = (data.get("pull_request") or {}).get("head", {}).get("sha")
    elif event_name == "push":
        sha = data.get("after")
    elif event_name == "merge_group":
        sha = (data.get("merge_group") or {}).get("head_sha")
    else:
        sha = None
    text = str(sha or "")
    return "" if set(text) <= {"0"} else text

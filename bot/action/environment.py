"""What a workflow run tells `judge-bot action` through its environment. Pure: a mapping
in, `RunEnvironment` out, or `ActionInputError` naming the variable that is wrong.

The runner sets everything here but the token, which the action passes as `GITHUB_TOKEN`.
An event judge-bot does not handle is no error: the run has nothing to do.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bot.github.client import GITHUB_API_URL, graphql_url_for
from bot.storage.base import MAX_BODY_BYTES

# The workflow events the gate acts on; a run for any other event does nothing.
HANDLED_EVENTS = frozenset({"pull_request", "push", "issue_comment", "merge_group"})
REPOSITORY_PARTS = 2


class ActionInputError(ValueError):
    """The run's environment is missing or has something wrong; the message names it."""


@dataclass(frozen=True)
class RunEnvironment:
    event_name: str
    event_path: Path
    repository: str
    api_url: str
    graphql_url: str
    token: str = field(repr=False)
    run_name: str
    summary_path: Path | None = None
    output_path: Path | None = None
    runner_temp: str | None = None

    @property
    def handled(self) -> bool:
        return self.event_name in HANDLED_EVENTS


def _required(env: Mapping[str, str], name: str) -> str:
    value = env.get(name, "").strip()
    if not value:
        raise ActionInputError(f"{name} is not set (judge-bot action runs in a GitHub workflow)")
    return value


def _optional_path(env: Mapping[str, str], name: str) -> Path | None:
    value = env.get(name, "").strip()
    return Path(value) if value else None


def read_environment(env: Mapping[str, str]) -> RunEnvironment:
    """The run as its environment describes it (module docstring)."""
    event_name = _required(env, "GITHUB_EVENT_NAME")
    repository = _required(env, "GITHUB_REPOSITORY")
    if len(repository.split("/")) != REPOSITORY_PARTS or not all(repository.split("/")):
        raise ActionInputError(f"GITHUB_REPOSITORY is not OWNER/NAME: {repository[:200]!r}")
    api_url = (env.get("GITHUB_API_URL", "").strip() or GITHUB_API_URL).rstrip("/")
    graphql_url = env.get("GITHUB_GRAPHQL_URL", "").strip() or graphql_url_for(api_url)
    run_id = env.get("GITHUB_RUN_ID", "").strip() or "local"
    attempt = env.get("GITHUB_RUN_ATTEMPT", "").strip() or "1"
    return RunEnvironment(
        event_name=event_name,
        event_path=Path(_required(env, "GITHUB_EVENT_PATH")),
        repository=repository,
        api_url=api_url,
        graphql_url=graphql_url,
        token=_required(env, "GITHUB_TOKEN"),
        run_name=f"action-{run_id}-{attempt}",
        summary_path=_optional_path(env, "GITHUB_STEP_SUMMARY"),
        output_path=_optional_path(env, "GITHUB_OUTPUT"),
        runner_temp=env.get("RUNNER_TEMP", "").strip() or None,
    )


def parse_event(raw: bytes, event_name: str, repository: str) -> dict[str, Any]:
    """The event payload, checked to be the run's repository's JSON object."""
    # An event payload is GitHub's webhook body, with the same cap.
    if len(raw) > MAX_BODY_BYTES:
        raise ActionInputError("GITHUB_EVENT_PATH: the event is larger than GitHub sends")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ActionInputError(f"GITHUB_EVENT_PATH: not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ActionInputError("GITHUB_EVENT_PATH: the event is not a JSON object")
    named = (data.get("repository") or {}).get("full_name")
    if not isinstance(named, str) or named.lower() != repository.lower():
        raise ActionInputError(
            f"GITHUB_EVENT_PATH: a {event_name} event of another repository, not {repository}"
        )
    return data

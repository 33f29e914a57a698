"""The run's environment and event file, read and checked (bot/action/environment.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.action.environment import ActionInputError, parse_event, read_environment
from bot.storage.base import MAX_BODY_BYTES

RUNNER = {
    "GITHUB_EVENT_NAME": "pull_request",
    "GITHUB_EVENT_PATH": "/tmp/event.json",
    "GITHUB_REPOSITORY": "octo/hello",
    "GITHUB_TOKEN": "ghs_x",
}


def test_the_defaults_are_github_coms() -> None:
    env = read_environment(RUNNER)
    assert (env.api_url, env.graphql_url) == (
        "https://api.github.com",
        "https://api.github.com/graphql",
    )
    assert env.run_name == "action-local-1"
    assert (env.summary_path, env.output_path, env.runner_temp) == (None, None, None)
    assert env.handled
    assert "ghs_x" not in repr(env)


def test_github_enterprise_server_addresses() -> None:
    env = read_environment({**RUNNER, "GITHUB_API_URL": "https://ghe.example.com/api/v3/"})
    assert env.api_url == "https://ghe.example.com/api/v3"
    assert env.graphql_url == "https://ghe.example.com/api/graphql"
    named = read_environment({**RUNNER, "GITHUB_GRAPHQL_URL": "https://g.example.com/gql"})
    assert named.graphql_url == "https://g.example.com/gql"


def test_the_runners_files_and_run() -> None:
    env = read_environment(
        {
            **RUNNER,
            "GITHUB_RUN_ID": "77",
            "GITHUB_RUN_ATTEMPT": "2",
            "GITHUB_STEP_SUMMARY": "/r/summary",
            "GITHUB_OUTPUT": "/r/output",
            "RUNNER_TEMP": "/r/tmp",
        }
    )
    assert env.run_name == "action-77-2"
    assert (env.summary_path, env.output_path) == (Path("/r/summary"), Path("/r/output"))
    assert env.runner_temp == "/r/tmp"


@pytest.mark.parametrize("name", sorted(RUNNER))
def test_each_required_variable_is_named(name: str) -> None:
    with pytest.raises(ActionInputError, match=name):
        read_environment({**RUNNER, name: " "})


@pytest.mark.parametrize("repository", ["octo", "octo/", "/hello", "a/b/c"])
def test_a_repository_that_is_not_owner_name(repository: str) -> None:
    with pytest.raises(ActionInputError, match="OWNER/NAME"):
        read_environment({**RUNNER, "GITHUB_REPOSITORY": repository})


def test_events_the_gate_handles() -> None:
    for event in ("pull_request", "push", "issue_comment", "merge_group"):
        assert read_environment({**RUNNER, "GITHUB_EVENT_NAME": event}).handled
    assert not read_environment({**RUNNER, "GITHUB_EVENT_NAME": "pull_request_target"}).handled


def test_an_event_of_this_repository() -> None:
    raw = json.dumps({"repository": {"full_name": "Octo/Hello"}}).encode()
    assert parse_event(raw, "push", "octo/hello")["repository"]["full_name"] == "Octo/Hello"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        (b"{", "not JSON"),
        (b"\xff", "not JSON"),
        (b"[]", "not a JSON object"),
        (b'{"repository": {"full_name": "octo/other"}}', "another repository"),
        (b"{}", "another repository"),
        (b" " * (MAX_BODY_BYTES + 1), "larger than GitHub sends"),
    ],
)
def test_an_event_file_that_is_wrong(raw: bytes, message: str) -> None:
    with pytest.raises(ActionInputError, match=message):
        parse_event(raw, "push", "octo/hello")

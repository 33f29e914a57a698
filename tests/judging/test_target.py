"""What is judged, read from payloads: pure functions over GitHub's example events."""

from __future__ import annotations

import json

import pytest

from bot.github.types import NULL_SHA, ChangedPath, CommitInfo
from bot.judging.target import (
    Target,
    changed_in_push,
    target_from_pull_request,
    target_from_push,
)
from tests.support.webhook_helpers import example


def test_pull_request_target_from_githubs_example() -> None:
    payload = json.loads(example("pull_request", "opened"))
    target = target_from_pull_request(payload, 7)
    pull = payload["pull_request"]
    assert target.head_sha == pull["head"]["sha"]
    assert target.task == f"{payload['repository']['full_name']}#{pull['number']}"
    assert target.pull_author == pull["user"]["login"]
    assert target.installation_id == 7
    assert target.changed is None, "a pull request's files are listed from GitHub"
    assert target.html_url == payload["repository"]["html_url"]


def test_push_target_from_githubs_example() -> None:
    payload = json.loads(example("push", "with-new-branch"))
    target = target_from_push(payload, 1)
    assert target is not None
    assert target.head_sha == payload["after"]
    assert target.task == payload["after"][:7]
    assert target.commits is not None and len(target.commits) == len(payload["commits"])
    assert target.html_url == payload["repository"]["html_url"]


@pytest.mark.parametrize(
    "change",
    [
        {"deleted": True},
        {"after": NULL_SHA},
        {"ref": "refs/tags/v1.0"},
    ],
    ids=["deleted", "null-after", "tag"],
)
def test_pushes_never_judged(change: dict[str, object]) -> None:
    payload = json.loads(example("push", "with-new-branch"))
    payload.update(change)
    assert target_from_push(payload, 1) is None


def test_push_without_file_lists_falls_back_to_compare() -> None:
    payload = json.loads(example("push", "with-new-branch"))
    for commit in payload["commits"]:
        del commit["added"]
    target = target_from_push(payload, 1)
    assert target is not None and target.changed is None


def test_net_effect_of_pushed_commits() -> None:
    commits = [
        {"added": ["a.md", "b.md"], "modified": [], "removed": []},
        {"added": [], "modified": ["a.md", "c.md"], "removed": ["b.md"]},
        {"added": ["b.md"], "modified": [], "removed": ["d.md"]},
    ]
    assert changed_in_push(commits) == (
        ChangedPath("a.md", "added"),
        ChangedPath("b.md", "added"),
        ChangedPath("c.md", "modified"),
        ChangedPath("d.md", "removed"),
    )


def _target(**changes: object) -> Target:
    base = Target("o/r", 1, "a" * 40, "main", "o/r#1", "pull_request.opened")
    return Target(**{**base.__dict__, **changes})


def test_target_survives_storage() -> None:
    target = _target(
        changed=(ChangedPath("a.md", "added", "@@ -0,0 +1 @@\n+x"),),
        commits=(CommitInfo("s", "m", "A", "a", "C", None),),
        labels=("x",),
        html_url="https://ghe.example.com/octo/repo",
    )
    again = Target.from_json(json.loads(json.dumps(target.to_json())), target.trigger)
    assert again == target

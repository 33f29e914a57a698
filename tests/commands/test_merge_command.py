"""`/judge merge --priority`: its grammar, who may run it, and its plan. Pure."""

from __future__ import annotations

from typing import Any

import pytest

from bot.commands.grammar import Command, parse_command
from bot.commands.plan import Refusal, Reply, SetPriority, plan_command
from bot.commands.policy import authorize
from bot.commands.replies import render_help, render_priority_reply
from bot.judging.four_eyes import Actor, AuthorizationFacts
from bot.storage.base import MergePriority
from tests.commands.test_plan import facts, pull


@pytest.mark.parametrize(
    ("body", "priority"),
    [
        ("/judge merge --priority urgent", "urgent"),
        ("/judge MERGE --Priority HIGH", "high"),
        ("/judge merge --priority=normal", "normal"),
    ],
)
def test_merge_priority_parses(body: str, priority: str) -> None:
    command = parse_command(body)
    assert command is not None
    assert (command.kind, command.priority) == ("merge", priority)


@pytest.mark.parametrize(
    "body",
    [
        "/judge merge",
        "/judge merge --priority",
        "/judge merge --priority soon",
        "/judge merge urgent",
        "/judge merge --priority urgent now",
        "/judge merge --priority=",
    ],
)
def test_anything_else_after_merge_is_invalid_and_says_how(body: str) -> None:
    command = parse_command(body)
    assert command is not None and command.kind == "invalid"
    assert command.problem == "merge needs `--priority` and one of urgent, high, normal"


MERGE = Command("merge", priority="urgent", raw="/judge merge --priority urgent")


@pytest.mark.parametrize(
    ("login", "permission", "allowed", "code"),
    [
        ("lead", "admin", True, "ok"),
        ("writer", "write", True, "ok"),
        ("agent", "admin", False, "pr-author"),
        ("pusher", "admin", False, "commit-author"),
        ("reader", "read", False, "permission"),
    ],
)
def test_merge_is_authorised_as_an_override(
    login: str, permission: str, allowed: bool, code: str
) -> None:
    people = AuthorizationFacts(permission, pr_author="agent", commit_logins=["pusher"])
    decision = authorize(MERGE, Actor(login), people)
    assert (decision.allowed, decision.code) == (allowed, code)


def test_a_bot_is_refused_merge() -> None:
    decision = authorize(MERGE, Actor("robot[bot]", type="Bot"), AuthorizationFacts("admin"))
    assert decision.code == "bot"


def open_pull() -> dict[str, Any]:
    return {**pull(), "state": "open", "merged": False, "base": {"ref": "release"}}


def test_plan_sets_the_priority_of_the_open_pull_request() -> None:
    decided = plan_command(MERGE, Actor("lead"), facts(None, pull=open_pull()))
    assert decided == SetPriority(pull()["number"], "release", MergePriority.URGENT)


def test_plan_refuses_the_author() -> None:
    decided = plan_command(MERGE, Actor("agent"), facts(None, pull=open_pull()))
    assert isinstance(decided, Refusal) and decided.code == "pr-author"


@pytest.mark.parametrize(
    "changes",
    [None, {"state": "closed"}, {"merged": True}],
    ids=["no pull request", "closed", "merged"],
)
def test_plan_answers_without_an_open_pull_request(changes: dict[str, Any] | None) -> None:
    shown = None if changes is None else {**open_pull(), **changes}
    decided = plan_command(MERGE, Actor("lead"), facts(None, pull=shown))
    assert decided == Reply("@lead, a merge priority is for an open pull request.")


def test_help_lists_the_priority_command() -> None:
    assert "`/judge merge --priority urgent`" in render_help()


def test_the_reply_names_the_position_and_the_branch() -> None:
    text = render_priority_reply(Actor("lead"), "high", "release/1.x", 2)
    assert text == (
        "@lead set this pull request's merge priority to **high**: "
        "position 2 in the queue for `release/1.x`."
    )

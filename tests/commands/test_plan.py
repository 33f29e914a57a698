"""What a command does, decided from fetched facts (bot.commands.plan), table-tested."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from bot.commands.grammar import Command
from bot.commands.meant_head import FromComment
from bot.commands.plan import (
    ApplyOverride,
    CommandFacts,
    Refusal,
    Reply,
    Rerun,
    answer_without_facts,
    locate,
    outdated_override,
    plan_command,
    plan_override,
)
from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.check_run import render_check_run
from bot.judging.four_eyes import Actor
from bot.judging.state import Override as OverrideState
from bot.judging.state import ShaState
from bot.judging.target import Target
from tests.support.verdict_builders import HEAD, WHEN, make_record

REPO = {"full_name": "octo/repo", "default_branch": "main"}
MAINTAINER = Actor("maria")
RERUN = Command("rerun", raw="/judge rerun")
ACCEPT = Command("override", action="accept", raw="/judge override accept")
CANCEL = Command("override", action="cancel", raw="/judge override cancel")
URGENT = Command("merge", priority="urgent", raw="/judge merge --priority urgent")
OTHER = "f" * 40


def target(**overrides: Any) -> Target:
    fields: dict[str, Any] = {
        "repository": "octo/repo",
        "installation_id": 7,
        "head_sha": HEAD,
        "default_branch": "main",
        "task": "octo/repo#5",
        "trigger": "pull_request.opened",
        "pull_number": 5,
        "pull_author": "agent",
    }
    return Target(**{**fields, **overrides})


def judged_state(**overrides: Any) -> ShaState:
    fields: dict[str, Any] = {
        "owner": "d-1",
        "target": target().to_json(),
        "check_run_id": 11,
        "verdict": "reject",
        "mode": Mode.BLOCKING,
        "commit_people": ("agent-bot-name",),
        "records": (make_record(),),
        "first_seen_at": WHEN,
    }
    return ShaState(**{**fields, **overrides})


def pull(head: str = HEAD, author: str = "agent") -> dict[str, Any]:
    return {"number": 5, "head": {"sha": head}, "user": {"login": author}, "title": "T"}


def facts(state: ShaState | None, permission: str = "write", **more: Any) -> CommandFacts:
    fields: dict[str, Any] = {
        "head_sha": HEAD,
        "state": state,
        "pull": pull(),
        "repository": REPO,
        "installation_id": 7,
        "permission": permission,
        "origin": FromComment(WHEN + timedelta(minutes=1)),
    }
    return CommandFacts(**{**fields, **more})


@pytest.mark.parametrize(
    ("command", "pinned", "pull_head", "expected"),
    [
        (RERUN, None, None, None),
        (RERUN, HEAD, None, HEAD),
        (RERUN, None, HEAD, HEAD),
        (RERUN, HEAD, OTHER, HEAD),  # re-running an old commit is harmless
        (ACCEPT, HEAD, HEAD, HEAD),
        (ACCEPT, None, OTHER, OTHER),
        # An old disagreement issue's head: a priority is about the head queued now.
        (URGENT, HEAD, OTHER, OTHER),
        (URGENT, HEAD, None, HEAD),
    ],
)
def test_locate(
    command: Command, pinned: str | None, pull_head: str | None, expected: str | None
) -> None:
    assert locate(command, MAINTAINER, pinned_sha=pinned, pull_head=pull_head) == expected


def test_locate_refuses_an_override_of_an_outdated_run() -> None:
    located = locate(ACCEPT, MAINTAINER, pinned_sha=HEAD, pull_head=OTHER)
    assert isinstance(located, Reply)
    assert f"`{HEAD[:7]}`, no longer the head" in located.text
    assert f"(`{OTHER[:7]}`)" in located.text


@pytest.mark.parametrize(
    ("actor", "permission", "code"),
    [
        (Actor("reader"), "read", "permission"),
        (Actor("agent"), "write", "pr-author"),
        (Actor("agent-bot-name"), "admin", "commit-author"),
        (Actor("ci[bot]", "Bot"), "admin", "bot"),
    ],
)
def test_refusals_come_from_the_authorisation_rules(
    actor: Actor, permission: str, code: str
) -> None:
    decided = plan_command(ACCEPT, actor, facts(judged_state(), permission))
    assert isinstance(decided, Refusal)
    assert decided.code == code
    assert decided.text.startswith(f"@{actor.login}, I did not run")


def test_pr_author_from_the_judged_target_when_there_is_no_pull() -> None:
    decided = plan_command(ACCEPT, Actor("agent"), facts(judged_state(), pull=None))
    assert isinstance(decided, Refusal) and decided.code == "pr-author"


def test_rerun_of_a_judged_sha_rejudges_its_target_bypassing_the_cache() -> None:
    decided = plan_command(Command("rerun", deep=True), MAINTAINER, facts(judged_state()))
    assert isinstance(decided, Rerun)
    assert decided.target.head_sha == HEAD
    assert decided.target.bypass_cache and decided.target.force_deep
    assert decided.target.trigger == "command.rerun"


def test_rerun_of_an_unjudged_pull_head_builds_the_target_from_the_pull() -> None:
    decided = plan_command(RERUN, MAINTAINER, facts(None))
    assert isinstance(decided, Rerun)
    assert (decided.target.pull_number, decided.target.pull_author) == (5, "agent")


def test_rerun_of_an_unjudged_sha_that_is_not_the_head_says_so() -> None:
    decided = plan_command(RERUN, MAINTAINER, facts(None, pull=pull(head=OTHER)))
    assert decided == Reply(f"@maria, `{HEAD[:7]}` was never judged; nothing to re-run.")


@pytest.mark.parametrize(
    "state",
    [None, judged_state(records=()), judged_state(check_run_id=None)],
    ids=["never judged", "no records", "no run"],
)
def test_override_needs_a_judged_verdict(state: ShaState | None) -> None:
    decided = plan_command(ACCEPT, MAINTAINER, facts(state))
    assert decided == Reply(f"@maria, there is no judged verdict for `{HEAD[:7]}` to override yet.")


def test_override_of_a_judged_verdict() -> None:
    state = judged_state()
    assert plan_command(ACCEPT, MAINTAINER, facts(state)) == ApplyOverride(state)


def test_plan_override_accept() -> None:
    decided = plan_override(ACCEPT, MAINTAINER, judged_state(), WHEN)
    assert decided.record.final_decision is Verdict.ACCEPT
    assert decided.record.human_override is True
    assert decided.record.decided_by == "maria"
    assert decided.state.override == OverrideState(verdict=Verdict.ACCEPT, by="maria")
    assert decided.output.conclusion == "success"
    assert decided.close_comment is not None and "maria" in decided.close_comment
    assert "overrode the judges' verdict **reject** with **accept**" in decided.reply


def test_plan_override_cancel_restores_the_judges_verdict() -> None:
    state = judged_state(override=OverrideState(verdict=Verdict.ACCEPT, by="maria"))
    decided = plan_override(CANCEL, MAINTAINER, state, WHEN)
    assert decided.state.override is None
    assert decided.record.human_override is False
    assert decided.close_comment is None
    # The judges' own verdict comes back on the run, rendered as when it was judged.
    assert decided.output == render_check_run(state.records, Mode.BLOCKING)
    assert "cancelled the override" in decided.reply


@pytest.mark.parametrize(
    ("kind", "action", "pinned", "expected"),
    [
        ("override", "accept", "old", True),
        ("override", "accept", "head", False),
        ("override", "cancel", "old", True),
        ("rerun", None, "old", False),
        ("rerun", None, "head", False),
    ],
)
def test_outdated_override(kind: str, action: str | None, pinned: str, expected: bool) -> None:
    command = Command(kind, action=action)  # type: ignore[arg-type]
    assert outdated_override(command, pinned_sha=pinned, current_head="head") is expected


@pytest.mark.parametrize(
    ("command", "answered"),
    [(Command("help"), True), (Command("invalid", raw="/judge x"), True), (RERUN, False)],
)
def test_help_is_answered_without_facts(command: Command, answered: bool) -> None:
    answer = answer_without_facts(command)
    assert (answer is not None) is answered
    if answer is not None:
        assert "judge-bot commands" in answer.text

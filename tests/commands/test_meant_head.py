"""Which head an override comment was about (bot.commands.meant_head), table-tested, with
the refusal it becomes in `plan_command` and `replies.render_head_refusal`."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from bot.commands.grammar import Command, parse_command
from bot.commands.meant_head import (
    FromComment,
    FromRun,
    Mismatch,
    Origin,
    head_mismatch,
    written_at,
)
from bot.commands.plan import ApplyOverride, CommandFacts, Refusal, Rerun, plan_command
from bot.commands.replies import render_head_refusal
from bot.judge.settings import Mode
from bot.judging.four_eyes import Actor
from bot.judging.state import ShaState
from tests.support.verdict_builders import HEAD, WHEN, make_record

SEEN = WHEN
BEFORE = FromComment(SEEN - timedelta(seconds=1))
AT = FromComment(SEEN)
AFTER = FromComment(SEEN + timedelta(minutes=5))
NO_TIME = FromComment(None)
OLD = "f" * 40
MAINTAINER = Actor("maria")


def override(action: str = "accept", sha: str | None = None) -> Command:
    raw = f"/judge override {action}" + (f" {sha}" if sha else "")
    command = parse_command(raw)
    assert command is not None and command.kind == "override" and command.sha == sha
    return command


ACCEPT = override()


@pytest.mark.parametrize(
    ("command", "first_seen", "origin", "expected"),
    [
        # Unpinned: only a comment written at or after the head was first seen.
        (ACCEPT, SEEN, AFTER, None),
        (ACCEPT, SEEN, AT, None),
        (ACCEPT, SEEN, BEFORE, Mismatch.WRITTEN_BEFORE),
        (override("reject"), SEEN, BEFORE, Mismatch.WRITTEN_BEFORE),
        (override("cancel"), SEEN, BEFORE, Mismatch.WRITTEN_BEFORE),
        (ACCEPT, None, AFTER, Mismatch.FIRST_SEEN_UNKNOWN),
        (ACCEPT, SEEN, NO_TIME, Mismatch.WRITTEN_UNKNOWN),
        # Pinned: the head must start with the pin; the time does not matter.
        (override("accept", HEAD[:7]), SEEN, BEFORE, None),
        (override("accept", HEAD), None, NO_TIME, None),
        (override("cancel", HEAD[:12]), SEEN, BEFORE, None),
        (override("accept", OLD[:7]), SEEN, AFTER, Mismatch.PINNED_OTHER),
        (override("accept", HEAD[1:8]), SEEN, AFTER, Mismatch.PINNED_OTHER),
        # A button is about its run's sha (`plan.locate` refuses an outdated run).
        (ACCEPT, None, FromRun(), None),
        (ACCEPT, SEEN, FromRun(), None),
        # Rerun and help decide nothing about a head.
        (Command("rerun"), SEEN, BEFORE, None),
        (Command("rerun"), None, NO_TIME, None),
        (Command("help"), SEEN, BEFORE, None),
    ],
)
def test_head_mismatch(
    command: Command, first_seen: datetime | None, origin: Origin, expected: Mismatch | None
) -> None:
    assert head_mismatch(command, head_sha=HEAD, first_seen_at=first_seen, origin=origin) is (
        expected
    )


def test_a_naive_time_is_read_as_utc() -> None:
    naive = FromComment(BEFORE.written_at.replace(tzinfo=None))  # type: ignore[union-attr]
    assert head_mismatch(ACCEPT, head_sha=HEAD, first_seen_at=SEEN, origin=naive) is (
        Mismatch.WRITTEN_BEFORE
    )


@pytest.mark.parametrize(
    ("comment", "expected"),
    [
        ({"created_at": "2026-02-17T14:30:00Z"}, WHEN),
        ({"created_at": "2026-02-17T16:30:00+02:00"}, WHEN),
        ({"created_at": "2026-02-17T14:30:00"}, WHEN),
        ({}, None),
        ({"created_at": None}, None),
        ({"created_at": 1771338600}, None),
        ({"created_at": "yesterday"}, None),
    ],
)
def test_written_at(comment: dict[str, Any], expected: datetime | None) -> None:
    assert written_at(comment) == expected


def judged(first_seen: datetime | None = SEEN) -> ShaState:
    return ShaState(
        owner="d-1",
        target={
            "repository": "octo/repo",
            "installation_id": 7,
            "head_sha": HEAD,
            "default_branch": "main",
            "task": "octo/repo#5",
            "trigger": "pull_request.opened",
            "pull_number": 5,
            "pull_author": "agent",
        },
        check_run_id=11,
        verdict="reject",
        mode=Mode.BLOCKING,
        records=(make_record(),),
        first_seen_at=first_seen,
    )


def facts(state: ShaState, origin: Origin) -> CommandFacts:
    return CommandFacts(
        head_sha=HEAD,
        state=state,
        pull={"number": 5, "head": {"sha": HEAD}, "user": {"login": "agent"}},
        repository={"full_name": "octo/repo", "default_branch": "main"},
        installation_id=7,
        permission="write",
        origin=origin,
    )


def test_plan_refuses_a_comment_written_before_the_head() -> None:
    decided = plan_command(ACCEPT, MAINTAINER, facts(judged(), BEFORE))
    assert isinstance(decided, Refusal)
    assert decided.code == "written-before-head"
    assert f"`{HEAD[:7]}`, the current head" in decided.text
    assert f"`/judge override accept {HEAD[:7]}`" in decided.text


def test_plan_applies_a_comment_written_after_the_head() -> None:
    state = judged()
    assert plan_command(ACCEPT, MAINTAINER, facts(state, AFTER)) == ApplyOverride(state)


def test_plan_lets_a_late_rerun_through() -> None:
    assert isinstance(plan_command(Command("rerun"), MAINTAINER, facts(judged(), BEFORE)), Rerun)


def test_authorisation_is_decided_first() -> None:
    """Someone who may not override is told so, whatever the head."""
    decided = plan_command(ACCEPT, Actor("agent"), facts(judged(), BEFORE))
    assert isinstance(decided, Refusal) and decided.code == "pr-author"


@pytest.mark.parametrize("mismatch", list(Mismatch))
def test_every_refusal_names_the_head_and_how_to_go_on(mismatch: Mismatch) -> None:
    command = override("cancel", OLD[:9])
    text = render_head_refusal(mismatch, command, MAINTAINER, HEAD)
    assert text.startswith("@maria, I did not run `/judge override cancel fffffffff`: ")
    assert f"`{HEAD[:7]}`" in text
    assert "nothing was changed" in text
    assert text.endswith(f"comment `/judge override cancel {HEAD[:7]}`.")
    assert not any(line.lstrip().startswith("/judge") for line in text.splitlines())


def test_the_pinned_refusal_names_both_shas() -> None:
    text = render_head_refusal(Mismatch.PINNED_OTHER, override("accept", OLD[:7]), MAINTAINER, HEAD)
    assert f"it names `{OLD[:7]}`, but the head is now `{HEAD[:7]}`" in text

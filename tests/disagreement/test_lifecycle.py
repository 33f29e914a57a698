"""The disagreement issue's life (bot.disagreement.lifecycle), exhaustively."""

from __future__ import annotations

import pytest

from bot.disagreement.lifecycle import (
    IssueAction,
    TaskIssue,
    issue_action,
    issue_url,
    links_for,
    open_number,
)
from bot.judge.records import Verdict
from bot.judging.target import Target

SHA = "a" * 40


@pytest.mark.parametrize(
    ("verdict", "known", "expected"),
    [
        (Verdict.ESCALATE, None, IssueAction.OPEN),
        (Verdict.ESCALATE, TaskIssue(state="opening"), IssueAction.OPEN),
        (Verdict.ESCALATE, TaskIssue(number=3, state="open", last_sha="old"), IssueAction.COMMENT),
        (Verdict.ESCALATE, TaskIssue(number=3, state="open", last_sha=SHA), IssueAction.NONE),
        (Verdict.ESCALATE, TaskIssue(number=3, state="closed", last_sha="old"), IssueAction.REOPEN),
        (Verdict.ACCEPT, TaskIssue(number=3, state="open", last_sha="old"), IssueAction.CLOSE),
        (Verdict.ACCEPT, TaskIssue(number=3, state="closed", last_sha="old"), IssueAction.NONE),
        (Verdict.ACCEPT, None, IssueAction.NONE),
        (Verdict.REJECT, TaskIssue(number=3, state="open", last_sha="old"), IssueAction.NONE),
        (Verdict.IMPROVE, None, IssueAction.NONE),
        (Verdict.UNDETERMINED, TaskIssue(number=3, state="open"), IssueAction.NONE),
    ],
)
def test_issue_action(verdict: Verdict, known: TaskIssue | None, expected: IssueAction) -> None:
    assert issue_action(verdict, known, SHA) is expected


def test_links_come_from_the_repository_url_the_api_gave() -> None:
    """GitHub Enterprise Server: every link names the repository's own host."""
    ghes = "https://ghe.example.com/octo/repo"
    pull = Target("octo/repo", 1, SHA, "main", "octo/repo#7", "t", pull_number=7, html_url=ghes)
    assert links_for(pull, "").subject_url == f"{ghes}/pull/7"
    push = Target("octo/repo", 1, SHA, "main", f"octo/repo@{SHA[:7]}", "t", html_url=ghes)
    assert links_for(push, "run").subject_url == f"{ghes}/commit/{SHA}"
    assert issue_url(push, 3) == f"{ghes}/issues/3"


def test_without_a_repository_url_no_link_is_guessed() -> None:
    legacy = Target("octo/repo", 1, SHA, "main", "octo/repo#7", "t", pull_number=7)
    assert links_for(legacy, "").subject_url is None
    assert issue_url(legacy, 3) is None


@pytest.mark.parametrize(
    ("known", "number"),
    [
        (None, None),
        (TaskIssue(state="opening"), None),
        (TaskIssue(number=3, state="closed"), None),
        (TaskIssue(number=3, state="open"), 3),
    ],
)
def test_open_number(known: TaskIssue | None, number: int | None) -> None:
    assert open_number(known) == number

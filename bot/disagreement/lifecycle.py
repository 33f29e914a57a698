"""The disagreement issue's life, decided from what storage remembers of it. Pure.

    escalate  no issue yet ──> open;  open ──> comment;  closed ──> reopen
              the same sha reported already ──> nothing (a retried delivery)
    accept    an open issue ──> close
    anything else ──> nothing

Storage keys and the links an issue shows are derived here too, so `sync` only carries
out what these return.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from bot.disagreement.issue import IssueLinks
from bot.judge.records import Verdict
from bot.judging.target import Target


def task_key(repository: str, task: str) -> str:
    return f"{repository.lower()}|{task}"


def issue_key(repository: str, number: int) -> str:
    return f"{repository.lower()}#{number}"


@dataclass(frozen=True)
class TaskIssue:
    """What storage remembers of a task's issue (`sync` keeps it): `opening` while one
    delivery (`owner`) opens it, then its number, `open` or `closed`, and the head it
    last reported."""

    number: int | None = None
    state: str | None = None
    last_sha: str | None = None
    owner: str | None = None


def open_number(known: TaskIssue | None) -> int | None:
    """The number of the task's issue when storage knows it to be open."""
    if known is None or known.state != "open" or not known.number:
        return None
    return known.number


def issue_url(target: Target, number: int) -> str | None:
    """The issue's page, on the host the repository's own URL names."""
    return None if target.html_url is None else f"{target.html_url}/issues/{number}"


def links_for(target: Target, check_run_url: str) -> IssueLinks:
    base = target.html_url
    subject: str | None = None
    if base is not None and target.pull_number is not None:
        subject = f"{base}/pull/{target.pull_number}"
    elif base is not None:
        subject = f"{base}/commit/{target.head_sha}"
    return IssueLinks(
        task=target.task,
        subject_url=subject,
        check_run_url=check_run_url or None,
        is_pull_request=target.pull_number is not None,
    )


class IssueAction(enum.StrEnum):
    NONE = "none"
    OPEN = "open"
    COMMENT = "comment"
    REOPEN = "reopen"
    CLOSE = "close"


def issue_action(verdict: Verdict, known: TaskIssue | None, head_sha: str) -> IssueAction:
    """What the task's issue needs after a verdict. `known` is what storage remembers of
    it (number, state, the sha last reported). The same sha is never reported twice, so a
    retried delivery does not comment again."""
    state = None if known is None else known.state
    if verdict is Verdict.ESCALATE:
        if state is None or known is None or known.number is None:
            return IssueAction.OPEN
        if known.last_sha == head_sha:
            return IssueAction.NONE
        return IssueAction.COMMENT if state == "open" else IssueAction.REOPEN
    if verdict is Verdict.ACCEPT and state == "open":
        return IssueAction.CLOSE
    return IssueAction.NONE

"""One `[JUDGE-DISAGREEMENT]` issue per task: opened on escalation, commented on a second
escalation, closed when a later verdict accepts or a person overrides.

The issue number is kept in storage (by task, and the task by issue number so commands on
the issue find their change). If storage was lost, the open issue is found again by its
label and exact title, so a task never gets a second issue.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.disagreement.issue import (
    LABEL,
    LABEL_COLOR,
    LABEL_DESCRIPTION,
    CloseReason,
    IssueLinks,
    issue_title,
    render_close_comment,
    render_followup_comment,
    render_issue_body,
)
from bot.disagreement.lifecycle import (
    IssueAction,
    TaskIssue,
    issue_action,
    issue_key,
    issue_url,
    links_for,
    open_number,
    task_key,
)
from bot.github.gateway import RepoGateway
from bot.judge.records import Verdict, VerdictRecord
from bot.judging.target import Target
from bot.notify.reporting import escalation_notice
from bot.notify.sender import Notifier
from bot.storage.base import Storage

BY_TASK = "disagreement-by-task"
BY_ISSUE = "disagreement-by-issue"
OPENING = "opening"


def _issue_number(value: object) -> int:
    """A stored issue number as `int()` takes it (a row written by hand may hold "12").
    Anything else raises, as it always has: a row that names no issue it can be read as
    must fail the delivery where a person sees it, not silently stop the issue opening."""
    if isinstance(value, int | float | str):
        return int(value)
    raise ValueError(f"stored issue number {value!r} is not a number")


def _issue_from_row(row: Mapping[str, Any]) -> TaskIssue:
    number, state = row.get("number"), row.get("state")
    last_sha, owner = row.get("last_sha"), row.get("owner")
    return TaskIssue(
        number=None if number is None else _issue_number(number),
        state=None if state is None else str(state),
        last_sha=last_sha if isinstance(last_sha, str) else None,
        owner=owner if isinstance(owner, str) else None,
    )


def _issue_to_row(issue: TaskIssue) -> dict[str, Any]:
    """Only what is known: `{number, state, last_sha}` once opened, `{state, owner}` while
    opening, as the rows have always been."""
    row = {
        "number": issue.number,
        "state": issue.state,
        "last_sha": issue.last_sha,
        "owner": issue.owner,
    }
    return {key: value for key, value in row.items() if value is not None}


async def _load_issue(storage: Storage, repository: str, task: str) -> TaskIssue | None:
    row = await storage.kv_get(BY_TASK, task_key(repository, task))
    return None if row is None else _issue_from_row(row)


async def known_issue(
    gateway: RepoGateway, storage: Storage, repository: str, task: str, *, search: bool
) -> TaskIssue | None:
    """What storage remembers of the task's issue. With `search`, an issue storage does not
    know (storage was reset) is looked up on GitHub by label and exact title: worth a
    request before opening one, not on every accepted change."""
    known = await _load_issue(storage, repository, task)
    if known is not None or not search:
        return known
    title = issue_title(task)
    for issue in await gateway.open_issues_with_label(LABEL):
        if issue.get("title") == title and "pull_request" not in issue:
            return TaskIssue(number=int(issue["number"]), state="open")
    return None


async def reconcile(
    gateway: RepoGateway,
    storage: Storage,
    target: Target,
    records: Sequence[VerdictRecord],
    verdict: Verdict,
    check_run_url: str,
    *,
    owner: str,
    notifier: Notifier | None = None,
) -> str | None:
    """Bring the task's issue in line with the verdict (rules.issue_action); returns the
    issue's URL when one is open for it."""
    known = await known_issue(
        gateway, storage, target.repository, target.task, search=verdict is Verdict.ESCALATE
    )
    action = issue_action(verdict, known, target.head_sha)
    links = links_for(target, check_run_url)
    if action is IssueAction.OPEN:
        number = await open_once(gateway, storage, target, records, links, owner)
        if number is None:
            return None
        if notifier is not None:
            url = issue_url(target, number)
            notifier.post(escalation_notice(target.repository, number, url, target.head_sha))
    elif action is IssueAction.CLOSE:
        assert known is not None and known.number is not None
        await close_issue(
            gateway,
            storage,
            target,
            known.number,
            render_close_comment(CloseReason.ACCEPTED, target.head_sha),
        )
        return None
    elif action in (IssueAction.COMMENT, IssueAction.REOPEN):
        assert known is not None and known.number is not None
        number = known.number
        if action is IssueAction.REOPEN:
            await gateway.reopen_issue(number)
        await gateway.comment(number, render_followup_comment(records, links))
        await remember_issue(storage, target, number, "open")
    elif (still_open := open_number(known)) is not None:
        number = still_open
    else:
        return None
    return issue_url(target, number)


async def open_once(
    gateway: RepoGateway,
    storage: Storage,
    target: Target,
    records: Sequence[VerdictRecord],
    links: IssueLinks,
    owner: str,
) -> int | None:
    """Open the task's issue unless a concurrent delivery is opening it (never two)."""
    claim = _issue_to_row(TaskIssue(state=OPENING, owner=owner))
    key = task_key(target.repository, target.task)
    if not await storage.kv_put_if_absent(BY_TASK, key, claim):
        current = await _load_issue(storage, target.repository, target.task)
        if current is None or current.owner != owner or current.state != OPENING:
            return None  # someone else opens it; their issue carries the history
    await gateway.ensure_label(LABEL, LABEL_COLOR, LABEL_DESCRIPTION)
    number = await gateway.create_issue(
        issue_title(target.task), render_issue_body(records, links), [LABEL]
    )
    await remember_issue(storage, target, number, "open")
    return number


async def close_for(gateway: RepoGateway, storage: Storage, target: Target, comment: str) -> bool:
    """Close the task's open issue with a comment; False when none was open."""
    number = open_number(await _load_issue(storage, target.repository, target.task))
    if number is None:
        return False
    await close_issue(gateway, storage, target, number, comment)
    return True


async def close_issue(
    gateway: RepoGateway, storage: Storage, target: Target, number: int, comment: str
) -> None:
    await gateway.comment(number, comment)
    await gateway.close_issue(number)
    await remember_issue(storage, target, number, "closed")


async def remember_issue(storage: Storage, target: Target, number: int, state: str) -> None:
    issue = TaskIssue(number=number, state=state, last_sha=target.head_sha)
    change = IssueChange(target.task, target.head_sha, target.pull_number)
    await storage.kv_put(BY_TASK, task_key(target.repository, target.task), _issue_to_row(issue))
    await storage.kv_put(BY_ISSUE, issue_key(target.repository, number), _change_to_row(change))


@dataclass(frozen=True)
class KnownIssue:
    """What storage remembers of a task's issue (`disagreement-by-task`), typed for readers
    outside this module: its number when storage knows it to be open (read as
    `lifecycle.open_number` reads it), and the head it last judged."""

    key: str
    open_number: int | None
    last_sha: str | None

    @classmethod
    def of(cls, key: str, issue: TaskIssue) -> KnownIssue:
        return cls(key=key, open_number=open_number(issue), last_sha=issue.last_sha)


@dataclass(frozen=True)
class IssueChange:
    """The change a disagreement issue is about (`disagreement-by-issue`)."""

    task: str
    head_sha: str
    pull_number: int | None


def _change_from_row(row: Mapping[str, Any]) -> IssueChange:
    pull_number = row.get("pull_number")
    return IssueChange(
        task=str(row.get("task", "")),
        head_sha=str(row["head_sha"]),
        pull_number=pull_number if isinstance(pull_number, int) else None,
    )


def _change_to_row(change: IssueChange) -> dict[str, Any]:
    return {"task": change.task, "head_sha": change.head_sha, "pull_number": change.pull_number}


async def tasks_known(storage: Storage, prefix: str = "") -> list[KnownIssue]:
    """Every task's remembered issue whose key starts with `prefix` (`task_key`), by key."""
    rows = await storage.kv_list(BY_TASK, prefix)
    return [KnownIssue.of(key, _issue_from_row(row)) for key, row in rows]


async def change_for_issue(storage: Storage, repository: str, number: int) -> IssueChange | None:
    """The task, head sha and pull request a disagreement issue is about, if it is ours."""
    row = await storage.kv_get(BY_ISSUE, issue_key(repository, number))
    return None if row is None else _change_from_row(row)

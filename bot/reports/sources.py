"""What the reports read from storage, the only I/O of the package: the window's verdict
records, what the judging state remembers of flagged commits (their check run and pull
request), and the disagreement issues of the window's changes that are still open.

Storage lists no keyed rows by prefix, so the open issues are those of the changes
judged in the window: an issue whose task has no record in the window is not seen.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from pydantic import ValidationError

from bot.disagreement.lifecycle import open_number, task_key
from bot.disagreement.sync import BY_TASK
from bot.judging.state import ShaState, load_state, state_key
from bot.reports.triage import OpenIssue, Subject, SubjectKey
from bot.storage.base import Storage, StoredVerdict


async def window_records(storage: Storage, since: datetime) -> list[StoredVerdict]:
    """Every record at or after `since`, oldest first."""
    return await storage.list_verdicts(since=since)


async def _state(storage: Storage, repository: str, head_sha: str) -> ShaState | None:
    try:
        return await load_state(storage, state_key(repository, head_sha))
    except ValidationError:
        return None  # a row this version cannot read: the item is shown without a link


def subject_of(state: ShaState | None, head_sha: str) -> Subject | None:
    if state is None:
        return None
    target = state.target or {}
    pull = target.get("pull_number")
    pull_number = pull if isinstance(pull, int) else None
    page = target.get("html_url")
    url = state.check_run_url or None
    if url is None and isinstance(page, str):
        url = f"{page}/pull/{pull_number}" if pull_number else f"{page}/commit/{head_sha}"
    return Subject(pull_number=pull_number, url=url)


async def subjects(storage: Storage, keys: Iterable[SubjectKey]) -> dict[SubjectKey, Subject]:
    found: dict[SubjectKey, Subject] = {}
    for repository, head_sha in sorted(keys):
        subject = subject_of(await _state(storage, repository, head_sha), head_sha)
        if subject is not None:
            found[(repository, head_sha)] = subject
    return found


async def open_issues(storage: Storage, tasks: Iterable[tuple[str, str]]) -> list[OpenIssue]:
    issues = []
    for repository, task in sorted(tasks):
        known = await storage.kv_get(BY_TASK, task_key(repository, task))
        number = open_number(known)
        if number is None:
            continue
        url = None
        last_sha = (known or {}).get("last_sha")
        if isinstance(last_sha, str):
            state = await _state(storage, repository, last_sha)
            page = None if state is None else (state.target or {}).get("html_url")
            url = f"{page}/issues/{number}" if isinstance(page, str) else None
        issues.append(OpenIssue(repository=repository, task=task, number=number, url=url))
    return issues

"""What the reports read from storage, the only I/O of the package: the window's verdict
facts (the lean read), the full records of the flagged items listed, what the judging
state remembers of flagged commits (their check run and pull request), and the
disagreement issues still open.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime

from pydantic import ValidationError

from bot.disagreement.lifecycle import task_key
from bot.disagreement.sync import tasks_known
from bot.judging.state import ShaState, load_state, state_key
from bot.reports.facts import RecordFact, facts_of_rows
from bot.reports.triage import OpenIssue, Subject, SubjectKey
from bot.storage.base import Storage, StoredVerdict


@contextmanager
def collector_paused() -> Iterator[None]:
    """The garbage collector at rest while a report runs. Tens of thousands of decoded
    records stay alive together; the collector would walk them again and again as they
    arrive (most of the command's time) and can find no garbage among them."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()


async def window_facts(
    storage: Storage, since: datetime, repository: str | None = None
) -> tuple[list[RecordFact], int]:
    """The facts of every record at or after `since` (of one repository, its name
    compared without case, when given), oldest first, and how many could not be read."""
    return facts_of_rows(await storage.list_verdict_facts(since=since, repository=repository))


async def details(storage: Storage, facts: Iterable[RecordFact]) -> dict[int, StoredVerdict]:
    """The full records of these facts (the flagged items listed), by sequence number."""
    return {s.seq: s for s in await storage.get_verdicts([f.seq for f in facts])}


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


async def open_issues(storage: Storage, repository: str | None = None) -> list[OpenIssue]:
    """Every disagreement issue storage knows to be open (of one repository, when given),
    whenever its change was judged. Storage keys hold the repository lower-cased: the
    name is shown so unless it is the one asked for."""
    prefix = "" if repository is None else task_key(repository, "")
    issues = []
    for known in await tasks_known(storage, prefix):
        number = known.open_number
        name, separator, task = known.key.partition("|")
        if number is None or not separator:
            continue
        url = None
        if known.last_sha is not None:
            state = await _state(storage, name, known.last_sha)
            page = None if state is None else (state.target or {}).get("html_url")
            url = f"{page}/issues/{number}" if isinstance(page, str) else None
        issues.append(OpenIssue(repository=_shown_name(repository, name), task=task,
                                number=number, url=url))  # fmt: skip
    return issues


def _shown_name(asked: str | None, stored: str) -> str:
    return asked if asked is not None and asked.lower() == stored else stored

"""Comment payloads stamped with when they were written, as GitHub stamps `created_at`.

An override comment decides only the head it was written about (`bot.commands.meant_head`),
so the end-to-end tests say when each comment was written: the example payload's own time
(2019) predates every head the tests push.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from tests.support.flow_helpers import comment_payload


def github_time(moment: datetime) -> str:
    """GitHub's `created_at`: UTC, whole seconds."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def next_second(moment: datetime) -> datetime:
    """The first whole second not before `moment`: a time GitHub could stamp on a comment
    written at or after it (GitHub's seconds would otherwise fall just before it)."""
    whole = moment.replace(microsecond=0)
    return whole if whole == moment else whole + timedelta(seconds=1)


def stamped(data: dict[str, Any], at: datetime) -> dict[str, Any]:
    data["comment"]["created_at"] = github_time(at)
    data["comment"]["updated_at"] = github_time(at)
    return data


def comment_at(
    at: datetime, repo: str, number: int, body: str, login: str, **more: Any
) -> dict[str, Any]:
    """A comment written at `at`."""
    return stamped(comment_payload(repo, number, body, login, **more), at)


def comment_now(repo: str, number: int, body: str, login: str, **more: Any) -> dict[str, Any]:
    """A comment written now, after every head the test has pushed so far."""
    return comment_at(next_second(datetime.now(UTC)), repo, number, body, login, **more)
